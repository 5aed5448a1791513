#!/usr/bin/env python3
"""Run mypy strict (``[tool.mypy]`` in pyproject.toml) on ``core/`` and print clickable paths.

Usage, from anywhere::

    .venv/bin/python scripts/typecheck.py                 # all of bli_memory.core
    .venv/bin/python scripts/typecheck.py core/ui core/models.py   # some folders or files
    .venv/bin/python scripts/typecheck.py -- --no-incremental      # extra mypy options

Why a runner: setuptools' ``package-dir`` maps ``bli_memory.core`` onto the ``core/`` folder,
so there is no ``bli_memory/`` folder mypy could find modules by, and run from the repository
root it would name them ``core.*`` and fail every ``from bli_memory.core import ...``. The
runner builds ``build/typecheck/bli_memory/`` whose ``core``, ``adapters``, ``installers`` and
``schemas`` entries are links to the real folders, runs mypy there, and maps each reported
``bli_memory/core/...`` path back to ``core/...`` relative to where you ran it, so the
editor or terminal can open the line. mypy's cache stays in ``build/typecheck`` between runs.

Exit status is mypy's: 0 clean, 1 errors found, 2 a usage or crash. The last line counts the
errors per folder of ``core/`` (a wing, or ``core`` for the root modules).
"""

from __future__ import annotations

import collections
import os
import re
import subprocess
import sys
from pathlib import Path

__all__: list[str] = []

ROOT = Path(__file__).resolve().parent.parent
TREE = ROOT / "build" / "typecheck"
PACKAGE_DIRS = ("core", "adapters", "installers", "schemas")
"""The folders pyproject.toml's ``[tool.setuptools.package-dir]`` maps into ``bli_memory``."""

_REPORTED = re.compile(r"^bli_memory/(?P<rel>[^:\s]+\.pyi?)(?P<rest>:.*)?$")


def build_tree() -> Path:
    """Create (or refresh) the ``bli_memory`` link tree and return the folder holding it."""
    package = TREE / "bli_memory"
    package.mkdir(parents=True, exist_ok=True)
    (package / "__init__.py").touch()
    for name in PACKAGE_DIRS:
        link = package / name
        if link.is_symlink() or link.exists():
            if link.is_symlink() and os.readlink(link) == str(ROOT / name):
                continue
            link.unlink()
        link.symlink_to(ROOT / name, target_is_directory=True)
    return TREE


def _targets(args: list[str]) -> list[str]:
    """mypy targets for the given repository paths (default: the package ``bli_memory.core``)."""
    if not args:
        return ["-p", "bli_memory.core"]
    targets: list[str] = []
    for arg in args:
        rel = Path(os.path.abspath(arg)).relative_to(ROOT)
        if rel.parts[0] not in PACKAGE_DIRS:
            raise SystemExit(f"typecheck: {arg} is not under {', '.join(PACKAGE_DIRS)}")
        targets.append(str(Path("bli_memory", rel)))
    return targets


def _clickable(line: str, cwd: Path) -> tuple[str, str | None]:
    """``line`` with a ``bli_memory/...`` path rewritten to the real file, and its folder."""
    match = _REPORTED.match(line)
    if match is None:
        return line, None
    rel = Path(match.group("rel"))
    shown = os.path.relpath(ROOT / rel, cwd)
    folder = rel.parts[1] if rel.parts[0] == "core" and len(rel.parts) > 2 else rel.parts[0]
    return f"{shown}{match.group('rest') or ''}", folder


def main(argv: list[str]) -> int:
    """Run mypy on ``argv``'s paths (options after ``--`` go to mypy) and return its status."""
    paths, extra = (argv[: argv.index("--")], argv[argv.index("--") + 1:]) if "--" in argv else (argv, [])
    cwd = Path.cwd()
    tree = build_tree()
    command = [sys.executable, "-m", "mypy", "--config-file", str(ROOT / "pyproject.toml"),
               *extra, *_targets(paths)]
    done = subprocess.run(command, cwd=tree, capture_output=True, text=True, check=False)
    errors: collections.Counter[str] = collections.Counter()
    for line in done.stdout.splitlines():
        shown, folder = _clickable(line, cwd)
        if folder is not None and ": error:" in line:
            errors[folder] += 1
        print(shown)
    sys.stderr.write(done.stderr)
    if errors:
        print("errors per folder: " + ", ".join(f"{k} {v}" for k, v in sorted(errors.items())))
    return done.returncode


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
