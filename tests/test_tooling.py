"""The project's own tools: the mypy runner maps the package back onto the folders."""

from __future__ import annotations

import importlib.util
import subprocess
import sys
from types import ModuleType

import pytest

from tests.conftest import REPO_ROOT

pytestmark = [pytest.mark.e2e, pytest.mark.e2e]  # starts processes or servers (tests/tiers.py)


def _typecheck() -> ModuleType:
    spec = importlib.util.spec_from_file_location("typecheck", REPO_ROOT / "scripts" / "typecheck.py")
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_reported_paths_are_the_real_files_with_their_wing() -> None:
    clickable = _typecheck()._clickable
    line = "bli_memory/core/ui/charts.py:119: error: Incompatible types  [assignment]"
    assert clickable(line, REPO_ROOT) == ("core/ui/charts.py:119: error: Incompatible types  [assignment]",
                                          "ui")
    assert clickable("bli_memory/core/settings.py:3: note: x", REPO_ROOT) == ("core/settings.py:3: note: x",
                                                                              "core")
    shown, folder = clickable("bli_memory/adapters/codex.py:9: error: y", REPO_ROOT / "core")
    assert shown == "../adapters/codex.py:9: error: y" and folder == "adapters"
    summary = "Found 2 errors in 1 file (checked 3 source files)"
    assert clickable(summary, REPO_ROOT) == (summary, None)


def test_the_runner_checks_a_module_by_its_folder_path() -> None:
    done = subprocess.run([sys.executable, str(REPO_ROOT / "scripts" / "typecheck.py"), "core/timezones.py"],
                          cwd=REPO_ROOT, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "Success: no issues found in 1 source file" in done.stdout


def test_a_path_outside_the_package_folders_is_refused() -> None:
    done = subprocess.run([sys.executable, str(REPO_ROOT / "scripts" / "typecheck.py"), "tests/conftest.py"],
                          cwd=REPO_ROOT, capture_output=True, text=True, timeout=60)
    assert done.returncode != 0 and "is not under core, adapters, installers, schemas" in done.stderr
