"""Stop hook -> durable queue -> worker -> reconciled memories, with real processes.

Transcripts are the real Claude Code fixture, and transcripts written here in exactly
its JSONL format (lines cloned from the fixture, content replaced). Hooks and workers
run as the installed console script; the store is a real SQLite file in the test HOME.
"""

from __future__ import annotations

import copy
import json
import os
import signal
import sqlite3
import subprocess
import time
import uuid
from contextlib import closing
from datetime import UTC, datetime
from pathlib import Path

import pytest

from bli_memory.core.paths import store_path
from tests.conftest import FIXTURES, bin_path
from tests.hooks_util import run_hook

pytestmark = [pytest.mark.e2e, pytest.mark.e2e]  # starts processes or servers (tests/tiers.py)

CLAUDE = FIXTURES / "claude"
DONE = "[bli-memory] extract job done "

SLOW_PLUGIN = '''
"""A test extractor plugin: logs each call, sleeps, then runs the default rules."""
import json
import os
import time

from bli_memory.core.hookspecs import hookimpl
from bli_memory.core.extraction.extractors import RuleExtractor


class SlowExtractor:
    name = "slow"

    def extract(self, text):
        with open(os.environ["SLOW_LOG"], "a") as fh:
            fh.write(json.dumps({"pid": os.getpid(), "text": text}) + "\\n")
        time.sleep(float(os.environ.get("SLOW_SECONDS", "0")))
        return RuleExtractor().extract(text)


@hookimpl
def register_extractors(register):
    register("slow", SlowExtractor)
'''


# --- transcripts in Claude Code's format ---------------------------------------------


def _fixture_lines() -> list[dict]:
    return [json.loads(line) for line in (CLAUDE / "transcript.jsonl").read_text().splitlines() if line]


def write_transcript(path: Path, turns: list[tuple[str, str]], *, session_id: str | None = None) -> Path:
    """A Claude Code transcript of ``(user, assistant)`` turns, cloned from the real fixture."""
    lines = _fixture_lines()
    user_proto = next(x for x in lines if x.get("type") == "user")
    assistant_proto = next(x for x in lines if x.get("type") == "assistant")
    session = session_id or str(uuid.uuid4())
    out: list[dict] = []
    parent = None
    for user, assistant in turns:
        u = copy.deepcopy(user_proto)
        u.update(uuid=str(uuid.uuid4()), parentUuid=parent, sessionId=session, promptId=str(uuid.uuid4()))
        u["message"]["content"] = user
        a = copy.deepcopy(assistant_proto)
        a.update(uuid=str(uuid.uuid4()), parentUuid=u["uuid"], sessionId=session)
        a["message"]["content"] = [{"type": "text", "text": assistant}]
        last = {"type": "last-prompt", "lastPrompt": user, "leafUuid": a["uuid"], "sessionId": session}
        out += [u, a, last]
        parent = a["uuid"]
    path.write_text("".join(json.dumps(x) + "\n" for x in out))
    return path


def stop(project: Path, transcript: Path, **env: str):
    payload = json.loads((CLAUDE / "stop.json").read_text())
    payload.update(cwd=str(project), transcript_path=str(transcript))
    r = run_hook("stop", payload, env=env or None)
    assert r.returncode == 0 and r.stdout == ""
    outcome, fields = r.receipt
    assert outcome == "ok" and fields["queued"] is True, r.stderr
    return fields


def worker(*args: str, env: dict[str, str] | None = None, timeout: float = 240
           ) -> subprocess.CompletedProcess:
    proc = subprocess.run([bin_path(), "worker", "--once", *args], capture_output=True, text=True,
                          timeout=timeout, env={**os.environ, **(env or {})})
    assert proc.returncode == 0, proc.stderr
    return proc


def done_lines(stderr: str) -> list[dict]:
    return [json.loads(line[len(DONE):]) for line in stderr.splitlines() if line.startswith(DONE)]


def jobs() -> list[dict]:
    with closing(sqlite3.connect(store_path())) as conn, conn:
        conn.row_factory = sqlite3.Row
        rows = [dict(r) for r in conn.execute("SELECT * FROM memory_extract_jobs ORDER BY created_at")]
    for r in rows:
        r["outcome"] = json.loads(r["outcome"]) if r["outcome"] else None
    return rows


def backend():
    from bli_memory.core.embedded.engine import EmbeddedBackend

    return EmbeddedBackend(store_path())


def space_of(project: Path) -> str:
    from bli_memory.core.memory.spaces import derive_space

    return derive_space(project, environ={}).tag


def live(project: Path) -> list:
    b = backend()
    try:
        _, spaces = b.store.resolve_space(space_of(project))
        return b.store.recent(spaces, limit=1000)
    finally:
        b.close()


@pytest.fixture
def project(tmp_path: Path) -> Path:
    p = tmp_path / "project"
    p.mkdir()
    return p


# --- the real fixture ---------------------------------------------------------------


def test_real_claude_fixture_through_stop_hook_and_worker(project: Path, tmp_path: Path) -> None:
    # The captured transcript up to the end of its first turn ("Remember that my
    # favourite colour is teal."), exactly as Claude Code wrote it.
    raw = (CLAUDE / "transcript.jsonl").read_text().splitlines(keepends=True)
    first_turn_end = next(i for i, line in enumerate(raw) if '"type":"last-prompt"' in line)
    transcript = tmp_path / "t.jsonl"
    transcript.write_text("".join(raw[: first_turn_end + 1]))
    stop(project, transcript)
    assert [j["state"] for j in jobs()] == ["queued"]

    proc = worker()
    (line,) = done_lines(proc.stderr)
    assert set(line) == {"job", "added", "updated", "unchanged", "conflicted", "corrected", "extract_ms",
                         "reconcile_ms"}
    assert line["added"] == 1
    (job,) = jobs()
    assert job["state"] == "done" and job["attempts"] == 1 and job["id"] == line["job"]
    (memory,) = live(project)
    # The job keeps the counts the log line gave, and the memories it wrote (the captures page
    # links them).
    assert job["outcome"] == {**{k: v for k, v in line.items() if k != "job"},
                              "memories": [{"id": memory.id, "action": "added"}]}
    assert "favourite colour is teal" in memory.content
    assert memory.metadata["kind"] == "preference" and memory.metadata["extracted"] is True
    assert memory.source == "hook:claude" and memory.session_id == "521d7583-94d2-4863-aa6f-7ccc775c8dbb"
    assert "Hello from the fake model" not in memory.content  # chit-chat is not kept

    # The next session's session-start shows it under User Profile (the session it was
    # captured in has it already, and is not given it again).
    payload = json.loads((CLAUDE / "session_start.json").read_text())
    payload["cwd"] = str(project)
    payload["session_id"] = "the-next-session"
    ctx = run_hook("session-start", payload).context
    assert ctx is not None and "favourite colour is teal" in ctx.split("Recent Context")[0]


# --- written transcripts ------------------------------------------------------------

SECRET = "ghp_" + "A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q7r8S9"

SESSION_ONE = [
    ("hey, quick context before we start: the API is a FastAPI app in services/api and the "
     "worker is Celery in services/worker. Tests run with `make test` from the repo root.",
     "Thanks, that's useful. Let me look at the layout first."),
    (f"we decided to keep all config in environment variables, never in yaml files, because the "
     f"platform injects them. The deploy token is GITHUB_TOKEN={SECRET} for now. "
     "Also I prefer type hints on every public function.",
     "Understood. I'll read settings from the environment only and add type hints to public "
     "functions.\n\nI checked `services/api/settings.py`: it already uses pydantic-settings, so "
     "nothing needs to move. All 87 tests pass."),
]


def test_facts_land_secrets_redacted_and_a_second_run_adds_nothing(project: Path, tmp_path: Path) -> None:
    transcript = write_transcript(tmp_path / "s1.jsonl", SESSION_ONE)
    fields = stop(project, transcript)
    assert fields["masked"] >= 1
    worker()
    contents = [m.content for m in live(project)]
    assert any("environment variables" in c and "never in yaml" in c for c in contents), contents
    assert any("type hints on every public function" in c and c.startswith("The user") for c in contents)
    assert not any("87 tests" in c or "Let me look" in c or "I'll read" in c for c in contents), contents
    kinds = {m.content: m.metadata["kind"] for m in live(project)}
    assert "decision" in kinds.values() and "preference" in kinds.values()
    # The secret never reached the store: not in a memory, not in the job row, not on disk.
    assert not any(SECRET in c for c in contents)
    assert jobs()[0]["text"] == ""  # a distilled job keeps its outcome, not the raw exchange
    for f in store_path().parent.iterdir():
        assert SECRET.encode() not in f.read_bytes(), f.name

    before = sorted(m.id for m in live(project))
    stop(project, transcript)  # the same transcript again
    proc = worker()
    (second,) = done_lines(proc.stderr)
    assert second["added"] == 0 and second["updated"] == 0 and second["conflicted"] == 0
    assert second["unchanged"] >= 2
    assert sorted(m.id for m in live(project)) == before


def test_a_changed_decision_supersedes_the_old_one(project: Path, tmp_path: Path) -> None:
    first = write_transcript(tmp_path / "a.jsonl", [
        ("This repo uses npm for installs.",
         "Got it, npm it is. I'll use `npm ci` in the scripts."),
    ])
    stop(project, first)
    worker()
    (old,) = [m for m in live(project) if "npm" in m.content]

    second = write_transcript(tmp_path / "b.jsonl", [
        ("heads up: we moved from npm to pnpm last week, the workspace installs were too slow.",
         "Thanks for the heads-up. I'll use pnpm commands from now on."),
    ])
    stop(project, second)
    proc = worker()
    (line,) = done_lines(proc.stderr)
    assert line["updated"] == 1 and line["added"] == 0, line

    b = backend()
    try:
        hits = b.search("which package manager does this repo use?", space=space_of(project)).hits
        assert "pnpm" in hits[0].memory.content
        assert all(h.memory.id != old.id for h in hits)  # the old one left search...
        history = b.history(hits[0].memory.id)
        assert [m.id for m in history][1] == old.id  # ...and is kept as history
        assert history[1].state == "superseded" and history[0].supersedes == old.id
    finally:
        b.close()


def test_a_contradiction_keeps_both_and_flags_it(project: Path, tmp_path: Path) -> None:
    stop(project, write_transcript(tmp_path / "a.jsonl", [
        ("Production deploys go to Heroku.", "Noted."),
    ]))
    worker()
    stop(project, write_transcript(tmp_path / "b.jsonl", [
        ("Production deploys go to Fly.io.", "Okay."),
    ]))
    proc = worker()
    (line,) = done_lines(proc.stderr)
    assert line["conflicted"] == 1, line
    memories = {m.content: m for m in live(project)}
    heroku = next(m for c, m in memories.items() if "Heroku" in c)
    fly = next(m for c, m in memories.items() if "Fly.io" in c)
    assert heroku.state == fly.state == "active"
    assert fly.metadata["conflict"] is True and fly.metadata["conflicts_with"] == [heroku.id]


# --- concurrency and crashes ----------------------------------------------------------


def _plugin_env(tmp_path: Path, log: Path, seconds: float) -> dict[str, str]:
    (tmp_path / "plugins").mkdir(exist_ok=True)
    (tmp_path / "plugins" / "bli_test_slow_extractor.py").write_text(SLOW_PLUGIN)
    return {
        "PYTHONPATH": str(tmp_path / "plugins"),
        "BLI_MEMORY_EXTRACT_PLUGINS": "bli_test_slow_extractor",
        "BLI_MEMORY_EXTRACTOR": "slow",
        "SLOW_LOG": str(log),
        "SLOW_SECONDS": str(seconds),
    }


def _enqueue(project: Path, texts: list[str]) -> list[str]:
    b = backend()
    try:
        return [b.enqueue_extract(t, space=space_of(project), source="test") for t in texts]
    finally:
        b.close()


def test_two_workers_on_one_queue_never_run_a_job_twice(project: Path, tmp_path: Path) -> None:
    texts = [f"User: The service number {i} listens on port {8000 + i}.\n\nAssistant: Noted."
             for i in range(16)]
    ids = _enqueue(project, texts)
    log = tmp_path / "calls.jsonl"
    env = {**os.environ, **_plugin_env(tmp_path, log, 0.5)}
    procs = [subprocess.Popen([bin_path(), "worker", "--once"], env=env, stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True) for _ in range(2)]
    outputs = [p.communicate(timeout=300) for p in procs]
    assert all(p.returncode == 0 for p in procs), outputs
    calls = [json.loads(line) for line in log.read_text().splitlines()]
    assert sorted(c["text"] for c in calls) == sorted(texts)  # each job extracted exactly once
    assert len({c["pid"] for c in calls}) == 2  # and both workers took part
    rows = {j["id"]: j for j in jobs()}
    assert all(rows[i]["state"] == "done" and rows[i]["attempts"] == 1 for i in ids)
    done = [d["job"] for _, err in outputs for d in done_lines(err)]
    assert sorted(done) == sorted(ids)
    assert len(live(project)) == 16


def test_kill_9_mid_job_then_the_next_worker_finishes_it(project: Path, tmp_path: Path) -> None:
    (job_id,) = _enqueue(project, ["User: The billing service listens on port 8443.\n\nAssistant: Noted."])
    log = tmp_path / "calls.jsonl"
    env = {**os.environ, **_plugin_env(tmp_path, log, 600)}
    first = subprocess.Popen([bin_path(), "worker", "--once", "--lease-seconds", "2"], env=env,
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        deadline = time.monotonic() + 120
        while not (log.exists() and log.read_text().strip()):
            assert first.poll() is None, first.communicate(timeout=60)
            assert time.monotonic() < deadline, "the first worker never started the job"
            time.sleep(0.05)
        os.kill(first.pid, signal.SIGKILL)  # mid-job: claimed, extracting, not finished
        first.wait(timeout=30)
    finally:
        if first.poll() is None:
            first.kill()
        first.communicate(timeout=60)
    (row,) = jobs()
    assert row["state"] == "running" and row["attempts"] == 1 and row["claimed_by"]
    dead_worker = row["claimed_by"]
    # Nobody extends the dead worker's lease; once it expires the job is up for grabs.
    lease_end = datetime.strptime(row["lease_expires_at"], "%Y-%m-%dT%H:%M:%S.%fZ").replace(tzinfo=UTC)
    time.sleep(max(0.0, (lease_end - datetime.now(UTC)).total_seconds()) + 0.2)

    proc = worker()  # the default extractor this time
    (line,) = done_lines(proc.stderr)
    assert line["job"] == job_id and line["added"] == 1
    (row,) = jobs()
    assert row["state"] == "done" and row["attempts"] == 2 and row["claimed_by"] != dead_worker
    assert any("8443" in m.content for m in live(project))


# --- in process: retries, backoff, outcome ----------------------------------------------


class _Failing:
    """An extractor whose model endpoint is down (or, with ``error``, that is broken)."""

    name = "failing"

    def __init__(self, error: Exception | None = None) -> None:
        self.calls = 0
        self.error = error

    def extract(self, text: str) -> list:
        from bli_memory.core.errors import ServiceError

        self.calls += 1
        raise self.error or ServiceError("model endpoint down", reason="dashboard_unreachable")


def _let_backoff_pass(job_id: str) -> None:
    with closing(sqlite3.connect(store_path())) as conn, conn:
        conn.execute("UPDATE memory_extract_jobs SET not_before = NULL WHERE id = ?", (job_id,))


def test_the_embedded_stores_job_part_is_the_drains_job_queue(project: Path) -> None:
    from bli_memory.core.extraction.worker import job_queue
    from bli_memory.core.memory.job_queue import JobQueue

    b = backend()
    try:
        queue = job_queue(b)
        assert queue is b.store.jobs and isinstance(queue, JobQueue)
    finally:
        b.close()


def test_a_failing_job_is_retried_with_backoff_then_given_up(project: Path, capsys) -> None:
    from bli_memory.core.extraction.worker import MAX_ATTEMPTS, drain, retry_delay

    (job_id,) = _enqueue(project, ["User: The docs site is built with mkdocs.\n\nAssistant: ok"])
    b = backend()
    broken = _Failing(RuntimeError("bug"))
    try:
        assert drain(b, max_jobs=5, worker_id="w", extractor=broken) == 1
        row = b.store.jobs.get_job(job_id)
        assert row["state"] == "queued" and row["attempts"] == 1
        assert row["error"].startswith("unknown_internal:RuntimeError")
        assert row["not_before"] > row["created_at"]
        assert drain(b, max_jobs=5, worker_id="w", extractor=broken) == 0  # backing off
        err = capsys.readouterr().err
        assert '[bli-memory] extract job failed {"job": "' + job_id in err
        assert '"retry_in_s": 15.0' in err and "bug" not in err
        for attempt in range(2, MAX_ATTEMPTS + 1):
            _let_backoff_pass(job_id)
            assert drain(b, max_jobs=5, worker_id="w", extractor=broken) == 1
            assert b.store.jobs.get_job(job_id)["attempts"] == attempt
        row = b.store.jobs.get_job(job_id)
        assert row["state"] == "failed" and broken.calls == MAX_ATTEMPTS and row["outcome"] is None
        _let_backoff_pass(job_id)
        assert drain(b, max_jobs=5, worker_id="w", extractor=broken) == 0  # given up for good
        assert [retry_delay(n) for n in (1, 2, 3, 10)] == [15.0, 30.0, 60.0, 900.0]
    finally:
        b.close()


def test_an_endpoint_that_stays_down_falls_back_to_the_rules_on_the_last_attempt(project: Path) -> None:
    from bli_memory.core.extraction.worker import MAX_ATTEMPTS, drain

    (job_id,) = _enqueue(project, ["User: The docs site is built with mkdocs.\n\nAssistant: ok"])
    b = backend()
    down = _Failing()
    try:
        for attempt in range(1, MAX_ATTEMPTS + 1):
            _let_backoff_pass(job_id)
            assert drain(b, max_jobs=5, worker_id="w", extractor=down) == 1
            assert b.store.jobs.get_job(job_id)["attempts"] == attempt
        row = b.store.jobs.get_job(job_id)
        assert row["state"] == "done" and down.calls == MAX_ATTEMPTS and row["outcome"]["added"] == 1
        assert any("mkdocs" in m.content for m in live(project))
    finally:
        b.close()


def test_lease_and_ownership_rules_of_the_queue(project: Path) -> None:
    (job_id,) = _enqueue(project, ["User: The docs site is built with mkdocs.\n\nAssistant: ok"])
    b = backend()
    try:
        store = b.store
        job = store.jobs.claim_job("a", lease_seconds=60, max_attempts=5)
        assert job.id == job_id and job.attempts == 1 and not job.reclaimed
        assert store.jobs.claim_job("b", lease_seconds=60, max_attempts=5) is None  # held by a
        assert store.jobs.finish_job(job_id, "b", {"added": 1}) is False  # not b's to finish
        assert store.jobs.extend_lease(job_id, "a", lease_seconds=-1) is True  # a's lease "expires"
        again = store.jobs.claim_job("b", lease_seconds=60, max_attempts=5)
        assert again.id == job_id and again.attempts == 2 and again.reclaimed
        assert store.jobs.finish_job(job_id, "a", {"added": 1}) is False  # a lost it
        assert store.jobs.finish_job(job_id, "b", {"added": 1}) is True
        assert store.jobs.get_job(job_id)["outcome"] == {"added": 1}
        assert store.jobs.claim_job("c", lease_seconds=60, max_attempts=5) is None
    finally:
        b.close()


def test_mcp_save_extract_queues_at_once_and_the_server_distils_it(project: Path) -> None:
    from tests.mcp_client import run_session, text_of

    talk = ("User: Remember that the nightly backup job runs `scripts/backup.sh` at 02:00 UTC.\n\n"
            "Assistant: Noted, I will keep that in mind.")

    async def body(client):
        r = await client.call_tool("save_memory", {"content": talk, "extract": True})
        assert not r.is_error, text_of(r)
        assert r.structured_content["status"] == "queued" and r.structured_content["jobId"]
        assert "Queued for extraction" in text_of(r)
        import anyio

        for _ in range(600):  # the server's background drain picks the job up
            s = await client.call_tool("search_memory", {"query": "when does the nightly backup run?"})
            if s.structured_content["count"]:
                return r.structured_content["jobId"], s.structured_content["results"]
            await anyio.sleep(0.1)
        raise AssertionError("the queued job was never distilled")

    job_id, results = run_session(project, body)
    assert "scripts/backup.sh" in results[0]["content"] and "02:00 UTC" in results[0]["content"]
    assert results[0]["source"] == "mcp" and results[0]["metadata"]["extracted"] is True
    row = next(j for j in jobs() if j["id"] == job_id)
    assert row["state"] == "done" and row["outcome"]["added"] == 1


def test_resident_worker_picks_up_new_jobs_and_stops_on_sigterm(project: Path) -> None:
    proc = subprocess.Popen([bin_path(), "worker", "--poll-seconds", "0.2"], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    try:
        time.sleep(0.5)
        (job_id,) = _enqueue(project, ["User: Staging lives at staging.example.internal.\n\nAssistant: ok"])
        deadline = time.monotonic() + 120
        while next(j for j in jobs() if j["id"] == job_id)["state"] != "done":
            assert proc.poll() is None, proc.communicate(timeout=60)
            assert time.monotonic() < deadline, "the resident worker never ran the job"
            time.sleep(0.1)
        proc.send_signal(signal.SIGTERM)
        out, err = proc.communicate(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate(timeout=60)
    assert proc.returncode == 0 and out == ""
    assert [d["job"] for d in done_lines(err)] == [job_id]
