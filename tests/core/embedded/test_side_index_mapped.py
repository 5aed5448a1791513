"""A restart maps the saved HNSW file instead of reading it: answers at once, keeps
what moved since beside the mapped graph, and never serves a row forgotten after the save."""

from __future__ import annotations

import json
import logging
from pathlib import Path

import pytest

from bli_memory.core.embedded import vector_index
from bli_memory.core.embedded.engine import EmbeddedBackend
from bli_memory.core.embedded.side_index_files import index_folder
from tests.core.embedded.rows import forget_row
from tests.core.embedded.side_store import SPACE, fill, indexed, keyword_engine, keyword_ids, nearest

pytestmark = pytest.mark.skipif(not vector_index.available(), reason="usearch is not installed")


def _index(backend: EmbeddedBackend) -> vector_index.VectorIndex:
    built = backend.side_indexes.built("vector", (SPACE,))  # type: ignore[union-attr]
    assert built is not None
    return built[0]  # type: ignore[no-any-return]


def _forget(backend: EmbeddedBackend, ids: list[str]) -> None:
    for memory_id in ids:
        memory = backend.store.get(memory_id)
        assert memory is not None
        forget_row(backend.store, memory)


def test_a_restart_maps_the_file_and_a_forget_after_it_is_never_served(
        tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    path = tmp_path / "m.sqlite"
    rows = fill(path, 500)
    a = indexed(path)
    nearest(a, rows[0][1])
    a.close()

    caplog.set_level(logging.INFO, logger="bli_memory.side_indexes")
    b = indexed(path)
    assert nearest(b, rows[3][1])[0] == rows[3][0]
    assert "vector side index loaded: 500 rows" in caplog.text
    assert _index(b).viewed  # mapped, not read
    _forget(b, [rows[3][0], rows[4][0]])
    added = fill(path, 3, seed=5, start=500)
    assert rows[3][0] not in nearest(b, rows[3][1], 10)
    assert rows[4][0] not in nearest(b, rows[4][1], 10)
    assert nearest(b, added[1][1])[0] == added[1][0]  # a row saved since, scored beside the graph
    assert _index(b).viewed and len(_index(b)) == 501
    b.close()  # copied into memory and saved with the changes
    record = json.loads(next(index_folder(path).glob("vector-*.json")).read_text())
    assert record["count"] == 501

    c = indexed(path)
    assert rows[3][0] not in nearest(c, rows[3][1], 10)
    assert nearest(c, added[2][1])[0] == added[2][0]
    assert _index(c).viewed and len(_index(c)) == 501
    c.close()


def test_many_changes_copy_the_mapped_index_into_memory(tmp_path: Path,
                                                        caplog: pytest.LogCaptureFixture) -> None:
    path = tmp_path / "m.sqlite"
    rows = fill(path, 700)
    a = indexed(path)
    nearest(a, rows[0][1])
    a.close()

    caplog.set_level(logging.INFO, logger="bli_memory.side_indexes")
    b = indexed(path)
    nearest(b, rows[1][1])
    assert _index(b).viewed
    gone = [memory_id for memory_id, _ in rows[: vector_index.SETTLE_ROWS + 1]]
    _forget(b, gone)
    # The search that catches up past SETTLE_ROWS answers from the mapped graph, then
    # the index is copied into memory (here in that search: builds are not in the background).
    assert rows[0][0] not in nearest(b, rows[0][1], 10)
    assert not _index(b).viewed and len(_index(b)) == 700 - len(gone)
    assert f"vector side index copied into memory: {700 - len(gone)} rows" in caplog.text
    for memory_id, vector in rows[: len(gone) : 37]:
        assert memory_id not in nearest(b, vector, 10)
    assert nearest(b, rows[600][1])[0] == rows[600][0]
    b.close()


def test_a_purge_after_the_save_rebuilds_even_when_mapped(tmp_path: Path) -> None:
    path = tmp_path / "m.sqlite"
    rows = fill(path, 300)
    a = indexed(path)
    nearest(a, rows[0][1])
    a.close()

    b = indexed(path)
    nearest(b, rows[1][1])
    assert _index(b).viewed
    other = EmbeddedBackend(path)
    assert other.purge(rows[2][0]) == 1
    other.close()
    side = b.side_indexes
    assert side is not None
    vs = b.store.vectors((SPACE,))
    assert side.vector_query((SPACE,), vs, rows[2][1], 10) is None  # answered exactly instead
    assert rows[2][0] not in nearest(b, rows[2][1], 10)  # rebuilt from the table
    assert not _index(b).viewed and len(_index(b)) == 299
    b.close()



def _listing(folder: Path) -> dict[str, tuple[int, int]]:
    return {str(p.relative_to(folder)): (p.stat().st_size, p.stat().st_mtime_ns)
            for p in folder.rglob("*")}


def test_the_saved_keyword_index_is_read_in_place_until_it_must_change(tmp_path: Path) -> None:
    path = tmp_path / "m.sqlite"
    rows = fill(path, 300)
    a = keyword_engine(path)
    assert keyword_ids(a, "17") == [rows[17][0]]
    a.close()
    folder = index_folder(path)
    before = _listing(folder)

    b = keyword_engine(path)
    assert keyword_ids(b, "17") == [rows[17][0]]
    _forget(b, [rows[17][0]])  # a forget is a tombstone: still no copy
    assert keyword_ids(b, "17") == []
    assert _listing(folder) == before  # nothing copied, nothing written in the saved folder
    added = fill(path, 1, seed=3, start=7000)  # an add must change the index: copied first
    assert keyword_ids(b, "7000") == [added[0][0]]
    assert keyword_ids(b, "17") == [] and keyword_ids(b, "18") == [rows[18][0]]
    works = [p for p in folder.iterdir() if p.name.endswith(".work")]
    assert len(works) == 1
    assert {k: v for k, v in _listing(folder).items() if not k.startswith(works[0].name)} == before
    b.close()
    assert [p for p in folder.iterdir() if p.name.endswith(".work")] == []
