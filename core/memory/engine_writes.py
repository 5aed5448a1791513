"""The memory engine's writing half: save, update, forget and the extract job's checks,
written once for every store.

A store answers one narrow protocol, :class:`WriteSession`: one write transaction on one
space as the person sees it (find a live row, the ends of a version chain, the nearest live
row to a vector, insert a row, retire a row), handed out by :class:`MemoryWrites`.
:class:`EngineWrites` owns every rule around it:

- what a caller may give, with secrets masked once
  (:func:`~bli_memory.core.memory.stored_secrets.checked_save`,
  :func:`~bli_memory.core.memory.retrieval_writes.checked_content`);
- dedup: identical content among the live, unexpired memories is one memory;
- the ``customId`` upsert (:func:`~bli_memory.core.memory.retrieval_writes.is_same_upsert`),
  which also brings back an expired memory of that key;
- an update's new version (labels masked, ``source`` where the edit came from), and
  ``unchanged``;
- an id naming any version of a memory (:func:`~bli_memory.core.memory.version_ids.live_head`);
- the forget policy: one selector; by text compared as stored; by query only at cosine
  similarity :data:`~bli_memory.core.memory.retrieval_writes.FORGET_MIN_SIMILARITY` or more;
- which forget a lost answer was (:meth:`EngineWrites.forgotten_by`);
- an extract job's text and labels (:meth:`EngineWrites.checked_extract`).

Embeddings are computed before a write transaction opens, so no write lock waits on the model.
Standard library only (the stores' SQL is theirs).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Hashable
from contextlib import AbstractContextManager
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any, Literal, NamedTuple, Protocol

from bli_memory.core.errors import InvalidInputError, NotFoundError
from bli_memory.core.memory.expiry import is_expired, now_text
from bli_memory.core.memory.retrieval import query_text
from bli_memory.core.memory.retrieval_writes import (
    FORGET_MIN_SIMILARITY,
    checked_content,
    content_hash,
    first_version,
    forget_selector,
    is_same_upsert,
    is_unchanged,
    require_forget_similarity,
    require_one_of_id_or_custom_id,
    stored_hash,
    upserted_version,
)
from bli_memory.core.memory.storable_text import shown_value
from bli_memory.core.memory.version_ids import live_head, shown_id
from bli_memory.core.models import ForgetResult, Memory, SaveResult, UpdateResult

if TYPE_CHECKING:
    from collections.abc import Sequence

__all__ = ["EngineWrites", "ExtractInput", "LiveRow", "MemoryWrites", "WriteSession", "checked_space"]

#: Forgotten memories a retried forget looks among (:meth:`EngineWrites.forgotten_by`).
RECENT_FORGETS = 20

#: Cosine similarities closer than this are the same score: a store's exact distance and a
#: vector embedded again differ in the last float32 digits.
SAME_SCORE = 1e-4


@dataclass(frozen=True)
class LiveRow:
    """A live row found in a write session: the memory, and its owner where the store has
    owners (the team store's person id; None on the embedded store)."""

    memory: Memory
    owner: Hashable | None = None


class WriteSession(Protocol):
    """One write transaction on one space, as the person sees it.

    Everything done in a session commits together, or not at all when the block raises.
    """

    canonical: str
    spaces: tuple[str, ...]
    #: The time of this write, in the stores' form (UTC ISO 8601, microseconds, ``Z``).
    at: str

    def find_live(self, *, id: str | None = None, custom_id: str | None = None, sha: str | None = None,
                  unexpired: bool = True, writable_only: bool = False) -> LiveRow | None:
        """The live row of the space with this id, ``customId`` or content hash (exactly one
        is given), or None.

        With ``unexpired`` a row past its expiry does not count; with ``writable_only`` only
        rows this person may change count (the team store's read-only shares do not). Of
        several, the person's own first, then the newest (the oldest for a hash).
        """
        ...

    def chain_ends(self, id: str) -> tuple[Memory | None, Memory | None]:
        """``(row, newest version of its chain)`` for the row ``id`` names, in any state and
        any space this person may read; ``(None, None)`` when there is none."""
        ...

    def nearest_live(self, vector: Any) -> tuple[LiveRow, float] | None:
        """The live, unexpired row of the space whose vector is closest to the unit
        ``vector``, and the exact cosine similarity (NaN when only direction-less vectors
        are left); None when the space holds no live vector."""
        ...

    def forgotten_since(self, since: str, *, limit: int) -> list[Memory]:
        """Rows of the space forgotten at or after ``since`` (the stores' form), newest first."""
        ...

    def check_writable(self, row: LiveRow) -> None:
        """Raise ``NotFoundError`` (reason ``read_only``) when this person may not change ``row``."""
        ...

    def insert(self, memory: Memory, vector: Any, *, like: LiveRow | None = None) -> None:
        """Insert ``memory`` as a live row with its embedding, owned as ``like`` is (a new
        version), else by this person. Raises ``StoreError`` on a vector of the wrong length."""
        ...

    def retire(self, row: LiveRow, state: Literal["superseded", "forgotten"]) -> bool:
        """Move a live row out of the live set and the indexes at :attr:`at` (a forgotten
        row also loses its vector); False when it is no longer live."""
        ...


class MemoryWrites(Protocol):
    """A store's writes: one :class:`WriteSession` per write."""

    def writing(self, tag: str) -> AbstractContextManager[WriteSession]:
        """A write transaction on the space ``tag`` names (an alias resolves to its canonical
        space).

        Raises:
            BliMemoryError: the store cannot write (a closed reason: busy, read-only).
        """
        ...


class ExtractInput(NamedTuple):
    """An extract job as every store queues it (:meth:`EngineWrites.checked_extract`)."""

    text: str
    source: str
    session_id: str | None
    job_id: str | None


def checked_space(space: Any) -> str:
    """The container tag a caller gave, as every store takes it: 1 to 128 characters from
    ``[A-Za-z0-9_.:-]`` once stripped (:func:`~bli_memory.core.models.validate_tag`), and
    not a secret (:func:`~bli_memory.core.memory.stored_secrets.check_container_tag`).

    Raises:
        InvalidInputError: what is wrong, without repeating the tag.
    """
    from bli_memory.core.memory.stored_secrets import check_container_tag
    from bli_memory.core.models import validate_tag

    try:
        tag = validate_tag(space)
    except ValueError as exc:
        raise InvalidInputError(str(exc)[:300]) from None
    check_container_tag(tag)
    return tag


def _require_text(**given: Any) -> None:
    """Refuse a selector or label that is given but is not a string."""
    for name, value in given.items():
        if value is not None and not isinstance(value, str):
            raise InvalidInputError(f"{name} must be a string")


def _lives_longer(expires_at: str | None, than: str | None) -> bool:
    """True when a memory expiring at ``expires_at`` outlives one expiring at ``than``."""
    return than is not None and (expires_at is None or expires_at > than)


def _checked_selector(text: str, *, space: str, what: str) -> None:
    """A forget's text or query that no memory could match or the model could not read.

    Raises:
        NotFoundError: text longer than any memory can be (no masking is paid for it).
        InvalidInputError: text that is not storable (a NUL, a lone surrogate).
    """
    from bli_memory.core.memory.retrieval_writes import MAX_CONTENT_CHARS, normalise_content
    from bli_memory.core.memory.storable_text import text_problem

    longest = MAX_CONTENT_CHARS
    if what == "content" and len(text) > longest and len(normalise_content(text)) > longest:
        raise NotFoundError(f"no live memory with exactly that text in space {space} (a memory holds at "
                            f"most {MAX_CONTENT_CHARS} characters)")
    problem = text_problem(text)
    if problem:
        raise InvalidInputError(f"{what} {problem}; nothing was forgotten")


class EngineWrites:
    """The writing half of the memory contract over a store's :class:`MemoryWrites`
    (:class:`~bli_memory.core.memory.engine.MemoryEngine` is built on it).

    Args:
        writes: The store's writes.
        embed: ``(text) -> unit vector`` of the store's embedding model.
        embed_many: ``(texts) -> unit vectors``, for :meth:`forgotten_by`.
    """

    def __init__(self, writes: MemoryWrites, embed: Callable[[str], Any],
                 embed_many: Callable[[Sequence[str]], Any]) -> None:
        self._writes = writes
        self._embed = embed
        self._embed_many = embed_many

    def save(self, content: str, *, space: str, custom_id: str | None = None,
             metadata: dict[str, Any] | None = None, source: str = "mcp", session_id: str | None = None,
             expires_at: str | None = None) -> SaveResult:
        """Remember ``content`` in ``space`` (the contract's ``save``).

        Without a ``custom_id``, content identical to a live, unexpired memory of the space
        is not written twice (``duplicate``), unless this save would live longer: then a new
        version of that memory carries the later expiry (``updated``). A ``custom_id``
        naming a row of the space (live, or expired: the save brings it back) replaces it,
        keeping the old row as history (``updated``), or is ``duplicate`` when content,
        metadata and expiry are the same and it has not expired. Otherwise a first version
        lands in the canonical space (``created``), which :attr:`SaveResult.space` names.
        (A ``custom_id`` save and an update write their text even where another memory of
        the space says the same: a key names one memory, whatever it says.)

        Raises:
            InvalidInputError: as :func:`~bli_memory.core.memory.stored_secrets.checked_save`
                (empty or oversized content, metadata not an object, a label over
                :data:`~bli_memory.core.memory.records.MAX_KEY_CHARS` characters, an
                unreadable or past ``expires_at``, a container tag that looks like a secret).
        """
        import json

        from bli_memory.core.memory.stored_secrets import checked_save

        space = checked_space(space)
        _require_text(customId=custom_id, source=source, sessionId=session_id)
        got = checked_save(content, space=space, metadata=metadata, custom_id=custom_id, source=source,
                           session_id=session_id, expires_at=expires_at)
        # As stored: a JSON object (``{1: "x"}`` is ``{"1": "x"}``).
        meta = None if got.metadata is None else json.loads(json.dumps(got.metadata, ensure_ascii=False))
        vector = self._embed(got.text)
        sha = content_hash(got.text)

        def done(status: str, memory: Memory, previous: Memory | None = None) -> SaveResult:
            return SaveResult(memory=memory, space=memory.space, status=status,  # type: ignore[arg-type]
                              previous=previous, masked=got.masked)

        with self._writes.writing(space) as w:
            if got.custom_id is not None:
                row = w.find_live(custom_id=got.custom_id, unexpired=False, writable_only=True)
                if row is not None and not is_expired(row.memory.expires_at, w.at) and is_same_upsert(
                        row.memory, sha, meta, got.expires_at):
                    return done("duplicate", row.memory)
            else:
                row = w.find_live(sha=sha, writable_only=True)
                if row is not None and not _lives_longer(got.expires_at, row.memory.expires_at):
                    return done("duplicate", row.memory)
                # The same fact saved to live longer: a new version of it carries the later
                # expiry (never a second live copy, nor a save lost when the first expires).
            if row is not None:
                if not w.retire(row, "superseded"):
                    raise NotFoundError(f"memory {row.memory.id} is no longer live")
                keyed = got.custom_id is not None  # else: the twin's later expiry, and nothing else
                memory = upserted_version(
                    row.memory, content=got.text, custom_id=row.memory.custom_id,
                    metadata=meta if keyed else None, source=got.source if keyed else row.memory.source,
                    session_id=got.session_id if keyed else row.memory.session_id, at=w.at,
                    expires_at=got.expires_at)
                w.insert(memory, vector, like=row)
                return done("updated", memory, row.memory)
            memory = first_version(space=w.canonical, content=got.text, custom_id=got.custom_id,
                                   metadata=meta, source=got.source, session_id=got.session_id,
                                   at=w.at, expires_at=got.expires_at)
            w.insert(memory, vector)
        return done("created", memory)

    @staticmethod
    def _by_id(w: WriteSession, id: str) -> tuple[LiveRow, Memory | None]:
        """The live head of the memory ``id`` names (any version's id) in the session's
        space, and the older version ``id`` named (:func:`live_head`).

        Raises:
            NotFoundError: no such memory, none of its versions live, or it lives in
                another space.
        """
        start, newest = w.chain_ends(id)
        live = newest is not None and newest.state == "active" and not is_expired(newest.expires_at, w.at)
        head, named = live_head(id, start, newest, live=live)
        row = w.find_live(id=head.id)
        if row is None:
            raise NotFoundError(f"memory {shown_id(id)} is not in space {w.canonical}; pass its containerTag")
        return row, named

    def update(self, content: str, *, space: str, id: str | None = None, custom_id: str | None = None,
               source: str | None = None) -> UpdateResult:
        """Replace a live memory (by any version's ``id``, or ``custom_id``) with new content
        (the contract's ``update``).

        The old row becomes ``superseded`` history and the new version points at it,
        keeping its key, labels (their secrets masked) and expiry; its ``source`` is
        ``source`` when given (where the edit came from), else the old version's. The same
        content answers ``unchanged`` and writes nothing.

        Raises:
            InvalidInputError: neither or both of id/custom_id, or unusable content.
            NotFoundError: no live memory matches in this space (reason ``read_only`` when
                it is in a space shared read-only).
        """
        from bli_memory.core.memory.stored_secrets import checked_source, with_masked_labels

        space = checked_space(space)
        _require_text(id=id, customId=custom_id, source=source)
        require_one_of_id_or_custom_id(id, custom_id)
        text, in_content = checked_content(content)
        vector = self._embed(text)
        named = None
        with self._writes.writing(space) as w:
            if id is not None:
                row, named = self._by_id(w, id.strip())
            else:
                found = (w.find_live(custom_id=custom_id, writable_only=True)
                         or w.find_live(custom_id=custom_id))
                if found is None:
                    raise NotFoundError(f"no live memory with customId {shown_value(custom_id)} "
                                        f"in space {w.canonical}")
                row = found
            w.check_writable(row)
            previous = row.memory
            if is_unchanged(previous.content, text):
                return UpdateResult(memory=previous, previous=previous, status="unchanged", named=named,
                                    masked=in_content)
            labels, in_labels = with_masked_labels(previous)  # a row saved before labels were masked
            if not w.retire(row, "superseded"):
                raise NotFoundError(f"memory {previous.id} is no longer live")
            memory = replace(
                labels, id=_new_id(), content=text, created_at=w.at, updated_at=w.at,
                version=previous.version + 1, supersedes=previous.id, state="active", forgotten_at=None,
                source=checked_source(source) if source else labels.source,
            )
            w.insert(memory, vector, like=row)
        return UpdateResult(memory=memory, previous=previous, named=named, masked=in_content + in_labels)

    def forget(self, *, space: str, id: str | None = None, content: str | None = None,
               query: str | None = None) -> ForgetResult:
        """Tombstone one memory, chosen by any version's id, by exact text (compared as a
        save stores it, its secrets masked) or by closest match (the contract's ``forget``).

        A match by ``query`` must reach cosine similarity
        :data:`~bli_memory.core.memory.retrieval_writes.FORGET_MIN_SIMILARITY` (the seed's
        "closest match >= 0.85"), compared exactly; a weaker best match is refused with its
        score, never guessed.

        Raises:
            InvalidInputError: not exactly one selector.
            NotFoundError: nothing matches, nothing close enough, or the match is in a
                space shared read-only (reason ``read_only``).
        """
        space = checked_space(space)
        _require_text(id=id, content=content, query=query)
        selector = forget_selector(id, content, query)
        if selector != "id":
            _checked_selector(content if selector == "content" else query, space=space,  # type: ignore[arg-type]
                              what=selector)
        wanted = self._embed(query_text(query)) if selector == "query" and query is not None else None
        similarity: float | None = None
        named = None
        with self._writes.writing(space) as w:
            if selector == "id" and id is not None:
                row, named = self._by_id(w, id.strip())
            elif selector == "content" and content is not None:
                digest = stored_hash(content)
                found = w.find_live(sha=digest, writable_only=True) or w.find_live(sha=digest)
                if found is None:
                    raise NotFoundError(f"no live memory with exactly that text in space {w.canonical}")
                row = found
            else:
                nearest = w.nearest_live(wanted)
                if nearest is None:
                    raise NotFoundError(f"space {w.canonical} holds no memories")
                row, similarity = nearest
                if similarity != similarity:  # NaN: only direction-less vectors are left
                    raise NotFoundError(f"no memory of space {w.canonical} is close enough to forget "
                                        "by query; nothing was forgotten")
                require_forget_similarity(similarity)
                similarity = round(similarity, 4)
            w.check_writable(row)
            if not w.retire(row, "forgotten"):
                raise NotFoundError(f"memory {row.memory.id} is not live")
            gone = replace(row.memory, state="forgotten", forgotten_at=w.at, updated_at=w.at)
        return ForgetResult(memory=gone, matched_by=selector, similarity=similarity, named=named)

    def forgotten_by(self, *, space: str, since: float, content: str | None = None,
                     query: str | None = None) -> ForgetResult | None:
        """The forget by ``content`` or ``query`` in ``space`` done at or after the epoch
        seconds ``since``, as it was answered, or None (the caller runs the forget).

        For a forget run again because its answer was lost (the daemon died between its
        commit and its answer, core/mcp/relay.py). Among the newest
        :data:`RECENT_FORGETS` memories of the space forgotten at or after ``since``: the
        one with exactly ``content`` (as stored), or the one closest to ``query`` at
        :data:`FORGET_MIN_SIMILARITY` or more, re-embedded (a forget drops a row's vector), when
        no live memory is as close (that one is what a forget run now would take).
        No slack before ``since``: the relay takes it on this machine's clock before the
        request could be read, so a forget done earlier (an earlier request's) is not this
        one's.
        """
        space = checked_space(space)
        _require_text(content=content, query=query)
        if isinstance(since, bool) or not isinstance(since, int | float) or not math.isfinite(since):
            raise InvalidInputError("since must be a time in epoch seconds")
        try:
            at = now_text(datetime.fromtimestamp(since, UTC))
        except (OverflowError, OSError, ValueError):
            raise InvalidInputError("since must be a time in epoch seconds") from None
        for what, text in (("content", content), ("query", query)):
            if text is not None:
                _checked_selector(text, space=space, what=what)
        asked = query_text(query) if content is None else ""
        wanted = self._embed(asked) if asked else None
        digest = stored_hash(content) if content is not None else ""
        with self._writes.writing(space) as w:
            gone = w.forgotten_since(at, limit=RECENT_FORGETS)
            nearest = w.nearest_live(wanted) if wanted is not None and gone else None
        if content is not None:
            found = next((m for m in gone if content_hash(m.content) == digest), None)
            return None if found is None else ForgetResult(memory=found, matched_by="content")
        if wanted is None or not gone:
            return None
        sims = [float(v @ wanted) for v in self._embed_many([m.content for m in gone])]
        best = max(range(len(gone)), key=sims.__getitem__)
        if sims[best] < FORGET_MIN_SIMILARITY:
            return None
        if nearest is not None and nearest[1] >= sims[best] - SAME_SCORE:
            return None  # a live memory is closer: this request's forget is not done yet
        return ForgetResult(memory=gone[best], matched_by="query", similarity=round(sims[best], 4))

    @staticmethod
    def checked_extract(text: str, *, space: str, source: str, session_id: str | None = None,
                        job_id: str | None = None) -> ExtractInput:
        """An extract job as every store queues it: the blocks we injected earlier removed
        (recalled memories are never extracted again), the size checked, the labels' secrets
        masked. The text itself was masked by whoever queued it (the stop hook, the tools);
        the worker masks again.

        Raises:
            InvalidInputError: nothing left to extract, more than
                :data:`~bli_memory.core.memory.retrieval_writes.MAX_EXTRACT_CHARS`
                characters, a ``sessionId`` or ``source`` over
                :data:`~bli_memory.core.memory.records.MAX_KEY_CHARS` characters, a
                container tag that looks like a secret, or a ``job_id`` that is not a UUID.
        """
        from bli_memory.core.memory.injected_tags import strip_injected
        from bli_memory.core.memory.job_ids import checked_job_id
        from bli_memory.core.memory.records import key_problem
        from bli_memory.core.memory.retrieval_writes import check_extract_size
        from bli_memory.core.memory.stored_secrets import checked_turn

        problem = key_problem({"sessionId": session_id, "source": source})
        if problem:  # the job's saves would carry them
            raise InvalidInputError(f"{problem}; nothing was queued")
        from bli_memory.core.memory.storable_text import text_problem

        space = checked_space(space)
        _require_text(source=source, sessionId=session_id)
        _, source, session_id, _ = checked_turn("", space=space, source=source, session_id=session_id,
                                                mask_text=False)
        if not isinstance(text, str):
            raise InvalidInputError("text must be a string")
        check_extract_size(text)
        problem = text_problem(text)
        if problem:
            raise InvalidInputError(f"text {problem}; nothing was queued")
        body = strip_injected(text).strip()
        if not body:
            raise InvalidInputError("nothing to extract: the text is empty")
        return ExtractInput(body, source, session_id, checked_job_id(job_id))


def _new_id() -> str:
    import uuid

    return str(uuid.uuid4())
