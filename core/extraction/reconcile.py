"""Reconcile: fold extracted statements into a space without duplicates or silent overwrites.

This module owns :func:`distil`, the one implementation of "extract, then reconcile"
that every worker runs: the embedded worker (:mod:`bli_memory.core.extraction.worker`), the MCP
server's background drain, the daemon and the memory service. It speaks to the store
only through the :class:`~bli_memory.core.memory.backend.MemoryBackend` contract
(``search``, ``save``, ``update``), so it is the same for SQLite and Postgres.

For each statement the extractor returns, the space is searched with the statement
itself and the hits are compared with it. Cosine similarity alone cannot tell a
paraphrase from a contradiction with all-MiniLM-L6-v2 int8 (measured:
"Always run ruff before committing." / "Never run ruff before committing." 0.93;
"The user prefers tabs over spaces." / "...spaces over tabs." 0.97; a true paraphrase,
"Always run ruff before committing." / "Run ruff before every commit.", 0.87), so each
comparison also looks at what the texts *say*: their specific values (paths,
versions, hosts, tool names: :func:`~bli_memory.core.extraction.statement_terms.specific_terms`),
their subject words, their polarity (``never``/``not``) and the direction of a
preference (``X over Y``). Outcomes:

- ``unchanged``: the same text, or a near-duplicate: cosine >= :data:`DUPLICATE_SIMILARITY`,
  or >= :data:`PARAPHRASE_SIMILARITY` with at least half the subject words shared; in
  both cases same polarity, same direction and no specific value the old one lacks.
  Nothing is written; nothing is deleted.
- ``updated``: the statement announces a change ("we moved from npm to pnpm",
  "use X instead of Y", "no longer ...") and a memory at cosine >= :data:`UPDATE_SIMILARITY`
  names the value it leaves behind; or it restates a memory (cosine >=
  :data:`PARAPHRASE_SIMILARITY`) adding detail to it. The old memory is superseded
  through ``update`` and stays in history.
- ``conflicted``: a memory says the opposite (other polarity or direction, cosine >=
  :data:`CONTRADICTION_SIMILARITY`, mostly the same words) or gives another value in
  the same frame ("We deploy to Heroku." / "We deploy to Fly.io.": cosine 0.53, same
  words, different specific values) without any change language to say which is
  current. Both are kept; the new memory carries ``metadata.conflict = true`` and
  ``metadata.conflicts_with = [ids]``.
- ``corrected`` (an update): the same contradiction, but the statement says the old value
  is stale ("the default is now 'all'", "it actually listens on 9443", "changed it to
  X"). The stale memory is superseded and kept as history; the job outcome counts it.
- An update or supersession needs the same subject: a change statement supersedes a
  memory only when, besides the value it leaves, they share a subject word; and never a
  memory that already prefers the value the change moves to, or rejects the one it
  leaves ("We use pnpm 9 (not npm)" is not made stale by "we moved from npm to pnpm";
  "We use npm, not pnpm" is).
- ``added``: everything else.

A statement that restates a forgotten memory (a tombstone) or a purged one (its purge
mark) is reported ``unchanged`` and nothing is written (:mod:`bli_memory.core.extraction.tombstones`).

Thresholds are calibrated on the real model by ``bench/extraction.py`` (numbers in
``docs/benchmarks.md``): paraphrases of one fact score 0.6-0.95, facts sharing
only a topic 0.3-0.6, unrelated text about 0. Secrets are redacted again before
extraction (:func:`bli_memory.core.memory.redaction.redact`; idempotent), and injected
``<bli-memory-*>`` blocks are stripped, so recalled memories are never saved back.
"""

from __future__ import annotations

import re
import time
import unicodedata
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from bli_memory.core.extraction.statements import Extractor, Statement
    from bli_memory.core.memory.backend import MemoryBackend
    from bli_memory.core.models import SearchHit

__all__ = [
    "CONTRADICTION_SIMILARITY",
    "DUPLICATE_SIMILARITY",
    "OUTCOME_KEYS",
    "PARAPHRASE_SIMILARITY",
    "RELATED_SIMILARITY",
    "UPDATE_SIMILARITY",
    "decide",
    "distil",
]

#: Keys of the outcome :func:`distil` returns (and the worker records on the job row).
OUTCOME_KEYS = ("added", "updated", "unchanged", "conflicted", "corrected", "extract_ms", "reconcile_ms")

#: At or above this cosine, same polarity and no new specific value: a duplicate.
DUPLICATE_SIMILARITY = 0.90
#: At or above this cosine, a duplicate when half the subject words are shared too
#: (paraphrases of one fact measured 0.85-0.95).
PARAPHRASE_SIMILARITY = 0.80
#: A change statement supersedes the most similar memory, at least this similar, that
#: names the value it leaves ("The project uses npm." / "We switched the project from
#: npm to pnpm ..." 0.63; "We use npm for package management in this repo." / "We moved
#: from npm to pnpm last week ..." 0.48). Memories that only mention the old value in
#: passing score lower (0.37-0.45 measured) and are left alone.
UPDATE_SIMILARITY = 0.45
#: Opposite polarity or direction counts as a contradiction at or above this cosine.
CONTRADICTION_SIMILARITY = 0.75
#: Below this cosine two memories are unrelated: never merged, superseded or flagged.
RELATED_SIMILARITY = 0.45
#: Share of subject words (Jaccard) that makes two statements "the same frame".
FRAME_OVERLAP = 0.6

#: How many hits are compared with each statement.
SEARCH_LIMIT = 8

_CHANGE = re.compile(
    r"\b(?:(?:switch(?:ed|ing)?|mov(?:e|ed|ing)|migrat(?:e|ed|ing)|chang(?:e|ed|ing)|"
    r"port(?:ed|ing)?|upgrad(?:e|ed|ing)|downgrad(?:e|ed|ing)|went|go(?:ing)?)\b[^.;]{0,60}?\bfrom|"
    r"instead of|rather than|no longer(?: use| uses| using| on| run| runs)?|"
    r"replac(?:e|ed|es|ing)|away from|stopped using|dropp(?:ed|ing)|retir(?:ed|ing)|"
    r"deprecat(?:ed|ing)|not anymore|any ?more)\b",
    re.IGNORECASE,
)
#: "from X" names an old value only after a verb of change ("moved CI from Travis"); in "we
#: get model-2 from dev" it is a source, and the statement changes nothing.
_OLD_VALUE = re.compile(
    r"(?:\b(?:switch(?:ed|ing)?|mov(?:e|ed|ing)|migrat(?:e|ed|ing)|chang(?:e|ed|ing)|port(?:ed|ing)?|"
    r"upgrad(?:e|ed|ing)|downgrad(?:e|ed|ing)|went|go(?:ing)?)\b[^.;]{0,60}?\bfrom|"
    r"\b(?:instead of|rather than|replac(?:e|ed|es|ing)|away from|stopped using|"
    r"dropp(?:ed|ing)|retir(?:ed|ing)|no longer(?: use| uses| using| on| run| runs)?))\s+"
    r"(?:the\s+|our\s+|using\s+)?`?([\w.@/:+#-]+)",
    re.IGNORECASE,
)
#: The value a change moves to: "from npm to pnpm", "switched CI to GitHub Actions".
_NEW_VALUE = re.compile(
    r"\bfrom\s+`?[\w.@/:+#-]+`?\s+to\s+(?:(?:the|our|using|a|an|new)\s+)*`?([\w.@/:+#-]+)"
    r"|\b(?:switch(?:ed|ing)?|mov(?:e|ed|ing)|migrat(?:e|ed|ing)|port(?:ed|ing)?)\b[^.;]{0,40}?\bto\s+"
    r"(?:(?:the|our|using|a|an|new)\s+)*`?([\w.@/:+#-]+)",
    re.IGNORECASE,
)
#: A statement that says the old value is stale: "the default is now 'all'", "it actually
#: runs on 9443", "changed it to all". With a contradiction this supersedes the stale memory.
_CORRECTION = re.compile(
    r"\b(?:(?:is|are|was|were) now|now (?:is|are|uses?|defaults?|runs?|lives?|listens?|points?|goes|"
    r"has|have|returns?|writes?|reads?|starts?)|actually|in fact|correct(?:ed|ion)|(?:changed?|updated?|"
    r"set|switched?|moved?|renamed?) (?:it |this |that |the \w+ )?to|from now on|going forward|"
    r"no longer|not anymore|any ?more|instead)\b|\bnow\s*[.!]?$",
    re.IGNORECASE,
)
_DIRECTION = re.compile(
    r"([\w.@/+#-]+)`?,?\s+\(?(?:over|instead of|rather than|not)\s+`?([\w.@/+#-]+)", re.IGNORECASE
)


@dataclass(frozen=True)
class _Said:
    """What a statement says, for comparison."""

    text: str
    norm: str
    specifics: frozenset[str]
    terms: frozenset[str]
    frame: frozenset[str]
    negated: bool
    change: bool
    correction: bool
    old_values: frozenset[str]
    new_values: frozenset[str]
    preferred: frozenset[str]
    rejected: frozenset[str]


def _normalise(text: str) -> str:
    return " ".join(unicodedata.normalize("NFC", text).lower().split()).rstrip(".!")


def _said(text: str) -> _Said:
    from bli_memory.core.extraction.statement_terms import content_terms, negated, specific_terms

    specifics = specific_terms(text)
    terms = content_terms(text)
    spec_stems = set(content_terms(" ".join(specifics))) | set(specifics)
    old_values = frozenset(m.group(1).lower().rstrip(".,") for m in _OLD_VALUE.finditer(text))
    new_values = frozenset((m.group(1) or m.group(2)).lower().rstrip(".,") for m in _NEW_VALUE.finditer(text))
    preferred: set[str] = set()
    rejected: set[str] = set()
    for m in _DIRECTION.finditer(text):
        preferred.add(m.group(1).lower().rstrip(".,;:"))
        rejected.add(m.group(2).lower().rstrip(".,;:"))
    return _Said(
        text=text,
        norm=_normalise(text),
        specifics=specifics,
        terms=terms,
        frame=frozenset(t for t in terms if t not in spec_stems),
        negated=negated(text),
        change=bool(_CHANGE.search(text)),
        correction=bool(_CORRECTION.search(text)),
        old_values=old_values,
        new_values=new_values - old_values,
        preferred=frozenset(preferred),
        rejected=frozenset(rejected),
    )


def _content_terms(text: str) -> frozenset[str]:
    """Stemmed subject words of ``text``.

    See :func:`~bli_memory.core.extraction.statement_terms.content_terms`.
    """
    from bli_memory.core.extraction.statement_terms import content_terms

    return content_terms(text)


def _jaccard(a: frozenset[str], b: frozenset[str]) -> float:
    if not a and not b:
        return 1.0
    return len(a & b) / len(a | b)


def _swapped(a: _Said, b: _Said) -> bool:
    return bool(a.preferred & b.rejected) or bool(a.rejected & b.preferred)


def _same_meaning(a: _Said, b: _Said, sim: float) -> bool:
    if a.negated != b.negated or _swapped(a, b):
        return False
    if not a.specifics <= b.specifics:
        return False  # the statement names something the memory does not
    if a.change and not b.change and a.old_values:
        return False  # "moved from X to Y" is news even next to "we use Y"
    if sim >= DUPLICATE_SIMILARITY:
        return True
    return sim >= PARAPHRASE_SIMILARITY and _jaccard(a.terms, b.terms) >= 0.5


def _supersedes(a: _Said, b: _Said, sim: float) -> bool:
    """``a`` announces a change away from a value ``b`` states."""
    if not a.change or sim < UPDATE_SIMILARITY:
        return False
    old = a.old_values or (a.rejected)
    if not old & (b.specifics | b.terms):
        return False
    if (a.new_values & b.preferred) or (old & b.rejected):
        return False  # the memory already prefers the new value, or rejects the old: not stale
    # Same subject: besides the value it leaves, the statement shares a subject word with
    # the memory ("CI runs on Travis." / "We moved CI from Travis to ..." share "ci"). A
    # preference that merely says "instead of" something is not an update of every memory
    # that happens to name that thing.
    old_stems = {t for v in old for t in (v, *_content_terms(v))}
    return bool((a.terms & b.terms) - old_stems - a.specifics - b.specifics) or bool(
        (a.specifics & b.specifics) - old)


def _enriches(a: _Said, b: _Said, sim: float) -> bool:
    """``a`` restates ``b`` and adds detail (a reason, a value)."""
    if sim < PARAPHRASE_SIMILARITY or a.negated != b.negated or _swapped(a, b):
        return False
    if not b.specifics <= a.specifics:
        return False
    return (bool(b.specifics) and b.specifics < a.specifics) or (
        b.terms < a.terms and _jaccard(a.terms, b.terms) >= 0.5
    )


def _contradicts(a: _Said, b: _Said, sim: float) -> bool:
    if sim < RELATED_SIMILARITY:
        return False
    overlap = _jaccard(a.terms, b.terms)
    if sim >= CONTRADICTION_SIMILARITY and overlap >= FRAME_OVERLAP:
        if a.negated != b.negated or _swapped(a, b):
            return True
    only_a, only_b = a.specifics - b.specifics, b.specifics - a.specifics
    return bool(only_a and only_b) and _jaccard(a.frame, b.frame) >= FRAME_OVERLAP and bool(a.frame)


def _corrects(a: _Said, b: _Said, sim: float) -> bool:
    """``a`` says ``b``'s value is stale: correction language, the same subject (a shared
    named thing, or half the subject words), another value."""
    if not a.correction or sim < RELATED_SIMILARITY:
        return False
    overlap = _jaccard(a.terms, b.terms)
    if a.negated != b.negated and sim >= CONTRADICTION_SIMILARITY and overlap >= FRAME_OVERLAP:
        return True  # "We no longer run the nightly job." / "We run the nightly job."
    only_a, only_b = a.specifics - b.specifics, b.specifics - a.specifics
    # One value changed ("port 8443" -> "port 9443"); two changed on both sides is another
    # subject ("Service 3 ... 8003" / "Service 4 ... 8004"), left to the conflict rule.
    if not (only_a and only_b) or min(len(only_a), len(only_b)) != 1 or not (a.frame & b.frame):
        return False
    return bool(a.specifics & b.specifics) or _jaccard(a.frame, b.frame) >= 0.5


def decide(statement: str, hits: list[tuple[str, str, float]]) -> tuple[str, list[str]]:
    """Decide what one statement does to a space, from its search hits.

    Args:
        statement: The extracted statement.
        hits: ``(memory id, memory content, cosine similarity)`` of live memories of
            the space, best first.

    Returns:
        ``(action, ids)``: ``("unchanged", [dup_id])``, ``("update", [old_id])``,
        ``("correct", [stale_id])`` (a contradiction that says the old value is stale:
        supersede it), ``("conflict", [ids...])`` or ``("add", [])``.
    """
    a = _said(statement)
    related = [(i, c, s) for i, c, s in hits if s >= RELATED_SIMILARITY]
    for mid, content, _ in hits:
        if _normalise(content) == a.norm:
            return "unchanged", [mid]
    analysed = [(mid, _said(content), sim) for mid, content, sim in related]
    for mid, b, sim in analysed:
        if _same_meaning(a, b, sim):
            return "unchanged", [mid]
    for mid, b, sim in analysed:
        if _supersedes(a, b, sim):
            return "update", [mid]
    for mid, b, sim in analysed:
        if _enriches(a, b, sim):
            return "update", [mid]
    stale = [mid for mid, b, sim in analysed if _corrects(a, b, sim)]
    if stale:
        return "correct", stale[:1]
    conflicts = [mid for mid, b, sim in analysed if _contradicts(a, b, sim)]
    if conflicts:
        return "conflict", conflicts
    return "add", []


def _hits(result_hits: tuple[SearchHit, ...]) -> list[tuple[str, str, float]]:
    out = []
    for h in result_hits:
        sim = h.similarity if h.similarity is not None else 0.0
        out.append((h.memory.id, h.memory.content, float(sim)))
    out.sort(key=lambda t: -t[2])
    return out


def distil(
    text: str,
    *,
    backend: MemoryBackend,
    space: str,
    source: str,
    session_id: str | None,
    extractor: Extractor | None = None,
    trace: list[dict[str, Any]] | None = None,
    report: dict[str, Any] | None = None,
) -> dict[str, int]:
    """Extract durable statements from ``text`` and reconcile them with the space.

    Args:
        text: Raw text: an exchange (``User: ...\\n\\nAssistant: ...``) or notes.
        backend: The :class:`~bli_memory.core.memory.backend.MemoryBackend` written to
            (``search``, ``save``, ``update``, and the forgotten reads of capture).
        space: Container tag to reconcile against and write to.
        source: Recorded as each new memory's ``source`` (``hook:claude``, ``mcp``, ...).
        session_id: The host session the text came from, when known.
        extractor: An :class:`~bli_memory.core.extraction.statements.Extractor`; default:
            :func:`~bli_memory.core.extraction.extractors.get_extractor`.
        trace: When a list is given, one dict per statement is appended:
            ``{"text", "kind", "action", "id", "related"}`` (tests, benchmarks).
        report: When a dict is given and the extractor reports on its run
            (``extract_reported``, the ``host`` extractor), that report is merged into it.

    Returns:
        ``{"added", "updated", "unchanged", "conflicted", "corrected", "extract_ms",
        "reconcile_ms"}``: counts of statements per outcome (``corrected`` counts the
        updates that replaced a contradicting, stale memory; they are in ``updated`` too,
        and the stale text stays in the memory's history) and the milliseconds spent
        extracting and reconciling.

    Raises:
        BliMemoryError: the extractor or the backend failed; statements reconciled
            before the failure stay written (a retry finds them ``unchanged``).
    """
    from bli_memory.core.errors import NotFoundError
    from bli_memory.core.extraction.injected import strip_captured
    from bli_memory.core.extraction.outdated import outdated_memory
    from bli_memory.core.memory.redaction import redact

    counts = {"added": 0, "updated": 0, "unchanged": 0, "conflicted": 0, "corrected": 0}
    t0 = time.perf_counter()
    clean = redact(strip_captured(text or "")).text
    if extractor is None:
        from bli_memory.core.extraction.extractors import get_extractor

        extractor = get_extractor()
    statements: list[Statement] = []
    if clean.strip():
        reported = getattr(extractor, "extract_reported", None)
        if reported is not None:
            found, said = reported(clean)
            statements = list(found)
            if report is not None:
                report.update(said)
        else:
            statements = list(extractor.extract(clean))
    t1 = time.perf_counter()
    name = getattr(extractor, "name", type(extractor).__name__)
    from bli_memory.core.extraction import tombstones
    from bli_memory.core.extraction.durability import tells_a_masked_secret
    from bli_memory.core.extraction.rephrase import home_to_tilde

    forgotten = tombstones.load(backend, space) if statements else tombstones.Forgotten([], [])
    for st in statements:
        content = home_to_tilde(redact(st.text).text.strip())  # any extractor: no home paths kept
        if not content or tells_a_masked_secret(content):  # a secret's value, which is not kept
            continue
        if forgotten.suppresses(content):
            counts["unchanged"] += 1  # forgotten on purpose: capture never brings it back
            if trace is not None:
                trace.append({"text": content, "kind": st.kind, "action": "unchanged", "id": None,
                              "related": [], "suppressed": True})
            continue
        result = backend.search(content, space=space, limit=SEARCH_LIMIT)
        near = _hits(result.hits)
        action, ids = decide(content, near)
        if action in ("add", "conflict") and st.outdates:
            claim = _hits(backend.search(st.outdates, space=space, limit=3).hits)
            stale = outdated_memory(st, content, claim, near)
            if stale is not None:
                action, ids = "correct", [stale]
        metadata: dict[str, Any] = {"kind": st.kind, "extracted": True, "extractor": name}
        memory_id: str | None = ids[0] if ids else None
        if action == "unchanged":
            counts["unchanged"] += 1
        elif action in ("update", "correct"):
            try:
                memory_id = backend.update(content, space=space, id=ids[0]).memory.id
                counts["updated"] += 1
                counts["corrected"] += action == "correct"
            except NotFoundError:  # another writer superseded it meanwhile: keep ours as new
                action = "add"
        if action in ("add", "conflict"):
            if action == "conflict":
                metadata.update({"conflict": True, "conflicts_with": ids})
            saved = backend.save(
                content, space=space, metadata=metadata, source=source, session_id=session_id
            )
            memory_id = saved.memory.id if saved.memory else None
            if saved.status == "duplicate":
                action = "unchanged"
                counts["unchanged"] += 1
            elif action == "conflict":
                counts["conflicted"] += 1
            else:
                counts["added"] += 1
        if trace is not None:
            trace.append(
                {"text": content, "kind": st.kind, "action": action, "id": memory_id, "related": ids}
            )
    t2 = time.perf_counter()
    return {
        **counts,
        "extract_ms": int(round((t1 - t0) * 1000)),
        "reconcile_ms": int(round((t2 - t1) * 1000)),
    }
