"""The export record format: what ``memory export`` writes and ``memory import`` accepts.

One JSON object per line (JSON Lines), one per stored version, tombstones included:
``id``, ``space``, ``content``, ``customId``, ``metadata``, ``source``, ``sessionId``,
``createdAt``, ``updatedAt``, ``version``, ``supersedes``, ``state``, ``forgottenAt``,
``expiresAt``, and the vector as base64 little-endian float32 with ``embeddingModel``.

The embedded store (:mod:`bli_memory.core.embedded.engine`), the Postgres store
(:mod:`bli_memory.core.team.postgres.store`) and the service client
(:mod:`bli_memory.core.team.client.remote`)
check records with these functions, so a file one of them accepts the others accept
too, and a store that imports cleanly can move to the service. Standard library only,
numpy for :func:`usable_vector`.
"""

from __future__ import annotations

import json
import re
import uuid
from datetime import UTC, datetime
from typing import Any

from bli_memory.core.memory.storable_text import MAX_METADATA_DEPTH, shown_value, text_problem

__all__ = [
    "MAX_KEY_CHARS",
    "MAX_METADATA_BYTES",
    "MAX_METADATA_DEPTH",
    "MAX_VERSION",
    "check_key_lengths",
    "key_problem",
    "metadata_problem",
    "normalise_time",
    "parse_time",
    "record_problem",
    "records_problem",
    "text_problem",
    "usable_vector",
]

#: Highest version number a record may carry (a 32-bit integer, as Postgres stores it).
MAX_VERSION = 2**31 - 1
#: Longest ``customId``, ``sessionId`` and ``source`` (Postgres indexes them; a key of
#: kilobytes does not fit an index entry). Every store refuses a longer one on a save
#: and on an import (:func:`key_problem`), so an export of one store imports into any other.
MAX_KEY_CHARS = 512

_TIME = re.compile(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}Z")


def parse_time(value: str) -> datetime:
    """A record time (``2026-11-30T04:57:01.123456Z``, the only form stores write) as UTC.

    Raises:
        ValueError: any other form.
    """
    # strptime alone takes 2026-1-3T4:5:6.1Z too; stores compare these times as text.
    if not isinstance(value, str) or not _TIME.fullmatch(value):
        raise ValueError(f"{value!r} is not of the form 2026-11-30T04:57:01.123456Z")
    return datetime.strptime(value, "%Y-%m-%dT%H:%M:%S.%fZ").replace(tzinfo=UTC)


def normalise_time(value: str) -> str:
    """Any ISO 8601 date or time as the stores' UTC form (``...T04:57:01.123456Z``).

    A time without a zone is taken as UTC; a date alone is its midnight UTC.

    Raises:
        ValueError: not a usable ISO 8601 date or time.
    """
    try:
        when = datetime.fromisoformat(value.strip().replace("Z", "+00:00"))
        if when.tzinfo is None:
            when = when.replace(tzinfo=UTC)
        # isoformat, not strftime: glibc's %Y writes year 1 as "1", not "0001".
        return when.astimezone(UTC).replace(tzinfo=None).isoformat(timespec="microseconds") + "Z"
    except (ValueError, OverflowError, AttributeError) as exc:
        raise ValueError(f"{value!r} is not a usable ISO 8601 date or time") from exc


def key_problem(fields: dict[str, Any]) -> str | None:
    """Why one of ``fields`` is too long for every store, or None.

    Args:
        fields: Wire names (``customId``, ``sessionId``, ``source``) to their values;
            a value that is not a string is left to the other checks.

    Returns:
        ``"customId is longer than 512 characters"`` for the first too long, or None.
    """
    for name, value in fields.items():
        if isinstance(value, str) and len(value) > MAX_KEY_CHARS:
            return f"{name} is longer than {MAX_KEY_CHARS} characters"
    return None



def check_key_lengths(fields: dict[str, Any], *, nothing: str = "written") -> None:
    """Refuse the first of ``fields`` longer than every store keeps (:func:`key_problem`),
    before any work is done, without repeating its value.

    Args:
        fields: Wire names to values, as :func:`key_problem` takes them.
        nothing: What the message says was not done ("written", "queued", "recorded").

    Raises:
        InvalidInputError: ``"customId is longer than 512 characters; nothing was written"``.
    """
    from bli_memory.core.errors import InvalidInputError

    problem = key_problem(fields)
    if problem:
        raise InvalidInputError(f"{problem}; nothing was {nothing}")

def record_problem(rec: Any) -> str | None:
    """Why an exported record cannot be imported, or None when it can.

    The one check of the JSON Lines export format (``bli-memory-mcp memory export``),
    shared by the embedded engine, the Postgres store and the service client.

    Args:
        rec: One decoded JSON Lines record.

    Returns:
        A short reason naming the field (``"createdAt is missing or not a non-empty
        string"``), or None.
    """
    from bli_memory.core.memory.retrieval_writes import MAX_CONTENT_CHARS
    from bli_memory.core.memory.spaces import validate_tag

    if not isinstance(rec, dict):
        return "not a JSON object"
    for key in ("id", "space", "content", "createdAt", "updatedAt"):
        if not isinstance(rec.get(key), str) or not rec[key].strip():
            return f"{key} is missing or not a non-empty string"
    try:
        validate_tag(rec["space"])
    except ValueError as exc:
        return f"space: {exc}"
    for key in ("createdAt", "updatedAt", "forgottenAt", "expiresAt"):
        value = rec.get(key)
        if value is None:
            continue
        try:
            parse_time(value)
        except (TypeError, ValueError):
            return f"{key} {shown_value(value)} is not a time of the form 2026-11-30T04:57:01.123456Z"
    version = rec.get("version", 1)
    if not isinstance(version, int) or isinstance(version, bool) or not 1 <= version <= MAX_VERSION:
        return f"version must be an integer from 1 to {MAX_VERSION}"
    if len(rec["content"]) > MAX_CONTENT_CHARS:
        return f"content is {len(rec['content'])} characters; the limit is {MAX_CONTENT_CHARS}"
    if rec.get("state", "active") not in ("active", "superseded", "forgotten"):
        return "state must be active, superseded or forgotten"
    problem = metadata_problem(rec.get("metadata"))
    if problem:
        return problem
    for key in ("customId", "supersedes", "sessionId", "source", "embedding", "embeddingModel"):
        if rec.get(key) is not None and not isinstance(rec[key], str):
            return f"{key} must be a string or null"
    problem = key_problem({key: rec.get(key) for key in ("customId", "sessionId", "source")})
    if problem:
        return problem
    for key in ("id", "supersedes"):
        if rec.get(key) is not None and not _is_uuid(rec[key]):
            return f"{key} {shown_value(rec[key])} is not a UUID in its lowercase dashed form"
    if rec.get("supersedes") is not None and _is_uuid(rec["supersedes"]) and (
        uuid.UUID(rec["supersedes"]) == uuid.UUID(rec["id"])
    ):
        return "supersedes names the record itself"
    for key, value in rec.items():
        problem = text_problem(value)
        if problem:
            return f"{key} {problem}"
    return None


def _is_uuid(value: str) -> bool:
    """True for a UUID in its canonical form (lowercase, dashed), the only form stores
    write; stores compare ids as text, so ``ABC...`` and ``abc...`` must not both pass."""
    try:
        return str(uuid.UUID(value)) == value
    except (ValueError, TypeError, AttributeError):
        return False


def records_problem(records: list[dict[str, Any]]) -> tuple[int, str] | None:
    """What makes a whole import file unusable, as ``(1-based record, reason)``, or None.

    Checks across records, after each passed :func:`record_problem`: an id given twice,
    a customId that two live records of one space share (only one can be live), and
    ``supersedes`` links that loop (:func:`bli_memory.core.memory.import_links.supersede_cycle`). Run
    before anything is written, also by the service client before it sends the first
    of several parts, so a problem in a late part never leaves the early ones written.
    """
    ids: dict[uuid.UUID, int] = {}
    live: dict[tuple[str, str], int] = {}
    for n, rec in enumerate(records, 1):
        key = uuid.UUID(rec["id"])
        if key in ids:
            return n, f"id {rec['id']} is also record {ids[key]}"
        ids[key] = n
        if (rec.get("state") or "active") == "active" and rec.get("customId") is not None:
            slot = (rec["space"], rec["customId"])
            if slot in live:
                return n, (f"customId {shown_value(rec['customId'])} is live twice in space {rec['space']} "
                           f"(record {live[slot]})")
            live[slot] = n
    from bli_memory.core.memory.import_links import supersede_cycle

    return supersede_cycle(records)


#: Largest metadata, in UTF-8 bytes of its compact JSON (``separators=(",", ":")``).
#: Metadata annotates a memory (tags, ids, a kind, a link); it is not a second body,
#: so it gets less room than the content (:data:`~bli_memory.core.embedded.store.MAX_CONTENT_CHARS`,
#: 20,000 characters). A save of 200 KB of metadata used to be accepted.
MAX_METADATA_BYTES = 16 * 1024


def metadata_problem(metadata: Any) -> str | None:
    """Why ``metadata`` cannot be stored, or None; the same rule on both stores and import.

    Metadata is None or a JSON object whose strings are storable text
    (:func:`text_problem`), at most :data:`MAX_METADATA_BYTES` as compact JSON.

    Returns:
        The problem as a sentence starting with "metadata", or None.
    """
    if metadata is None:
        return None
    if not isinstance(metadata, dict):
        return "metadata must be a JSON object"
    problem = text_problem(metadata)
    if problem:
        return f"metadata {problem}"
    try:
        size = len(json.dumps(metadata, ensure_ascii=False, separators=(",", ":")).encode("utf-8"))
    except (TypeError, ValueError) as exc:
        return f"metadata is not JSON: {exc}"
    if size > MAX_METADATA_BYTES:
        return f"metadata is {size:,} bytes as JSON; the limit is {MAX_METADATA_BYTES:,}"
    return None


def usable_vector(rec: dict[str, Any], *, model: str, dimensions: int) -> Any | None:
    """The record's embedding as a float32 array when it can be trusted, else None.

    Trusted means: made by ``model``, valid base64 of exactly ``dimensions`` little-endian
    float32 values, all finite, and unit length within 1 % (every stored vector is
    L2-normalised; a zero or NaN vector would make cosine similarity NaN). An untrusted
    vector is recomputed by the caller from the content.
    """
    import base64
    import binascii

    import numpy as np

    if not rec.get("embedding") or rec.get("embeddingModel") != model:
        return None
    try:
        blob = base64.b64decode(rec["embedding"], validate=True)
    except (binascii.Error, ValueError, TypeError):
        return None
    if len(blob) != dimensions * 4:
        return None
    vector = np.frombuffer(blob, dtype="<f4").astype(np.float32)
    # The norm in float64: a float32 norm of huge values overflows (a warning, then inf).
    if not np.all(np.isfinite(vector)) or abs(float(np.linalg.norm(vector.astype(np.float64))) - 1.0) > 0.01:
        return None
    return vector
