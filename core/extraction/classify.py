"""The kind of a sentence (decision, preference, convention, fact, command, fix) or none.

:func:`classify` is the default extractor's verdict on one cleaned sentence, from the cues
compiled in :mod:`bli_memory.core.extraction.patterns`; :func:`rewrite` makes a kept
sentence stand alone. Pure functions; the standard library only.
"""

from __future__ import annotations

import re

from bli_memory.core.extraction.patterns import rules
from bli_memory.core.extraction.rephrase import attribute_user, home_to_tilde, product_case
from bli_memory.core.extraction.statement_terms import CODE_SPAN, content_terms, specific_terms
from bli_memory.core.extraction.statements import MAX_STATEMENT_CHARS, StatementKind

__all__ = ["classify", "rewrite"]


def rewrite(sentence: str, role: str) -> str:
    """Third person for the person's own words; a full stop at the end.

    Args:
        sentence: One kept sentence, cleaned (:func:`~bli_memory.core.extraction.sentences.clean`).
        role: ``user``, ``assistant`` or ``text``.

    Returns:
        The statement as it will be stored.
    """
    s = product_case(home_to_tilde(sentence))
    if role == "user":
        s = attribute_user(s)
    elif role == "text":
        s = re.sub(r"^Let's\b", "We decided to", s, count=1)
    s = s.rstrip()
    if s and (s[-1].isalnum() or s.endswith(("`", ")", '"', "'"))):
        s += "."
    return s


def classify(sentence: str, role: str, *, answers_question: bool = False) -> StatementKind | None:
    """The kind of a durable statement, or None to drop it (the default extractor's rules).

    Args:
        sentence: One cleaned sentence.
        role: ``user``, ``assistant`` or ``text`` (no role markers).
        answers_question: The sentence is in a reply to a question; a bare fact then
            needs a concrete project anchor (inline code or a path), since answers to
            questions are mostly general explanation.

    Returns:
        One of :data:`~bli_memory.core.extraction.statements.KINDS`, or None.
    """
    r = rules()
    s = sentence.strip()
    low = s.lower()
    words = re.findall(r"[\w'./:@`-]+", s)
    if len(words) < 4 or len(s) > MAX_STATEMENT_CHARS:
        return None
    if s.endswith(("?", ":")) or (r.question_start.match(s) and not s.endswith((".", "!"))):
        return None
    if r.chit_chat.match(s) or r.transient.match(s):
        return None
    if role == "assistant" and (r.promise.match(s) or r.future.search(s) or r.progressive.match(s)):
        return None
    specifics = specific_terms(s)
    if not specifics and len(content_terms(s)) < 3:
        return None  # "Stick to that from now on": nothing self-contained to keep
    has_code = bool(re.search(CODE_SPAN, s))
    narrated = bool(r.narration.match(s))

    if r.fix.search(s) and (specifics or r.error_token.search(s) or "because" in low):
        return "fix"
    if r.trouble.search(s) and r.cause.search(s):
        return "fix"
    if r.decision.search(s):
        # "I switched the waits to X": a change made in the code, not a choice to profile.
        return "fact" if narrated else "decision"
    if r.preference.search(s):
        return "preference"
    if narrated:
        # "I set X in Y so the suite behaves the same": a change kept with its reason.
        if r.purpose.search(s) and specifics:
            return "convention"
        return None
    if r.convention.search(s) or (role in ("user", "text") and r.imperative.match(s)):
        return "convention"
    if r.procedure.search(s) and specifics:
        return "command"
    if has_code and r.command_verb.search(s):
        for span in re.findall(CODE_SPAN, s):
            span = span.strip()
            # A known tool, or "word arg ..." with no call syntax: `mkdocs gh-deploy`.
            if r.command_word.match(span) or re.fullmatch(r"[a-z][\w.-]*(?:\s+[-\w./:=@,+]+)+", span):
                return "command"
    # A bare pronoun subject ("It is in utils/", "That runs on 8080") points at
    # something said earlier, so the sentence cannot stand alone.
    anaphoric = re.match(
        r"^(?:it|this|that|they|these|those|which)\s+(?:is|are|was|were|has|have|had|will|would|"
        r"should|can|could|does|do|did|runs?|uses?|lives?|means?|goes|sits?|needs?|holds?|"
        r"reads?|loads?|calls?|points?|happens?|shows?|comes?|fails?|works?)\b",
        low,
    )
    if specifics and r.stative.search(s) and not anaphoric:
        if answers_question and not (has_code or re.search(r"\w/\w|\w\.\w{1,5}\b", s)):
            return None
        return "fact"
    return None

