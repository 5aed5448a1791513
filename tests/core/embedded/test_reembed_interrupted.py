"""A ``memory reembed`` killed part way: both models see a safe store, and say so.

Decision (``core/embedded/reembed.py``): until the last transaction of the move the store
is of its old model. A process of the old model keeps serving, with vector search over
the rows still of that model only (the moved ones by keyword, without a similarity); a
process of the new model is refused until a rerun finishes the move, and is told to
rerun. No vector of one model is ever compared with a query of the other. Refusing the
old model too would leave every prompt without memory for the whole move (hours on a
large store), or for good after a kill.
"""

from __future__ import annotations

import os
import signal
import subprocess
import time
from pathlib import Path

import pytest

from bli_memory.core.embedded.engine import EmbeddedBackend
from bli_memory.core.errors import ModelMismatchError
from bli_memory.core.paths import store_path
from tests.conftest import bin_path
from tests.core.embedded.test_reembed import SHIPPED, _models, _toy_store
from tests.core.test_hookspecs import _ToyEmbedder

pytestmark = [pytest.mark.e2e, pytest.mark.e2e]  # starts processes or servers (tests/tiers.py)


def _kill_part_way(path: Path, moved: int) -> dict[str | None, int]:
    proc = subprocess.Popen([bin_path(), "memory", "reembed", "--batch", "1"],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 240
        while time.monotonic() < deadline and proc.poll() is None and _models(path).get(SHIPPED, 0) < moved:
            time.sleep(0.02)
        assert proc.poll() is None, "the run ended before it could be interrupted"
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
    return _models(path)


def test_a_reembed_killed_part_way_serves_one_model_and_says_how_to_finish(project: Path) -> None:
    _toy_store(80)
    path = store_path()
    partial = _kill_part_way(path, moved=10)
    assert partial.get(SHIPPED, 0) >= 10 and partial.get("toy-trigram-16", 0) > 0, partial

    toy = _ToyEmbedder()
    old = EmbeddedBackend(path, embedder=toy)
    try:
        query = "Fact number 3: the service on port 8003 is called svc3."
        hits = old.search(query, space="s1", limit=20).hits
        assert hits, "the old model's process must keep serving"
        qv = toy.embed([query])[0]
        moved_ids = {m.id for m in old.list_memories(space="s1", limit=100)} & _ids_of_model(path, SHIPPED)
        for hit in hits:
            if hit.memory.id in moved_ids:
                assert hit.similarity is None  # its vector is of the other model: never compared
            elif hit.similarity is not None:
                own = float(qv @ toy.embed([hit.memory.content])[0])
                assert hit.similarity == pytest.approx(own, abs=1e-3)
        info = old.info(space="s1")
        assert info["reembedUnfinished"] == {SHIPPED: partial[SHIPPED]}
    finally:
        old.close()

    new = EmbeddedBackend(path)  # the shipped model the run was moving to
    try:
        with pytest.raises(ModelMismatchError) as err:
            new.search("port 8003", space="s1")
        assert ("run `bli-memory-mcp memory reembed` again to finish moving it to "
                f"{SHIPPED} (a run stopped part way)") in str(err.value)
    finally:
        new.close()

    done = subprocess.run([bin_path(), "memory", "reembed"], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    new = EmbeddedBackend(path)
    try:
        assert new.search("which service is on port 8003?", space="s1").hits
        assert "reembedUnfinished" not in new.info(space="s1")
    finally:
        new.close()


def _ids_of_model(path: Path, model: str) -> set[str]:
    import sqlite3
    from contextlib import closing

    with closing(sqlite3.connect(path)) as conn, conn:
        return {r[0] for r in conn.execute("SELECT id FROM memories WHERE embedding_model = ?", (model,))}



def test_cockpit_doctor_says_a_reembed_stopped_part_way(project: Path) -> None:
    import json

    _toy_store(40)
    partial = _kill_part_way(store_path(), moved=5)
    doctor = subprocess.run([bin_path("cockpit"), "doctor", "--json"], capture_output=True, text=True,
                            timeout=120)
    row = next(r for r in json.loads(doctor.stdout) if "memory store" in json.dumps(r))
    told = f"({partial[SHIPPED]} rows were moved by a `memory reembed` that stopped part way"
    assert told in json.dumps(row)
