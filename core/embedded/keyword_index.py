"""A BM25 keyword side index with top-k pruning over a space's rows (Tantivy).

SQLite FTS5 is the keyword index of record: every row's terms live in ``memory_fts``
and small spaces are searched there. But an FTS5 query computes bm25 for *every* row
that holds any query term and sorts them all: it has no top-k pruning, so in a large
space with a shared vocabulary one common word costs a pass over a large share of the
rows (``docs/benchmarks.md``: the any-term query is 64 ms at 100k rows and 680 ms at 1M
on 2 cores). Tantivy's BM25 with block-max WAND (Ding & Suel, SIGIR 2011) skips the
blocks of postings that cannot reach the current top k; measured on the same 1M-row
store, the same queries over the same terms take 2.2 ms instead of 272 ms.

The index is derived data, like the HNSW side index (:mod:`bli_memory.core.embedded.vector_index`):
it holds the *same* term strings FTS5 holds (built by :mod:`bli_memory.core.memory.terms`),
keyed by the row's ``seq``, in memory, and :meth:`KeywordIndex.sync` brings it level
with the store's live rows. It can be dropped and rebuilt from SQLite at any time and
is never trusted over it: the engine reads hits back from the table.

Scoring is Okapi BM25 with k1 = 1.2 and b = 0.75 in both Tantivy and FTS5, over the same
terms, so a space ranks the same way on either side of the size threshold, up to ties.
Terms are folded the way FTS5's ``unicode61 remove_diacritics 2`` folds them (``café``
matches ``cafe``), by :func:`fold`. The ``tantivy`` package (MIT) is imported on first use.
"""

from __future__ import annotations

import unicodedata
from collections.abc import Iterable, Sequence
from typing import Any

from bli_memory.core.errors import StoreError

__all__ = ["TOMBSTONES", "KeywordIndex", "available", "fold"]

#: Removed rows kept as tombstones (skipped by :meth:`KeywordIndex.query`) before their
#: documents are deleted in one batch (see :meth:`KeywordIndex.remove`).
TOMBSTONES = 64

#: Writer heap for bulk builds and for small incremental syncs (Tantivy needs at least
#: 15 MB a thread). The writer lives only until the next commit, so an idle index holds
#: no writer threads or heap.
_BULK_HEAP_BYTES = 128 * 1024 * 1024
_SMALL_HEAP_BYTES = 16 * 1024 * 1024
_BULK_ROWS = 10_000


def _tantivy() -> Any:
    """Import and return the ``tantivy`` module.

    Raises:
        ImportError: tantivy is not installed.
    """
    import tantivy

    return tantivy


def available() -> bool:
    """True when the tantivy package can be imported."""
    try:
        _tantivy()
    except ImportError:
        return False
    return True


def fold(text: str) -> str:
    """Strip diacritics as FTS5's ``remove_diacritics 2`` does (``"café"`` -> ``"cafe"``).

    Like FTS5, only Latin letters lose their marks (a base letter below U+0250 or in
    Latin Extended Additional, U+1E00-U+1EFF); ligatures, superscripts, full-width forms
    and Greek accents stay as they are, so both indexes match the same terms. ASCII text
    (nearly all of it) is returned as is without work.
    """
    if text.isascii():
        return text
    out = []
    for ch in text:
        decomposed = unicodedata.normalize("NFD", ch)
        base = ord(decomposed[0])
        if len(decomposed) > 1 and (base < 0x250 or 0x1E00 <= base <= 0x1EFF):
            out.append(decomposed[0] + "".join(c for c in decomposed[1:] if not unicodedata.combining(c)))
        else:
            out.append(ch)
    return "".join(out)


class KeywordIndex:
    """In-memory BM25 index of term strings keyed by row ``seq``.

    Args:
        threads: Writer threads for bulk adds (1 keeps a host's cores free; 0 lets
            Tantivy choose).
        path: A folder to keep the index in (created, or opened when it holds one; see
            :mod:`bli_memory.core.embedded.side_index_files`); default: in memory.

    Raises:
        StoreError: tantivy is not installed, or the folder holds no usable index.
    """

    def __init__(self, *, threads: int = 1, path: str | None = None) -> None:
        try:
            tv = _tantivy()
        except ImportError as exc:
            hint = 'pip install "bli-memory-mcp[scale]"'
            raise StoreError(f"the keyword side index needs tantivy: {hint}") from exc
        self._tv = tv
        builder = tv.SchemaBuilder()
        builder.add_integer_field("seq", stored=False, indexed=True, fast=True)
        # Terms are already split, lowercased and encoded (core/memory/terms.py): whitespace only.
        builder.add_text_field("terms", stored=False, tokenizer_name="whitespace", index_option="freq")
        self._schema = builder.build()
        try:
            self._index = tv.Index(self._schema) if path is None else tv.Index(self._schema, path=path)
        except (OSError, ValueError) as exc:
            raise StoreError(f"cannot open the keyword side index at {path}: {exc}") from exc
        self._threads = threads
        self._writer: Any = None
        self._searcher: Any = None
        self._seq_set: set[int] | None = set()
        self._adopted: Any = None  # the saved seqs (numpy) until a change needs the set
        #: Generation of the live set last synced (see :meth:`sync`).
        self.generation: Any = None
        #: ``(epoch, write_seq)`` of the store this index is level with, or None
        #: (see :mod:`bli_memory.core.embedded.side_indexes`).
        self.mark: tuple[int, int] | None = None
        self._dead: set[int] = set()  # tombstoned seqs whose documents are still indexed
        self._deleting: set[int] = set()  # of those, the ones deleted in the open writer
        #: The working folder of an index opened from a saved copy (removed with it).
        self.work: Any = None
        #: ``() -> str``: for an index read in place from a folder it must not change (a
        #: saved copy), makes this process's own copy and returns its path; called once,
        #: before the first change (see :mod:`bli_memory.core.embedded.side_index_files`).
        self.detach: Any = None
        self.max_seq = 0

    def __len__(self) -> int:
        return len(self._adopted) if self._seq_set is None else len(self._seq_set)

    @property
    def _seqs(self) -> set[int]:
        """The seqs indexed, as a set: made from the adopted list when first needed (a
        first search after a restart needs none; at 1M rows it costs about 0.1 s of CPU)."""
        if self._seq_set is None:
            self._seq_set = set(self._adopted.tolist())
            self._adopted = None
        return self._seq_set

    def seqs(self) -> list[int]:
        """The seqs indexed, ascending."""
        return sorted(self._seqs)

    def num_docs(self) -> int:
        """Documents the index's committed segments hold (deletes applied)."""
        return int(self._index.searcher().num_docs)

    def adopt(self, seqs: Iterable[int]) -> None:
        """Take ``seqs`` (distinct ints, Python or numpy) as the rows an index opened from
        a folder holds (its saved list)."""
        import numpy as np

        adopted = np.unique(np.fromiter((int(s) for s in seqs), dtype=np.int64)) \
            if not hasattr(seqs, "dtype") else np.asarray(seqs, dtype=np.int64)
        self._adopted, self._seq_set = adopted, None
        self.max_seq = int(np.max(adopted)) if len(adopted) else 0

    def _w(self, rows: int = 0) -> Any:
        if self._writer is None:
            if self.detach is not None:  # read in place so far: change a copy of our own
                path, self.detach = self.detach(), None
                try:
                    self._index = self._tv.Index(self._schema, path=path)
                except (OSError, ValueError) as exc:
                    raise StoreError(f"cannot open the keyword side index at {path}: {exc}") from exc
                self._searcher = None
            if rows >= _BULK_ROWS:
                self._writer = self._index.writer(_BULK_HEAP_BYTES, self._threads or 0)
            else:
                self._writer = self._index.writer(_SMALL_HEAP_BYTES, 1)
        return self._writer

    def add(self, rows: Sequence[tuple[int, str]]) -> int:
        """Index ``(seq, terms)`` rows (``terms`` as stored in ``memory_fts``); known seqs are skipped.

        Returns:
            How many rows were added. Visible to :meth:`query` after :meth:`commit`.
        """
        tv, writer, added = self._tv, None, 0
        for seq, text in rows:
            seq = int(seq)
            if seq in self._seqs:
                continue
            if writer is None:
                writer = self._w(len(rows))
            if seq in self._dead:  # a tombstoned row indexed again: its old document goes
                writer.delete_documents_by_term("seq", seq)
                self._deleting.add(seq)
            writer.add_document(tv.Document(seq=seq, terms=fold(text or "")))
            self._seqs.add(seq)
            self.max_seq = max(self.max_seq, seq)
            added += 1
        return added

    def remove(self, seqs: Iterable[int]) -> int:
        """Drop rows by seq (unknown seqs are ignored); returns how many were known.

        Rows are tombstoned: :meth:`query` skips them at once, and their documents are
        deleted in one batch once :data:`TOMBSTONES` are pending, so a forget does not
        cost the next search a Tantivy commit (40 ms measured on a 200k-row index on
        disk; see :mod:`bli_memory.core.embedded.side_index_files`).
        """
        removed = 0
        for seq in seqs:
            seq = int(seq)
            if seq in self._seqs:
                self._seqs.discard(seq)
                self._dead.add(seq)
                removed += 1
        pending = self._dead - self._deleting
        if len(pending) > TOMBSTONES:
            writer = self._w()
            for seq in pending:
                writer.delete_documents_by_term("seq", seq)
            self._deleting |= pending
        return removed

    def apply(self, live: Sequence[int], fetch: Any, gone: Sequence[int]) -> None:
        """Apply rows that moved: ``live`` seqs are (re-)indexed with terms from ``fetch``
        (``(seqs) -> [(seq, terms), ...]``), ``gone`` seqs removed; then commit. Cost:
        O(rows moved)."""
        self.remove([*live, *gone])
        if live:
            self.add(fetch(list(live)))
        self.commit()

    def commit(self) -> None:
        """Make every add and remove so far visible to :meth:`query`, and release the writer."""
        if self._writer is not None:
            writer, self._writer = self._writer, None
            writer.commit()
            writer.wait_merging_threads()  # ends the writer's threads; the next change opens one
            self._index.reload()
            self._searcher = None
            self._dead -= self._deleting
            self._deleting = set()

    def _query(self, groups: Sequence[Sequence[str]], *, every: bool) -> Any:
        tv, schema = self._tv, self._schema
        should, must = tv.Occur.Should, tv.Occur.Must
        clauses = []
        for forms in groups:
            parts = [(should, tv.Query.term_query(schema, "terms", fold(f))) for f in forms]
            if every:
                clauses.append((must, parts[0][1] if len(parts) == 1 else tv.Query.boolean_query(parts)))
            else:
                clauses.extend(parts)
        return tv.Query.boolean_query(clauses)

    def query(self, groups: Sequence[Sequence[str]], k: int, *, every: bool = False) -> list[int]:
        """The ``k`` best seqs by BM25, best first.

        Args:
            groups: One tuple of encoded forms per query term (exact form, stem), as
                :func:`bli_memory.core.memory.terms.query_forms` gives them.
            k: How many to return.
            every: Require every group to match (the ``keyword_all`` channel);
                otherwise any form of any group (``keyword_any``).
        """
        if not groups or k <= 0 or not len(self):
            return []
        if self._searcher is None:
            self._searcher = self._index.searcher()
        searcher = self._searcher
        dead = self._dead
        result = searcher.search(self._query(groups, every=every), int(k) + len(dead), count=False)
        addresses = [address for _, address in result.hits]
        if not addresses:
            return []
        return [int(s) for s in searcher.fast_field_values("seq", addresses) if int(s) not in dead][:k]

    def sync(self, live: Sequence[int], fetch: Any, generation: Any = None) -> None:
        """Bring the index level with the live rows of its spaces.

        Args:
            live: Live seqs, ascending (``VectorSet.seqs``).
            fetch: Callable ``(seqs) -> [(seq, terms), ...]`` reading term strings from
                the store for rows not yet indexed.
            generation: The live set's generation stamp, remembered to skip no-op syncs.

        Cost: nothing when ``generation`` is unchanged; O(new rows) when rows were only
        added; one pass over the seqs when rows left.
        """
        if generation is not None and generation == self.generation:
            return
        seqs = [int(s) for s in live]
        new = [s for s in seqs if s > self.max_seq]
        changed = False
        if len(self._seqs) + len(new) != len(seqs):
            keep = set(seqs)
            changed = self.remove([s for s in self._seqs if s not in keep]) > 0
            new = [s for s in seqs if s not in self._seqs]
        if new:
            changed = self.add(fetch(new)) > 0 or changed
        if changed:
            self.commit()
        self.generation = generation
