"""The host extractor's parts that need no host CLI: digest, choice, budget, answers,
reconcile of outdated claims, the hooks' off switch, and the default that never starts a
host CLI (a recording stand-in on PATH, run by the real worker command).

The real CLIs against a local model stub are in tests/integration/test_host_extractor.py.
"""

from __future__ import annotations

import json
import os
import stat
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from bli_memory.core.embedded.engine import EmbeddedBackend
from bli_memory.core.errors import ConfigError
from bli_memory.core.extraction import host_ledger
from bli_memory.core.extraction.host_config import HostChoice, host_choice, load_choice, save_choice
from bli_memory.core.extraction.host_digest import CHARS_PER_TOKEN, digest, estimate_tokens
from bli_memory.core.extraction.model_facts import FACTS_SCHEMA, statements_from
from bli_memory.core.extraction.reconcile import distil
from bli_memory.core.extraction.statements import Statement
from bli_memory.core.settings import load_settings
from tests.conftest import bin_path
from tests.core.extraction.test_worker import stop, write_transcript
from tests.hooks_util import extract_jobs, run_hook

EXCHANGE = (
    "User: I am running Claude Code on WSL. We moved from npm to pnpm because installs were slow.\n"
    "```\nSECRET_BODY = open('config.py').read()\n```\n\n"
    "Assistant: I updated src/app/config.py and README.md. The export default is now 'all' instead "
    "of 'md'. The key fix was changing the default in bli/export.py."
)


def test_digest_holds_statements_candidates_and_file_names_never_bodies() -> None:
    brief = digest(EXCHANGE, max_tokens=4000)
    assert "- We moved from npm to pnpm because installs were slow." in brief
    assert "- The export default is now 'all' instead of 'md'." in brief
    assert "- src/app/config.py" in brief and "- bli/export.py" in brief
    assert "SECRET_BODY" not in brief and "open(" not in brief  # a code block is a file body


def test_digest_is_cut_to_its_token_budget_person_first() -> None:
    long = "User: " + " ".join(f"We decided rule number {i} holds for module m{i}." for i in range(400))
    brief = digest(long + "\n\nAssistant: The cache lives in ~/.cache/app.", max_tokens=300)
    assert estimate_tokens(brief) <= 300 and len(brief) <= 300 * CHARS_PER_TOKEN
    assert brief.startswith("The person said:") and "cache lives" not in brief


def test_answers_become_statements_with_subject_source_and_outdated_claim() -> None:
    answer = {"facts": [
        {"text": "The export default format is 'all'.", "subject": "export default format",
         "kind": "decision", "source": "changed the default to 'all'",
         "outdates": "The export default format is 'md'."},
        {"text": "The user runs Claude Code on WSL.", "subject": "the user's setup", "kind": "setup",
         "source": "I am running Claude Code on WSL", "outdates": None},
        {"text": "The job failed because ruff was pinned.", "subject": "ci", "kind": "cause", "source": "x",
         "outdates": None},
        {"no": "text"}, "The project uses pnpm.",
    ]}
    got = statements_from(answer)
    assert [s.kind for s in got] == ["decision", "fact", "fix", "fact"]
    assert got[0].outdates == "The export default format is 'md'."
    assert got[0].subject == "export default format"
    assert got[1].outdates is None
    with pytest.raises(ValueError):
        statements_from({"facts": "none"})
    assert FACTS_SCHEMA["properties"]["facts"]["items"]["required"] == [
        "text", "subject", "kind", "source", "outdates"]


def test_the_choice_is_saved_privately_and_the_variables_win() -> None:
    assert load_choice() == {}
    path = save_choice("host", host="codex", daily_requests=3)
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert host_choice(load_settings()) == HostChoice(host="codex", daily_requests=3)
    assert host_choice(load_settings(extract_host="gemini", extract_daily_requests=9)).host == "gemini"
    with pytest.raises(ConfigError, match="host's name"):
        save_choice("host", host="")
    from bli_memory.core.extraction.host_config import headless_hosts
    from bli_memory.core.plugins import get_plugin_manager

    assert headless_hosts(get_plugin_manager(), Path.home()) == ["claude", "codex", "gemini"]  # no hermes
    with pytest.raises(ConfigError, match="daily_requests"):
        save_choice("host", host="claude", daily_requests=-1)
    for absurd in (float("nan"), float("inf")):
        with pytest.raises(ConfigError, match="timeout_s"):
            save_choice("host", host="claude", timeout_s=absurd)
    save_choice("host", host="gemini")  # another host keeps the limits saved before
    assert host_choice(load_settings()) == HostChoice(host="gemini", daily_requests=3)


def test_the_ledger_counts_requests_and_fallbacks_per_day() -> None:
    host_ledger.record(requested=True, input_tokens=120, output_tokens=30, cost_usd=0.0012)
    host_ledger.record(requested=False, fallback="budget_spent")
    day = host_ledger.read_days()[host_ledger.today()]
    assert day == {"requests": 1, "input_tokens": 120, "output_tokens": 30, "cost_usd": 0.0012,
                   "fallbacks": {"budget_spent": 1}}
    assert host_ledger.used_today() == 1


def test_a_second_holder_of_the_request_lock_gives_up_busy() -> None:
    with host_ledger.held_lock(1.0) as first:
        assert first is not None
        with host_ledger.held_lock(0.3) as second:  # another open file: flock refuses it too
            assert second is None
    with host_ledger.held_lock(0.3) as again:
        assert again is not None


@pytest.mark.e2e
def test_hooks_do_nothing_inside_a_headless_request(project: Path) -> None:
    payload = {"session_id": "s1", "cwd": str(project), "hook_event_name": "SessionStart"}
    off = run_hook("session-start", payload, cwd=project, env={"BLI_MEMORY_HOOKS_OFF": "1"})
    assert (off.returncode, off.stdout, off.stderr, off.log) == (0, "", "", "")
    on = run_hook("session-start", payload, cwd=project)
    assert on.log or on.stderr  # without the variable it writes its receipt: the check above can fail


def _recording_cli(folder: Path, name: str, record: Path) -> None:
    script = folder / name
    script.write_text(f"#!/bin/sh\necho \"$0 $*\" >> {record}\nexit 0\n")
    script.chmod(0o755)


def _worker(env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run([bin_path(), "worker", "--once"], capture_output=True, text=True, env=env,
                          timeout=240)


@pytest.mark.e2e
def test_with_no_setting_the_worker_never_starts_a_host_cli(project: Path, tmp_path: Path) -> None:
    folder = tmp_path / "bin"
    folder.mkdir()
    record = tmp_path / "invocations.txt"
    for name in ("claude", "codex", "gemini"):
        _recording_cli(folder, name, record)
    env = {**os.environ, "PATH": f"{folder}{os.pathsep}{os.environ['PATH']}"}
    turn = [("Which package manager do we use?", "We moved from npm to pnpm because installs were slow.")]
    stop(project, write_transcript(tmp_path / "one.jsonl", turn), PATH=env["PATH"])
    run = _worker(env)
    assert run.returncode == 0, run.stderr
    assert not record.exists(), record.read_text()
    assert [j["state"] for j in extract_jobs()] == ["done"]
    assert "extraction" not in json.loads(extract_jobs()[0]["outcome"])
    # Opted in, the same worker does start it: the check above is not blind.
    subprocess.run([bin_path(), "extractor", "use", "host", "--host", "claude"], check=True,
                   capture_output=True, env=env, timeout=120)
    stop(project, write_transcript(tmp_path / "two.jsonl", turn), PATH=env["PATH"])
    run = _worker(env)
    assert run.returncode == 0, run.stderr
    assert record.read_text().count("claude") == 1
    newest = json.loads(extract_jobs()[-1]["outcome"])
    assert newest["extraction"]["fallback"] == "bad_json"  # it printed nothing: the rules answered
    assert newest["extraction"]["extractor"] == "default"


class _Said:
    """A model's answer, as the model extractors hand it to reconcile (the plugin seam)."""

    name = "model"

    def __init__(self, *statements: Statement) -> None:
        self.statements = list(statements)

    def extract(self, text: str) -> list[Statement]:
        return self.statements


@pytest.fixture
def backend(tmp_path: Path) -> Iterator[EmbeddedBackend]:
    b = EmbeddedBackend(tmp_path / "store" / "memory.sqlite3")
    yield b
    b.close()


def test_an_outdated_claim_on_the_same_subject_is_superseded(backend: EmbeddedBackend) -> None:
    old = backend.save("The export default format is 'md'.", space="s").memory
    new = Statement("The export command writes every format by default.", kind="decision",
                    subject="export default", outdates="The export default format is 'md'.")
    outcome = distil("User: x\n\nAssistant: y", backend=backend, space="s", source="t", session_id=None,
                     extractor=_Said(new))
    assert (outcome["updated"], outcome["corrected"], outcome["added"]) == (1, 1, 0)
    live = [m.content for m in backend.list_memories(space="s")]
    assert live == ["The export command writes every format by default."]
    assert [m.content for m in backend.history(old.id)][-1] == "The export default format is 'md'."


def test_an_outdated_claim_on_another_subject_retires_nothing(backend: EmbeddedBackend) -> None:
    backend.save("The export default format is 'md'.", space="s")
    other = Statement("The import command reads JSON lines by default.", kind="decision",
                      subject="import default", outdates="The export default format is 'md'.")
    outcome = distil("User: x\n\nAssistant: y", backend=backend, space="s", source="t", session_id=None,
                     extractor=_Said(other))
    assert (outcome["updated"], outcome["added"]) == (0, 1)
    assert len(backend.list_memories(space="s")) == 2


def test_a_fact_the_person_forgot_is_not_captured_again_from_a_model(backend: EmbeddedBackend) -> None:
    kept = backend.save("The staging database listens on port 6543.", space="s").memory
    backend.forget(space="s", id=kept.id)
    again = Statement("The staging database listens on port 6543.", subject="staging database port")
    outcome = distil("User: x\n\nAssistant: y", backend=backend, space="s", source="t", session_id=None,
                     extractor=_Said(again))
    assert (outcome["unchanged"], outcome["added"]) == (1, 0)
    assert backend.list_memories(space="s") == []


def test_a_hand_edited_choice_falls_back_to_the_rules_and_says_why() -> None:
    from bli_memory.core.extraction.extractors import get_extractor
    from bli_memory.core.extraction.host_config import choice_path

    choice_path().parent.mkdir(parents=True, exist_ok=True)
    choice_path().write_text(json.dumps({"extractor": "host", "host": "claude", "daily_requests": -1}))
    found, report = get_extractor().extract_reported(EXCHANGE)
    assert (report["fallback"], report["extractor"]) == ("config_invalid", "default")
    assert any("pnpm" in s.text for s in found)  # the rules' capture, not a lost job
    assert host_ledger.read_days()[host_ledger.today()] == {
        "requests": 0, "input_tokens": 0, "output_tokens": 0, "cost_usd": 0.0,
        "fallbacks": {"config_invalid": 1}}


@pytest.mark.e2e
def test_uninstall_of_the_chosen_host_puts_the_rules_back(project: Path) -> None:
    def ours(*args: str) -> str:
        r = subprocess.run([bin_path(), *args], capture_output=True, text=True, cwd=project, timeout=180)
        assert r.returncode == 0, r.stdout + r.stderr
        return r.stdout

    said = ours("install", "--host", "claude", "--extractor", "host")
    assert "extractor: host (claude)" in said and "falls back to the rules" in said  # no login here
    assert load_choice()["extractor"] == "host"
    assert "stays chosen" in ours("install", "--host", "claude")  # a plain install says it is still on
    assert "back to the rules" in ours("uninstall", "--host", "claude")
    assert load_choice()["extractor"] == "default"


@pytest.mark.parametrize(("old", "new", "subject"), [
    ("The project deploys to production only on Fridays after the release review.",
     "The project uses pnpm because npm installs were slow.", "project"),
    ("The user prefers tabs over spaces in Python code.",
     "The user prefers pytest fixtures over setup methods in Python tests.", "user Python"),
])
def test_a_broad_subject_from_a_model_retires_nothing(backend: EmbeddedBackend, old: str, new: str,
                                                        subject: str) -> None:
    backend.save(old, space="s")
    outcome = distil("User: x\n\nAssistant: y", backend=backend, space="s", source="t", session_id=None,
                     extractor=_Said(Statement(new, kind="decision", subject=subject, outdates=old)))
    assert (outcome["updated"], outcome["added"]) == (0, 1)
    assert old in [m.content for m in backend.list_memories(space="s")]


def test_a_host_name_never_names_a_folder_outside_our_own(monkeypatch: pytest.MonkeyPatch) -> None:
    from bli_memory.core.extraction.extractors import get_extractor

    victim = Path.home() / "victim" / "sub"
    victim.mkdir(parents=True)
    (victim / "file.txt").write_text("x")
    monkeypatch.setenv("BLI_MEMORY_EXTRACTOR", "host")
    monkeypatch.setenv("BLI_MEMORY_EXTRACT_HOST", "x/../../../../../victim")
    _, report = get_extractor().extract_reported(EXCHANGE)
    assert report["fallback"] == "config_invalid"
    assert (victim / "file.txt").exists()
    with pytest.raises(ValueError):
        with host_ledger.run_folder("../victim"):
            pass
    assert (victim / "file.txt").exists()


def test_a_model_answer_that_is_a_bare_list_is_read_as_one() -> None:
    from bli_memory.core.extraction.model_facts import json_in

    assert json_in('Here: [{"text": "The project uses pnpm."}]') == [{"text": "The project uses pnpm."}]


def test_no_drain_runs_in_an_mcp_server_a_headless_request_started(monkeypatch: pytest.MonkeyPatch,
                                                                  tmp_path: Path) -> None:
    import threading

    from bli_memory.core.mcp.server import _start_extract_drain

    backend = EmbeddedBackend(tmp_path / "m.sqlite3")
    try:
        monkeypatch.setenv("BLI_MEMORY_HOOKS_OFF", "1")
        assert _start_extract_drain(backend, threading.Event(), threading.Event()) is None
    finally:
        backend.close()


def _fake_cli(tmp_path: Path, body: str) -> dict[str, str]:
    folder = tmp_path / "fake-bin"
    folder.mkdir(exist_ok=True)
    script = folder / "claude"
    script.write_text("#!/bin/sh\n" + body)
    script.chmod(0o755)
    return {"PATH": f"{folder}{os.pathsep}{os.environ['PATH']}"}


FACTS = {"facts": [{"text": "The project uses pnpm.", "subject": "pnpm", "kind": "decision", "source": "x",
                    "outdates": None}]}
ANSWER = json.dumps({"type": "result", "is_error": False, "usage": {"input_tokens": 5, "output_tokens": 3},
                     "result": json.dumps(FACTS)})


@pytest.mark.e2e
def test_an_answer_is_kept_when_the_cli_leaves_a_helper_holding_its_output(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from bli_memory.core.extraction.host_model import HostModelExtractor
    from bli_memory.core.plugins import get_plugin_manager
    from tests.conftest import processes_of

    env = _fake_cli(tmp_path, f"sleep 300 &\ncat > /dev/null\necho '{ANSWER}'\n")
    monkeypatch.setenv("PATH", env["PATH"])
    extractor = HostModelExtractor(HostChoice(host="claude", timeout_s=60), get_plugin_manager())
    found, report = extractor.extract_reported(EXCHANGE)
    assert report["fallback"] is None and [s.text for s in found] == ["The project uses pnpm."]
    assert processes_of(Path.home(), lambda cmdline: cmdline.startswith(b"sleep\x00300")) == []


@pytest.mark.e2e
def test_a_worker_killed_mid_request_takes_the_clis_own_children_with_it(project: Path,
                                                                        tmp_path: Path) -> None:
    """A CLI that is a wrapper (Codex CLI's node script starts its native binary) leaves no child."""
    import signal
    import time

    from tests.conftest import processes_of

    env = {**os.environ, **_fake_cli(tmp_path, "sleep 300 &\nwait\n")}
    subprocess.run([bin_path(), "extractor", "use", "host", "--host", "claude", "--timeout", "250"],
                   check=True, capture_output=True, env=env, timeout=120)
    turn = [("Which package manager do we use?", "We moved from npm to pnpm because installs were slow.")]
    stop(project, write_transcript(tmp_path / "one.jsonl", turn), PATH=env["PATH"])
    worker = subprocess.Popen([bin_path(), "worker", "--once"], env=env, stdout=subprocess.DEVNULL,
                              stderr=subprocess.DEVNULL)
    sleeping = lambda: processes_of(Path.home(), lambda cmdline: cmdline.startswith(b"sleep\x00300"))  # noqa: E731
    try:
        give_up = time.monotonic() + 120
        while not sleeping() and time.monotonic() < give_up:
            time.sleep(0.2)
        assert sleeping(), "the CLI's child never started"
        worker.send_signal(signal.SIGKILL)
        worker.wait(timeout=30)
        give_up = time.monotonic() + 60
        while sleeping() and time.monotonic() < give_up:
            time.sleep(0.2)
        assert sleeping() == []
    finally:
        if worker.poll() is None:
            worker.kill()
        for pid in sleeping():
            os.kill(pid, signal.SIGKILL)
