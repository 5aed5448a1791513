"""Tombstones respected by automatic capture: what was forgotten is not captured again.

A forget (``forget_memory``, ``memory forget``) leaves the row in the store with state
``forgotten`` (a tombstone). Automatic capture (:func:`bli_memory.core.extraction.reconcile.distil`,
run by the worker, the daemon, the MCP server's drain and the team service) asks the
backend for the tombstones of the space before it writes anything, and drops a statement
that restates a forgotten memory: it is reported ``unchanged`` with ``suppressed: true``
in the trace, and nothing is written. This holds for an extract job queued before the
forget and for any later capture that says the same thing again.

An explicit ``save_memory`` never comes here: the agent asked for it, so it is saved.

A statement restates a tombstone when, after normalising case and spaces:

- the texts are equal; or
- they have the same polarity, name the same specific values (paths, numbers, names:
  :func:`~bli_memory.core.extraction.statement_terms.specific_terms`), and either the tombstone's subject
  words are nearly all in the statement (:data:`CONTAINED_SHARE`), so a lead-in such as
  "Reminder:" or "As agreed," does not make it new; or, when they name at least one value,
  most of the statement's subject words are in the tombstone (:data:`SHORTER_SHARE`), so
  a shorter restatement ("Reminder: we decided the API port is 8443.") is covered too.

The comparison is lexical on purpose: a tombstone has no vector (a forget drops it), and
re-embedding forgotten text on every capture would cost one embedding per tombstone.

Backends offer the tombstones through an optional method
``tombstones(space, limit) -> list[str]`` (newest first). A backend without it (a
plugin) simply gets no suppression.
"""

from __future__ import annotations

import unicodedata
from typing import Any

from bli_memory.core.extraction.statement_terms import content_terms, negated, specific_terms

__all__ = ["CONTAINED_SHARE", "SHORTER_SHARE", "TOMBSTONE_LIMIT", "fetch", "restates"]

#: Share of the tombstone's subject words that must appear in the statement. "Reminder:
#: we decided the API port is 8443." against "We decided the API port is 8443." is 1.0;
#: a statement about another attribute of the same subject shares less than half.
CONTAINED_SHARE = 0.8

#: Share of a shorter statement's subject words found in a tombstone naming the same values.
SHORTER_SHARE = 0.6

#: Most tombstones compared per capture (newest first); forgets are rare and explicit.
TOMBSTONE_LIMIT = 500


def _norm(text: str) -> str:
    return " ".join(unicodedata.normalize("NFC", text).lower().split()).rstrip(".!")


def fetch(backend: Any, space: str) -> list[str]:
    """The forgotten contents of ``space`` (and its aliases), newest first.

    Args:
        backend: Any memory backend; one without a ``tombstones`` method gives ``[]``.
        space: Container tag.

    Returns:
        Up to :data:`TOMBSTONE_LIMIT` texts.
    """
    method = getattr(backend, "tombstones", None)
    if method is None:
        return []
    return list(method(space, limit=TOMBSTONE_LIMIT))


def restates(statement: str, tombstones: list[str]) -> str | None:
    """The tombstone ``statement`` restates, or None.

    Args:
        statement: An extracted statement, already redacted.
        tombstones: Forgotten contents (see :func:`fetch`).
    """
    if not tombstones:
        return None
    norm = _norm(statement)
    terms = content_terms(statement)
    specifics = specific_terms(statement)
    polarity = negated(statement)
    for old in tombstones:
        if _norm(old) == norm:
            return old
        old_terms = content_terms(old)
        if not old_terms or negated(old) != polarity or specific_terms(old) != specifics:
            continue
        shared = len(old_terms & terms)
        if shared / len(old_terms) >= CONTAINED_SHARE:
            return old
        if specifics and terms and shared / len(terms) >= SHORTER_SHARE:
            return old
    return None
