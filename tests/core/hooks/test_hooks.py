"""The hook process end to end: real subprocesses, real fixtures, real SQLite."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from bli_memory.core.hooks.deadlines import budgets_ms
from bli_memory.core.paths import hook_stats_path, store_path
from tests.conftest import FIXTURES, bin_path
from tests.hooks_util import RECEIPT, reason_is_closed, run_hook, save, summed_counts
from tests.hooks_util import extract_jobs as queued_jobs

pytestmark = [pytest.mark.e2e, pytest.mark.e2e]  # starts processes or servers (tests/tiers.py)

CLAUDE = FIXTURES / "claude"


def fixture(name: str, **overrides) -> dict:
    data = json.loads((CLAUDE / name).read_text())
    data.update(overrides)
    return data





# --- the fixture payloads -----------------------------------------------------------


def test_session_start_fixture_on_empty_space_prints_nothing(project: Path) -> None:
    r = run_hook("session-start", fixture("session_start.json", cwd=str(project)))
    assert r.returncode == 0 and r.stdout == ""
    outcome, fields = r.receipt
    assert outcome == "ok" and fields["via"] == "direct"
    assert fields["deadline_ms"] == budgets_ms("session-start")[0]  # 8 s, as the tests scale it


def test_session_start_prints_one_context_block(project: Path) -> None:
    from bli_memory.core.embedded.engine import EmbeddedBackend
    from bli_memory.core.memory.spaces import derive_space

    backend = EmbeddedBackend(store_path())
    backend.save("Always run ruff before committing.", space=derive_space(project).tag,
                 metadata={"kind": "convention"})
    backend.save("Yesterday we split the parser into lexer and grammar modules.",
                 space=derive_space(project).tag)
    backend.close()
    r = run_hook("session-start", fixture("session_start_resume.json", cwd=str(project)))
    ctx = r.context
    assert r.returncode == 0 and ctx is not None
    assert ctx.startswith("<bli-memory-context>") and ctx.endswith("</bli-memory-context>")
    inner = ctx.splitlines()[1:-1]
    assert all(line.startswith("[bli] ") for line in inner)
    assert any("User Profile" in line for line in inner) and any("Recent Context" in line for line in inner)
    assert any("Always run ruff" in line for line in inner)
    assert any(line.startswith("[bli] [20") and "lexer" in line for line in inner)  # dated lines


def test_prompt_fixture_recalls_one_block(project: Path) -> None:
    save(project, "The user's favourite colour is teal.", "The CI runs on GitHub Actions.")
    r = run_hook("prompt", fixture("prompt.json", cwd=str(project), prompt="What is my favourite colour?"))
    assert r.returncode == 0
    ctx = r.context
    assert ctx is not None and ctx.count("<bli-memory-recall>") == 1
    lines = ctx.splitlines()[1:-1]
    assert all(line.startswith("[bli] ") for line in lines)
    assert "teal" in lines[1] and not any("GitHub Actions" in ln for ln in lines)
    outcome, fields = r.receipt
    assert outcome == "ok" and fields["hits"] == 1 and fields["via"] == "direct"


def test_prompt_with_no_match_prints_nothing(project: Path) -> None:
    save(project, "The user's favourite colour is teal.")
    r = run_hook("prompt", fixture("prompt.json", cwd=str(project),
                                   prompt="Refactor the websocket reconnect backoff logic"))
    assert r.returncode == 0 and r.stdout == ""
    assert r.receipt == ("ok", {**r.receipt[1], "hits": 0})


def test_stop_fixture_queues_the_last_exchange(project: Path, tmp_path: Path) -> None:
    transcript = tmp_path / "t.jsonl"
    transcript.write_bytes((CLAUDE / "transcript.jsonl").read_bytes())
    r = run_hook("stop", fixture("stop.json", cwd=str(project), transcript_path=str(transcript)))
    assert r.returncode == 0 and r.stdout == ""
    outcome, fields = r.receipt
    assert outcome == "ok" and fields["queued"] is True and "saved" not in fields
    assert fields["masked"] == 0 and fields["chars"] > 0
    jobs = queued_jobs()
    assert len(jobs) == 1 and jobs[0]["state"] == "queued"
    assert "Hello from the fake model." in jobs[0]["text"]
    assert jobs[0]["session_id"] == "521d7583-94d2-4863-aa6f-7ccc775c8dbb"
    assert "MEMCTX" not in jobs[0]["text"]


def test_a_session_id_longer_than_a_store_keeps_does_not_lose_the_turn(project: Path, tmp_path: Path) -> None:
    """A break-it pass: a 600-character session id failed the turn with invalid_input."""
    import hashlib

    transcript = tmp_path / "t.jsonl"
    transcript.write_bytes((CLAUDE / "transcript.jsonl").read_bytes())
    long_id = "s" * 600
    r = run_hook("stop", fixture("stop.json", cwd=str(project), transcript_path=str(transcript),
                                 session_id=long_id))
    assert r.returncode == 0 and r.receipt[0] == "ok" and r.receipt[1]["queued"] is True, r.receipt
    [job] = queued_jobs()
    assert job["session_id"] == "sha256:" + hashlib.sha256(long_id.encode()).hexdigest()


def test_stop_with_tool_use_transcript_takes_the_typed_prompt(project: Path, tmp_path: Path) -> None:
    transcript = tmp_path / "t.jsonl"
    transcript.write_bytes((CLAUDE / "transcript_tool_use.jsonl").read_bytes())
    r = run_hook("stop", fixture("stop.json", cwd=str(project), transcript_path=str(transcript)))
    assert r.receipt[0] == "ok"
    text = queued_jobs()[0]["text"]
    assert text.startswith("User: Please USE_TOOL to echo something")
    assert "tool-ok" not in text.split("Assistant:")[0]


def test_reentrant_stop_saves_nothing(project: Path) -> None:
    r = run_hook("stop", fixture("stop_hook_active.json", cwd=str(project)))
    assert r.returncode == 0 and r.stdout == "" and r.receipt == ("skipped", {"reason": "reentrant"})
    assert queued_jobs() == []


# --- stdin ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("stdin", "reason"),
    [(b"", "stdin_empty"), (b"   \n", "stdin_empty"), (b"{not json", "stdin_malformed"),
     (b"[1, 2]", "stdin_malformed"), (bytes(range(256)) * 4, "stdin_malformed"),
     (b'{"prompt": 7}', "stdin_malformed")],
)
def test_bad_stdin_fails_open(stdin: bytes, reason: str) -> None:
    r = run_hook("prompt", stdin)
    assert r.returncode == 0 and r.stdout == ""
    assert r.receipt[0] == "failed" and r.reason == reason


def test_no_stdin_at_all() -> None:
    r = run_hook("prompt", None, close_stdin=True)
    assert r.returncode == 0 and r.stdout == "" and r.reason == "no_stdin"


def test_stdin_that_never_closes_gives_up_within_the_deadline() -> None:
    with subprocess.Popen([bin_path(), "hook", "prompt"], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                          stderr=subprocess.PIPE) as proc:
        assert proc.stdin is not None
        proc.stdin.write(b'{"prompt": "half a payl')
        proc.stdin.flush()
        proc.wait(timeout=30)  # it gave up: nothing else would end it while stdin is open
        assert proc.stdout and proc.stderr
        out, err = proc.stdout.read(), proc.stderr.read()
        proc.stdin.close()
    assert proc.returncode == 0 and out == b""
    assert b'"reason":"stdin_timeout"' in err


def test_ten_megabytes_of_stdin_is_refused() -> None:
    big = b'{"prompt": "' + b"a" * (10 * 1024 * 1024) + b'"}'
    r = run_hook("prompt", big)
    assert r.returncode == 0 and r.stdout == "" and r.reason == "stdin_too_large"


def test_failed_stop_tells_the_person_with_a_system_message() -> None:
    r = run_hook("stop", b"{oops")
    assert r.returncode == 0 and r.reason == "stdin_malformed"
    msg = json.loads(r.stdout)
    assert set(msg) == {"systemMessage"} and "stdin_malformed" in msg["systemMessage"]


def test_failed_recall_is_silent(tmp_path: Path, project: Path) -> None:
    blocker = tmp_path / "not-a-dir"
    blocker.write_text("x")
    payload = fixture("prompt.json", cwd=str(project), prompt="what did we decide about caching?")
    r = run_hook("prompt", payload, env={"BLI_MEMORY_DATA_DIR": str(blocker)})
    assert r.returncode == 0 and r.stdout == ""
    assert r.receipt[0] == "failed" and r.reason == "store_unavailable"
    assert "not-a-dir" not in r.stderr  # never a path in a receipt


def test_unreadable_store_on_stop_fails_open_with_message(tmp_path: Path, project: Path) -> None:
    blocker = tmp_path / "not-a-dir"
    blocker.write_text("x")
    transcript = tmp_path / "t.jsonl"
    transcript.write_bytes((CLAUDE / "transcript.jsonl").read_bytes())
    r = run_hook("stop", fixture("stop.json", cwd=str(project), transcript_path=str(transcript)),
                 env={"BLI_MEMORY_DATA_DIR": str(blocker)})
    assert r.returncode == 0 and r.reason == "store_unavailable"
    assert "systemMessage" in json.loads(r.stdout)


# --- trivial prompts -----------------------------------------------------------------


@pytest.mark.parametrize(("prompt", "reason"), [("/model", "trivial_prompt"), ("ok", "trivial_prompt"),
                                                ("Thanks!", "trivial_prompt"), ("fix it", "trivial_prompt"),
                                                ("", "no_prompt"), ("   ", "no_prompt")])
def test_trivial_prompts_are_skipped_without_a_search(prompt: str, reason: str, project: Path) -> None:
    r = run_hook("prompt", fixture("prompt.json", cwd=str(project), prompt=prompt))
    assert r.returncode == 0 and r.stdout == ""
    assert r.receipt == ("skipped", {"reason": reason})
    assert not store_path().exists()  # no door call: the store was never opened


def test_short_prompt_naming_an_identifier_is_searched(project: Path) -> None:
    save(project, "BLI-3580 moved the billing jobs to the new queue.", "Unrelated note about fonts.")
    r = run_hook("prompt", fixture("prompt.json", cwd=str(project), prompt="BLI-3580"))
    assert r.receipt[0] == "ok" and r.receipt[1]["hits"] >= 1
    assert "BLI-3580 moved the billing jobs" in (r.context or "")


# --- transcripts -------------------------------------------------------------------


def test_missing_transcript(project: Path, tmp_path: Path) -> None:
    r = run_hook("stop", fixture("stop.json", cwd=str(project), transcript_path=str(tmp_path / "nope.jsonl")))
    assert r.returncode == 0 and r.stdout == ""
    assert r.receipt == ("skipped", {"reason": "no_transcript", "via": "direct"})


def test_forty_megabyte_transcript_costs_nothing(project: Path, tmp_path: Path) -> None:
    transcript = tmp_path / "big.jsonl"
    filler = json.dumps({"type": "assistant", "message": {"role": "assistant",
                         "content": [{"type": "text", "text": "x" * 4000}]}}) + "\n"
    with transcript.open("w") as fh:
        for _ in range(40 * 1024 * 1024 // len(filler) + 1):
            fh.write(filler)
        fh.write(json.dumps({"type": "user", "message": {"role": "user",
                             "content": "We agreed to pin numpy below 3."}}) + "\n")
        fh.write(json.dumps({"type": "assistant", "message": {"role": "assistant",
                             "content": [{"type": "text", "text": "Pinned numpy<3 in pyproject."}]}}) + "\n")
    assert transcript.stat().st_size > 40 * 1024 * 1024
    r = run_hook("stop", fixture("stop.json", cwd=str(project), transcript_path=str(transcript)))
    outcome, fields = r.receipt
    assert outcome == "ok" and fields["chars"] <= 12 * 1024
    text = queued_jobs()[0]["text"]
    assert "pin numpy below 3" in text and "Pinned numpy<3" in text


def test_secrets_in_the_transcript_never_reach_the_database(project: Path, tmp_path: Path) -> None:
    token = "ghp_" + "Z9y8X7w6V5u4T3s2R1q0P9o8N7m6L5k4J3i2"
    aws = "AKIA" + "QWERTYUIOPASDFGH"
    transcript = tmp_path / "t.jsonl"
    lines = [
        {"type": "user", "message": {"role": "user",
                                     "content": f"Use my token {token} and key {aws} to push the release"}},
        {"type": "assistant", "message": {"role": "assistant", "content": [
            {"type": "text", "text": f"Done; set GITHUB_TOKEN={token} in the CI secrets."}]}},
    ]
    transcript.write_text("\n".join(json.dumps(x) for x in lines) + "\n")
    r = run_hook("stop", fixture("stop.json", cwd=str(project), transcript_path=str(transcript)))
    outcome, fields = r.receipt
    assert outcome == "ok" and fields["masked"] >= 3
    text = queued_jobs()[0]["text"]
    assert token not in text and aws not in text and "[REDACTED:" in text
    for f in store_path().parent.iterdir():
        data = f.read_bytes()
        assert token.encode() not in data and aws.encode() not in data, f.name
    assert token not in r.stderr and token not in r.stdout


# --- stats and probe -----------------------------------------------------------------


def test_stats_count_outcomes_and_probe_runs_are_excluded(project: Path) -> None:
    run_hook("prompt", fixture("prompt.json", cwd=str(project), prompt="ok"))
    run_hook("prompt", fixture("prompt.json", cwd=str(project), prompt="what is the release process?"))
    run_hook("prompt", b"{bad")
    before = json.loads(hook_stats_path().read_text())
    probe = run_hook("prompt", fixture("prompt.json", cwd=str(project), prompt="ok"), args=("--probe",))
    assert probe.receipt[1]["probe"] == "stats_excluded"
    after = json.loads(hook_stats_path().read_text())
    assert before == after
    assert summed_counts(after, "prompt") == {"skipped_trivial": 1, "ok": 1, "via:direct": 1,
                                              "failed:stdin_malformed": 1}


# --- the entry path stays light -----------------------------------------------------


def test_hook_entry_imports_no_heavy_module(project: Path) -> None:
    code = (
        "import sys, io\n"
        "sys.stdin = io.TextIOWrapper(io.BytesIO(b'{\"prompt\": \"ok\"}'))\n"
        "from bli_memory.core.cli.main import main\n"
        "main(['hook', 'prompt'])\n"
        "heavy = {'mcp', 'httpx', 'pydantic', 'numpy', 'onnxruntime', 'structlog', 'tokenizers'}\n"
        "print(sorted(m for m in heavy if m in sys.modules))\n"
    )
    out = subprocess.run([os.sys.executable, "-c", code], capture_output=True, text=True, timeout=30)
    assert out.stdout.strip() == "[]", out.stdout + out.stderr


# --- property ------------------------------------------------------------------------


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(payload=st.one_of(st.binary(max_size=300),
                         st.dictionaries(st.sampled_from(["prompt", "cwd", "session_id", "transcript_path",
                                                          "stop_hook_active", "hook_event_name"]),
                                         st.one_of(st.none(), st.booleans(), st.integers(),
                                                   st.text(max_size=40)),
                                         max_size=5).map(lambda d: json.dumps(d).encode())),
       event=st.sampled_from(["session-start", "prompt", "stop"]))
def test_any_payload_exits_zero_with_one_closed_receipt(payload: bytes, event: str) -> None:
    r = run_hook(event, payload)
    assert r.returncode == 0
    receipts = [ln for ln in r.stderr.splitlines() if ln.startswith("[bli-memory]")]
    assert len(receipts) == 1 and RECEIPT.match(receipts[0])
    reason = json.loads(RECEIPT.match(receipts[0]).group(3)).get("reason")
    if reason is not None:
        assert reason_is_closed(reason), reason
    assert r.stdout == "" or (r.stdout.count("\n") <= 1 and isinstance(json.loads(r.stdout), dict))


def test_the_prompt_survives_a_big_tool_result_and_a_long_reply(project: Path, tmp_path: Path) -> None:
    transcript = tmp_path / "t.jsonl"
    prompt = "Why does the billing export fail on the first of the month?"
    tool_result = {"type": "user", "message": {"role": "user", "content": [
        {"type": "tool_result", "tool_use_id": "t1", "content": "log line\n" * 20_000}]}}
    reply = "The export reads the previous month's partition. " * 600 + "Fixed by using the UTC month."
    with transcript.open("w") as fh:
        fh.write(json.dumps({"type": "user", "message": {"role": "user", "content": prompt}}) + "\n")
        tool_use = {"type": "tool_use", "id": "t1", "name": "Bash", "input": {"command": "cat export.log"}}
        call = {"type": "assistant", "message": {"role": "assistant", "content": [tool_use]}}
        fh.write(json.dumps(call) + "\n")
        fh.write(json.dumps(tool_result) + "\n")
        fh.write(json.dumps({"type": "assistant", "message": {"role": "assistant", "content": [
            {"type": "text", "text": reply}]}}) + "\n")
    assert transcript.stat().st_size > 150_000
    r = run_hook("stop", fixture("stop.json", cwd=str(project), transcript_path=str(transcript)))
    outcome, fields = r.receipt
    assert outcome == "ok" and fields["chars"] <= 12 * 1024
    text = queued_jobs()[0]["text"]
    assert text.startswith(f"User: {prompt}") and text.endswith("Fixed by using the UTC month.")


def _straddling_reply(token: str, into: int = 20) -> str:
    """A reply whose last 24 KB (the stop hook's first cut, keep="tail") begin ``into``
    characters into ``token``, and hold two 9 KB private keys that masking shrinks."""
    line = "MII" + "Ab3dE5gH7jK9mN1pQ3sT5vX7zB9cD1fG2hJ4kL6nP8rS0uW2yA4cE6gI8kM0oQ2"
    body = "\n".join(line for _ in range(140))
    key = f"-----BEGIN RSA PRIVATE KEY-----\n{body}\n-----END RSA PRIVATE KEY-----"
    tail = f"\n{key}\n\n{key}\n" + "Pushed, all green. " * 200
    room = 2 * 12 * 1024 - len(" [...] ")
    gap = room - (len(token) - into) - len(tail)  # ASCII throughout: characters are bytes
    assert gap > 2
    reply = "Pushing now. " + token + " " + ("ok " * gap)[: gap - 1] + tail
    assert reply[len(reply) - room:].startswith(token[into:])
    return reply


def test_secrets_at_the_cut_points_and_grown_redactions_stay_masked_and_bounded(
    project: Path, tmp_path: Path
) -> None:
    token = "ghp_" + "Z9y8X7w6V5u4T3s2R1q0P9o8N7m6L5k4J3i2"
    cases = {
        # a token across the prompt's 4 KB cut, and one across the reply's cut
        "prompt cut": ("a" * (4 * 1024 - 20) + " " + token + " tail", "Done."),
        "reply cut": ("Push it.", token + " " + "b" * (12 * 1024 - 40)),
        # a token across the reply's first cut (at 24 KB from its end), with two private
        # keys after it that masking shrinks, so the final 12 KB cut keeps what is left
        "shrunk after the cut": ("Push it.", _straddling_reply(token)),
        # ...and a cut between a password's label and its value, the same way
        "label cut off": ("Push it.", _straddling_reply("the vpn password is Kk3&abcdefQ9", into=20)),
        # placeholders longer than the secrets they replace
        "growth": ("Rotate these.", "password=Xy7qWz9k\n" * 1000),
        # a lone surrogate, as a UTF-16 host writes half an emoji
        "surrogate": ("What broke? \ud83d", "The \udc00 parser."),
    }
    for name, (prompt, reply) in cases.items():
        transcript = tmp_path / f"{name}.jsonl"
        with transcript.open("w") as fh:
            fh.write(json.dumps({"type": "user", "message": {"role": "user", "content": prompt}}) + "\n")
            fh.write(json.dumps({"type": "assistant", "message": {"role": "assistant", "content": [
                {"type": "text", "text": reply}]}}) + "\n")
        before = len(queued_jobs())
        r = run_hook("stop", fixture("stop.json", cwd=str(project), transcript_path=str(transcript)))
        assert r.returncode == 0 and r.receipt[0] == "ok", (name, r.stderr)
        text = queued_jobs()[before]["text"]
        assert len(text.encode("utf-8")) <= 12 * 1024, name
        assert "Z9y8X7w6" not in text and "R1q0P9o8N7m6L5k4J3i2" not in text and "Xy7qWz9k" not in text, name
        assert "Kk3&abcdefQ9" not in text, name


def test_a_blank_data_dir_never_puts_a_store_in_the_project(project: Path, tmp_path: Path) -> None:
    transcript = tmp_path / "t.jsonl"
    transcript.write_text(
        json.dumps({"type": "user", "message": {"role": "user", "content": "We pin numpy below 3."}}) + "\n"
        + json.dumps({"type": "assistant", "message": {"role": "assistant", "content": [
            {"type": "text", "text": "Pinned numpy<3."}]}}) + "\n")
    r = run_hook("stop", fixture("stop.json", cwd=str(project), transcript_path=str(transcript)),
                 cwd=project, env={"BLI_MEMORY_DATA_DIR": ""})
    assert r.returncode == 0 and r.receipt[0] == "ok"
    assert not (project / "memory.sqlite3").exists()
    assert queued_jobs()  # it went to the default store


def test_hook_help_prints_the_usage_and_a_missing_event_still_fails_open(tmp_path: Path) -> None:
    env = {**os.environ, "HOME": str(tmp_path)}
    shown = subprocess.run([bin_path(), "hook", "--help"], capture_output=True, text=True, env=env,
                           timeout=60)
    assert shown.returncode == 0 and shown.stderr == ""
    assert shown.stdout.startswith("usage: bli-memory-mcp hook {session-start|prompt|stop}")
    missing = subprocess.run([bin_path(), "hook"], capture_output=True, text=True, env=env, timeout=60)
    assert missing.returncode == 0 and missing.stdout == ""
    assert '"reason":"unknown_internal:usage"' in missing.stderr
