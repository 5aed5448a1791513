"""Crash tests: a process killed with SIGKILL mid-index-save or mid-write leaves a store
whose next start serves correct results (no forgotten row comes back)."""

from __future__ import annotations

import json
import os
import signal
import sqlite3
import subprocess
import sys
import time
from contextlib import closing
from pathlib import Path

import numpy as np
import pytest

from bli_memory.core.embedded import vector_index
from bli_memory.core.embedded.side_index_files import index_folder
from tests.core.embedded.rows import forget_row
from tests.core.embedded.side_store import SPACE, fill, indexed, nearest, unit_vectors

pytestmark = [pytest.mark.e2e, pytest.mark.e2e,
              pytest.mark.skipif(not vector_index.available(), reason="usearch is not installed")]

ROOT = Path(__file__).resolve().parents[3]
BATCH = 200

# Saves the built vector index and matrix over and over until killed.
SAVER = """
import sys
from pathlib import Path
from tests.core.embedded.side_store import SPACE, indexed
b = indexed(Path(sys.argv[1]))
vs = b.store.vectors((SPACE,))
side = b.side_indexes
side.vector_query((SPACE,), vs, vs.matrix[0], 5)
slot = side._slots[("vector", SPACE)]
print("ready", flush=True)
while True:
    side._save("vector", slot, (SPACE,))
"""

# Maps the saved index, forgets rows (kept beside the mapped graph), then saves over and
# over (each save copies the index into memory first) until killed.
MAPPED_SAVER = """
import sys
from pathlib import Path
from tests.core.embedded.rows import forget_row
from tests.core.embedded.side_store import SPACE, indexed, nearest
b = indexed(Path(sys.argv[1]))
vs = b.store.vectors((SPACE,))
side = b.side_indexes
side.vector_query((SPACE,), vs, vs.matrix[0], 5)
slot = side._slots[("vector", SPACE)]
assert slot.index.viewed
with b.store._read() as conn:
    ids = [r[0] for r in conn.execute("SELECT id FROM memories ORDER BY seq LIMIT 30")]
for memory_id in ids:
    forget_row(b.store, b.store.get(memory_id))
nearest(b, vs.matrix[0])
assert slot.index.viewed
print("ready", flush=True)
while True:
    side._save("vector", slot, (SPACE,))
"""

# Writes batches of rows and forgets rows, searching between writes (the searches catch
# the index up and save it every 1,000 rows moved), until killed.
WRITER = """
import random, sys
from pathlib import Path
from tests.core.embedded.rows import forget_row
from tests.core.embedded.side_store import SPACE, fill, indexed, nearest, unit_vectors
path = Path(sys.argv[1])
b = indexed(path)
nearest(b, unit_vectors(1, 0)[0])  # the index is built (and saved) before the clock starts
rng = random.Random(5)
print("ready", flush=True)
k = int(sys.argv[2])
while True:
    fill(path, 200, seed=1000 + k, start=200 * k)
    with b.store._read() as conn:
        ids = [r[0] for r in conn.execute("SELECT id FROM memories WHERE state = 'active'")]
    for memory_id in rng.sample(ids, 60):
        forget_row(b.store, b.store.get(memory_id))
        nearest(b, unit_vectors(1, k)[0])
    k += 1
"""


def _spawn(script: str, *args: str) -> subprocess.Popen[str]:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    proc = subprocess.Popen([sys.executable, "-c", script, *args], cwd=ROOT, env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    assert proc.stdout is not None
    line = proc.stdout.readline()
    assert line.strip() == "ready", proc.stderr.read() if proc.stderr else line
    return proc


def _kill(proc: subprocess.Popen[str], after_s: float) -> None:
    time.sleep(after_s)
    assert proc.poll() is None, proc.stderr.read() if proc.stderr else "exited"
    proc.send_signal(signal.SIGKILL)
    proc.communicate(timeout=30)  # reaps it and closes the pipes
    assert proc.returncode == -signal.SIGKILL


def _rows(path: Path) -> list[tuple[str, str, str]]:
    with closing(sqlite3.connect(path)) as conn:
        return [(r[0], r[1], r[2]) for r in conn.execute("SELECT id, content, state FROM memories")]


def _vector_of(content: str) -> np.ndarray:
    """The vector :func:`fill` gave ``"row <j> ..."`` in batch ``j // BATCH``."""
    j = int(content.split()[1])
    return unit_vectors(BATCH, 1000 + j // BATCH)[j % BATCH]


def _fill_batches(path: Path, batches: int) -> None:
    for k in range(batches):
        fill(path, BATCH, seed=1000 + k, start=BATCH * k)


@pytest.mark.parametrize("after_s", [0.3, 0.7, 1.1])
def test_kill_mid_index_save_leaves_the_old_or_the_new_file(tmp_path: Path, after_s: float) -> None:
    path = tmp_path / "m.sqlite"
    _fill_batches(path, 10)
    _kill(_spawn(SAVER, str(path)), after_s)

    (record_path,) = index_folder(path).glob("vector-*.json")
    record = json.loads(record_path.read_text())  # whole, never half-written
    data = index_folder(path) / record["file"]
    assert data.stat().st_size == record["bytes"]

    rows = _rows(path)
    b = indexed(path)
    forgotten = []
    for memory_id, _, _ in rows[:20]:  # forgotten after the save: the file is stale
        memory = b.store.get(memory_id)
        assert memory is not None
        forget_row(b.store, memory)
        forgotten.append(memory_id)
    assert rows[0][0] not in nearest(b, _vector_of(rows[0][1]), 10)  # caught up: 20 rows moved
    b.close()  # saves again, and sweeps what the killed save left
    assert [f.name for f in index_folder(path).iterdir() if f.name.endswith(".tmp")] == []
    assert len(list(index_folder(path).glob("*.usearch"))) == 1

    c = indexed(path)
    for memory_id, content, _ in rows[:20]:
        assert memory_id not in nearest(c, _vector_of(content), 10)
    for memory_id, content, _ in rows[100:110]:
        assert nearest(c, _vector_of(content))[0] == memory_id
    index = c.side_indexes.built("vector", (SPACE,))[0]  # type: ignore[union-attr,index]
    assert len(index) == len(rows) - len(forgotten)
    c.close()


@pytest.mark.parametrize("after_s", [2.0, 4.0])
def test_kill_mid_write_then_restart_serves_no_forgotten_row(tmp_path: Path, after_s: float) -> None:
    path = tmp_path / "m.sqlite"
    _fill_batches(path, 10)
    _kill(_spawn(WRITER, str(path), "10"), after_s)

    rows = _rows(path)
    gone = [(i, c) for i, c, state in rows if state != "active"]
    live = [(i, c) for i, c, state in rows if state == "active"]
    assert gone, "the writer forgot nothing before it was killed"
    assert index_folder(path).is_dir()

    b = indexed(path)
    for memory_id, content in gone:
        assert memory_id not in nearest(b, _vector_of(content), 10)
    for memory_id, content in live[-20:]:
        assert nearest(b, _vector_of(content))[0] == memory_id
    index = b.side_indexes.built("vector", (SPACE,))[0]  # type: ignore[union-attr,index]
    assert len(index) == len(live)
    b.close()


@pytest.mark.parametrize("after_s", [0.2, 0.8])
def test_kill_mid_save_of_a_mapped_index_serves_no_forgotten_row(tmp_path: Path, after_s: float) -> None:
    path = tmp_path / "m.sqlite"
    _fill_batches(path, 10)
    a = indexed(path)
    nearest(a, unit_vectors(1, 0)[0])  # built and saved: the next process maps this file
    a.close()
    _kill(_spawn(MAPPED_SAVER, str(path)), after_s)

    (record_path,) = index_folder(path).glob("vector-*.json")
    record = json.loads(record_path.read_text())
    assert (index_folder(path) / record["file"]).stat().st_size == record["bytes"]
    rows = _rows(path)
    gone = [(i, c) for i, c, state in rows if state != "active"]
    assert len(gone) == 30
    b = indexed(path)
    for memory_id, content in gone:
        assert memory_id not in nearest(b, _vector_of(content), 10)
    for memory_id, content, _ in rows[100:110]:
        assert nearest(b, _vector_of(content))[0] == memory_id
    index = b.side_indexes.built("vector", (SPACE,))[0]  # type: ignore[union-attr,index]
    assert len(index) == len(rows) - 30
    b.close()
