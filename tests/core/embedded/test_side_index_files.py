"""Saved side indexes: loaded after a restart, caught up from the write sequence, never
trusted over the table (forgotten and purged rows never come back from a stale file)."""

from __future__ import annotations

import json
import logging
import shutil
import sqlite3
import stat
from contextlib import closing
from pathlib import Path

import numpy as np
import pytest

from bli_memory.core.embedded import vector_index
from bli_memory.core.embedded.engine import EmbeddedBackend
from bli_memory.core.embedded.side_index_files import index_folder
from tests.core.embedded.rows import forget_row
from tests.core.embedded.side_store import SPACE, fill, indexed, keyword_engine, keyword_ids, nearest

pytestmark = pytest.mark.skipif(not vector_index.available(), reason="usearch is not installed")


def _record(path: Path) -> dict[str, object]:
    (record,) = index_folder(path).glob("vector-*.json")
    return dict(json.loads(record.read_text()))


def _write_seq(path: Path) -> int:
    with closing(sqlite3.connect(path)) as conn:
        return int(conn.execute("SELECT value FROM write_sequence").fetchone()[0])


def test_every_write_moves_the_write_sequence_and_changes_name_the_rows(tmp_path: Path) -> None:
    path = tmp_path / "m.sqlite"
    rows = fill(path, 3)
    b = EmbeddedBackend(path)
    store = b.store
    start, _ = store.write_sequence()
    assert start == 3
    first = store.get(rows[0][0])
    assert first is not None
    forget_row(store, first)
    assert store.write_sequence()[0] == 4
    assert store.purge(rows[1][0]) == 1
    assert store.write_sequence()[0] == 5
    live, gone = store.changes((SPACE,), 3)
    assert live == []
    assert len(gone) == 2
    live, gone = store.changes((SPACE,), 0)
    assert len(live) == 1 and len(gone) == 2
    assert store.changes(("another_space",), 0) == ([], [])
    b.close()


def test_a_restart_loads_the_saved_index_instead_of_rebuilding(tmp_path: Path,
                                                              caplog: pytest.LogCaptureFixture) -> None:
    path = tmp_path / "m.sqlite"
    rows = fill(path, 400)
    a = indexed(path)
    assert nearest(a, rows[7][1])[0] == rows[7][0]  # built in this search, then saved
    a.close()
    folder = index_folder(path)
    assert stat.S_IMODE(folder.stat().st_mode) == 0o700
    assert all(stat.S_IMODE(f.stat().st_mode) == 0o600 for f in folder.iterdir())
    record = _record(path)
    assert record["count"] == 400 and record["write_seq"] == _write_seq(path)

    caplog.set_level(logging.INFO, logger="bli_memory.side_indexes")
    b = indexed(path)
    assert nearest(b, rows[9][1])[0] == rows[9][0]
    assert "vector side index loaded: 400 rows" in caplog.text
    assert "side index ready" not in caplog.text
    b.close()


def test_rows_forgotten_after_the_save_never_come_back(tmp_path: Path,
                                                                 caplog: pytest.LogCaptureFixture) -> None:
    path = tmp_path / "m.sqlite"
    rows = fill(path, 300)
    a = indexed(path)
    assert nearest(a, rows[0][1])[0] == rows[0][0]
    a.close()
    saved = _record(path)

    # Another process forgets two rows and saves new ones; the saved index still holds
    # the old rows and knows nothing of the new.
    other = EmbeddedBackend(path)
    for memory_id, _ in rows[:2]:
        forgotten = other.store.get(memory_id)
        assert forgotten is not None
        forget_row(other.store, forgotten)
    other.close()
    added = fill(path, 5, seed=9, start=300)
    assert _record(path) == saved

    caplog.set_level(logging.INFO, logger="bli_memory.side_indexes")
    b = indexed(path)
    assert rows[0][0] not in nearest(b, rows[0][1], 10)
    assert rows[1][0] not in nearest(b, rows[1][1], 10)
    # Caught up from the write sequence: loaded, then 7 rows applied, no rebuild or re-sync.
    assert "vector side index loaded: 300 rows" in caplog.text
    assert "re-syncing" not in caplog.text and "side index ready" not in caplog.text
    assert nearest(b, added[2][1])[0] == added[2][0]
    assert len(b.side_indexes.built("vector", (SPACE,))[0]) == 303  # type: ignore[union-attr,index]
    b.close()


def test_an_older_index_file_put_back_is_caught_up_too(tmp_path: Path) -> None:
    path = tmp_path / "m.sqlite"
    rows = fill(path, 300)
    a = indexed(path)
    nearest(a, rows[0][1])
    a.close()
    old = tmp_path / "old-indexes"
    shutil.copytree(index_folder(path), old)

    b = indexed(path)  # loads, forgets, saves a newer file on close
    memory = b.store.get(rows[5][0])
    assert memory is not None
    forget_row(b.store, memory)
    assert rows[5][0] not in nearest(b, rows[5][1], 10)
    b.close()
    assert _record(path)["write_seq"] == _write_seq(path)

    shutil.rmtree(index_folder(path))
    shutil.copytree(old, index_folder(path))  # the file from before the forget
    c = indexed(path)
    assert rows[5][0] not in nearest(c, rows[5][1], 10)
    assert nearest(c, rows[6][1])[0] == rows[6][0]
    c.close()


@pytest.mark.parametrize("damage", ["truncate", "garbage", "model", "count", "store_id", "ahead"])
def test_a_damaged_or_foreign_save_is_rebuilt(tmp_path: Path, damage: str,
                                              caplog: pytest.LogCaptureFixture) -> None:
    path = tmp_path / "m.sqlite"
    rows = fill(path, 300)
    a = indexed(path)
    nearest(a, rows[0][1])
    a.close()
    folder = index_folder(path)
    (record_path,) = folder.glob("vector-*.json")
    record = json.loads(record_path.read_text())
    data = folder / record["file"]
    if damage == "truncate":
        data.write_bytes(data.read_bytes()[: data.stat().st_size // 2])
    elif damage == "garbage":
        data.write_bytes(b"\0" * data.stat().st_size)
    else:
        field = {"model": "another-model", "count": 999, "store_id": "0" * 32,
                 "ahead": None}[damage]
        if damage == "ahead":
            record["write_seq"] += 10
        else:
            record[damage] = field
        record_path.write_text(json.dumps(record))
    forgotten = EmbeddedBackend(path)
    memory = forgotten.store.get(rows[3][0])
    assert memory is not None
    forget_row(forgotten.store, memory)
    forgotten.close()

    caplog.set_level(logging.INFO, logger="bli_memory.side_indexes")
    b = indexed(path)
    assert nearest(b, rows[4][1])[0] == rows[4][0]
    assert rows[3][0] not in nearest(b, rows[3][1], 10)
    assert "side index ready: 299 rows" in caplog.text  # rebuilt from the table
    b.close()


def test_an_epoch_change_invalidates_saved_indexes(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    path = tmp_path / "m.sqlite"
    rows = fill(path, 200)
    a = indexed(path)
    nearest(a, rows[0][1])
    a.close()
    with closing(sqlite3.connect(path)) as conn, conn:
        conn.execute("UPDATE store_meta SET value = '1' WHERE key = 'side_index_epoch'")
    caplog.set_level(logging.INFO, logger="bli_memory.side_indexes")
    b = indexed(path)
    assert nearest(b, rows[1][1])[0] == rows[1][0]
    assert "epoch changed" in caplog.text and "side index ready: 200 rows" in caplog.text
    b.close()


def _table_vectors(path: Path) -> dict[int, np.ndarray]:
    with closing(sqlite3.connect(path)) as conn:
        return {int(s): np.frombuffer(e, dtype="<f4") for s, e in conn.execute(
            "SELECT seq, embedding FROM memories WHERE state = 'active' AND embedding IS NOT NULL")}


def test_a_restart_maps_the_saved_matrix_and_catches_it_up(tmp_path: Path,
                                                           caplog: pytest.LogCaptureFixture) -> None:
    path = tmp_path / "m.sqlite"
    rows = fill(path, 300)
    a = indexed(path)
    nearest(a, rows[0][1])
    a.close()
    assert len(list(index_folder(path).glob("matrix-*.f32"))) == 1
    other = EmbeddedBackend(path)  # after the save: two forgets, new rows
    for memory_id, _ in rows[:2]:
        memory = other.store.get(memory_id)
        assert memory is not None
        forget_row(other.store, memory)
    other.close()
    fill(path, 4, seed=8, start=300)

    caplog.set_level(logging.INFO, logger="bli_memory.side_indexes")
    b = indexed(path)
    vs = b.store.vectors((SPACE,))
    assert "saved vector matrix mapped: 300 rows" in caplog.text
    table = _table_vectors(path)
    assert vs.size == len(table) == 302
    assert {int(s) for s in vs.live_seqs()} == set(table)
    for seq, vector in table.items():
        pos = vs.position(seq)
        assert pos is not None and np.array_equal(vs.matrix[pos], vector)
    assert rows[0][0] not in nearest(b, rows[0][1], 10)
    b.close()


@pytest.mark.parametrize("damage", ["seqs", "size"])
def test_a_damaged_saved_matrix_is_read_from_the_table(tmp_path: Path, damage: str,
                                                      caplog: pytest.LogCaptureFixture) -> None:
    path = tmp_path / "m.sqlite"
    rows = fill(path, 200)
    a = indexed(path)
    nearest(a, rows[0][1])
    a.close()
    (seqs_file,) = index_folder(path).glob("matrix-*.seqs")
    (matrix_file,) = index_folder(path).glob("matrix-*.f32")
    if damage == "seqs":
        seqs_file.write_bytes(seqs_file.read_bytes()[::-1])
    else:
        with open(matrix_file, "r+b") as f:
            f.truncate(1000)
    caplog.set_level(logging.INFO, logger="bli_memory.side_indexes")
    b = indexed(path)
    vs = b.store.vectors((SPACE,))
    assert "saved vector matrix ignored" in caplog.text or "saved matrix ignored" in caplog.text
    table = _table_vectors(path)
    assert vs.size == len(table)
    assert all(np.array_equal(vs.matrix[vs.position(s)], v) for s, v in table.items())  # type: ignore[index]
    b.close()



def test_the_keyword_index_is_saved_loaded_and_caught_up(tmp_path: Path,
                                                         caplog: pytest.LogCaptureFixture) -> None:
    path = tmp_path / "m.sqlite"
    rows = fill(path, 300)
    a = keyword_engine(path)
    assert keyword_ids(a, "17") == [rows[17][0]]
    a.close()
    (record_path,) = index_folder(path).glob("keyword-*.json")
    record = json.loads(record_path.read_text())
    assert record["count"] == 300 and (index_folder(path) / record["file"]).is_dir()

    other = EmbeddedBackend(path)  # after the save: two forgets, a new row
    for memory_id in (rows[17][0], rows[18][0]):
        memory = other.store.get(memory_id)
        assert memory is not None
        forget_row(other.store, memory)
    other.close()
    added = fill(path, 1, seed=3, start=7000)

    caplog.set_level(logging.INFO, logger="bli_memory.side_indexes")
    b = keyword_engine(path)
    assert keyword_ids(b, "17") == []
    assert keyword_ids(b, "18") == []
    assert keyword_ids(b, "7000") == [added[0][0]]
    assert keyword_ids(b, "19") == [rows[19][0]]
    assert "keyword side index loaded: 300 rows" in caplog.text
    assert "re-syncing" not in caplog.text and "side index ready" not in caplog.text
    works = [p for p in index_folder(path).iterdir() if p.name.endswith(".work")]
    assert len(works) == 1  # this process's copy, which it may change
    b.close()
    assert [p for p in index_folder(path).iterdir() if p.name.endswith(".work")] == []


def test_a_damaged_keyword_save_is_rebuilt(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    path = tmp_path / "m.sqlite"
    rows = fill(path, 200)
    a = keyword_engine(path)
    keyword_ids(a, "5")
    a.close()
    (record_path,) = index_folder(path).glob("keyword-*.json")
    saved = index_folder(path) / json.loads(record_path.read_text())["file"]
    for f in saved.iterdir():
        if f.name != "seqs":
            f.write_bytes(b"\0" * 16)
    caplog.set_level(logging.INFO, logger="bli_memory.side_indexes")
    b = keyword_engine(path)
    assert keyword_ids(b, "5") == [rows[5][0]]
    assert "saved keyword side index ignored" in caplog.text
    assert "keyword side index ready: 200 rows" in caplog.text
    b.close()


def test_a_reembed_to_another_model_never_loads_the_old_index(tmp_path: Path,
                                                               caplog: pytest.LogCaptureFixture) -> None:
    from bli_memory.core.embedded.reembed import reembed
    from tests.core.test_hookspecs import _ToyEmbedder

    path = tmp_path / "m.sqlite"
    toy = EmbeddedBackend(path, embedder=_ToyEmbedder(), keyword_index_min_rows=10**9,
                          vector_index_min_rows=0)
    toy.enable_side_indexes(background=False)
    ids = [toy.save(f"Fact {i}: the svc{i} service listens on port {8000 + i}.", space=SPACE).memory.id
           for i in range(30)]
    assert toy.search("svc3 port", space=SPACE).hits  # built and saved with the toy model's vectors
    toy.close()
    assert _record(path)["model"] == "toy-trigram-16"

    shipped = EmbeddedBackend(path, keyword_index_min_rows=10**9, vector_index_min_rows=0)
    reembed(shipped.store, shipped.embedder)
    caplog.set_level(logging.INFO, logger="bli_memory.side_indexes")
    shipped.enable_side_indexes(background=False)
    hits = shipped.search("which service listens on port 8007", space=SPACE).hits
    assert hits[0].memory.id == ids[7]
    assert "model changed" in caplog.text and "vector side index ready: 30 rows" in caplog.text
    assert _record(path)["model"] == shipped.model_name
    shipped.close()


def _saved_keyword_matches(path: Path, word: str) -> list[int]:
    """Seqs the saved keyword index (opened in place, read only) finds for ``word``."""
    from bli_memory.core.embedded.keyword_index import KeywordIndex
    from bli_memory.core.memory.terms import query_forms, query_terms

    (record_path,) = index_folder(path).glob("keyword-*.json")
    index = KeywordIndex(path=str(index_folder(path) / json.loads(record_path.read_text())["file"]))
    index.adopt([1])  # any: query() answers from the committed segments
    return index.query(query_forms(query_terms(word)), 10)


def test_a_purge_removes_the_saved_indexes_and_no_copy_serves_the_row(tmp_path: Path) -> None:
    path = tmp_path / "m.sqlite"
    b = EmbeddedBackend(path, keyword_index_min_rows=0, vector_index_min_rows=0)
    b.enable_side_indexes(background=False)
    for i in range(20):
        b.save(f"Note {i}: the gateway rollout plan step {i} is documented.", space=SPACE)
    secret = b.save("The prod door code is zebra7731.", space=SPACE).memory
    assert b.search("zebra7731", space=SPACE).hits  # both indexes built and saved with it
    assert _saved_keyword_matches(path, "zebra7731")  # the saved copy does hold it

    other = EmbeddedBackend(path)  # purged by another process while this one runs
    assert other.purge(secret.id) == 1
    other.close()
    assert not index_folder(path).exists()
    assert not b.search("zebra7731", space=SPACE).hits
    assert secret.id not in [h.memory.id for h in b.search("what is the prod door code", space=SPACE).hits]
    b.save("The staging door code rotates weekly.", space=SPACE)
    assert b.search("staging door code", space=SPACE).hits
    b.close()  # rebuilt after the purge from the table, and saved again
    assert index_folder(path).is_dir()
    assert _saved_keyword_matches(path, "zebra7731") == []
    assert len(_saved_keyword_matches(path, "gateway")) == 10


@pytest.mark.e2e
@pytest.mark.e2e
def test_a_working_copy_left_by_a_killed_process_is_swept_by_the_next_load(tmp_path: Path) -> None:
    import os
    import subprocess
    import sys

    path = tmp_path / "m.sqlite"
    fill(path, 100)
    a = keyword_engine(path)
    keyword_ids(a, "5")
    a.close()
    dead = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True,
                          text=True, check=True)
    (record_path,) = index_folder(path).glob("keyword-*.json")
    stem = record_path.stem
    left = index_folder(path) / f".{stem}.{int(dead.stdout)}.0badc0de.work"
    left.mkdir()
    (left / "seqs").write_bytes(b"")
    mine = index_folder(path) / f".{stem}.{os.getpid()}.0badc0de.work"  # a live process's copy
    mine.mkdir()
    b = keyword_engine(path)
    assert keyword_ids(b, "5")
    assert not left.exists() and mine.exists()
    b.close()
