"""The resident daemon end to end: real daemon processes, real hooks, real sockets.

Every test runs in its own temporary HOME (so its own socket), turns the daemon route
on (``tests/conftest.py`` turns it off for every other test), and kills every daemon
process of that HOME at teardown, including the ones a hook started detached.
"""

from __future__ import annotations

import json
import os
import signal
import socket
import stat
import subprocess
import sys
import time
import uuid
from pathlib import Path

import pytest

from bli_memory.core._version import VERSION
from bli_memory.core.hooks import daemon_client
from bli_memory.core.paths import daemon_socket_path, hook_stats_path, state_dir, store_path
from tests.conftest import FIXTURES, bin_path, daemon_pids
from tests.hooks_util import HookRun, run_hook, summed_counts

pytestmark = [pytest.mark.e2e, pytest.mark.e2e]  # starts processes or servers (tests/tiers.py)

CLAUDE = FIXTURES / "claude"
PROMPT = "What is my favourite colour?"


def fixture(name: str, **overrides: object) -> dict:
    data = json.loads((CLAUDE / name).read_text())
    data.update(overrides)
    return data


def save(project: Path, *contents: str) -> None:
    from bli_memory.core.embedded.engine import EmbeddedBackend
    from bli_memory.core.memory.spaces import derive_space

    backend = EmbeddedBackend(store_path())
    try:
        for c in contents:
            backend.save(c, space=derive_space(project).tag)
    finally:
        backend.close()


# --- processes ---------------------------------------------------------------------


_daemon_pids = daemon_pids  # live daemons of this test's temporary home (tests/conftest.py)


def _gone(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return True
    return state == "Z"


def wait_until(predicate, timeout: float = 60.0, what: str | object = "condition"):
    give_up = time.monotonic() + timeout
    while time.monotonic() < give_up:
        value = predicate()
        if value:
            return value
        time.sleep(0.05)
    pytest.fail(f"timed out after {timeout}s waiting for {what() if callable(what) else what}")


class Daemons:
    """Starts daemon processes for one test and kills every one of its HOME at the end."""

    def __init__(self, home: Path, tmp_path: Path) -> None:
        self.home = home
        self.tmp_path = tmp_path
        self.procs: list[subprocess.Popen] = []

    def start(self, *args: str, env: dict[str, str] | None = None, argv: list[str] | None = None,
              ready: bool = True) -> subprocess.Popen:
        log = self.tmp_path / f"daemon-{len(self.procs)}.err"
        with log.open("wb") as err:
            proc = subprocess.Popen(argv or [bin_path(), "daemon", *args], env={**os.environ, **(env or {})},
                                    stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=err)
        proc.log = log  # type: ignore[attr-defined]
        self.procs.append(proc)
        if ready:
            wait_until(ping_ready, what=lambda: f"the daemon to be ready (exit code {proc.poll()}, "
                       f"stderr {log.read_text()!r})")
        return proc

    def stderr(self, proc: subprocess.Popen) -> str:
        return proc.log.read_text()  # type: ignore[attr-defined]

    def kill_all(self) -> None:
        for proc in self.procs:
            if proc.poll() is None:
                proc.kill()
            proc.wait(timeout=10)
        for pid in _daemon_pids(self.home):
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        give_up = time.monotonic() + 10
        while _daemon_pids(self.home) and time.monotonic() < give_up:
            time.sleep(0.05)


def ping_ready() -> dict | None:
    try:
        reply = daemon_client.ping()
    except daemon_client.DaemonUnavailable:
        return None
    return reply if reply.get("ready") else None


@pytest.fixture
def daemons(temp_home: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setenv("BLI_MEMORY_DAEMON", "1")
    d = Daemons(temp_home, tmp_path)
    try:
        yield d
    finally:
        d.kill_all()


@pytest.fixture
def project(tmp_path: Path) -> Path:
    p = tmp_path / "project"
    p.mkdir()
    return p


def prompt_hook(project: Path, prompt: str = PROMPT, session: str | None = None, **kwargs) -> HookRun:
    """One prompt hook run; each run is its own host session unless ``session`` is given
    (a session is given a memory once)."""
    payload = fixture("prompt.json", cwd=str(project), prompt=prompt, session_id=session or str(uuid.uuid4()))
    return run_hook("prompt", payload, **kwargs)


def raw_exchange(data: bytes, *, shut: bool = True, timeout: float = 10.0) -> dict:
    """Send raw bytes to the daemon and read its one reply line."""
    with daemon_client.socket_address(daemon_socket_path()) as address:
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        sock.settimeout(timeout)
        sock.connect(address)
    with sock:
        try:
            sock.sendall(data)
            if shut:
                sock.shutdown(socket.SHUT_WR)
        except OSError:
            pass  # the daemon refused mid-send; its reply is still there to read
        buf = b""
        while b"\n" not in buf:
            chunk = sock.recv(65536)
            if not chunk:
                break
            buf += chunk
    assert buf.endswith(b"\n") and buf.count(b"\n") == 1, buf[:200]
    return json.loads(buf)


# --- start, ping, answer ------------------------------------------------------------


def test_daemon_answers_a_prompt_hook_exactly_as_the_direct_path(daemons: Daemons, project: Path) -> None:
    save(project, "The user's favourite colour is teal.", "The CI runs on GitHub Actions.")
    proc = daemons.start()
    pong = daemon_client.ping()
    assert pong["alive"] is True and pong["version"] == VERSION and pong["pid"] == proc.pid

    via_daemon = prompt_hook(project)
    outcome, fields = via_daemon.receipt
    assert via_daemon.returncode == 0 and outcome == "ok"
    assert fields["via"] == "daemon" and fields["hits"] == 1 and "daemon" not in fields
    assert "teal" in (via_daemon.context or "")

    # Another session (this one was given the memory already, and is not given it twice).
    direct = run_hook("prompt", fixture("prompt.json", cwd=str(project), prompt=PROMPT,
                                        session_id="another-session"), env={"BLI_MEMORY_DAEMON": "0"})
    assert direct.receipt[1]["via"] == "direct", direct.stderr
    assert direct.stdout == via_daemon.stdout, direct.stderr  # one implementation of recall

    counts = summed_counts(json.loads(hook_stats_path().read_text()), "prompt")
    assert counts["via:daemon"] == 1 and counts["via:direct"] == 1


def test_a_session_is_never_given_a_memory_twice_whichever_route_answers(daemons: Daemons,
                                                                       project: Path) -> None:
    save(project, "The user's favourite colour is teal.", "The CI runs on GitHub Actions.")
    daemons.start()
    first = prompt_hook(project, session="one-session")
    assert first.receipt[1]["via"] == "daemon" and "teal" in (first.context or "")
    again = prompt_hook(project, session="one-session", env={"BLI_MEMORY_DAEMON": "0"})  # direct path
    assert again.receipt[0] == "ok" and again.receipt[1]["via"] == "direct"
    assert again.stdout == "" and again.receipt[1]["hits"] == 0
    back = prompt_hook(project, session="one-session")  # and back on the daemon
    assert back.receipt[1]["via"] == "daemon" and back.stdout == ""


def test_trivial_prompt_and_stop_and_session_start_via_the_daemon(daemons: Daemons, project: Path,
                                                                  tmp_path: Path) -> None:
    from bli_memory.core.embedded.engine import EmbeddedBackend
    from bli_memory.core.memory.spaces import derive_space

    backend = EmbeddedBackend(store_path())
    backend.save("Always run ruff before committing.", space=derive_space(project).tag,
                 metadata={"kind": "convention"})
    backend.close()
    daemons.start()

    trivial = prompt_hook(project, prompt="thanks")
    assert trivial.receipt == ("skipped", {"reason": "trivial_prompt"}) and trivial.stdout == ""

    start = run_hook("session-start", fixture("session_start.json", cwd=str(project)))
    assert start.receipt[1]["via"] == "daemon" and "Always run ruff" in (start.context or "")

    transcript = tmp_path / "t.jsonl"
    transcript.write_bytes((CLAUDE / "transcript.jsonl").read_bytes())
    stop = run_hook("stop", fixture("stop.json", cwd=str(project), transcript_path=str(transcript)))
    outcome, fields = stop.receipt
    assert stop.stdout == "" and outcome == "ok" and fields["via"] == "daemon" and fields["queued"] is True
    import sqlite3
    from contextlib import closing

    with closing(sqlite3.connect(store_path())) as conn, conn:
        texts = [r[0] for r in conn.execute("SELECT text FROM memory_extract_jobs")]
    assert len(texts) == 1 and "Hello from the fake model." in texts[0]

    reentrant = run_hook("stop", fixture("stop_hook_active.json", cwd=str(project)))
    assert reentrant.receipt == ("skipped", {"reason": "reentrant"})


def test_failed_stop_via_the_daemon_still_tells_the_person(daemons: Daemons, project: Path,
                                                            tmp_path: Path) -> None:
    daemons.start()
    r = run_hook("stop", fixture("stop.json", cwd=str(project), transcript_path=7))
    assert r.returncode == 0 and r.reason == "stdin_malformed"
    assert set(json.loads(r.stdout)) == {"systemMessage"}


def test_socket_is_0600_in_a_0700_folder(daemons: Daemons) -> None:
    daemons.start()
    st = os.lstat(daemon_socket_path())
    assert stat.S_ISSOCK(st.st_mode) and stat.S_IMODE(st.st_mode) == 0o600 and st.st_uid == os.getuid()
    assert stat.S_IMODE(os.stat(state_dir()).st_mode) == 0o700


def test_status_says_whether_the_socket_answers(daemons: Daemons) -> None:
    assert daemon_client.status() == {"running": False, "version": None, "pid": None,
                                      "socket": str(daemon_socket_path())}
    proc = daemons.start()
    assert daemon_client.status() == {"running": True, "version": VERSION, "pid": proc.pid,
                                      "socket": str(daemon_socket_path())}
    out = subprocess.run([bin_path(), "daemon", "--status"], capture_output=True, text=True, timeout=30)
    assert json.loads(out.stdout)["running"] is True
    plain = subprocess.run([bin_path(), "daemon", "status"], capture_output=True, text=True, timeout=30)
    assert json.loads(plain.stdout)["pid"] == proc.pid  # `daemon status` reads as --status


def test_a_stray_word_is_refused_and_never_starts_a_daemon(daemons: Daemons) -> None:
    out = subprocess.run([bin_path(), "daemon", "stats"], capture_output=True, text=True, timeout=30)
    assert out.returncode == 2 and "unexpected argument 'stats'" in out.stderr
    assert daemon_client.status()["running"] is False


# --- one per user ---------------------------------------------------------------------


def test_second_instance_exits_zero_with_daemon_already_running(daemons: Daemons) -> None:
    first = daemons.start()
    second = subprocess.run([bin_path(), "daemon"], capture_output=True, text=True, timeout=30)
    assert second.returncode == 0 and "daemon_already_running" in second.stderr
    assert first.poll() is None and daemon_client.ping()["pid"] == first.pid


def test_version_mismatch_stands_down_and_the_hook_starts_a_current_daemon(daemons: Daemons,
                                                                            project: Path) -> None:
    save(project, "The user's favourite colour is teal.")
    old_code = ("import sys, bli_memory.core._version as v; v.VERSION = '0.0.1-old'\n"
                "from bli_memory.core.daemon.server import main\nsys.exit(main([]))\n")
    old = daemons.start(argv=[sys.executable, "-c", old_code])
    assert daemon_client.ping()["version"] == "0.0.1-old"

    r = prompt_hook(project)
    assert r.returncode == 0 and r.receipt[1]["via"] == "direct" and r.receipt[1]["daemon"] == "stand_down"
    assert "teal" in (r.context or "")  # the person still got their recall
    assert old.wait(timeout=30) == 0
    assert "stand_down" in daemons.stderr(old)

    current = wait_until(ping_ready, what="the hook to start a current daemon")
    assert current["version"] == VERSION and current["pid"] != old.pid
    again = prompt_hook(project)
    assert again.receipt[1]["via"] == "daemon" and again.stdout == r.stdout


def test_a_caller_of_an_earlier_release_answers_itself_and_the_daemon_stays(daemons: Daemons,
                                                                             project: Path) -> None:
    # The daemon is of a later release than this hook: a session left running across an
    # upgrade must not make the current daemon leave (every old call would restart it).
    save(project, "The user's favourite colour is teal.")
    newer = ("import sys, bli_memory.core._version as v; v.VERSION = '99.0.0'\n"
             "from bli_memory.core.daemon.server import main\nsys.exit(main([]))\n")
    proc = daemons.start(argv=[sys.executable, "-c", newer])
    for _ in range(2):
        r = prompt_hook(project)
        assert r.returncode == 0 and r.receipt[1]["via"] == "direct"
        assert r.receipt[1]["daemon"] == "outdated_caller" and "teal" in (r.context or "")
    assert proc.poll() is None and daemon_client.ping()["pid"] == proc.pid


# --- stopping -----------------------------------------------------------------------------


def test_idle_daemon_exits_and_removes_its_socket(daemons: Daemons) -> None:
    proc = daemons.start(env={"BLI_MEMORY_DAEMON_IDLE_SECONDS": "1.5"})
    assert proc.wait(timeout=60) == 0
    assert not daemon_socket_path().exists()
    assert '"reason":"idle"' in daemons.stderr(proc)


def test_restart_after_a_stop_starts_a_daemon_now_with_this_shells_settings(daemons: Daemons,
                                                                            project: Path) -> None:
    # After `daemon --stop` the hooks wait an hour before they start one (spec); a person who
    # changed a setting restarts it at once instead.
    save(project, "The user's favourite colour is teal.")
    first = daemons.start()
    assert subprocess.run([bin_path(), "daemon", "--stop"], capture_output=True, timeout=30).returncode == 0
    wait_until(lambda: _gone(first.pid), what="the daemon to stop")
    assert prompt_hook(project).receipt[1]["daemon"] == "no_socket"  # and no start for an hour
    r = subprocess.run([bin_path(), "daemon", "--restart"], capture_output=True, text=True, timeout=60)
    assert r.returncode == 0 and "daemon restarted" in r.stderr, r.stderr
    pid = json.loads(r.stderr.split("daemon restarted ", 1)[1])["pid"]
    assert pid != first.pid and daemon_client.ping()["pid"] == pid
    wait_until(ping_ready, what="the new daemon to be ready")
    hook = prompt_hook(project)
    assert hook.receipt[1]["via"] == "daemon" and "teal" in (hook.context or "")


def test_sigterm_and_stop_request_exit_cleanly(daemons: Daemons) -> None:
    proc = daemons.start()
    proc.send_signal(signal.SIGTERM)
    assert proc.wait(timeout=30) == 0 and not daemon_socket_path().exists()
    proc = daemons.start()
    assert daemon_client.stop() == proc.pid
    assert proc.wait(timeout=30) == 0 and not daemon_socket_path().exists()


def test_kill_9_then_direct_fallback_then_a_restarted_daemon(daemons: Daemons, project: Path) -> None:
    save(project, "The user's favourite colour is teal.")
    proc = daemons.start()
    proc.kill()
    proc.wait(timeout=10)
    assert stat.S_ISSOCK(os.lstat(daemon_socket_path()).st_mode)  # left behind

    r = prompt_hook(project)
    assert r.returncode == 0 and r.receipt[0] == "ok" and "teal" in (r.context or "")
    assert r.receipt[1]["via"] == "direct" and r.receipt[1]["daemon"] == "stale_socket"

    restarted = wait_until(ping_ready, what="a restarted daemon")
    assert restarted["pid"] != proc.pid
    later = prompt_hook(project)
    assert later.receipt[1]["via"] == "daemon" and later.stdout == r.stdout
    assert summed_counts(json.loads(hook_stats_path().read_text()), "prompt")["daemon:stale_socket"] == 1


def test_prompt_hook_starts_the_daemon_detached_at_most_once_an_hour(daemons: Daemons,
                                                                     project: Path) -> None:
    first = prompt_hook(project)
    assert first.receipt[1]["daemon"] == "no_socket" and first.receipt[1].get("via") == "direct"
    pong = wait_until(ping_ready, what="the daemon the hook started")
    pid = pong["pid"]
    assert os.getsid(pid) == pid  # its own session: the host's terminal cannot take it down
    for fd in (0, 1, 2):
        assert os.readlink(f"/proc/{pid}/fd/{fd}") == "/dev/null"
    assert os.readlink(f"/proc/{pid}/cwd") == "/"
    assert daemon_client.spawn_stamp_path().exists()

    assert daemon_client.stop() == pid
    wait_until(lambda: _gone(pid), what="the daemon to stop")
    second = prompt_hook(project)
    assert second.receipt[1]["daemon"] == "no_socket"
    time.sleep(2.0)  # a started daemon would bind within this time
    assert _daemon_pids(Path(os.environ["HOME"])) == [] and not daemon_socket_path().exists()


def test_the_daemon_leaves_no_child_processes(daemons: Daemons, project: Path, tmp_path: Path) -> None:
    save(project, "The user's favourite colour is teal.")
    proc = daemons.start()
    transcript = tmp_path / "t.jsonl"
    transcript.write_bytes((CLAUDE / "transcript.jsonl").read_bytes())
    prompt_hook(project)
    run_hook("stop", fixture("stop.json", cwd=str(project), transcript_path=str(transcript)))
    children = [p.name for p in Path("/proc").iterdir() if p.name.isdigit() and _ppid(p) == proc.pid]
    assert children == []
    assert daemon_client.stop() == proc.pid and proc.wait(timeout=30) == 0
    assert _daemon_pids(Path(os.environ["HOME"])) == []


def _ppid(entry: Path) -> int | None:
    try:
        return int((entry / "stat").read_text().rsplit(")", 1)[1].split()[1])
    except (OSError, ValueError, IndexError):
        return None


# --- the off switch and refusals -------------------------------------------------------------


def test_daemon_off_never_touches_the_socket(daemons: Daemons, project: Path) -> None:
    path = daemon_socket_path()
    path.parent.mkdir(parents=True, mode=0o700)
    with daemon_client.socket_address(path) as address:
        listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        listener.bind(address)
    with listener:
        listener.listen(8)
        listener.setblocking(False)
        for event, payload in [("prompt", fixture("prompt.json", cwd=str(project), prompt=PROMPT)),
                               ("prompt", fixture("prompt.json", cwd=str(project), prompt="ok")),
                               ("session-start", fixture("session_start.json", cwd=str(project)))]:
            r = run_hook(event, payload, env={"BLI_MEMORY_DAEMON": "0"})
            assert r.returncode == 0 and "daemon" not in r.receipt[1]
        with pytest.raises(BlockingIOError):
            listener.accept()  # nobody ever connected
        # ...and with the switch on, the same listener is asked (it never answers: direct).
        r = prompt_hook(project)
        conn, _ = listener.accept()
        conn.close()
    assert r.receipt[1]["daemon"] == "reply_timeout" and r.receipt[1]["via"] == "direct"
    assert not daemon_client.spawn_stamp_path().exists()


def test_daemon_off_never_starts_one(daemons: Daemons, project: Path) -> None:
    r = prompt_hook(project, env={"BLI_MEMORY_DAEMON": "0"})
    assert r.receipt[1] == {**r.receipt[1], "via": "direct"} and "daemon" not in r.receipt[1]
    time.sleep(1.0)
    assert not daemon_client.spawn_stamp_path().exists() and _daemon_pids(Path(os.environ["HOME"])) == []


@pytest.mark.skipif(os.getuid() != 0, reason="needs root to give the socket path to another user")
def test_socket_path_owned_by_another_user_is_refused(daemons: Daemons, project: Path) -> None:
    path = daemon_socket_path()
    path.parent.mkdir(parents=True, mode=0o700)
    with daemon_client.socket_address(path) as address:
        planted = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        planted.bind(address)
    with planted:
        planted.listen(8)
        planted.setblocking(False)
        os.chown(path, 65534, 65534)
        out = subprocess.run([bin_path(), "daemon"], capture_output=True, text=True, timeout=30)
        assert out.returncode == 1 and "socket_not_owned" in out.stderr
        assert os.lstat(path).st_uid == 65534  # left alone
        r = prompt_hook(project)
        assert r.receipt[1]["daemon"] == "foreign_socket" and r.receipt[1]["via"] == "direct"
        with pytest.raises(BlockingIOError):
            planted.accept()  # the prompt never went to the other user's socket


def test_request_from_another_configuration_goes_direct(daemons: Daemons, project: Path) -> None:
    daemons.start()
    r = prompt_hook(project, env={"BLI_MEMORY_SIMILARITY_FLOOR": "0.9"})
    assert r.receipt[1]["daemon"] == "env_mismatch" and r.receipt[1]["via"] == "direct"
    assert daemon_client.ping()["alive"] is True  # a mismatch is not a stand-down


def test_a_variable_that_changes_no_answer_keeps_the_daemon_route(daemons: Daemons, project: Path) -> None:
    """The README has Hermes users export BLI_MEMORY_HERMES_BIN; it sent every hook direct."""
    daemons.start()
    r = prompt_hook(project, env={"BLI_MEMORY_HERMES_BIN": "/opt/hermes/bin/hermes",
                                  "BLI_MEMORY_LOG_LEVEL": "debug"})
    assert r.receipt[1]["via"] == "daemon", r.receipt


@pytest.mark.parametrize("value", ["all-MiniLM-L6-v2-int8", " all-MiniLM-L6-v2-int8 ", ""])
def test_the_default_embedder_spelled_out_is_the_same_configuration(daemons: Daemons, project: Path,
                                                                    value: str) -> None:
    """A shell that exports the default model (as the "another model" error advises) is
    served by a daemon started without it, instead of going in process on every hook."""
    daemons.start()
    r = prompt_hook(project, env={"BLI_MEMORY_EMBEDDER": value})
    assert r.receipt[1]["via"] == "daemon", r.receipt
    other = prompt_hook(project, env={"BLI_MEMORY_EMBEDDER": "mpnet"})
    assert other.receipt[1]["daemon"] == "env_mismatch"


# --- protocol robustness ---------------------------------------------------------------------


@pytest.mark.parametrize(
    ("data", "error"),
    [(b"{not json\n", "malformed"), (b"[1, 2]\n", "malformed"), (b"\xff\xfe\n", "malformed"),
     (b"\n", "malformed"), (b"", "malformed"),
     (b'{"event": "prompt", "host": "claude", "payload": "x", "version": "%s", "config": {}}\n', "malformed"),
     (b'{"event": "rm -rf", "host": "claude", "payload": {}, "version": "%s", "config": {}}\n', "malformed"),
     (b'{"event": "prompt", "host": "claude", "payload": {}, "version": "%s", "config": {"X": "1"}}\n',
      "env_mismatch")],
)
def test_bad_requests_get_an_error_line(daemons: Daemons, data: bytes, error: str) -> None:
    daemons.start()
    data = data.replace(b"%s", VERSION.encode())
    assert raw_exchange(data)["error"] == error
    assert daemon_client.ping()["alive"] is True


def test_oversized_request_gets_an_error_line_and_the_daemon_lives_on(daemons: Daemons) -> None:
    daemons.start()
    big = b'{"ping": true, "pad": "' + b"a" * (daemon_client.MAX_LINE_BYTES + 1024) + b'"}\n'
    assert raw_exchange(big, shut=False)["error"] == "too_large"
    silent = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)  # connects, says nothing, leaves
    with daemon_client.socket_address(daemon_socket_path()) as address:
        silent.connect(address)
    silent.close()
    assert daemon_client.ping()["alive"] is True


def test_eight_hooks_at_once_are_all_answered_in_time(
    daemons: Daemons, project: Path, tmp_path: Path
) -> None:
    save(project, "The user's favourite colour is teal.", "The CI runs on GitHub Actions.")
    daemons.start()
    procs = []
    for n in range(8):  # all eight started before any is read, each with its payload ready
        # Eight sessions: one session is given a memory once.
        payload_file = tmp_path / f"payload-{n}.json"
        payload_file.write_text(json.dumps(fixture("prompt.json", cwd=str(project), prompt=PROMPT,
                                                   session_id=f"session-{n}")))
        with payload_file.open("rb") as stdin:
            procs.append(subprocess.Popen([bin_path(), "hook", "prompt"], stdin=stdin, stdout=subprocess.PIPE,
                                          stderr=subprocess.PIPE, env=os.environ.copy()))
    runs = []
    for proc in procs:
        out, err = proc.communicate(timeout=60)
        runs.append(HookRun(proc.returncode, out.decode(), err.decode()))
    receipts = [r.stderr for r in runs]
    for r in runs:
        outcome, fields = r.receipt
        assert r.returncode == 0 and outcome == "ok" and fields["via"] == "daemon", receipts
        assert fields["elapsed_ms"] < fields["deadline_ms"]
        assert "teal" in (r.context or "")
    assert len({r.stdout for r in runs}) == 1


def test_replaced_store_file_is_reopened(daemons: Daemons, project: Path) -> None:
    save(project, "The user's favourite colour is teal.")
    daemons.start()
    assert "teal" in (prompt_hook(project).context or "")
    for f in store_path().parent.iterdir():
        f.unlink()
    save(project, "The user's favourite colour is ochre.")
    r = prompt_hook(project)
    assert r.receipt[1]["via"] == "daemon" and "ochre" in (r.context or "") and "teal" not in r.stdout


def test_a_hook_the_daemon_answers_imports_only_the_standard_library(daemons: Daemons, project: Path) -> None:
    save(project, "The user's favourite colour is teal.")
    daemons.start()
    payload = json.dumps(fixture("prompt.json", cwd=str(project), prompt=PROMPT)).encode()
    code = (
        "import sys\n"
        "from bli_memory.core.cli.main import main\n"
        "main(['hook', 'prompt'])\n"
        "heavy = {'mcp', 'httpx', 'pydantic', 'numpy', 'onnxruntime', 'structlog', 'tokenizers', 'pluggy',\n"
        "         'bli_memory.core.embedded.engine', 'bli_memory.core.hooks.events', 'threading'}\n"
        "print(sorted(m for m in heavy if m in sys.modules))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], input=payload, capture_output=True, timeout=60)
    stdout, stderr = out.stdout.decode(), out.stderr.decode()
    assert '"via":"daemon"' in stderr, stderr
    assert stdout.strip().splitlines()[-1] == "[]", stdout + stderr
    assert "teal" in stdout


def test_daemon_usage_errors_exit_2(daemons: Daemons) -> None:
    out = subprocess.run([bin_path(), "daemon", "--bogus"], capture_output=True, text=True, timeout=30)
    assert out.returncode == 2 and "usage: bli-memory-mcp daemon" in out.stderr
    out = subprocess.run([bin_path(), "daemon", "--idle-seconds", "soon"], capture_output=True, text=True,
                         timeout=30)
    assert out.returncode == 2
    assert not daemon_socket_path().exists()


def test_the_daemon_runs_queued_extract_jobs_after_a_stop(daemons: Daemons, project: Path,
                                                          tmp_path: Path) -> None:
    pytest.importorskip("bli_memory.core.extraction.worker")
    import sqlite3
    from contextlib import closing

    proc = daemons.start()
    transcript = tmp_path / "t.jsonl"
    transcript.write_bytes((CLAUDE / "transcript.jsonl").read_bytes())
    r = run_hook("stop", fixture("stop.json", cwd=str(project), transcript_path=str(transcript)))
    assert r.receipt[1]["via"] == "daemon" and r.receipt[1]["queued"] is True

    def finished() -> tuple | None:
        with closing(sqlite3.connect(store_path())) as conn, conn:
            row = conn.execute("SELECT state, claimed_by FROM memory_extract_jobs").fetchone()
        return row if row and row[0] not in ("queued", "running") else None

    state, claimed_by = wait_until(finished, timeout=60, what="the daemon to run the queued job")
    assert state == "done" and claimed_by == f"daemon-{proc.pid}"


@pytest.mark.parametrize(("caller", "daemon", "newer"), [
    ("0.1.1", "0.1.0", True), ("0.10.0", "0.9.1", True), ("0.3.0", "0.2.0.dev1", True),
    ("0.1.0", "0.1.0", False), ("0.0.9", "0.1.0", False), ("0.1.0.dev1", "0.1.0", False),
    ("0.1.0rc1", "0.1.0", False), ("0.1.0", "0.2.0.dev1", False),
    ("", "0.1.0", False), ("v0.1.0", "0.1.0", False), (5, "0.1.0", False),
])
def test_only_a_later_release_makes_the_daemon_stand_down(caller: object, daemon: str, newer: bool) -> None:
    from bli_memory.core.daemon.protocol import is_newer

    assert is_newer(caller, daemon) is newer
