"""A ``BLI_MEMORY_CONTAINER_TAG`` that looks like a secret: every hook fails open with
``invalid_container_tag``, ``cockpit doctor`` says why, and the value is written nowhere.

Real hook processes on both routes (direct and the daemon), the real doctor, then every
file under the test's HOME and every byte the processes printed is searched for it.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import FIXTURES, bin_path
from tests.core.daemon import test_daemon
from tests.core.daemon.test_daemon import Daemons
from tests.hooks_util import extract_jobs, run_hook

pytestmark = pytest.mark.e2e  # starts bli-memory-mcp processes

CLAUDE = FIXTURES / "claude"
SECRET = "ghp_" + "Xy7Qw3Er9Ty1Ui5Op2As8Df4Gh6Jk0Lz3Xcv"  # a GitHub token's shape (docs/redaction.md)

daemons = test_daemon.daemons  # the daemon tests' fixture


def _payload(name: str, **overrides: object) -> dict:
    return {**json.loads((CLAUDE / name).read_text()), **overrides}


def _hooks(project: Path, tmp_path: Path, env: dict[str, str]) -> list:
    transcript = tmp_path / "t.jsonl"
    transcript.write_bytes((CLAUDE / "transcript.jsonl").read_bytes())
    return [
        run_hook("prompt", _payload("prompt.json", cwd=str(project), prompt="what is the staging port"),
                 env=env),
        run_hook("stop", _payload("stop.json", cwd=str(project), transcript_path=str(transcript)), env=env),
        run_hook("session-start", _payload("session_start.json", cwd=str(project)), env=env),
    ]


def _written_anywhere(root: Path, value: str = SECRET) -> list[Path]:
    found = []
    for path in root.rglob("*"):
        if path.is_file() and not path.is_symlink():
            try:
                if value.encode() in path.read_bytes():
                    found.append(path)
            except OSError:
                pass
    return found


def test_a_secret_looking_tag_fails_every_hook_open_with_its_own_reason(daemons: Daemons, project: Path,
                                                                        tmp_path: Path) -> None:
    env = {"BLI_MEMORY_CONTAINER_TAG": SECRET, "BLI_MEMORY_LOG_LEVEL": "debug", "BLI_MEMORY_DAEMON": "0"}
    direct = _hooks(project, tmp_path, env)
    daemons.start(env={"BLI_MEMORY_LOG_LEVEL": "debug"})
    via_daemon = _hooks(project, tmp_path, {**env, "BLI_MEMORY_DAEMON": "1"})
    for run in direct + via_daemon:
        assert run.returncode == 0 and "Traceback" not in run.stderr, run.stderr
        assert run.reason == "invalid_container_tag", run.stderr
    assert {run.receipt[1]["via"] for run in direct} == {"direct"}
    assert {run.receipt[1]["via"] for run in via_daemon} == {"daemon"}
    prompt, stop, start = direct
    assert prompt.stdout == "" and start.stdout == ""
    # The stop hook tells the person, as for every turn it could not keep.
    assert json.loads(stop.stdout) == {
        "systemMessage": "BLI Memory could not keep this turn (invalid_container_tag); it was not saved."}
    assert extract_jobs() == []  # ([] also when no store was opened)

    doctor = subprocess.run([bin_path("cockpit"), "doctor", "--json"], capture_output=True, text=True,
                            env={**os.environ, **env}, cwd=project, timeout=120)
    rows = {row["check"]: row for row in json.loads(doctor.stdout)}
    assert doctor.returncode == 1 and rows["settings"]["mark"] == "fail"
    assert rows["settings"]["detail"].startswith("BLI_MEMORY_CONTAINER_TAG is refused: its value looks "
                                                 "like a secret")

    printed = [r.stdout + r.stderr + r.log for r in direct + via_daemon] + [doctor.stdout, doctor.stderr]
    printed += [daemons.stderr(p) for p in daemons.procs]
    assert not [text for text in printed if SECRET in text]
    assert _written_anywhere(Path(os.environ["HOME"])) == []
    assert _written_anywhere(tmp_path) == []


def test_an_invalid_forced_tag_is_config_invalid_on_both_routes(daemons: Daemons, project: Path,
                                                                  tmp_path: Path) -> None:
    """The direct route meets it in the settings; the daemon, whose settings are fine,
    meets it deriving the caller's space: both report ``config_invalid``, unrepeated."""
    values = ("password=hunter2x", "password hunter2x")
    daemons.start(env={"BLI_MEMORY_LOG_LEVEL": "debug"})
    runs = []
    for value in values:
        env = {"BLI_MEMORY_CONTAINER_TAG": value, "BLI_MEMORY_LOG_LEVEL": "debug"}
        direct = _hooks(project, tmp_path, {**env, "BLI_MEMORY_DAEMON": "0"})
        via_daemon = _hooks(project, tmp_path, {**env, "BLI_MEMORY_DAEMON": "1"})
        assert {run.receipt[1]["via"] for run in direct} == {"direct"}
        assert {run.receipt[1]["via"] for run in via_daemon} == {"daemon"}
        for run in direct + via_daemon:
            assert run.returncode == 0 and "Traceback" not in run.stderr, run.stderr
            assert run.reason == "config_invalid", (value, run.receipt, run.stderr)
        for stop in (direct[1], via_daemon[1]):
            assert json.loads(stop.stdout) == {
                "systemMessage": "BLI Memory could not keep this turn (config_invalid); it was not saved."}
        runs += direct + via_daemon
    printed = [r.stdout + r.stderr + r.log for r in runs] + [daemons.stderr(p) for p in daemons.procs]
    assert not [text for text in printed if "hunter2x" in text]
    assert _written_anywhere(Path(os.environ["HOME"]), "hunter2x") == []
    assert _written_anywhere(tmp_path, "hunter2x") == []


def test_a_tag_that_passed_is_not_checked_again_and_a_token_still_is(project: Path, tmp_path: Path) -> None:
    """The redaction rules cost about 0.3 s to import in a cold hook process: a forced tag
    that passed once is remembered (a hash, not the tag), so the next process skips them;
    a token is refused whatever passed before."""
    env = {"BLI_MEMORY_CONTAINER_TAG": "team-notes", "BLI_MEMORY_DAEMON": "0"}
    first = run_hook("prompt", _payload("prompt.json", cwd=str(project), prompt="what is the staging port"),
                     env=env)
    assert first.returncode == 0 and first.reason != "invalid_container_tag", first.stderr
    probe = ("import sys; from bli_memory.core.hooks.container_tag import check_forced_tag; "
             "check_forced_tag('team-notes'); print('bli_memory.core.memory.redaction' in sys.modules)")
    again = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=60)
    assert again.returncode == 0 and again.stdout.strip() == "False", again.stderr
    files = [p for p in Path(os.environ["HOME"]).rglob("*") if p.is_file()]
    assert not any(b"team-notes" in p.read_bytes() for p in files if "container-tags" in p.name)
    refused = run_hook("prompt", _payload("prompt.json", cwd=str(project), prompt="what is the staging port"),
                       env={**env, "BLI_MEMORY_CONTAINER_TAG": SECRET})
    assert refused.returncode == 0 and refused.reason == "invalid_container_tag", refused.stderr
