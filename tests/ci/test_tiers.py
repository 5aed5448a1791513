"""The tier guard (tests/tiers.py) fails an unmarked test that starts a process or binds
a socket, and lets a marked one through; run as a real pytest process on a scratch test file."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import REPO_ROOT

pytestmark = pytest.mark.e2e  # runs pytest as a process

SCRATCH = '''
import os
import socket
import subprocess
import sys

import pytest


def test_unmarked_process():
    subprocess.run([sys.executable, "-c", "pass"], check=True)


def test_unmarked_server():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))


def test_unmarked_shell():
    os.system("true")


def test_unmarked_swallowed():
    try:
        subprocess.run([sys.executable, "-c", "pass"], check=True)
    except Exception:
        pass


@pytest.mark.e2e
def test_marked_process():
    subprocess.run([sys.executable, "-c", "pass"], check=True)


def test_pure():
    assert sum(range(4)) == 6
'''


def _pytest(folder: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(REPO_ROOT)}
    return subprocess.run([sys.executable, "-m", "pytest", "-p", "tests.tiers", "-p", "no:cacheprovider",
                           "-q", "-rf", "--rootdir", str(folder), "-c", os.devnull, *args, str(folder)],
                          capture_output=True, text=True, env=env, timeout=120, check=False)


def test_the_guard_names_unmarked_tests_that_start_a_process_or_a_server(tmp_path: Path) -> None:
    (tmp_path / "test_scratch.py").write_text(SCRATCH)
    done = _pytest(tmp_path)
    assert done.returncode == 1, done.stdout + done.stderr
    failed = {line.split("::")[1].split(" ")[0] for line in done.stdout.splitlines()
              if line.startswith("FAILED")}
    assert failed == {"test_unmarked_process", "test_unmarked_server", "test_unmarked_shell",
                      "test_unmarked_swallowed"}, done.stdout
    assert "starts a process" in done.stdout and "starts a server socket" in done.stdout
    assert "starts a shell command" in done.stdout
    assert "4 failed, 2 passed in" in done.stdout  # no error besides: one failure a test


def test_the_fast_tier_deselects_marked_tests(tmp_path: Path) -> None:
    (tmp_path / "test_scratch.py").write_text(SCRATCH)
    done = _pytest(tmp_path, "-m", "not e2e", "-k", "pure or test_marked_process")
    assert done.returncode == 0, done.stdout + done.stderr
    assert "1 passed, 5 deselected" in done.stdout, done.stdout


def test_a_module_that_starts_a_process_when_imported_fails_collection(tmp_path: Path) -> None:
    (tmp_path / "test_at_import.py").write_text(
        "import subprocess, sys\nsubprocess.run([sys.executable, '-c', 'pass'])\n"
        "def test_pure():\n    pass\n")
    done = _pytest(tmp_path, "-m", "not e2e")
    assert done.returncode != 0, done.stdout + done.stderr
    assert "importing test_at_import.py starts a process" in done.stdout, done.stdout


OLDER_THREAD = '''
import socket
import threading

import pytest

started = threading.Event()
go = threading.Event()
done = threading.Event()


def _server():
    started.set()
    go.wait(30)
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
    done.set()


@pytest.mark.e2e
def test_a_marked_test_leaves_a_server_thread():
    threading.Thread(target=_server, daemon=True).start()
    assert started.wait(30)


def test_a_later_unmarked_test_is_not_blamed_for_it():
    go.set()
    assert done.wait(30)
'''


def test_a_thread_older_than_the_test_is_not_the_tests_doing(tmp_path: Path) -> None:
    (tmp_path / "test_older.py").write_text(OLDER_THREAD)
    done = _pytest(tmp_path)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "2 passed" in done.stdout, done.stdout


WIDER_FIXTURE = '''
import subprocess
import sys

import pytest


@pytest.fixture(scope="module")
def server():
    yield
    subprocess.run([sys.executable, "-c", "pass"], check=True)  # stops what an e2e test started


@pytest.mark.e2e
def test_marked_uses_the_server(server):
    pass


def test_unmarked_runs_last():
    pass
'''


def test_a_wider_fixture_may_stop_its_server_in_an_unmarked_tests_teardown(tmp_path: Path) -> None:
    (tmp_path / "test_wider.py").write_text(WIDER_FIXTURE)
    done = _pytest(tmp_path)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "2 passed in" in done.stdout and "error" not in done.stdout, done.stdout
