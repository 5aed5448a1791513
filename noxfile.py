"""The project's checks as nox sessions: lint, the whole suite once, and a fast tier.

``nox`` (no arguments) runs every session:

- ``lint``: ruff, mypy strict on ``core/`` and the import-linter contracts, in the
  environment nox itself runs in (the project's ``.venv``); mypy's cache lives in
  ``MYPY_CACHE_DIR`` when set (``.ci/run`` keeps it under ``~/.cache/bli-ci``).
- ``full``: every test, with every real part (Postgres, the host CLIs, chromium, the
  daemon, hook processes), on the newest supported CPython (:data:`NEWEST`).
- ``fast-3.11``, ``fast-3.12``: the tests that start no process and bind no socket
  (``-m "not e2e"``, kept true by ``tests/tiers.py``) on the other supported CPythons.

``nox -s full -- tests/core/memory -k terms`` runs a part of the suite; everything after
``--`` goes to pytest. ``nox -l`` lists the sessions. Every virtualenv is built by uv
(from its cache, in seconds) with ``constraints.txt``, so each session tests the same
pinned versions. With ``BLI_CI_REPORT_DIR`` set, each test session writes its JUnit XML
there (``<session>.xml``), which ``scripts/ci_report.py`` reads.

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
NEWEST = PYTHONS[-1]
"""The CPython the whole suite runs on."""
OLDER = PYTHONS[:-1]
"""The CPythons the fast tier runs on."""

ROOT = Path(__file__).resolve().parent
_LINKS = ROOT / ".nox" / "_pythons"
CONSTRAINTS = ROOT / "constraints.txt"

nox.options.sessions = ["lint", "full", *(f"fast-{v}" for v in OLDER)]
nox.options.reuse_venv = "yes"
nox.options.download_python = "never"
nox.options.default_venv_backend = "uv|virtualenv"
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


def _install(session: nox.Session) -> None:
    """The project and its ``test`` extra, editable, at the pinned versions, compiled to
    bytecode (hook and CLI processes start from it even under PYTHONDONTWRITEBYTECODE)."""
    session.env["UV_COMPILE_BYTECODE"] = "1"
    session.env["UV_PYTHON_DOWNLOADS"] = "never"
    session.install("-c", str(CONSTRAINTS), "-e", ".[test]")
    session.run("python", "-m", "compileall", "-q", "core", "adapters", "installers", silent=True)


def _pytest(session: nox.Session, *selection: str) -> None:
    """pytest over ``tests/`` (or the session's arguments), with a JUnit report when asked."""
    report_dir = os.environ.get("BLI_CI_REPORT_DIR")
    report = [f"--junitxml={Path(report_dir) / session.name}.xml"] if report_dir else []
    session.run("python", "-m", "pytest", "-p", "no:cacheprovider", "--durations=15", *report,
                *selection, *session.posargs)


@nox.session(python=NEWEST)
def full(session: nox.Session) -> None:
    """The whole suite, every real part, on the newest supported CPython."""
    _install(session)
    _pytest(session)


@nox.session(python=list(OLDER))
def fast(session: nox.Session) -> None:
    """The tests that start no process and bind no socket, on an older CPython."""
    _install(session)
    _pytest(session, "-m", "not e2e")


@nox.session(venv_backend="none")
def lint(session: nox.Session) -> None:
    """ruff, mypy strict on core/ and the import contracts, in the project's .venv.

    ``scripts/typecheck.py`` runs mypy; the environment is the one nox runs in (the
    project's ``.venv``, which has the ``test`` extra).

    All three run even when one fails, so one run shows every finding; the session fails
    if any did.
    """
    python = sys.executable
    bin_dir = Path(python).parent
    failed: list[str] = []
    for name, command in (("ruff", (python, "-m", "ruff", "check", ".")),
                          ("mypy", (python, "scripts/typecheck.py", *session.posargs)),
                          ("import contracts", (str(bin_dir / "lint-imports"),))):
        try:
            session.run(*command, external=True)
        except CommandFailed:
            failed.append(name)
    if failed:
        session.error(f"failed: {', '.join(failed)}")
