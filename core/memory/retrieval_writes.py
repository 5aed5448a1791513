"""The rules of save, update, forget and profile that every store shares.

The stores keep their SQL; what a caller may give, what counts as the same memory,
when a forget by query may act and which memories make the User Profile are decided
here, once (the embedded engine, :mod:`bli_memory.core.embedded.engine`, and the team
store, :mod:`bli_memory.core.team.postgres.writes`, call these).
"""

from __future__ import annotations

import hashlib
import unicodedata
import uuid
from typing import Any, Literal

from bli_memory.core.errors import InvalidInputError, NotFoundError
from bli_memory.core.models import Memory

__all__ = [
    "FORGET_MIN_SIMILARITY",
    "MAX_CONTENT_CHARS",
    "MAX_EXTRACT_CHARS",
    "PROFILE_KINDS",
    "TOO_LONG_ADVICE",
    "check_content_size",
    "check_extract_size",
    "checked_content",
    "checked_save_fields",
    "content_hash",
    "first_version",
    "forget_selector",
    "is_same_upsert",
    "is_unchanged",
    "normalise_content",
    "profile_limit",
    "require_forget_similarity",
    "require_one_of_id_or_custom_id",
    "stored_hash",
    "upserted_version",
]

#: Longest memory accepted, in characters. A memory is a fact, not a document; the
#: embedding model reads only the first 256 tokens anyway.
MAX_CONTENT_CHARS = 20_000

#: A forget by query only ever removes a memory at least this similar (BLI Memory
#: spec: "the closest match >= 0.85"); a weaker match is refused, never guessed.
FORGET_MIN_SIMILARITY = 0.85

#: Metadata ``kind`` values (any letter case) that make a live memory part of the User
#: Profile. The profile rule: every live, unexpired memory of one of these kinds,
#: newest first, however old it is (a preference stated a year ago is still the
#: person's preference); Recent Context is the newest live memories of any kind.
PROFILE_KINDS = frozenset({"preference", "convention", "decision", "profile"})


def normalise_content(content: str) -> str:
    """Strip surrounding whitespace and NFC-normalise; the form that is stored and hashed."""
    return unicodedata.normalize("NFC", content.strip())


def content_hash(content: str) -> str:
    """sha256 hex of the normalised content (identical text in a space is one memory)."""
    return hashlib.sha256(normalise_content(content).encode("utf-8", "surrogatepass")).hexdigest()


def stored_hash(content: str) -> str:
    """:func:`content_hash` of ``content`` as a save stores it, its secrets masked: what a
    forget by exact text compares (the text a person pastes still holds the secret the
    store never kept)."""
    from bli_memory.core.memory.redaction import redact

    return content_hash(redact(normalise_content(content)).text)


#: What a refusal for length advises a caller of the MCP tools or the service.
TOO_LONG_ADVICE = "Save the durable facts, or use extract: true to distil them"


def _too_long(length: int, advice: str = TOO_LONG_ADVICE) -> InvalidInputError:
    return InvalidInputError(f"content is {length} characters; the limit is {MAX_CONTENT_CHARS}. {advice}")


MAX_EXTRACT_CHARS = 100_000
"""Longest text one ``extract: true`` call or extract job takes, in characters (the stop
hook sends at most 12 KB; a bigger paste goes in parts)."""


def check_extract_size(content: str) -> None:
    """Refuse a text for extraction longer than :data:`MAX_EXTRACT_CHARS`, before it is
    masked (masking 10 MB costs seconds of CPU), counted as given.

    Raises:
        InvalidInputError: the text is too long.
    """
    if len(content) > MAX_EXTRACT_CHARS:
        raise InvalidInputError(
            f"the text is {len(content)} characters; extract takes at most {MAX_EXTRACT_CHARS}. "
            "Send the conversation in parts")


def check_content_size(content: str, *, advice: str = TOO_LONG_ADVICE) -> None:
    """Refuse memory content longer than :data:`MAX_CONTENT_CHARS`, before anything else
    is done with it.

    Every write path that masks secrets before the store sees the text (``save_memory``,
    ``update_memory``, ``memory save``, the service's doors) calls this first: masking
    runs every redaction rule over the whole text, and a 10 MB text cost seconds of CPU
    only to be refused. The length is that of the text as given (stripped and
    NFC-normalised, as it would be stored), so a text that would fit only once its
    secrets are masked is refused too. Anything that is not a string is left to the
    checks that follow.

    Args:
        content: The text as given.
        advice: The message's last sentence, for a caller that cannot follow the default
            (``memory save`` has no ``extract``).

    Raises:
        InvalidInputError: the same refusal :func:`checked_content` gives (``content is
            N characters; the limit is ...``); nothing is saved.
    """
    if isinstance(content, str) and len(content) > MAX_CONTENT_CHARS:
        length = len(normalise_content(content))
        if length > MAX_CONTENT_CHARS:
            raise _too_long(length, advice)


def checked_content(content: str) -> tuple[str, int]:
    """``(text, masked)``: the normalised form of memory content a caller gave, shared by
    every store, and the number of secrets masked in it (what a store's update reports in
    :attr:`~bli_memory.core.models.UpdateResult.masked`).

    Secrets are masked here (:func:`bli_memory.core.memory.redaction.redact`), so no store
    keeps one, whoever saves: the tools, the service's doors, the worker, the library.
    The size is checked before the masking (:func:`check_content_size`) and again after
    it, since a placeholder can be longer than the secret it replaces.

    Content must be storable text (:func:`bli_memory.core.memory.storable_text.text_problem`:
    no NUL character, no lone surrogate), the rule import and metadata already follow, so
    a memory saved on one store can always be exported and imported on either.

    Raises:
        InvalidInputError: empty content, text no store can keep (``content contains a
            NUL character``), or longer than :data:`MAX_CONTENT_CHARS`.
    """
    from bli_memory.core.memory.redaction import redact
    from bli_memory.core.memory.storable_text import text_problem

    if not isinstance(content, str) or not content.strip():
        raise InvalidInputError("content is empty: there is nothing to remember")
    check_content_size(content)
    problem = text_problem(content)
    if problem:
        raise InvalidInputError(f"content {problem}; nothing was saved")
    clean = redact(normalise_content(content))
    if len(clean.text) > MAX_CONTENT_CHARS:
        raise _too_long(len(clean.text))
    return clean.text, clean.masked


def checked_save_fields(
    content: str, metadata: Any, custom_id: str | None
) -> tuple[str, dict[str, Any] | None, str | None, int]:
    """A save's content, metadata and ``customId`` as every store takes them.

    Returns:
        ``(text, metadata, custom_id, masked)``: the text of :func:`checked_content`, the metadata
        object (or None), the ``customId`` (a blank one is None: no upsert) and the
        number of secrets masked in the content.

    Raises:
        InvalidInputError: empty or oversized content, metadata that is not a JSON object,
            a ``customId`` that is not a string.
    """
    text, masked = checked_content(content)
    if metadata is not None and not isinstance(metadata, dict):
        raise InvalidInputError("metadata must be a JSON object")
    if custom_id is not None and not isinstance(custom_id, str):
        raise InvalidInputError("customId must be a string")
    if custom_id is not None and not str(custom_id).strip():
        custom_id = None
    return text, metadata, custom_id, masked


def require_one_of_id_or_custom_id(id: str | None, custom_id: str | None) -> None:
    """An update names its memory by exactly one of ``id`` or ``customId``.

    Raises:
        InvalidInputError: neither or both.
    """
    if (id is None) == (custom_id is None):
        raise InvalidInputError("give exactly one of id or customId")


def is_unchanged(previous_content: str, text: str) -> bool:
    """True when an update's ``text`` is the memory's content already (status ``unchanged``)."""
    return content_hash(previous_content) == content_hash(text)


def forget_selector(
    id: str | None, content: str | None, query: str | None
) -> Literal["id", "content", "query"]:
    """Which one selector a forget was given (blank ones do not count).

    Raises:
        InvalidInputError: not exactly one of id, content or query.
    """
    given = [x for x in (id, content, query) if x is not None and str(x).strip()]
    if len(given) != 1:
        raise InvalidInputError("give exactly one of id, content or query")
    if id is not None and id.strip():
        return "id"
    if content is not None and content.strip():
        return "content"
    return "query"


def require_forget_similarity(similarity: float) -> None:
    """Refuse a forget by query whose closest match is below :data:`FORGET_MIN_SIMILARITY`.

    Args:
        similarity: Cosine similarity of the closest live memory (-1 when none has a vector).

    Raises:
        NotFoundError: below the threshold; nothing is forgotten.
    """
    if similarity < FORGET_MIN_SIMILARITY:
        raise NotFoundError(
            f"the closest memory has similarity {max(similarity, 0.0):.2f}, below the "
            f"{FORGET_MIN_SIMILARITY} needed to forget by query; nothing was forgotten"
        )


def profile_limit(limit: int) -> int:
    """Most memories in each list of a profile: ``limit``, at least 1."""
    return max(1, int(limit))


def first_version(
    *, space: str, content: str, custom_id: str | None, metadata: dict[str, Any] | None, source: str,
    session_id: str | None, at: str, expires_at: str | None,
) -> Memory:
    """The new memory a save creates: version 1 with a fresh UUID4, created and updated ``at``.

    Args:
        at: The store's timestamp (UTC ISO 8601 with ``Z``).
    """
    return Memory(
        id=str(uuid.uuid4()), space=space, content=content, custom_id=custom_id, metadata=metadata or {},
        source=source, session_id=session_id, created_at=at, updated_at=at, version=1,
        expires_at=expires_at,
    )


def is_same_upsert(previous: Memory, sha: str, metadata: dict[str, Any] | None,
                   expires_at: str | None = None) -> bool:
    """True when a ``customId`` save would change nothing (status ``duplicate``): the live
    row has the content whose hash is ``sha``, the save gives no metadata or the same as
    stored (compared as JSON, so ``1`` and ``true`` differ and ``{1: "x"}`` is
    ``{"1": "x"}``) and the same expiry (a save states when its memory expires: none is
    never)."""
    import json

    def as_json(value: Any) -> str:
        return json.dumps(value, sort_keys=True, ensure_ascii=False)

    return (content_hash(previous.content) == sha and previous.expires_at == expires_at
            and (metadata is None or as_json(metadata) == as_json(previous.metadata)))


def upserted_version(
    previous: Memory, *, content: str, custom_id: str | None, metadata: dict[str, Any] | None, source: str,
    session_id: str | None, at: str, expires_at: str | None,
) -> Memory:
    """The version a ``customId`` save writes over the live row ``previous`` (status
    ``updated``): same space, next version number, ``supersedes`` the previous id, the
    previous metadata unless new metadata is given."""
    return Memory(
        id=str(uuid.uuid4()), space=previous.space, content=content, custom_id=custom_id,
        metadata=metadata if metadata is not None else previous.metadata, source=source,
        session_id=session_id, created_at=at, updated_at=at, version=previous.version + 1,
        supersedes=previous.id, expires_at=expires_at,
    )
