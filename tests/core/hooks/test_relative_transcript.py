"""A relative ``transcript_path`` names a file relative to the hook process, on every route.

The daemon runs in its own working folder; a hook that hands it a payload with
``transcript_path: "t.jsonl"`` means the file next to the hook (the host started it
there), not one next to the daemon.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.conftest import FIXTURES
from tests.core.daemon.test_daemon import Daemons, daemons  # noqa: F401  (the fixture)
from tests.hooks_util import extract_jobs, run_hook

pytestmark = [pytest.mark.e2e, pytest.mark.e2e]  # starts processes or servers (tests/tiers.py)

CLAUDE = FIXTURES / "claude"


def _stop_with_relative_transcript(project: Path) -> tuple[str, dict]:
    (project / "t.jsonl").write_bytes((CLAUDE / "transcript.jsonl").read_bytes())
    payload = json.loads((CLAUDE / "stop.json").read_text())
    payload.update(cwd=str(project), transcript_path="t.jsonl")
    r = run_hook("stop", payload, cwd=project)
    assert r.returncode == 0 and r.stdout == ""
    return r.receipt


def test_a_relative_transcript_path_is_read_next_to_the_hook_via_the_daemon(daemons: Daemons,  # noqa: F811
                                                                            project: Path) -> None:
    daemons.start()  # its working folder is this test run's, not the project
    outcome, fields = _stop_with_relative_transcript(project)
    assert (outcome, fields.get("via"), fields.get("queued")) == ("ok", "daemon", True), fields
    (job,) = extract_jobs()
    assert "Hello from the fake model." in job["text"]


def test_a_relative_transcript_path_is_read_next_to_the_hook_directly(project: Path) -> None:
    outcome, fields = _stop_with_relative_transcript(project)
    assert (outcome, fields.get("via"), fields.get("queued")) == ("ok", "direct", True), fields
