"""The embedded engine's memory controls: inspection, audit, export, import, recordings.

The shapes answered are the contract's (the Postgres store answers the same ones).
"""

from __future__ import annotations

import uuid
from typing import TYPE_CHECKING, Any

from bli_memory.core.embedded.engine_base import EngineBase
from bli_memory.core.errors import InvalidInputError, ModelMismatchError, NotFoundError
from bli_memory.core.memory.records import record_problem, records_problem, usable_vector
from bli_memory.core.memory.version_ids import shown_id
from bli_memory.core.models import Memory

__all__ = ["EngineControls"]


class EngineControls(EngineBase):
    """Memory controls of :class:`~bli_memory.core.embedded.engine.EmbeddedBackend`."""

    if TYPE_CHECKING:  # the class this part is composed into answers them (ForgottenSource)
        def tombstones(self, space: str, *, limit: int | None = 500) -> list[str]: ...

        def purge_marks(self, space: str, *, limit: int | None = 500) -> list[dict[str, Any]]: ...

    def info(self, *, space: str) -> dict[str, Any]:
        """The space in use, its aliases, counts by state, the store and the model."""
        canonical, spaces = self.store.resolve_space(space)
        info = {
            "space": canonical,
            "aliases": [t for t in spaces if t != canonical],
            "counts": self.store.count_by_state(spaces),
            "recordings": self.store.recordings.recording_count(spaces),
            "store": {"kind": "embedded", "path": str(self.store_path)},
            "embeddingModel": self._model_name,
            "extractJobs": self.store.jobs.job_counts(),
        }
        recorded = self.store.meta().get("embedding_model")
        try:
            self.store.require_model()
        except ModelMismatchError:  # searches and saves refuse it until it is re-embedded
            info["storeEmbeddingModel"] = recorded
            info["reembed"] = "bli-memory-mcp memory reembed"
        moving = self.store.vectors_by_model(spaces)
        moving.pop(recorded or self._model_name, None)
        if moving:
            # A reembed stopped part way: vector search serves only the rows still of the
            # store's model (the others by keyword) until a rerun finishes the move.
            info["reembedUnfinished"] = moving
        return info

    def list_memories(self, *, space: str, limit: int = 20) -> list[Memory]:
        """Newest live memories of a space; ``limit`` is clamped to 1..100."""
        _, spaces = self.store.resolve_space(space)
        return self.store.list_live(spaces, limit=max(1, min(int(limit), 100)))

    def get_memory(self, id: str, *, include_inactive: bool = False) -> tuple[Memory, list[Memory]]:
        """One memory and its version history (newest first).

        Args:
            id: Any version's id: without ``include_inactive`` the memory's live version
                is answered (its ``id`` differs from the one given when that named an
                older version, which is then in the history).
            include_inactive: Answer exactly the version ``id`` names, even superseded or
                forgotten, and include the superseded versions and the tombstone in the
                history.

        Raises:
            NotFoundError: unknown id, or a memory with no live version without
                ``include_inactive``.
        """
        memory = self.store.get(id)
        if memory is None and include_inactive:
            raise NotFoundError(f"no memory with id {shown_id(id)} (never saved here, or purged)")
        if memory is not None and memory.state == "superseded" and not include_inactive:
            head = self.store.history(id)[0]  # an id names the memory: read its live head
            memory = head if head.state == "active" else memory
        if memory is None or (memory.state != "active" and not include_inactive):
            hint = " (include_inactive / --include-inactive reads old versions)"
            raise NotFoundError(f"no live memory with id {shown_id(id)}{hint}")
        chain = self.store.history(id)
        history = [m for m in chain if m.id != memory.id]
        if not include_inactive:
            history = [m for m in history if m.state == "superseded"]
        return memory, history

    def audit(self, *, repair: bool = False) -> dict[str, Any]:
        """Integrity of the store's derived indexes; with ``repair`` rebuild them from the rows."""
        report = self.store.integrity.audit(repair=repair)
        if repair and report["needs_embedding"]:
            for seq in report["needs_embedding"]:
                self.store.integrity.set_vector(seq, self._embed_one(self.store.integrity.content_of(seq)))
            report["repaired"] = True
        if repair:
            after = self.store.integrity.audit(repair=False)
            report["after"] = {k: after[k] for k in ("ok", "missing_keyword", "stale_keyword",
                                                     "missing_vector", "wrong_model")}
        report.pop("needs_embedding", None)
        return report

    def export(self, *, space: str | None = None) -> Any:
        """Iterator of JSON-ready rows (all versions); every space when ``space`` is None."""
        spaces = self.store.resolve_space(space)[1] if space else None
        return self.store.transfer.export_rows(spaces)

    def import_records(self, records: list[dict[str, Any]]) -> dict[str, int]:
        """Import exported rows exactly; rows without a usable vector are re-embedded.

        Every record is checked first; one bad record means nothing is imported. Secrets
        in every version's content and metadata are masked as a save masks them
        (:func:`~bli_memory.core.memory.stored_secrets.masked_records`). A live record
        that restates a memory forgotten or purged in its space is not brought back, nor
        are the older versions it replaced
        (:func:`~bli_memory.core.extraction.forgotten_imports.forgotten_records`).

        Returns:
            ``{"imported": n, "skipped": n, "forgotten": n, "masked": n}``: ``skipped``
            counts the records already present, ``forgotten`` those left out as
            forgotten, ``masked`` the secrets masked in the records imported.

        Raises:
            InvalidInputError: naming the first bad record (1-based) and what is wrong.
        """
        from bli_memory.core.extraction.forgotten_imports import forgotten_records
        from bli_memory.core.memory.stored_secrets import masked_records

        for n, record in enumerate(records, 1):
            problem = record_problem(record)
            if problem:
                raise InvalidInputError(f"record {n}: {problem}; nothing was imported")
        records, masked = masked_records(records)
        from bli_memory.core.memory.import_links import supersede_cycle

        found = records_problem(records)
        present = {r["id"] for r in records if self.store.get(r["id"]) is not None}
        left_out = set() if found else forgotten_records(
            self, records, (i for i, r in enumerate(records) if r["id"] not in present))
        found = found or self._store_problem(records, left_out) or supersede_cycle(
            records, lambda i: (m.supersedes if (m := self.store.get(i)) is not None else None))
        if found:
            raise InvalidInputError(f"record {found[0]}: {found[1]}; nothing was imported")
        writing = [r for i, r in enumerate(records) if i not in left_out]
        vectors: dict[str, Any] = {}
        for r in writing:
            if r["id"] in present:
                continue
            vector = usable_vector(r, model=self._model_name, dimensions=self._dimensions)
            if vector is None and (r.get("state") or "active") == "active":
                vector = self._embed_one(r["content"])
            if vector is not None:
                vectors[r["id"]] = vector
        res = self.store.transfer.import_rows(writing, vectors)
        kept = sum(m for i, (r, m) in enumerate(zip(records, masked, strict=True))
                   if r["id"] not in present and i not in left_out)
        return {**res, "forgotten": len(left_out), "masked": kept}

    def _store_problem(self, records: list[dict[str, Any]], left_out: set[int]) -> tuple[int, str] | None:
        """What makes records clash with this store: a link to a row that is not there,
        or a customId already live in the space. Records already present are skipped,
        and so are those ``left_out`` as forgotten."""
        in_file = {uuid.UUID(r["id"]) for r in records}
        for n, rec in enumerate(records, 1):
            if n - 1 in left_out or self.store.get(rec["id"]) is not None:
                continue  # not written: left out as forgotten, or already present
            target = rec.get("supersedes")
            if target is not None and uuid.UUID(target) not in in_file:
                prev = self.store.get(target)
                if prev is None or prev.space != rec["space"]:
                    return n, f"supersedes {target} is neither a row of space {rec['space']} nor in this file"
            if (rec.get("state") or "active") == "active" and rec.get("customId") is not None:
                live = self.store.find_live((rec["space"],), custom_id=rec["customId"])
                if live is not None:
                    return n, f"customId {rec['customId']!r} is already live in space {rec['space']}"
        return None

    def record_turn(self, text: str, *, space: str, source: str, session_id: str | None = None) -> str:
        """Keep one recorded exchange, capture-only, its secrets and labels masked
        (:func:`~bli_memory.core.memory.stored_secrets.checked_turn`); returns its id."""
        from bli_memory.core.memory.stored_secrets import checked_turn

        text, source, session_id, _ = checked_turn(text, space=space, source=source, session_id=session_id)
        canonical, _ = self.store.resolve_space(space)
        return self.store.recordings.add_recording(text, space=canonical, source=source,
                                                   session_id=session_id)

    def recordings(self, *, space: str, limit: int = 20) -> list[dict[str, Any]]:
        """Recorded turns of a space and its aliases, newest first (``limit`` 1..100).

        Returns:
            ``[{"id", "space", "sessionId", "source", "createdAt", "text"}, ...]``.
        """
        _, spaces = self.store.resolve_space(space)
        return self.store.recordings.list_recordings(spaces, limit=max(1, min(int(limit), 100)))

    def clear_recordings(self, *, space: str) -> int:
        """Erase every recorded turn of a space and its aliases; returns how many."""
        _, spaces = self.store.resolve_space(space)
        return self.store.recordings.delete_recordings(spaces)


