"""Secrets outside a memory's content: metadata values and the ``customId`` upsert key.

:func:`bli_memory.core.memory.retrieval_writes.checked_content` masks secrets in a memory's text before
any store writes it. Metadata and the ``customId`` reach the same row (and, on the team
service, everyone who can read the space), so the stores run them through the same
rules (:func:`bli_memory.core.memory.redaction.redact`):

- every string value inside the metadata object (at any depth; keys too, since a secret
  pasted as a key is still a secret) is masked like content;
- a ``customId`` that holds a secret is refused: it is the key a later save upserts on,
  so a masked copy would silently name another memory;
- a secret in a save's ``sessionId`` or ``source`` is masked, as import masks it, and
  in the ones an update carries to the new version (:func:`with_masked_labels`).

Each store reports the secrets it masked there in :attr:`~bli_memory.core.models.SaveResult.masked`.

``memory import`` reads records that may come from anywhere (an older version, another
tool, a hand edit), so :func:`masked_records` puts every version's content, metadata,
``sessionId`` and ``source`` through the same rules before either store writes a row.
A ``sessionId`` or ``source`` is a label (which session saved the memory, which door it
came through), not a key a later write looks up, so a secret in one is masked and the
record kept, where a secret ``customId`` is refused.
"""

from __future__ import annotations

from typing import Any, NamedTuple

from bli_memory.core.errors import InvalidInputError
from bli_memory.core.models import Memory

__all__ = [
    "SaveExtras",
    "SaveInput",
    "check_container_tag",
    "check_custom_id",
    "checked_extras",
    "checked_save",
    "checked_source",
    "checked_turn",
    "masked_metadata",
    "masked_records",
    "with_masked_labels",
]


def masked_metadata(metadata: dict[str, Any] | None) -> tuple[dict[str, Any] | None, int]:
    """``(metadata with every string key and value redacted, secrets masked)``; None stays None.

    A value is also judged with its key (:func:`~bli_memory.core.memory.redaction.keys.masked_under_key`):
    under a key that names a secret, any value but null, a boolean, ``""``, a reference or
    a kept path is masked, numbers, lists and objects too (``{"pin": 4242}``,
    ``{"token": ["a", "b"]}``), each counted once; ``{"pwd": "/srv/app"}`` is kept as the
    path it is. In an object with a ``value`` beside a ``name`` (or ``key``), the value is
    judged with the name, as a Kubernetes ``env`` entry is read: ``{"name": "DB_PASSWORD",
    "value": "walrus"}`` masks ``walrus``; ``{"name": "LOG_LEVEL", "value": "info"}`` stays.
    """
    from bli_memory.core.memory.redaction import redact
    from bli_memory.core.memory.redaction.keys import masked_under_key

    count = 0

    def walk(value: Any) -> Any:
        nonlocal count
        if isinstance(value, str):
            clean = redact(value)
            count += clean.masked
            return clean.text
        if isinstance(value, dict):  # keys too: a secret pasted as a key is still a secret
            # A secret named in one field and given in the next, as a Kubernetes env entry
            # ({"name": "DB_PASSWORD", "value": "..."}) or a .NET setting ({"key": ..., "value": ...}).
            label = value.get("name", value.get("key"))
            pair = label if isinstance(label, str) and "value" in value else None
            return {walk(k) if isinstance(k, str) else k: named(pair if k == "value" and pair else k, v)
                    for k, v in value.items()}
        if isinstance(value, list):
            return [walk(v) for v in value]
        return value

    def named(key: Any, value: Any) -> Any:
        # {"password": "hunter2"} says what {"x": "password=hunter2"} says: the key names
        # the value a secret (the PWD rule included), whatever type the value has.
        nonlocal count
        if isinstance(key, str) and not (isinstance(value, str) and redact(value).masked):
            kept, masked = masked_under_key(key, value)
            if masked:
                count += masked
                return kept
        return walk(value)

    if metadata is None:
        return None, 0
    return walk(metadata), count


def check_custom_id(custom_id: str | None) -> None:
    """Refuse a ``customId`` that holds a secret.

    Raises:
        InvalidInputError: the key would store a secret in the clear.
    """
    if not custom_id:
        return
    from bli_memory.core.memory.redaction import redact

    if redact(custom_id).masked:
        raise InvalidInputError("customId holds what looks like a secret; use a name for the key, "
                                "not a credential (nothing was saved)")


def check_container_tag(tag: str, *, name: str = "containerTag") -> None:
    """Refuse a container tag that holds a secret (``ghp_...`` as a space's name).

    A container tag is a name: it is shown in listings, named in receipts and logs, and
    on the team service seen by everyone the space is shared with, so a credential there
    is neither masked nor kept. The stores check it on every write; the MCP tools and the
    ``memory`` commands check a tag they are given before any read too, since the answer
    would repeat it.

    Args:
        tag: The container tag, already valid by :func:`~bli_memory.core.memory.spaces.validate_tag`.
        name: What the person called it, for the message: ``containerTag`` (an MCP tool's
            argument, the stores) or ``--space`` (a ``memory`` command).

    Raises:
        InvalidInputError: the tag looks like a secret; nothing is read or written, and the
            message does not repeat the tag.
    """
    from bli_memory.core.memory.redaction import redact

    if tag and redact(tag).masked:
        raise InvalidInputError(f"{name} holds what looks like a secret (a token, key or password); "
                                "a container tag is a name shown in listings and answers and shared "
                                "on the team service: use a name, not a credential (nothing was done)")


class SaveExtras(NamedTuple):
    """What a store keeps of a save besides its content (:func:`checked_extras`)."""

    metadata: dict[str, Any] | None
    session_id: str | None
    source: str | None
    masked: int  # secrets masked in the metadata, the sessionId and the source


def _label(name: str, value: str | None) -> tuple[str | None, int]:
    """A ``sessionId`` or ``source`` as a store keeps it: storable, secrets masked."""
    from bli_memory.core.memory.records import MAX_KEY_CHARS
    from bli_memory.core.memory.redaction import redact
    from bli_memory.core.memory.storable_text import text_problem

    if value is None:
        return None, 0
    problem = text_problem(value)
    if problem:
        raise InvalidInputError(f"{name} {problem}; nothing was saved")
    clean = redact(value) if value else None
    if clean is None or not clean.masked:
        return value, 0
    if len(clean.text) > MAX_KEY_CHARS:
        raise InvalidInputError(f"{name} is {len(clean.text)} characters once its secrets are masked; "
                                f"the limit is {MAX_KEY_CHARS}; nothing was saved")
    return clean.text, clean.masked


def checked_source(source: str) -> str:
    """An update's ``source`` (where the edit came from) as a store keeps it: storable,
    at most :data:`~bli_memory.core.memory.records.MAX_KEY_CHARS` characters, secrets masked.

    Raises:
        InvalidInputError: it cannot be stored, or it is too long.
    """
    from bli_memory.core.memory.records import check_key_lengths

    check_key_lengths({"source": source}, nothing="saved")
    return _label("source", source)[0] or source


def with_masked_labels(memory: Memory) -> tuple[Memory, int]:
    """``(memory, masked)``: ``memory`` with secrets masked in its metadata (as a save
    masks it, :func:`masked_metadata`), ``sessionId`` and ``source``, what an update
    carries to the new version (a row written before saves masked them keeps its own),
    and how many secrets were masked there.

    The same object, and 0, when there is nothing to mask.
    """
    from dataclasses import replace

    from bli_memory.core.memory.redaction import redact

    changed: dict[str, Any] = {}
    masked = 0
    if memory.metadata:
        metadata, in_metadata = masked_metadata(memory.metadata)
        if in_metadata:
            changed["metadata"] = metadata
            masked += in_metadata
    for field in ("session_id", "source"):
        value = getattr(memory, field)
        if value:
            clean = redact(value)
            if clean.masked:
                changed[field] = clean.text
                masked += clean.masked
    return (replace(memory, **changed) if changed else memory), masked


def checked_extras(
    metadata: Any, custom_id: str | None, *, session_id: str | None = None, source: str | None = None,
    space: str | None = None,
) -> SaveExtras:
    """What a store may keep of a save besides its content, after the rules both stores share.

    A ``customId``, ``sessionId`` or ``source`` must be at most
    :data:`~bli_memory.core.memory.records.MAX_KEY_CHARS` characters, as import requires
    (:func:`~bli_memory.core.memory.records.key_problem`), so a store never keeps what
    another could not import. Metadata must pass
    :func:`bli_memory.core.memory.records.metadata_problem` (a JSON object
    within the size limit); its string values are masked (:func:`masked_metadata`). A
    ``customId`` must be storable text (no NUL character, no lone surrogate, as import
    requires) and hold no secret (:func:`check_custom_id`). A ``sessionId`` or ``source``
    must be storable text too; a secret in one is masked, as import masks it
    (:func:`masked_records`). A ``space`` (the container tag asked for) that looks like
    a secret is refused (:func:`check_container_tag`).

    Returns:
        :class:`SaveExtras`: the metadata, ``sessionId`` and ``source`` to write, and the
        number of secrets masked in them.

    Raises:
        InvalidInputError: metadata that cannot be stored, a ``customId``, ``sessionId``
            or ``source`` that is too long or not storable text, a secret ``customId``
            or container tag, or a label
            whose placeholders make it longer than its limit; nothing is saved.
    """
    from bli_memory.core.memory.records import key_problem, metadata_problem
    from bli_memory.core.memory.storable_text import text_problem

    problem = key_problem({"customId": custom_id, "sessionId": session_id, "source": source})
    if problem:
        raise InvalidInputError(f"{problem}; nothing was saved")
    problem = metadata_problem(metadata)
    if problem:
        raise InvalidInputError(problem)
    problem = text_problem(custom_id) if custom_id is not None else None
    if problem:
        raise InvalidInputError(f"customId {problem}; nothing was saved")
    check_custom_id(custom_id)
    if space is not None:
        check_container_tag(space)
    clean, in_metadata = masked_metadata(metadata)
    session_id, in_session = _label("sessionId", session_id)
    source, in_source = _label("source", source)
    return SaveExtras(clean, session_id, source, in_metadata + in_session + in_source)


def masked_records(
    records: list[dict[str, Any]], *, offset: int = 0
) -> tuple[list[dict[str, Any]], list[int]]:
    """Export records (already valid: :func:`~bli_memory.core.memory.records.record_problem`)
    with secrets masked in every version's content, metadata, ``sessionId`` and
    ``source``, as a save masks content and metadata.

    A record with nothing to mask is returned as the same object, so clean data imports
    byte-identical. A record whose content changed loses its ``embedding``: the vector of
    the secret text is not kept, and a live row is embedded again from the masked text.

    Args:
        records: Decoded export records.
        offset: Added to record numbers in error messages (a part of a larger file).

    Returns:
        ``(records, masked)``: the records in order, and the secrets masked in each.

    Raises:
        InvalidInputError: ``record N: ...; nothing was imported`` for a ``customId``
            or a ``space`` holding a secret (refused as :func:`check_custom_id` and
            :func:`check_container_tag` refuse them on a save),
            or content, a ``sessionId`` or a ``source`` whose placeholders make it
            longer than its limit.
    """
    from bli_memory.core.memory.records import MAX_KEY_CHARS
    from bli_memory.core.memory.redaction import redact
    from bli_memory.core.memory.retrieval_writes import MAX_CONTENT_CHARS

    out: list[dict[str, Any]] = []
    counts: list[int] = []
    for n, rec in enumerate(records, offset + 1):
        if rec.get("customId") and redact(rec["customId"]).masked:
            raise InvalidInputError(f"record {n}: customId holds what looks like a secret; use a name "
                                    "for the key, not a credential; nothing was imported")
        if redact(rec["space"]).masked:  # a name others see (check_container_tag)
            raise InvalidInputError(f"record {n}: space holds what looks like a secret; a container tag "
                                    "is a name shown in listings and shared on the team service; "
                                    "nothing was imported")
        content = redact(rec["content"])
        if len(content.text) > MAX_CONTENT_CHARS:
            raise InvalidInputError(f"record {n}: content is {len(content.text)} characters once its "
                                    f"secrets are masked; the limit is {MAX_CONTENT_CHARS}; "
                                    "nothing was imported")
        metadata, in_metadata = masked_metadata(rec.get("metadata"))
        labels: dict[str, str] = {}
        in_labels = 0
        for key in ("sessionId", "source"):
            if not rec.get(key):
                continue
            label = redact(rec[key])
            if not label.masked:
                continue
            if len(label.text) > MAX_KEY_CHARS:
                raise InvalidInputError(f"record {n}: {key} is {len(label.text)} characters once its "
                                        f"secrets are masked; the limit is {MAX_KEY_CHARS}; "
                                        "nothing was imported")
            labels[key] = label.text
            in_labels += label.masked
        counts.append(content.masked + in_metadata + in_labels)
        if not counts[-1]:
            out.append(rec)
            continue
        fixed = {**rec, "content": content.text, "metadata": metadata, **labels}
        if content.masked:
            fixed["embedding"] = fixed["embeddingModel"] = None
        out.append(fixed)
    return out, counts


def checked_turn(text: str, *, space: str, source: str, session_id: str | None,
                 mask_text: bool = True) -> tuple[str, str, str | None, int]:
    """A captured turn as a store may keep it (a recorded turn, an extract job's row).

    The labels follow the rules of a save (:func:`checked_extras`: a ``sessionId`` or
    ``source`` too long is refused, a secret in one masked, a container tag that looks like
    a secret refused); with ``mask_text`` the text's secrets are masked too (an extract
    job's text was masked by whoever queued it, at the size they checked).

    Returns:
        ``(text, source, session_id, masked)``.

    Raises:
        InvalidInputError: as :func:`checked_extras`; nothing is kept.
    """
    from bli_memory.core.memory.redaction import redact

    extras = checked_extras(None, None, session_id=session_id, source=source, space=space)
    clean = redact(text) if mask_text else None
    return (clean.text if clean else text, extras.source or source, extras.session_id,
            (clean.masked if clean else 0) + extras.masked)


class SaveInput(NamedTuple):
    """A save as every store writes it (:func:`checked_save`)."""

    text: str
    metadata: dict[str, Any] | None
    custom_id: str | None
    source: str
    session_id: str | None
    expires_at: str | None  # the stores' UTC form
    masked: int  # secrets masked in the content, the metadata and the labels


def checked_save(content: str, *, space: str, metadata: Any, custom_id: str | None, source: str,
                 session_id: str | None, expires_at: Any) -> SaveInput:
    """Every rule a save passes before a store writes it, once for every store: the content
    (:func:`~bli_memory.core.memory.retrieval_writes.checked_save_fields`: size, storable
    text, secrets masked), the metadata, ``customId`` and labels (:func:`checked_extras`:
    key limits, storable, masked, a secret container tag refused) and the expiry
    (:func:`~bli_memory.core.memory.expiry.parse_expiry`, in the future).

    Raises:
        InvalidInputError: the first rule the save breaks; nothing is saved.
    """
    from bli_memory.core.memory.expiry import parse_expiry
    from bli_memory.core.memory.retrieval_writes import checked_save_fields

    text, metadata, custom_id, in_content = checked_save_fields(content, metadata, custom_id)
    extras = checked_extras(metadata, custom_id, session_id=session_id, source=source, space=space)
    return SaveInput(text=text, metadata=extras.metadata, custom_id=custom_id, source=extras.source or source,
                     session_id=extras.session_id, expires_at=parse_expiry(expires_at, future=True),
                     masked=in_content + extras.masked)
