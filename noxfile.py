"""The project's checks as nox sessions: the suite on each supported CPython, and lint.

``nox`` (no arguments) runs every session: ``lint`` (ruff, mypy strict on ``core/``,
import-linter contracts), then ``tests-3.11``, ``tests-3.12`` and ``tests-3.13``. The
oldest and the newest supported CPython run the whole suite; the one between runs
:data:`BETWEEN_SUITE`, the parts that lean on the language and its libraries (stores,
retrieval, redaction, the MCP server, the public API), and leaves out the end-to-end
tiers (host CLIs, the browser, daemons and hooks as subprocesses), which a version that
passes on both ends does not break alone. That keeps CI (three Pythons, 90 minutes) well
inside its time: the whole suite took 21 to 25 minutes per Python on CI's 2 cores, the
part 6.5 minutes against 16.5 for the whole on the same machine.
``nox -s tests-3.12 -- tests/core/memory -k terms`` runs one Python on a part of the suite;
everything after ``--`` goes to pytest. ``nox -l`` lists the sessions.

Interpreters are looked up by name on ``PATH`` (``python3.12``) and then in pyenv's
``versions`` folder, because pyenv's ``python3.X`` shims exit with "command not found"
unless ``PYENV_VERSION`` names that version. An interpreter that is absent is skipped with
a printed note, except under ``BLI_MEMORY_REQUIRE_INTEGRATION=1`` (as ``.ci/run`` sets),
where a missing interpreter fails the run like a missing host CLI does.
"""

from __future__ import annotations

import glob
import os
import shutil
import subprocess
import sys
from pathlib import Path

import nox
from nox.command import CommandFailed

__all__: list[str] = []

PYTHONS = ("3.11", "3.12", "3.13")
"""Supported CPython versions: ``requires-python = ">=3.11"`` and the classifiers' range."""

BETWEEN_SUITE = ("tests/core/memory", "tests/contract", "tests/core/mcp", "tests/core/embedded",
                 "tests/test_public_api.py")
"""What ``tests-3.12`` runs when given no arguments (``nox -s tests-3.12 -- tests`` runs all)."""

ROOT = Path(__file__).resolve().parent
_LINKS = ROOT / ".nox" / "_pythons"

nox.options.sessions = ["lint", *(f"tests-{v}" for v in PYTHONS)]
nox.options.reuse_venv = "yes"
nox.options.download_python = "never"
nox.options.error_on_missing_interpreters = os.environ.get("BLI_MEMORY_REQUIRE_INTEGRATION") == "1"


def _real_executable(executable: str) -> str | None:
    """The interpreter ``executable`` runs (through any shim), or None when it does not start."""
    try:
        done = subprocess.run([executable, "-c", "import sys; print(sys.executable)"],
                              capture_output=True, text=True, timeout=30, check=False)
    except (OSError, subprocess.SubprocessError):
        return None
    real = done.stdout.strip()
    return real if done.returncode == 0 and real else None


def _find_interpreter(version: str) -> str | None:
    """The path of a working CPython ``version`` (``"3.12"``), or None when there is none."""
    on_path = shutil.which(f"python{version}")
    if on_path and (real := _real_executable(on_path)):
        return real
    pyenv_root = os.environ.get("PYENV_ROOT") or os.path.expanduser("~/.pyenv")
    candidates = sorted(glob.glob(os.path.join(pyenv_root, "versions", f"{version}.*", "bin",
                                               f"python{version}")), reverse=True)
    for candidate in candidates:
        if real := _real_executable(candidate):
            return real
    return None


def _link_interpreters() -> None:
    """Put every found interpreter on ``PATH`` as ``python3.X`` in a folder of links.

    Only ``python3.X`` names are linked, so ``python3`` and ``pip`` keep resolving as before.
    """
    _LINKS.mkdir(parents=True, exist_ok=True)
    for version in PYTHONS:
        link = _LINKS / f"python{version}"
        found = _find_interpreter(version)
        if link.is_symlink() or link.exists():
            link.unlink()
        if found is None:
            print(f"nox: no CPython {version} here (PATH, pyenv); its tests session is skipped",
                  file=sys.stderr)
            continue
        link.symlink_to(os.path.realpath(found))
    os.environ["PATH"] = f"{_LINKS}{os.pathsep}{os.environ.get('PATH', '')}"


_link_interpreters()


@nox.session(python=list(PYTHONS))
def tests(session: nox.Session) -> None:
    """The suite on one CPython in its own virtualenv (whole on 3.11 and 3.13).

    The oldest and the newest run the whole suite, the others :data:`BETWEEN_SUITE`,
    unless arguments after ``--`` say what to run.
    """
    session.install("-e", ".[test]")
    whole = session.python in (PYTHONS[0], PYTHONS[-1])
    chosen = session.posargs or ([] if whole else list(BETWEEN_SUITE))
    session.run("python", "-m", "pytest", "-p", "no:cacheprovider", *chosen)


@nox.session
def lint(session: nox.Session) -> None:
    """ruff, mypy strict on ``core/`` (``scripts/typecheck.py``) and the import contracts.

    All three run even when one fails, so one run shows every finding; the session fails
    if any did.
    """
    session.install("-e", ".[test]")
    failed: list[str] = []
    for name, command in (("ruff", ("ruff", "check", ".")),
                          ("mypy", ("python", "scripts/typecheck.py", *session.posargs)),
                          ("import contracts", ("lint-imports",))):
        try:
            session.run(*command)
        except CommandFailed:
            failed.append(name)
    if failed:
        session.error(f"failed: {', '.join(failed)}")
