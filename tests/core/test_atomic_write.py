"""One atomic write for every file we replace: old content or new, never torn, right mode.

Each test writes a real file. The crash tests run the write in a child process that
really fails: one is stopped by a file-size limit in the middle of ``write`` (the disk
"fills"), one exits between writing the temporary file and the rename.
"""

from __future__ import annotations

import os
import stat
import subprocess
import sys
from pathlib import Path

import pytest

from bli_memory.core.private_files import FILE_MODE, atomic_write, replace_file, write_temp


def _mode(path: Path) -> int:
    return stat.S_IMODE(os.stat(path).st_mode)


def _leftovers(folder: Path) -> list[str]:
    return sorted(p.name for p in folder.iterdir() if p.name.endswith(".tmp"))


def test_a_new_file_gets_the_new_content_and_mode_0600_whatever_the_umask(tmp_path: Path) -> None:
    target = tmp_path / "state.json"
    old = os.umask(0)
    try:
        atomic_write(target, '{"a": "\u00e9"}\n')
    finally:
        os.umask(old)
    assert target.read_bytes() == '{"a": "\u00e9"}\n'.encode()
    assert _mode(target) == FILE_MODE
    assert _leftovers(tmp_path) == []


def test_an_existing_file_keeps_its_mode_unless_one_is_given(tmp_path: Path) -> None:
    target = tmp_path / "config.toml"
    target.write_text("old\n")
    os.chmod(target, 0o640)
    atomic_write(target, b"new\n")
    assert (target.read_text(), _mode(target)) == ("new\n", 0o640)
    atomic_write(target, "newer\n", mode=0o600)
    assert (target.read_text(), _mode(target)) == ("newer\n", 0o600)


def test_a_staged_write_changes_nothing_until_it_is_replaced(tmp_path: Path) -> None:
    target = tmp_path / "settings.json"
    target.write_text("old")
    tmp = write_temp(target, "new", mode=0o644)
    assert target.read_text() == "old"
    assert tmp.parent == tmp_path and tmp.name.startswith(".settings.json.")
    assert (tmp.read_text(), _mode(tmp)) == ("new", 0o644)
    replace_file(tmp, target)
    assert (target.read_text(), _mode(target)) == ("new", 0o644)
    assert _leftovers(tmp_path) == []


_FILL_THE_DISK = """
import resource, signal, sys
from pathlib import Path
from bli_memory.core.private_files import atomic_write
signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # a write past the limit fails with EFBIG
resource.setrlimit(resource.RLIMIT_FSIZE, (4096, 4096))
try:
    atomic_write(Path(sys.argv[1]), b"x" * 100_000)
except OSError as exc:
    print(type(exc).__name__, exc.errno)
"""


@pytest.mark.e2e
@pytest.mark.e2e
def test_a_write_that_fails_midway_leaves_the_old_content_and_no_temp_file(tmp_path: Path) -> None:
    target = tmp_path / "stats.json"
    target.write_text("the old content")
    done = subprocess.run([sys.executable, "-c", _FILL_THE_DISK, str(target)],
                          capture_output=True, text=True, timeout=60, check=True)
    assert done.stdout.split()[0] == "OSError", done.stdout + done.stderr
    assert target.read_text() == "the old content"
    assert _leftovers(tmp_path) == []


_DIE_BEFORE_RENAME = """
import os, sys
from pathlib import Path
from bli_memory.core.private_files import write_temp
write_temp(Path(sys.argv[1]), "the new content")
os._exit(9)  # the process dies before the rename
"""


@pytest.mark.e2e
@pytest.mark.e2e
def test_a_crash_before_the_rename_leaves_the_old_content(tmp_path: Path) -> None:
    target = tmp_path / "session.json"
    target.write_text("the old content")
    done = subprocess.run([sys.executable, "-c", _DIE_BEFORE_RENAME, str(target)], timeout=60)
    assert done.returncode == 9
    assert target.read_text() == "the old content"
    [left] = _leftovers(tmp_path)  # the half-done write is a hidden temp file beside it
    assert left.startswith(".session.json.")


def test_a_missing_folder_raises_and_creates_nothing(tmp_path: Path) -> None:
    root = tmp_path / "root"
    root.mkdir()
    with pytest.raises(FileNotFoundError):
        atomic_write(root / "absent" / "file.json", "{}")
    assert list(root.iterdir()) == []
