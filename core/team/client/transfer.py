"""Export and import through the team service: pages in, parts out.

An export comes back page by page (:func:`export_pages`). The service takes at most 2,000
records and 16 MB in one ``POST /api/memory/import``; the client
(:meth:`~bli_memory.core.team.client.remote.RemoteBackend.import_records`) sends smaller
parts (:func:`import_bodies`), each checked by the service (``dryRun``) before the first
is written.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Callable, Iterator
from typing import Any

from bli_memory.core.errors import InvalidInputError, ServiceError
from bli_memory.core.team.client.service_client import BULK_TIMEOUT_S, parsed

__all__ = ["IMPORT_PART_BYTES", "IMPORT_PART_RECORDS", "export_pages", "import_bodies"]

#: Most records and bytes of JSON in one ``POST /api/memory/import`` (the service takes
#: up to 2,000 records and 16 MB).
IMPORT_PART_RECORDS = 500
IMPORT_PART_BYTES = 4 * 1024 * 1024


def export_pages(call: Callable[..., dict[str, Any]], space: str | None) -> Iterator[dict[str, Any]]:
    """The rows of ``POST /api/memory/export``, page after page, each page asked for when the
    previous one is used up.

    Args:
        call: ``(method, path, body, timeout=...) -> answer`` of the client.
        space: Only this space (and its aliases); None: every space of the person.

    Raises:
        ServiceError: ``bad_response`` when a page's cursor does not move on.
    """
    after: str | None = None
    while True:
        body: dict[str, Any] = {}
        if space is not None:
            body["containerTag"] = space
        if after is not None:
            body["after"] = after
        data = call("POST", "/api/memory/export", body, timeout=BULK_TIMEOUT_S)
        records, following = parsed(lambda d: ([dict(r) for r in d["records"]], d.get("next")), data)
        yield from records
        if following is None:
            return
        if not isinstance(following, str) or following == after:
            raise ServiceError("the memory service answered with an unexpected export page",
                               reason="bad_response")
        after = following


def _uuid_key(value: Any) -> str:
    """The canonical form of a UUID string (as the service compares them), else the string."""
    try:
        return str(uuid.UUID(str(value)))
    except ValueError:
        return str(value)


def import_bodies(records: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The request bodies of an import: ``[{"records", "offset"[, "chainIds"]}, ...]``.

    Every record is checked first, as the embedded import does, and the whole file's
    links across records (:func:`~bli_memory.core.memory.records.records_problem`): each
    part's dry run sees only itself and what is stored. A part names the ids of other
    parts its records supersede (``chainIds``), so a long history may span parts.

    Raises:
        InvalidInputError: naming the first bad record (1-based) and what is wrong.
    """
    from bli_memory.core.memory.records import record_problem, records_problem

    parts: list[tuple[int, list[dict[str, Any]]]] = []
    start, size = 0, 0
    for i, record in enumerate(records):
        try:
            problem = record_problem(record)
            n = 0 if problem else len(json.dumps(record, ensure_ascii=False).encode("utf-8")) + 1
        except RecursionError:
            problem = "metadata is nested too deeply"
        except (TypeError, ValueError) as exc:  # not JSON, or not Unicode text
            problem = f"cannot be sent as JSON ({type(exc).__name__})"
        if problem:
            raise InvalidInputError(f"record {i + 1}: {problem}; nothing was imported")
        if i > start and (i - start >= IMPORT_PART_RECORDS or size + n > IMPORT_PART_BYTES):
            parts.append((start, records[start:i]))
            start, size = i, 0
        size += n
    if records:
        parts.append((start, records[start:]))
    found = records_problem(records)
    if found:
        raise InvalidInputError(f"record {found[0]}: {found[1]}; nothing was imported")
    bodies: list[dict[str, Any]] = [{"records": part, "offset": offset} for offset, part in parts]
    if len(parts) > 1:
        # A version may supersede a record of another part: name those ids, so the
        # service accepts the link before that part is written (and only then).
        every = {_uuid_key(r.get("id")) for r in records}
        for body in bodies:
            here = {_uuid_key(r.get("id")) for r in body["records"]}
            linked = {_uuid_key(r["supersedes"]) for r in body["records"] if r.get("supersedes") is not None}
            if linked - here:
                body["chainIds"] = sorted((linked - here) & every)
    return bodies
