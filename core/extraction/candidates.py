"""The candidate sentences of an exchange, with the default extractor's verdict on each.

:class:`~bli_memory.core.extraction.rule_extractor.RuleExtractor` keeps the candidates whose
``rule_keep`` is true. The list is its own function so that what the rules see can be
measured and compared sentence by sentence (``bench/extraction_train.py`` fits a
classifier on exactly these candidates). The rules themselves live in
:mod:`bli_memory.core.extraction.sentences` (where a sentence ends),
:mod:`bli_memory.core.extraction.classify` (the kind of statement),
:mod:`bli_memory.core.extraction.durability`
(durable or not) and :mod:`bli_memory.core.extraction.rephrase` (standing alone); each cue's source
is in those modules. Pure functions; the standard library only.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from bli_memory.core.extraction import durability, places, rephrase
from bli_memory.core.extraction.classify import classify
from bli_memory.core.extraction.injected import strip_captured
from bli_memory.core.extraction.report_lists import in_report, proposal_lines, report_items
from bli_memory.core.extraction.sentences import clean, is_output_line, is_question, turns, units
from bli_memory.core.extraction.statement_terms import content_terms, specific_terms
from bli_memory.core.extraction.statements import MAX_STATEMENT_CHARS, StatementKind

__all__ = ["Candidate", "candidates"]


@dataclass(frozen=True)
class Candidate:
    """One cleaned sentence of an exchange and what the rules say about it.

    Attributes:
        text: The cleaned sentence, before it is rewritten to stand alone.
        role: ``user``, ``assistant`` or ``text``.
        kind: The kind the rules give it, or None when they would drop it.
        rule_keep: The rules alone would keep it (a kind, not transient, not a
            request for the task at hand).
        asked: The person's turn it answers asked a question.
        request: The person's turn it belongs to (or answers) asks for a task.
    """

    text: str
    role: str
    kind: StatementKind | None
    rule_keep: bool
    asked: bool
    request: bool


def candidates(text: str) -> list[Candidate]:
    """Every sentence of ``text`` that could be kept, with the rules' verdict.

    Questions, fragments under a heading, acknowledgements that repeat the person and
    sentences of fewer than four words are not candidates at all.

    Args:
        text: The exchange, ``User: ...`` / ``Assistant: ...`` or plain text.

    Returns:
        Candidates in order of appearance.
    """
    out: list[Candidate] = []
    asked = request = False
    for role, body in turns(strip_captured(text or "")):
        pieces = units(body, per_line=role == "user")
        reported = report_items(body) if role == "assistant" else ()
        proposed = proposal_lines(body) if role == "assistant" else ()
        if role == "user":
            asked = is_question(body)
            pieces = [c for u in pieces if not is_output_line(u) for c in rephrase.user_clauses(u)]
            request = any(durability.is_task_request(clean(u)[0]) for u in pieces)
        for unit in pieces:
            cleaned, acknowledged = clean(unit)
            ignored = rephrase.ignore_entry(cleaned)
            report_item = in_report(unit, reported) and ignored == cleaned
            if role == "assistant" and acknowledged:
                continue  # "Got it: ..." repeats what the person just said
            cleaned = rephrase.standalone(rephrase.label_value(rephrase.list_intro(ignored)))
            if role == "user":
                cleaned = rephrase.project_subject(cleaned)
            too_short_or_long = len(cleaned.split()) < 4 or len(cleaned) > MAX_STATEMENT_CHARS
            if durability.is_fragment(cleaned) or too_short_or_long or cleaned.endswith("?"):
                continue
            kind = classify(cleaned, role, answers_question=role == "assistant" and asked)
            if kind is None and role == "user" and durability.is_preference(cleaned):
                kind = "preference"  # "I would prefer this to run on demand"
            elif kind is None and durability.is_rule_label(cleaned):
                kind = "convention"  # "Prohibited words: Strategic, Leading, ..."
            elif kind is None and role == "user" and (durability.is_setup(cleaned) or
                                                      durability.is_context(cleaned)):
                kind = "fact"  # "I am running Claude Code on WSL": the person's setup
            elif kind is None and durability.is_limitation(cleaned) and (
                    specific_terms(cleaned) or len(content_terms(cleaned)) >= 4):
                kind = "fix"  # "There's no direct way to map a PID to its session": a root cause
            elif kind is None and durability.is_switch(cleaned):
                kind = "command"  # "`--no-copy-to-cwd` flag to disable": how the tool is configured
            elif kind is None and durability.is_root_cause(cleaned) and specific_terms(cleaned):
                kind = "fix"  # "The key fix was changing the default from 'md' to 'all'"
            elif kind is None and role == "user" and (durability.names_place(cleaned) or
                                                      places.points_to_file(cleaned)):
                kind = "convention"  # "Create a folder called transcripts/ for them": where things live
            # A limitation stays true while the setup does ("currently picks the newest file,
            # which could be from a different session"), though it reads like the moment.
            transient = durability.is_transient(cleaned) and not durability.is_limitation(cleaned)
            if role == "assistant" and cleaned.endswith("!") and not durability.gives_reason(cleaned):
                transient = True  # "The `kwargs` is empty!": the assistant exclaims over what it just saw
            keep = kind is not None and not transient
            if keep and durability.points_back(cleaned) and not specific_terms(cleaned):
                keep = False  # "All content must conform to this standard.": which standard?
            if role == "assistant" and durability.is_finding_item(cleaned):
                keep = False  # "No Testing Infrastructure - Zero tests ...": an audit entry of the moment
            if report_item and kind not in ("fix", "command") and not (
                    durability.gives_reason(cleaned) or re.search(r"`[^`]*/[^`]*`", cleaned)):
                keep = False  # an item under "Updated Files:" reports this turn's work, unless it says where
            if in_report(unit, proposed):
                keep = False  # under "### Option 1:" or "**Pros:**": offered, not decided
            scoped = (request and kind in ("convention", "command") and not durability.is_general(cleaned)
                      and not durability.teaches(cleaned))
            one_off = scoped or durability.is_task_request(cleaned)
            if role == "user" and one_off and not (durability.names_place(cleaned) or
                                                   places.points_to_file(cleaned)):
                keep = False  # "Commit and push it. Use the --no-verify flag.": this task only
            out.append(Candidate(cleaned, role, kind, keep, asked, request))
    return out
