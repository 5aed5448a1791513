"""Tombstones respected by automatic capture: what was forgotten is not captured again.

A forget (``forget_memory``, ``memory forget``) leaves the row in the store with state
``forgotten`` (a tombstone). Automatic capture (:func:`bli_memory.core.extraction.reconcile.distil`,
run by the worker, the daemon, the MCP server's drain and the team service) asks the
backend for the tombstones of the space before it writes anything, and drops a statement
that restates a forgotten memory: it is reported ``unchanged`` with ``suppressed: true``
in the trace, and nothing is written. This holds for an extract job queued before the
forget and for any later capture that says the same thing again.

An explicit ``save_memory`` never comes here: the agent asked for it, so it is saved.
An import does (:mod:`~bli_memory.core.extraction.forgotten_imports`): a live record
that restates a forgotten memory of its space is left out.

A statement restates a tombstone when, after making their surface forms one (case,
spaces, numbers: ``8,443``, ``8_443``, ``8.443``, ``8 443``, ``8\u202f443``, ``8443.0`` and
``8443/tcp`` are 8443, while ``8.4`` and ``84``, ``1.2.3`` and ``123``, ``Python 3.120``
and ``3120`` or ``1.250 ms`` and ``1,250 ms`` stay apart, by the rules of
:mod:`~bli_memory.core.extraction.number_forms`; full-width and other compatibility
characters by NFKC; typographic quotes):

- the texts are equal; or
- they have the same polarity, name the same specific values (paths, numbers, names:
  :func:`~bli_memory.core.extraction.statement_terms.specific_terms`; a value one of them
  names only by its case, ``PORT`` shouted or ``Staging`` capitalised, is the same value
  when the other writes that word), and either the tombstone's subject
  words are nearly all in the statement (:data:`CONTAINED_SHARE`), so a lead-in such as
  "Reminder:" or "As agreed," does not make it new; or, when they name at least one value,
  most of the statement's subject words are in the tombstone (:data:`SHORTER_SHARE`), so
  a shorter restatement ("Reminder: we decided the API port is 8443.") is covered too;
- and neither names a subject word *in place of* one of the other's: when each has a
  subject word the other lacks, they are two facts that share a value, not one fact said
  twice. "The production port is 8443." and "The metrics port is 8443." are new beside a
  forgotten "The staging port is 8443.", as "The production database is Postgres 16." is
  beside "The staging database is Postgres 16.", though two of their three subject words
  are the same (0.67 passes :data:`SHORTER_SHARE`). A restatement in the same words, in
  another order, case or grouping, one that only adds words (detail: "... for the load
  balancer") and one that only drops some (shorter) stay suppressed. The words by which a
  speaker frames a statement rather than say what it is about (:data:`FRAMING_WORDS`:
  "Reminder:", "we decided", "as agreed") are not subject words here, so "Reminder: the
  staging port is 8443." still restates "We decided staging uses port 8443.".

  The cost: a restatement that swaps one word for a synonym ("the API *serves* on port
  8443" for "*listens* on") reads as another fact and is captured again. Of the two
  errors, that one shows (the memory is back, and can be forgotten again), while a
  different fact suppressed by mistake is lost without a trace, so the rule takes it.

The comparison is lexical on purpose: a tombstone has no vector (a forget drops it), and
re-embedding forgotten text on every capture would cost one embedding per tombstone.

A purge (``memory purge``) erases the text itself, so it leaves a *purge mark* instead
(:func:`fingerprint`): the same four things the rule compares (the normalised text, the
subject words, the specific values, the polarity), each word as a keyed BLAKE2b hash
with a random salt of its own. The rule runs unchanged on the hashes
(:func:`restates_mark`), so a purged fact restated in other words is suppressed like a
forgotten one, while the mark cannot be read back. It can confirm a guess: whoever holds
the store file and guesses a word or the whole sentence can check it against the mark.

Backends offer the tombstones through an optional method
``tombstones(space, limit) -> list[str]`` (newest first) and the purge marks through
``purge_marks(space, limit) -> list[dict]`` (newest first); capture asks for all of them
(``limit=None``) and checks each statement against every one (:class:`Forgotten`). A
backend without them (a plugin) simply gets no suppression.
"""

from __future__ import annotations

import hashlib
import os
import re
import unicodedata
from collections.abc import Callable
from dataclasses import dataclass
from functools import partial
from typing import Any, Protocol

from bli_memory.core.extraction.number_forms import plain_numbers
from bli_memory.core.extraction.statement_terms import content_terms, negated, specific_terms

__all__ = [
    "CONTAINED_SHARE",
    "FRAMING_WORDS",
    "SHORTER_SHARE",
    "TOMBSTONE_LIMIT",
    "Forgotten",
    "ForgottenSource",
    "fetch",
    "fetch_marks",
    "fingerprint",
    "load",
    "restates",
    "restates_mark",
]

#: Share of the tombstone's subject words that must appear in the statement. "Reminder:
#: we decided the API port is 8443." against "We decided the API port is 8443." is 1.0;
#: a statement about another attribute of the same subject shares less than half.
CONTAINED_SHARE = 0.8

#: Share of a shorter statement's subject words found in a tombstone naming the same values.
SHORTER_SHARE = 0.6

#: Words that frame a statement instead of saying what it is about, as stems
#: (:func:`~bli_memory.core.extraction.statement_terms.content_terms`): the words of the
#: capture cues that ask for a memory or report a decision (core/extraction/patterns.py:
#: ``remember``, ``filler``, ``decision``, ``acknowledgement``) and their kin ("reminder",
#: "confirmed"). A word only one of two statements has among these does not make them two
#: facts (:func:`_same`).
FRAMING_WORDS = content_terms(
    "remember remembered reminder remind reminded note noted fyi important decided decide "
    "decision agreed agree chose chosen picked settled opted confirm confirmed")

#: Newest tombstones (and, apart, purge marks) compared in full with every statement;
#: older ones are compared when they hold the statement's values (:class:`Forgotten`).
TOMBSTONE_LIMIT = 500


#: Typographic quotes written as the plain ones (``don\u2019t`` is ``don't``, a negation).
_QUOTES = str.maketrans({"\u2018": "'", "\u2019": "'", "\u02bc": "'", "\u201c": '"', "\u201d": '"'})


def _surface(text: str) -> str:
    """``text`` with its surface forms made one: compatibility characters (NFKC: full-width
    digits, ligatures), typographic quotes and numbers
    (:func:`~bli_memory.core.extraction.number_forms.plain_numbers`)."""
    if not text.isascii():  # else nothing for NFKC or the quotes to change
        text = unicodedata.normalize("NFKC", text).translate(_QUOTES)
    return plain_numbers(text)


def _legacy_surface(text: str) -> str:
    """:func:`_surface` as purge marks made before dot and plain-space grouping read it.

    Such a mark holds hashes of ``8 443`` or ``8.443`` as written, so a restatement is
    also compared in that form (:meth:`Forgotten.suppresses`)."""
    group = r"(?<=\d)[,_'\u00a0\u2009\u202f](?=\d{3}(?!\d))"
    if text.isascii():
        return re.sub(group, "", text)
    text = re.sub(group, "", text)
    return re.sub(group, "", unicodedata.normalize("NFKC", text).translate(_QUOTES))


def _norm(text: str, surface: Callable[[str], str] = _surface) -> str:
    """The form two texts are equal in: :func:`_surface`, lower case, one space, no final stop."""
    return " ".join(surface(text).lower().split()).rstrip(".!")


#: A word of a statement as :mod:`~bli_memory.core.extraction.statement_terms` reads one.
_WORD = r"[a-z0-9][a-z0-9_.:/@+#-]*[a-z0-9+#]|[a-z0-9]"


@dataclass(frozen=True)
class _Said:
    """What a statement says, in the form the rule compares (words, or their hashes).

    ``forms`` is every word it writes, lower case, and its specific values: a value the
    other statement names only through case (``PORT`` shouted, ``Staging`` capitalised
    mid-sentence) is a word this one writes too, so it is no other value.
    """

    norm: str
    terms: frozenset[str]
    specifics: frozenset[str]
    negated: bool
    forms: frozenset[str]


def _said(text: str, surface: Callable[[str], str] = _surface) -> _Said:
    plain = surface(text)
    specifics = specific_terms(plain)
    forms = frozenset(re.findall(_WORD, plain.lower())) | specifics
    return _Said(_norm(text, surface), content_terms(plain), specifics, negated(plain), forms)


def _hash(salt: bytes, word: str) -> str:
    return hashlib.blake2b(word.encode("utf-8", "surrogatepass"), key=salt, digest_size=8).hexdigest()


def _hashed(said: _Said, salt: bytes) -> _Said:
    def each(words: frozenset[str]) -> frozenset[str]:
        return frozenset(_hash(salt, w) for w in words)

    return _Said(_hash(salt, said.norm), each(said.terms), each(said.specifics), said.negated,
                 each(said.forms))


def _same_values(new: _Said, old: _Said) -> bool:
    """Both name the same specific values, a value written in another case included."""
    return new.specifics - old.specifics <= old.forms and old.specifics - new.specifics <= new.forms


def _same(new: _Said, old: _Said, framing: Callable[[], frozenset[str]] = lambda: FRAMING_WORDS) -> bool:
    """The rule of the module docstring: ``new`` restates ``old``.

    ``framing`` gives :data:`FRAMING_WORDS` in the form of the two (their hashes, for a
    mark), asked for only when each has a word the other lacks.
    """
    if old.norm == new.norm:
        return True
    if not old.terms or old.negated != new.negated or not _same_values(new, old):
        return False
    only_new, only_old = new.terms - old.terms, old.terms - new.terms
    if only_new and only_old and only_new - framing() and only_old - framing():
        return False  # a subject word in place of another: another fact with the same value
    shared = len(old.terms & new.terms)
    if shared / len(old.terms) >= CONTAINED_SHARE:
        return True
    return bool(new.specifics and new.terms and shared / len(new.terms) >= SHORTER_SHARE)


class ForgottenSource(Protocol):
    """What capture and import read of a store to leave forgotten memories out: the two
    reads of :class:`~bli_memory.core.memory.backend.MemoryBackend` that say what a space
    forgot."""

    def tombstones(self, space: str, *, limit: int | None = 500) -> list[str]:
        """Forgotten contents, newest first."""
        ...

    def purge_marks(self, space: str, *, limit: int | None = 500) -> list[dict[str, Any]]:
        """Purge marks, newest first."""
        ...


def fetch(backend: ForgottenSource, space: str) -> list[str]:
    """Every forgotten content of ``space`` (and its aliases), newest first
    (:meth:`~bli_memory.core.memory.backend.MemoryBackend.tombstones`)."""
    return list(backend.tombstones(space, limit=None))


def fetch_marks(backend: ForgottenSource, space: str) -> list[dict[str, Any]]:
    """Every purge mark of ``space`` (and its aliases), newest first (:func:`fingerprint`,
    :meth:`~bli_memory.core.memory.backend.MemoryBackend.purge_marks`)."""
    return list(backend.purge_marks(space, limit=None))


def load(backend: ForgottenSource, space: str) -> Forgotten:
    """What capture must not write again in ``space``: its tombstones and purge marks.

    One read of each per capture (:func:`fetch`, :func:`fetch_marks`), then
    :meth:`Forgotten.suppresses` per statement.
    """
    return Forgotten(fetch(backend, space), fetch_marks(backend, space))


class Forgotten:
    """Every tombstone and purge mark of a space, checked completely and cheaply.

    Each statement is compared with all of them, however many (an old forget sticks
    however many came after it):

    - equal texts (after :func:`_norm`) by one set lookup over every tombstone, and one
      keyed hash per purge mark;
    - the rest of the rule with the newest :data:`TOMBSTONE_LIMIT` of each, and with
      every older one that holds each specific value the statement names (a substring
      test on its normalised text; for a mark, one keyed hash per value). The rule
      needs those values in both, so this finds every tombstone the rule would: only a
      statement naming no value is compared with the window alone, past its exact text.

    A tombstone or mark is parsed once per capture, when first compared. Cost at 10,000
    tombstones and 10,000 purge marks (``bench/tombstones.py``, one run on the 2-core CI
    machine under load, medians): reading every tombstone of an embedded store 103 ms,
    building the check 48 ms, then 36 to 281 ms a statement, no more than the newest 500
    alone cost before in the same run (196 to 301 ms a statement, each tombstone parsed
    again). Capture runs in the worker and the daemon, never on the prompt path.

    Args:
        texts: Forgotten contents, newest first (:func:`fetch`).
        marks: Purge marks, newest first (:func:`fetch_marks`); a mark not of the
            :func:`fingerprint` shape is ignored.
    """

    def __init__(self, texts: list[str], marks: list[dict[str, Any]]) -> None:
        self._texts = texts
        self._norms = [_norm(t) for t in texts]
        self._exact = set(self._norms)
        self._parsed: dict[int, _Said] = {}
        self._marks: list[tuple[bytes, dict[str, Any]]] = []
        self._parsed_marks: dict[int, _Said | None] = {}
        self._mark_framing: dict[int, frozenset[str]] = {}  # FRAMING_WORDS in a mark's hashes
        for mark in marks:
            try:
                salt = bytes.fromhex(mark["salt"])
            except (KeyError, TypeError, ValueError, AttributeError):
                continue
            if len(salt) == 16 and isinstance(mark.get("norm"), str):
                self._marks.append((salt, mark))

    def __len__(self) -> int:
        return len(self._texts) + len(self._marks)

    def suppresses(self, statement: str) -> bool:
        """True when ``statement`` restates a forgotten or purged memory of the space."""
        if not self._texts and not self._marks:
            return False
        new = _said(statement)
        if self._restates_text(new) or self._restates_mark(new):
            return True
        if not self._marks:
            return False
        # Marks made before this release's number rules hold hashes of that form.
        if _legacy_surface(statement) == _surface(statement):
            return False
        return self._restates_mark(_said(statement, _legacy_surface), older_only=True)

    def _restates_text(self, new: _Said) -> bool:
        if new.norm in self._exact:
            return True
        values = [" ".join(v.split()) for v in new.specifics]
        for i, norm in enumerate(self._norms):
            if i >= TOMBSTONE_LIMIT and not (values and all(v in norm for v in values)):
                continue
            old = self._parsed.get(i)
            if old is None:
                old = self._parsed[i] = _said(self._texts[i])
            if _same(new, old):
                return True
        return False

    def _mark(self, i: int) -> _Said | None:
        if i not in self._parsed_marks:
            mark = self._marks[i][1]
            try:
                terms, specifics = frozenset(mark["terms"]), frozenset(mark["specifics"])
                self._parsed_marks[i] = _Said(mark["norm"], terms, specifics, bool(mark["negated"]),
                                              frozenset(mark.get("forms") or terms | specifics))
            except (KeyError, TypeError):
                self._parsed_marks[i] = None
        return self._parsed_marks[i]

    def _framing(self, i: int, salt: bytes) -> frozenset[str]:
        """:data:`FRAMING_WORDS` as mark ``i`` holds words, hashed once per capture."""
        if i not in self._mark_framing:
            self._mark_framing[i] = frozenset(_hash(salt, w) for w in FRAMING_WORDS)
        return self._mark_framing[i]

    def _restates_mark(self, new: _Said, *, older_only: bool = False) -> bool:
        """``older_only``: only the marks made by older rules than :data:`_MARK_RULES`."""
        for i, (salt, mark) in enumerate(self._marks):
            if older_only and mark.get("rules") == _MARK_RULES:
                continue
            if _hash(salt, new.norm) == mark["norm"]:
                return True
            if i >= TOMBSTONE_LIMIT:
                if not new.specifics:
                    continue
                forms = mark.get("forms") or [*mark.get("terms", ()), *mark.get("specifics", ())]
                if not isinstance(forms, list) or not all(_hash(salt, v) in forms for v in new.specifics):
                    continue
            old = self._mark(i)
            if old is not None and _same(_hashed(new, salt), old, partial(self._framing, i, salt)):
                return True
        return False


#: The rules a purge mark is made by (its ``rules``): :func:`_surface` as it is now. A mark
#: without it was made by older ones, and a restatement is also compared with it in the
#: forms those read (:meth:`Forgotten.suppresses`).
_MARK_RULES = 2


def fingerprint(text: str) -> dict[str, Any]:
    """The purge mark of ``text``: enough to recognise a restatement, no text.

    Returns:
        JSON-ready ``{"salt": 32 hex, "norm": 16 hex, "terms": [16 hex, ...],
        "specifics": [16 hex, ...], "forms": [16 hex, ...], "negated": bool, "rules": 2}``;
        each hash is BLAKE2b (8 bytes) keyed with the random salt, so two marks of one word
        differ. A mark made before ``forms`` was kept reads its terms and values as its
        forms; one without ``rules`` was made by older rules (:data:`_MARK_RULES`).
    """
    salt = os.urandom(16)
    said = _hashed(_said(text), salt)
    return {"salt": salt.hex(), "norm": said.norm, "terms": sorted(said.terms),
            "specifics": sorted(said.specifics), "forms": sorted(said.forms), "negated": said.negated,
            "rules": _MARK_RULES}


def restates(statement: str, tombstones: list[str]) -> str | None:
    """The tombstone ``statement`` restates, or None.

    Args:
        statement: An extracted statement, already redacted.
        tombstones: Forgotten contents (see :func:`fetch`).
    """
    if not tombstones:
        return None
    new = _said(statement)
    for old in tombstones:
        if _same(new, _said(old)):
            return old
    return None


def restates_mark(statement: str, marks: list[dict[str, Any]]) -> bool:
    """True when ``statement`` restates a purged memory (see :func:`fetch_marks`).

    A mark that is not of the :func:`fingerprint` shape is ignored.
    """
    return Forgotten([], marks).suppresses(statement)
