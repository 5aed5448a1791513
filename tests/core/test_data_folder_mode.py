"""A data folder that already exists open to others is made private, or refused.

Every folder we create is 0700 (tests/core/test_private_files.py), but a data folder
made before (by hand, by a script, under ``umask 000``) was used as it was: at 0777
anyone on the machine could list, replace or remove the store and its ``-wal``. The
folder holding the store is now made 0700 before the store is opened; one that belongs
to another user and is open to others cannot be made private, and is refused with a
message that says what to do.
"""

from __future__ import annotations

import os
import stat
import subprocess
from pathlib import Path

import pytest

from bli_memory.core.paths import data_dir
from tests.conftest import bin_path

pytestmark = pytest.mark.e2e  # starts processes or servers (tests/tiers.py)

NOTE = "The release checklist lives in docs/release.md."


@pytest.fixture
def umask_000():
    old = os.umask(0)
    try:
        yield
    finally:
        os.umask(old)


def _save(project: Path, **env: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([bin_path(), "memory", "save", NOTE], cwd=project, capture_output=True, text=True,
                          env={**os.environ, **env}, timeout=120)


def _mode(path: Path) -> int:
    return stat.S_IMODE(os.stat(path).st_mode)


@pytest.mark.parametrize("where", ["default", "BLI_MEMORY_DATA_DIR"])
def test_a_data_folder_left_open_is_made_private_on_first_use(project: Path, tmp_path: Path,
                                                              umask_000: None, where: str) -> None:
    env = {} if where == "default" else {"BLI_MEMORY_DATA_DIR": str(tmp_path / "memories")}
    folder = data_dir({**os.environ, **env})
    folder.mkdir(parents=True)
    folder.chmod(0o777)

    r = _save(project, **env)
    assert r.returncode == 0 and r.stdout.startswith("saved "), r.stderr

    assert _mode(folder) == 0o700
    files = [p for p in folder.rglob("*") if p.is_file()]
    assert any(p.name == "memory.sqlite3" for p in files)
    for p in files:
        assert _mode(p) & 0o077 == 0, (p.name, oct(_mode(p)))


@pytest.mark.skipif(os.geteuid() != 0, reason="giving a folder to another user needs root")
def test_a_data_folder_of_another_user_open_to_others_is_refused(project: Path, tmp_path: Path) -> None:
    folder = tmp_path / "memories"
    folder.mkdir()
    folder.chmod(0o777)
    os.chown(folder, 65534, 65534)

    r = _save(project, BLI_MEMORY_DATA_DIR=str(folder))
    assert r.returncode == 1, (r.stdout, r.stderr)
    assert f"the folder {folder} is open to other users (mode 0777)" in r.stderr
    assert "BLI_MEMORY_DATA_DIR" in r.stderr
    assert _mode(folder) == 0o777 and list(folder.iterdir()) == []  # nothing written there


def test_a_shared_sticky_folder_is_left_as_it_is(project: Path, tmp_path: Path) -> None:
    folder = tmp_path / "shared"
    folder.mkdir()
    folder.chmod(0o1777)

    r = _save(project, BLI_MEMORY_DATA_DIR=str(folder))
    assert r.returncode == 0, r.stderr
    assert stat.S_IMODE(os.stat(folder).st_mode) == 0o1777
    assert _mode(folder / "memory.sqlite3") == 0o600
