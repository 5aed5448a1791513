"""``bli-memory-mcp model list|install``, through the real console script (issue 23).

No test here downloads: a real install is covered by tests/integration/test_mpnet_model.py,
which uses an exported model folder when one is present.
"""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from bli_memory.core.memory import embedder_models
from bli_memory.core.paths import data_dir
from tests.conftest import bin_path
from tests.core.memory.tiny_model import write_tiny_model

pytestmark = [pytest.mark.e2e, pytest.mark.e2e]  # starts processes or servers (tests/tiers.py)


def _model(*args: str, **kw) -> subprocess.CompletedProcess:
    return subprocess.run([bin_path(), "model", *args], capture_output=True, text=True, timeout=120, **kw)


def test_list_shows_the_shipped_model_in_use_and_mpnet_not_installed() -> None:
    r = _model("list")
    assert r.returncode == 0, r.stderr
    lines = r.stdout.splitlines()
    assert lines[0].startswith("* all-MiniLM-L6-v2-int8") and "shipped" in lines[0]
    assert lines[1].startswith("  mpnet") and "not installed" in lines[1]


def test_list_marks_an_installed_mpnet_in_use(monkeypatch) -> None:
    write_tiny_model(embedder_models.installed_model_dir("mpnet", data_dir()), name="all-mpnet-base-v2-int8")
    monkeypatch.setenv("BLI_MEMORY_EMBEDDER", "mpnet")
    r = _model("list")
    assert r.returncode == 0, r.stderr
    assert r.stdout.splitlines()[0].startswith("  all-MiniLM")
    assert "* mpnet" in r.stdout and "installed" in r.stdout and "not installed" not in r.stdout


def test_install_of_an_unknown_model_or_bad_parts_folder_is_a_clear_error(tmp_path: Path) -> None:
    r = _model("install", "bert-huge")
    assert r.returncode == 1 and "no installable model is called 'bert-huge'; known: mpnet" in r.stderr
    r = _model("install", "mpnet", "--parts", str(tmp_path / "missing"))
    assert r.returncode == 1 and "is not a folder" in r.stderr and "Traceback" not in r.stderr
    assert not embedder_models.models_dir(data_dir()).exists()  # nothing was started


def test_install_when_installed_checks_the_folder_and_builds_nothing() -> None:
    folder = write_tiny_model(embedder_models.installed_model_dir("mpnet", data_dir()),
                              name="all-mpnet-base-v2-int8")
    r = _model("install", "mpnet")
    assert r.returncode == 0 and "already installed" in r.stdout, r.stderr
    (folder / "model.onnx").write_bytes(b"damaged")
    r = _model("install", "mpnet")
    assert r.returncode == 1 and "fails its checksum" in r.stderr, r.stdout + r.stderr
