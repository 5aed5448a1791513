"""An import honours the tombstones of a space, as capture does.

A forget leaves a tombstone so that what was forgotten does not come back
(:mod:`~bli_memory.core.extraction.tombstones`). An import brought it back all the
same when the export held the fact under another id (an older export, another
machine's copy): the id was new, so the record was written, live and searchable.

So both stores' imports ask, before writing, which live records restate a forgotten or
purged memory of their space, by the rule capture applies
(:class:`~bli_memory.core.extraction.tombstones.Forgotten`), and leave them out, with
the older versions of the same memory in the import, and count them in the answer's
``forgotten``. The tombstones are the space's as they were before the import: one that
arrives in the same import does not hide a later, live record of it, since that is
a fact saved again after a forget (an explicit save does that), which the import must
keep. A record whose id the store holds already is skipped as present, not counted here.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING, Any

from bli_memory.core.extraction import tombstones

if TYPE_CHECKING:
    from bli_memory.core.extraction.tombstones import ForgottenSource

__all__ = ["forgotten_records"]


def _key(value: Any) -> str | None:
    try:
        return str(uuid.UUID(str(value))) if value is not None else None
    except ValueError:
        return None


def forgotten_records(backend: ForgottenSource, records: Sequence[dict[str, Any]],
                      candidates: Iterable[int]) -> set[int]:
    """Which import records restate what the space forgot: the store must not write them.

    Args:
        backend: The store imported into (its ``tombstones`` and ``purge_marks``, read
            before anything is written; a store without them forgets nothing).
        records: The import's records, checked and with secrets masked (tombstones hold
            masked text too).
        candidates: Indexes of the records that may be written (not present already).

    Returns:
        Indexes into ``records``: every live record among ``candidates`` that restates a
        tombstone or purge mark of its space and that no other record of the import
        replaces, and the older versions of the import it replaces (each only when
        every record replacing it is left out too).
    """
    allowed = set(candidates)
    successors: dict[str, list[int]] = {}
    by_id: dict[str, int] = {}
    for i, rec in enumerate(records):
        key = _key(rec.get("id"))
        if key is not None:
            by_id[key] = i
        target = _key(rec.get("supersedes"))
        if target is not None:
            successors.setdefault(target, []).append(i)
    heads: dict[str, list[int]] = {}
    for i in sorted(allowed):
        rec = records[i]
        if (rec.get("state") or "active") == "active" and not successors.get(_key(rec.get("id")) or ""):
            heads.setdefault(rec["space"], []).append(i)
    left_out: set[int] = set()
    for space, indexes in heads.items():
        forgotten = tombstones.load(backend, space)
        if len(forgotten):
            left_out.update(i for i in indexes if forgotten.suppresses(records[i]["content"]))
    stack = list(left_out)
    while stack:  # the versions a left-out record replaced, in this import
        j = by_id.get(_key(records[stack.pop()].get("supersedes")) or "")
        if j is None or j in left_out or j not in allowed:
            continue
        if all(k in left_out for k in successors.get(_key(records[j].get("id")) or "", [])):
            left_out.add(j)
            stack.append(j)
    return left_out
