"""``bli-memory-mcp memory reembed``: move an embedded store to another embedding model.

A store records the model of its vectors (``store_meta.embedding_model``, and each
row's ``embedding_model``); a process of another model can read it but not search or
write it (:meth:`~bli_memory.core.embedded.store.SQLiteStore.require_model`). Re-embedding
recomputes the vector of every row that has one of another model (and of every live
row with none), with the embedder the settings name (``BLI_MEMORY_EMBEDDER``, any
embedder registered through the ``register_embedders`` hook: ``name``,
``dimensions``, ``embed(texts) -> float32 (n, d)``), then records the new model.

Safe to interrupt at any point:

- rows are updated in batches, each one transaction; only the two vector columns
  change, so ids, versions, history and states stay as they were;
- which rows are left is read from the rows themselves, so a rerun (after Ctrl-C or
  ``kill -9``) continues where the last committed batch ended;
- a row forgotten meanwhile stays forgotten (the update skips tombstones, whose
  vectors were dropped);
- the store's model changes last, in the transaction that finds no row left, so until
  then processes of the old model keep working on the rows they can still use.

While a run is under way, or after one was stopped part way, the store is of its old
model. A process of that model keeps answering, its vector search over the rows still
of that model only (the moved ones are found by keyword, with no similarity), and
``memory_info`` names the rows moved (``reembedUnfinished``); a process of the new model
is refused and told to run ``memory reembed`` again to finish. No vector is compared
with a query of another model. Refusing the old model as well would leave every prompt
without memory for the whole run (hours on a large store), or for good after a kill.

Each text is embedded on its own, as a save embeds it, so a re-embedded store holds
the vectors a fresh store of that model would (the shipped model's int8 activations
are scaled per batch; see :mod:`bli_memory.core.memory.embeddings`).
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from bli_memory.core.embedded.store import SQLiteStore
    from bli_memory.core.memory.embedder import Embedder
    from bli_memory.core.settings import Settings

__all__ = ["DEFAULT_BATCH_ROWS", "ReembedReport", "main", "pending_rows", "reembed"]

#: Rows re-embedded per transaction: an interrupt loses at most this much work, and a
#: writer of another process waits at most one batch's commit (not its embedding,
#: which happens before the transaction opens).
DEFAULT_BATCH_ROWS = 64

_PENDING = (
    "state != 'forgotten' AND ("
    "(embedding IS NOT NULL AND (embedding_model IS NOT ? OR length(embedding) != ?)) "
    "OR (state = 'active' AND embedding IS NULL))"
)


@dataclass(frozen=True)
class ReembedReport:
    """What one run did.

    Attributes:
        model: The model the store holds now (when ``finished``) or is moving to.
        previous: The model the store recorded before this run.
        embedded: Rows whose vector this run recomputed.
        remaining: Rows still of another model (0 when ``finished``).
        finished: True when the store now records ``model``.
    """

    model: str
    previous: str | None
    embedded: int
    remaining: int
    finished: bool

    def to_dict(self) -> dict[str, Any]:
        """The report as JSON-ready camelCase keys."""
        return {"model": self.model, "previous": self.previous, "embedded": self.embedded,
                "remaining": self.remaining, "finished": self.finished}


def pending_rows(store: SQLiteStore) -> int:
    """Rows of ``store`` whose vector is not of the store object's model (forgotten excluded)."""
    with store._read() as conn:
        return int(conn.execute(f"SELECT count(*) FROM memories WHERE {_PENDING}",
                                (store.model_name, 4 * store.dimensions)).fetchone()[0])


def _batch(store: SQLiteStore, after: int, size: int) -> list[tuple[int, str]]:
    with store._read() as conn:
        return [(int(seq), str(content)) for seq, content in conn.execute(
            f"SELECT seq, content FROM memories WHERE seq > ? AND {_PENDING} ORDER BY seq LIMIT ?",
            (after, store.model_name, 4 * store.dimensions, size))]


def _write_batch(store: SQLiteStore, vectors: list[tuple[int, Any]]) -> None:
    from bli_memory.core.embedded.store import SQLiteStore, encode_vector

    with store._write() as conn:
        for seq, vector in vectors:
            row = conn.execute("SELECT space FROM memories WHERE seq = ? AND state != 'forgotten'",
                               (seq,)).fetchone()
            if row is None:  # forgotten or purged since the batch was read
                continue
            conn.execute("UPDATE memories SET embedding = ?, embedding_model = ? WHERE seq = ?",
                         (encode_vector(vector), store.model_name, seq))
            SQLiteStore._bump(conn, row[0], removal=True)


def _finish(store: SQLiteStore) -> bool:
    """Record the model when no row is left; False when a writer added rows meanwhile."""
    with store._write() as conn:
        left = conn.execute(f"SELECT 1 FROM memories WHERE {_PENDING} LIMIT 1",
                            (store.model_name, 4 * store.dimensions)).fetchone()
        if left is not None:
            return False
        conn.execute("INSERT OR REPLACE INTO store_meta (key, value) VALUES ('embedding_model', ?), "
                     "('embedding_dimensions', ?)", (store.model_name, str(store.dimensions)))
        conn.execute("UPDATE space_generation SET generation = generation + 1, removals = removals + 1")
    return True


def reembed(
    store: SQLiteStore,
    embedder: Embedder,
    *,
    batch_rows: int = DEFAULT_BATCH_ROWS,
    progress: Callable[[int], None] | None = None,
) -> ReembedReport:
    """Re-embed every row of ``store`` that needs it with ``embedder``; resumable.

    Args:
        store: A store opened with ``model_name=embedder.name`` and
            ``dimensions=embedder.dimensions``.
        embedder: ``name``, ``dimensions`` and ``embed(texts) -> float32 (n, d)``.
        batch_rows: Rows per transaction (at least 1).
        progress: Called with the number of rows each committed batch covered.

    Returns:
        The :class:`ReembedReport`.

    Raises:
        ValueError: ``store`` was opened for another model than ``embedder``'s.
        EmbedderError: the embedder failed (the batches committed before stay).
        StoreError: the store cannot be written.
    """
    import numpy as np

    if (store.model_name, store.dimensions) != (embedder.name, embedder.dimensions):
        raise ValueError("open the store with the embedder's name and dimensions")
    previous = store.meta().get("embedding_model")
    embedded = 0
    for _ in range(3):  # a writer of the old model may add rows while we run
        after = 0
        while batch := _batch(store, after, max(1, batch_rows)):
            vectors = []
            for seq, content in batch:
                vector = np.asarray(embedder.embed([content]), dtype=np.float32).reshape(-1)
                if vector.shape != (store.dimensions,) or not np.all(np.isfinite(vector)):
                    from bli_memory.core.errors import EmbedderError

                    raise EmbedderError(f"{embedder.name} gave a vector of shape {vector.shape}, "
                                        f"expected ({store.dimensions},) and finite")
                vectors.append((seq, vector))
            _write_batch(store, vectors)
            embedded += len(batch)
            after = batch[-1][0]
            if progress is not None:
                progress(len(batch))
        if _finish(store):
            return ReembedReport(store.model_name, previous, embedded, 0, True)
    return ReembedReport(store.model_name, previous, embedded, pending_rows(store), False)


def main(settings: Settings, *, batch_rows: int = DEFAULT_BATCH_ROWS, as_json: bool = False) -> int:
    """``memory reembed``: re-embed the embedded store with the configured embedder.

    A progress bar (tqdm) goes to stderr when it is a terminal; the result is one line
    (or ``--json``) on stdout. Returns the exit code: 0 finished, 1 rows remain.

    The command (``core/cli/memory.py``) refuses first when a team memory service is
    configured: the service keeps and re-embeds its own vectors.

    Raises:
        ConfigError: ``BLI_MEMORY_EMBEDDER`` names no registered embedder.
    """
    import json

    from tqdm import tqdm

    from bli_memory.core.embedded.store import SQLiteStore
    from bli_memory.core.memory.embedder import load_embedder
    from bli_memory.core.plugins import get_plugin_manager
    embedder = load_embedder(settings.embedder, get_plugin_manager())
    # Load it now: a model folder loads on its first embedding, and with nothing left to
    # embed the store would otherwise be switched to a model that is not there.
    getattr(embedder, "loaded", embedder)
    store = SQLiteStore(settings.store_path, model_name=embedder.name, dimensions=embedder.dimensions)
    try:
        total = pending_rows(store)
        with tqdm(total=total, unit="memory", desc=f"re-embedding with {embedder.name}",
                  file=sys.stderr, disable=not sys.stderr.isatty() or total == 0) as bar:
            report = reembed(store, embedder, batch_rows=batch_rows, progress=bar.update)
    finally:
        store.close()
    if as_json:
        sys.stdout.write(json.dumps(report.to_dict()) + "\n")
    elif report.finished and report.embedded == 0 and report.previous == report.model:
        sys.stdout.write(f"nothing to re-embed: the store already holds {report.model} vectors\n")
    elif report.finished:
        sys.stdout.write(f"re-embedded {report.embedded} memories with {report.model} "
                         f"(was {report.previous}); the store now uses {report.model}\n")
    else:
        sys.stdout.write(f"re-embedded {report.embedded}; {report.remaining} rows are still being "
                         "written by another process of the old model; run it again\n")
    return 0 if report.finished else 1
