"""The end of CI's log (scripts/ci_report.py): failures with their first lines, the
slowest tests, one closing line, and summary.json."""

from __future__ import annotations

import importlib.util
import json
import sys
from pathlib import Path
from types import ModuleType

from tests.conftest import REPO_ROOT


def _report_module() -> ModuleType:
    """scripts/ci_report.py, a script and no package module, loaded from its file."""
    if "ci_report" not in sys.modules:
        spec = importlib.util.spec_from_file_location("ci_report", REPO_ROOT / "scripts" / "ci_report.py")
        assert spec and spec.loader
        module = importlib.util.module_from_spec(spec)
        sys.modules["ci_report"] = module  # its dataclasses look their module up there
        spec.loader.exec_module(module)
    return sys.modules["ci_report"]


FULL = """<?xml version="1.0" encoding="utf-8"?>
<testsuites><testsuite name="pytest">
<testcase classname="tests.core.hooks.test_hooks" name="test_ok" time="0.5"/>
<testcase classname="tests.core.hooks.test_hooks" name="test_slow[prompt]" time="42.0"/>
<testcase classname="tests.core.hooks.test_hooks" name="test_broken" time="1.2">
<failure message="AssertionError: round 4: 4 of 4 hooks were given the memory">def test_broken():
&gt;       assert len(given) == 1
E       AssertionError: round 4: 4 of 4 hooks were given the memory
E       assert 4 == 1

tests/core/hooks/test_hooks.py:63: AssertionError</failure></testcase>
<testcase classname="tests.core.ui.test_pages.TestForms" name="test_setup_fails" time="0.1">
<error message="failed on setup with &quot;OSError: port in use&quot;">
E   OSError: port in use</error></testcase>
<testcase classname="" name="tests.integration.test_mpnet_model" time="0.0">
<skipped message="no model"/></testcase>
</testsuite></testsuites>
"""
FAST = """<?xml version="1.0" encoding="utf-8"?>
<testsuites><testsuite name="pytest">
<testcase classname="tests.core.memory.test_terms" name="test_a" time="0.01"/>
</testsuite></testsuites>
"""


def test_failures_come_with_their_first_lines_then_the_slowest_then_one_count(tmp_path: Path) -> None:
    (tmp_path / "full.xml").write_text(FULL)
    (tmp_path / "fast-3.11.xml").write_text(FAST)
    text = _report_module().report(tmp_path, rc=1, seconds=812.0, sha="abc123")
    lines = text.splitlines()
    assert "full: 2 passed, 2 failed, 1 skipped" in lines
    assert "fast-3.11: 1 passed, 0 failed, 0 skipped" in lines
    at = lines.index("- [full] tests/core/hooks/test_hooks.py::test_broken")
    assert lines[at + 1].strip() == "E       AssertionError: round 4: 4 of 4 hooks were given the memory"
    assert "- [full] tests/core/ui/test_pages.py::TestForms::test_setup_fails" in lines
    slow = lines.index("5 slowest tests:")
    slowest = lines[slow + 1].split()
    assert slowest == ["42.0", "s", "[full]", "tests/core/hooks/test_hooks.py::test_slow[prompt]"]
    assert lines[-1] == "ci: 3 passed, 2 failed, 1 skipped"
    summary = json.loads((tmp_path / "summary.json").read_text())
    assert summary["rc"] == 1 and summary["sha"] == "abc123" and summary["seconds"] == 812.0
    assert summary["failed"] == ["full::tests/core/hooks/test_hooks.py::test_broken",
                                 "full::tests/core/ui/test_pages.py::TestForms::test_setup_fails"]


def test_a_run_that_stopped_before_the_tests_names_the_step(tmp_path: Path) -> None:
    (tmp_path / "step").write_text("host CLIs\n")
    text = _report_module().report(tmp_path, rc=2, seconds=None, sha=None)
    assert "no test session wrote a report" in text
    assert 'FAILED: the step "host CLIs" exited with status 2' in text
    assert text.splitlines()[-1] == "ci: 0 passed, 0 failed, 0 skipped, stopped in step: host CLIs"
    summary = json.loads((tmp_path / "summary.json").read_text())
    assert summary["failed"] == ["step: host CLIs"]


def test_a_failure_and_its_teardown_error_are_one_failed_test(tmp_path: Path) -> None:
    (tmp_path / "full.xml").write_text("""<testsuites><testsuite>
<testcase classname="tests.test_x" name="test_a" time="1.0"><failure message="E assert 1 == 2"/></testcase>
<testcase classname="tests.test_x" name="test_a" time="0.2"><error message="E teardown: OSError"/></testcase>
<testcase classname="tests.test_x" name="test_b" time="nan"/>
<testcase classname="tests.test_x" name="test_c" time="soon"/>
</testsuite></testsuites>""")
    text = _report_module().report(tmp_path, rc=1, seconds=3.0, sha=None)
    assert text.splitlines()[-1] == "ci: 2 passed, 1 failed, 0 skipped"
    assert text.count("- [full] tests/test_x.py::test_a") == 1
    assert "E teardown: OSError" in text  # the second report's lines are kept
    summary = json.loads((tmp_path / "summary.json").read_text())
    assert summary["failed"] == ["full::tests/test_x.py::test_a"]


def test_an_unreadable_report_counts_as_a_failure(tmp_path: Path) -> None:
    (tmp_path / "full.xml").write_text("<testsuites><testsuite>")
    text = _report_module().report(tmp_path, rc=1, seconds=1.0, sha=None)
    assert "- [full] <junit report>" in text and text.splitlines()[-1].endswith("1 failed, 0 skipped")
