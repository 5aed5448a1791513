"""Version links of an import: a history must be a chain that ends, never a loop.

An exported record names the version it replaced in ``supersedes``. A file (or a
crafted body) can link records in a loop, ``A -> B -> A``; every row of the loop
then has a newer version, so the memory has no live head, and ``history``, ``get``
and ``purge`` of it would walk in circles. The stores refuse such an import before
anything is written, naming the first record whose chain comes back to itself.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Sequence
from typing import Any

__all__ = ["MAX_LINK_HOPS", "supersede_cycle"]

#: Most stored rows one import check follows: ten times the longest history the
#: import door takes in one request (2,000 records), so a legitimate chain always
#: fits and a crafted one cannot make the check unbounded.
MAX_LINK_HOPS = 20_000


def _key(value: Any) -> str | None:
    if value is None:
        return None
    try:
        return str(uuid.UUID(str(value)))
    except ValueError:
        return None


def supersede_cycle(
    records: Sequence[dict[str, Any]], stored_link: Callable[[str], str | None] | None = None
) -> tuple[int, str] | None:
    """The first record (1-based) whose ``supersedes`` chain loops back, and why; or None.

    Args:
        records: Import records that each passed
            :func:`bli_memory.core.memory.records.record_problem` (ids are UUIDs).
        stored_link: For an id that is not in ``records``: the ``supersedes`` of the
            stored row with that id (None when there is none, or it names nothing), so
            a loop closed through rows imported earlier (another part) is found too.
            Without it, only loops within ``records`` are found.

    Returns:
        ``(record number, reason)``; the reason names up to four ids of the loop.
    """
    links: dict[str, str | None] = {}
    for rec in records:
        key = _key(rec.get("id"))
        if key is not None:
            links[key] = _key(rec.get("supersedes"))
    ends: set[str] = set()  # ids whose chain is known to end
    hops = 0
    for n, rec in enumerate(records, 1):
        path: dict[str, int] = {}
        current = _key(rec.get("id"))
        while current is not None and current not in ends:
            if current in path:
                loop = list(path)[path[current]:]
                if any(i in links for i in loop):
                    shown = " -> ".join([*loop[:4], loop[0] if len(loop) <= 4 else "..."])
                    return n, (f"supersedes makes a loop ({shown}): a version history must end at one "
                               "live version")
                break
            path[current] = len(path)
            if current in links:
                current = links[current]
            elif stored_link is not None and hops < MAX_LINK_HOPS:
                hops += 1
                current = _key(stored_link(current))
            else:
                current = None
        ends.update(path)
    return None
