"""Shared fixtures: every test runs in a temporary HOME with clean BLI_MEMORY_* settings."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from hypothesis import HealthCheck, settings

pytest_plugins = ["tests.tiers"]

REPO_ROOT = Path(__file__).resolve().parents[1]
SHARED = Path(os.environ.get("BLI_MEMORY_SHARED_DIR", REPO_ROOT.parent / "shared"))
FIXTURES = SHARED / "fixtures" / "hosts"
BIN_DIR = Path(sys.executable).parent


#: The hooks' deadlines in tests (``BLI_MEMORY_HOOK_DEADLINE_SCALE``): a cold hook process
#: on a loaded 2-core machine can take most of a prompt's 2 s, and a test that is not
#: about the deadline must not depend on it. Tests of the deadline itself are marked
#: ``deadline`` and run with the real one.
TEST_DEADLINE_SCALE = "4"

# Hypothesis in CI: the same examples on every run (a failure is reproducible, never a
# matter of which examples were drawn) and no per-example deadline on a loaded machine.
settings.register_profile("ci", derandomize=True, deadline=None, database=None, print_blob=True,
                          suppress_health_check=[HealthCheck.too_slow])
settings.register_profile("dev", deadline=None)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE") or ("ci" if os.environ.get("CI") else "dev"))


def pytest_configure(config: pytest.Config) -> None:
    """Fail once, clearly, when the shared fixtures folder is missing; and end a run that is
    sent SIGTERM (``timeout``, a CI's limit) as Ctrl-C ends it, so the session's teardown
    still stops the Postgres server and daemons it started instead of leaving them running."""
    if not (FIXTURES / "claude").is_dir():
        raise pytest.UsageError(
            f"the host fixtures are missing: expected {FIXTURES}. The tests read the shared folder "
            "beside the repository (../shared); point BLI_MEMORY_SHARED_DIR at it if it lives elsewhere."
        )
    import signal

    def interrupted(signum: int, frame: object) -> None:
        raise KeyboardInterrupt(f"signal {signum}")

    signal.signal(signal.SIGTERM, interrupted)


def bin_path(name: str = "bli-memory-mcp") -> str:
    """Absolute path of an installed console script of this environment."""
    path = BIN_DIR / name
    if not path.exists():
        pytest.fail(f"console script {name} is not installed next to {sys.executable}; pip install -e .")
    return str(path)


@pytest.fixture(scope="session")
def rule_cache_home(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One ``XDG_CACHE_HOME`` for the whole session: the compiled vendor secret rules are
    a cache (a few seconds to build cold, 0.25 s to load), the same for every test."""
    folder = tmp_path_factory.mktemp("xdg-cache")
    folder.chmod(0o700)
    return folder


@pytest.fixture(autouse=True)
def temp_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
              request: pytest.FixtureRequest, rule_cache_home: Path) -> Iterator[Path]:
    """Point HOME and the XDG folders at a temporary folder (``XDG_CACHE_HOME`` at the
    session's, :func:`rule_cache_home`); drop BLI_MEMORY_* variables; stretch the hooks'
    deadlines unless the test is marked ``deadline``."""
    home = tmp_path / "home"
    home.mkdir()
    for key in list(os.environ):
        if key.startswith("BLI_MEMORY_") or key.startswith("XDG_"):
            monkeypatch.delenv(key, raising=False)
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("XDG_CACHE_HOME", str(rule_cache_home))
    monkeypatch.setenv("GIT_CONFIG_GLOBAL", "/dev/null")
    monkeypatch.setenv("GIT_CONFIG_NOSYSTEM", "1")
    # The daemon route is tested on purpose in its own tests; elsewhere hooks go direct.
    monkeypatch.setenv("BLI_MEMORY_DAEMON", "0")
    if request.node.get_closest_marker("deadline") is None:
        monkeypatch.setenv("BLI_MEMORY_HOOK_DEADLINE_SCALE", TEST_DEADLINE_SCALE)
    yield home
    # A host that starts our MCP server with an environment of its own (Codex, Hermes) lets
    # it start a daemon, detached: end every daemon of this temporary HOME with the test.
    if any(home.glob(".local/state/*/memory-daemon.*")):  # a start stamp, a lock, a socket
        kill_daemons_of(home)


def processes_of(home: Path, wanted: Callable[[bytes], bool]) -> list[int]:
    """Live (not zombie) processes whose HOME is ``home`` and whose NUL-separated command
    line ``wanted`` accepts."""
    needle = b"HOME=" + os.fsencode(home)
    pids = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            cmdline = (entry / "cmdline").read_bytes()
            environ = (entry / "environ").read_bytes().split(b"\0")
            state = (entry / "stat").read_text().rsplit(")", 1)[1].split()[0]
        except OSError:
            continue
        if needle in environ and state != "Z" and wanted(cmdline):
            pids.append(int(entry.name))
    return pids


def daemon_pids(home: Path) -> list[int]:
    """Live (not zombie) ``bli-memory-mcp daemon`` processes whose HOME is ``home``."""
    return processes_of(home, lambda cmdline: b"daemon" in cmdline.split(b"\0"))


def kill_daemons_of(home: Path) -> None:
    """SIGKILL every live ``bli-memory-mcp daemon`` process whose HOME is ``home``."""
    import signal

    for pid in daemon_pids(home):
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass


@pytest.fixture
def project(tmp_path: Path) -> Path:
    """An empty project folder (a plain folder, so its space is ``dir_project__...``)."""
    p = tmp_path / "project"
    p.mkdir()
    return p


def git(*args: str, cwd: Path) -> str:
    """Run git with a neutral identity; returns stdout."""
    return subprocess.run(
        ["git", "-c", "user.name=t", "-c", "user.email=t@example.invalid", "-c", "init.defaultBranch=main",
         *args],
        cwd=cwd, check=True, capture_output=True, text=True,
    ).stdout


def make_repo(path: Path, remote: str | None) -> Path:
    """A git repository at ``path`` with one commit and (optionally) an origin remote."""
    path.mkdir(parents=True, exist_ok=True)
    git("init", "-q", cwd=path)
    if remote:
        git("remote", "add", "origin", remote, cwd=path)
    (path / "README").write_text("x\n")
    git("add", "README", cwd=path)
    git("commit", "-q", "-m", "init", cwd=path)
    return path


def make_fifo_config_repo(path: Path) -> Path:
    """A git repository at ``path`` (origin remote, one commit) whose ``.git/config`` is then
    replaced by a FIFO: opening it for reading waits for a writer that never comes."""
    make_repo(path, "https://github.com/acme/fifo.git")
    config = path / ".git" / "config"
    config.unlink()
    os.mkfifo(config)
    return path
