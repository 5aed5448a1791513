"""The real all-mpnet-base-v2 model folder, when one has been exported (slow; issue 23).

The folder comes from ``bli-memory-mcp model install mpnet`` or ``scripts/export_mpnet.py``
and is named by ``BLI_TEST_MPNET_DIR`` (about 120 MB; never in the repository). Without
it these tests skip: the suite never downloads or exports anything.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

import numpy as np
import pytest

from bli_memory.core.embedded.engine import EmbeddedBackend
from bli_memory.core.memory import embedder_models
from bli_memory.core.paths import data_dir, store_path
from tests.conftest import bin_path

pytestmark = pytest.mark.integration

MPNET = Path(os.environ.get("BLI_TEST_MPNET_DIR", "/nonexistent"))
if not (MPNET / "model.json").is_file():
    pytest.skip("no exported mpnet model: set BLI_TEST_MPNET_DIR to a folder made by "
                "`bli-memory-mcp model install mpnet` or scripts/export_mpnet.py", allow_module_level=True)


def test_the_exported_model_loads_verified_and_embeds_meaningfully() -> None:
    embedder = embedder_models.load_model_dir(MPNET)
    assert (embedder.name, embedder.dimensions, embedder.max_tokens) == ("all-mpnet-base-v2-int8", 768, 384)
    v = embedder.embed(["How do I reset my password?", "I forgot my login, how can I recover it?",
                        "Bake at 180 degrees for 25 minutes."])
    assert v.shape == (3, 768) and np.allclose(np.linalg.norm(v, axis=1), 1.0, atol=1e-5)
    assert v[0] @ v[1] > 0.5 > v[0] @ v[2]
    one = embedder.embed(["How do I reset my password?"])[0]
    assert float(one @ v[0]) > 0.9999  # batch-independent: activations are quantised per block


def test_a_minilm_store_moves_to_the_installed_mpnet_and_searches(project: Path) -> None:
    shutil.copytree(MPNET, embedder_models.installed_model_dir("mpnet", data_dir()))
    backend = EmbeddedBackend(store_path())
    try:
        ids = [backend.save(text, space="s1").memory.id for text in (
            "We deploy the billing service with make release-billing.",
            "Ana prefers pytest over unittest for the ledger repo.",
            "The staging database is read-only on Fridays.")]
        backend.forget(space="s1", id=ids[2])
    finally:
        backend.close()
    env = {**os.environ, "BLI_MEMORY_EMBEDDER": "mpnet"}
    r = subprocess.run([bin_path(), "memory", "reembed", "--json"], capture_output=True, text=True,
                       timeout=600, env=env)
    assert r.returncode == 0, r.stderr
    assert json.loads(r.stdout) == {**json.loads(r.stdout), "model": "all-mpnet-base-v2-int8", "embedded": 2}
    backend = EmbeddedBackend(store_path(), embedder=embedder_models.load_installed("mpnet", data_dir()))
    try:
        hits = backend.search("how is billing shipped to production?", space="s1").hits
        assert hits[0].memory.id == ids[0] and ids[2] not in [h.memory.id for h in hits]
    finally:
        backend.close()
