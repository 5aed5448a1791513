"""A transcript line nested thousands of levels deep costs that line, not the turn.

A tool's input can be any JSON. One nested deeper than the JSON parser goes (about
1,000 levels on CPython 3.11, more on later releases) used to fail the whole stop hook
with ``unknown_internal:RecursionError``, and the turn was not kept. The line is skipped
now, like any line that does not parse, and the exchange around it is queued.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.conftest import FIXTURES
from tests.hooks_util import extract_jobs, run_hook

pytestmark = pytest.mark.e2e  # starts processes or servers (tests/tiers.py)

CLAUDE = FIXTURES / "claude"


def _nested(depth: int, kind: str) -> str:
    if kind == "object":
        return '{"a":' * depth + "1" + "}" * depth
    return "[" * depth + "]" * depth


def _transcript(path: Path, depth: int, kind: str) -> Path:
    """The recorded tool-use transcript, with its ``tool_use`` input nested ``depth`` deep."""
    lines = []
    for line in (CLAUDE / "transcript_tool_use.jsonl").read_text().splitlines():
        obj = json.loads(line)
        content = (obj.get("message") or {}).get("content")
        if isinstance(content, list) and content and content[0].get("type") == "tool_use":
            content[0]["input"] = "@@deep@@"
            line = json.dumps(obj).replace('"@@deep@@"', _nested(depth, kind))
        lines.append(line)
    path.write_text("\n".join(lines) + "\n")
    return path


@pytest.mark.parametrize("kind", ["object", "array"])
@pytest.mark.parametrize("depth", [1_000, 20_000])
def test_stop_keeps_the_turn_around_a_deeply_nested_line(project: Path, tmp_path: Path,
                                                          depth: int, kind: str) -> None:
    transcript = _transcript(tmp_path / "t.jsonl", depth, kind)
    payload = json.loads((CLAUDE / "stop.json").read_text())
    payload.update(cwd=str(project), transcript_path=str(transcript))
    r = run_hook("stop", payload)
    assert r.returncode == 0 and r.stdout == "", r.stdout
    outcome, fields = r.receipt
    assert outcome == "ok" and fields["queued"] is True, r.stderr
    jobs = extract_jobs()
    assert len(jobs) == 1
    text = jobs[0]["text"]
    assert text.startswith("User: Please USE_TOOL to echo something"), text
    assert "Hello from the fake model." in text
