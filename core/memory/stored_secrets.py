"""Secrets outside a memory's content: metadata values and the ``customId`` upsert key.

:func:`bli_memory.core.memory.retrieval_writes.checked_content` masks secrets in a memory's text before
any store writes it. Metadata and the ``customId`` reach the same row (and, on the team
service, everyone who can read the space), so the stores run them through the same
rules (:func:`bli_memory.core.memory.redaction.redact`):

- every string value inside the metadata object (at any depth; keys are names, not
  values, and stay as given) is masked like content;
- a ``customId`` that holds a secret is refused: it is the key a later save upserts on,
  so a masked copy would silently name another memory.
"""

from __future__ import annotations

from typing import Any

from bli_memory.core.errors import InvalidInputError

__all__ = ["check_custom_id", "checked_extras", "masked_metadata"]


def masked_metadata(metadata: dict[str, Any] | None) -> tuple[dict[str, Any] | None, int]:
    """``(metadata with every string key and value redacted, secrets masked)``; None stays None."""
    from bli_memory.core.memory.redaction import redact

    count = 0

    def walk(value: Any) -> Any:
        nonlocal count
        if isinstance(value, str):
            clean = redact(value)
            count += clean.masked
            return clean.text
        if isinstance(value, dict):  # keys too: a secret pasted as a key is still a secret
            return {walk(k) if isinstance(k, str) else k: walk(v) for k, v in value.items()}
        if isinstance(value, list):
            return [walk(v) for v in value]
        return value

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


def checked_extras(metadata: Any, custom_id: str | None) -> dict[str, Any] | None:
    """The metadata a store may keep for a save, after the rules both stores share.

    Metadata must pass :func:`bli_memory.core.memory.records.metadata_problem` (a JSON object
    within the size limit); its string values are masked (:func:`masked_metadata`), and
    a ``customId`` holding a secret is refused (:func:`check_custom_id`).

    Raises:
        InvalidInputError: metadata that cannot be stored, or a secret ``customId``.
    """
    from bli_memory.core.memory.records import metadata_problem

    problem = metadata_problem(metadata)
    if problem:
        raise InvalidInputError(problem)
    check_custom_id(custom_id)
    return masked_metadata(metadata)[0]
