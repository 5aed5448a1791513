"""Lone surrogates (half an emoji, as a UTF-16 host writes it) in hook input.

JSON carries them as ``"\\ud83d"``; they are replaced by U+FFFD at the boundary, so
the prompt is searched as usual and the transcript keeps a replacement character,
not a misleading ``?``.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.conftest import FIXTURES
from tests.hooks_util import extract_jobs, run_hook, save

pytestmark = [pytest.mark.e2e, pytest.mark.e2e]  # starts processes or servers (tests/tiers.py)

CLAUDE = FIXTURES / "claude"


def _fixture(name: str, **overrides) -> dict:
    data = json.loads((CLAUDE / name).read_text())
    data.update(overrides)
    return data


def test_a_lone_surrogate_in_the_prompt_is_searched_as_usual(project: Path) -> None:
    save(project, "The user's favourite colour is teal.")
    payload = _fixture("prompt.json", cwd=str(project), prompt="What is my favourite colour? \ud83d")
    for _ in range(3):  # a cold model load on a busy machine can miss the 2 s deadline
        r = run_hook("prompt", payload)
        assert r.returncode == 0
        outcome, fields = r.receipt
        if fields.get("reason") != "timeout":
            break
    assert outcome == "ok", r.stderr
    assert fields["hits"] == 1 and r.context is not None and "teal" in r.context


def test_lone_surrogates_in_a_transcript_become_the_replacement_character(
    project: Path, tmp_path: Path
) -> None:
    transcript = tmp_path / "t.jsonl"
    lines = [
        {"type": "user", "message": {"role": "user", "content": "Why did the \ud83d parser break?"}},
        {
            "type": "assistant",
            "message": {
                "role": "assistant",
                "content": [{"type": "text", "text": "It split the \udc00 pair."}],
            },
        },
    ]
    transcript.write_text("\n".join(json.dumps(x) for x in lines) + "\n")
    r = run_hook("stop", _fixture("stop.json", cwd=str(project), transcript_path=str(transcript)))
    assert r.returncode == 0 and r.receipt[0] == "ok", r.stderr
    text = extract_jobs()[0]["text"]
    assert "Why did the \ufffd parser break?" in text and "It split the \ufffd pair." in text
    assert "?" not in text.replace("break?", "")
