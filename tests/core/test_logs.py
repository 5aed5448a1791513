"""The one logging configuration: structlog and stdlib lines rendered alike, on stderr."""

from __future__ import annotations

import io
import json
import logging
import os
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
import structlog

from bli_memory.core.logs import configure_logging, get_logger
from tests.conftest import bin_path


@pytest.fixture
def restore_logging() -> Iterator[None]:
    """configure_logging replaces the root handlers; put pytest's back afterwards."""
    root = logging.getLogger()
    handlers, level = root.handlers[:], root.level
    try:
        yield
    finally:
        root.handlers[:] = handlers
        root.setLevel(level)
        structlog.reset_defaults()


def _json_lines(text: str) -> list[dict[str, object]]:
    return [json.loads(line) for line in text.splitlines() if line.startswith("{")]


def test_stdlib_and_structlog_lines_share_the_json_format(restore_logging: None) -> None:
    out = io.StringIO()
    configure_logging("info", "json", stream=out)
    logging.getLogger("bli_memory.store").info("store migrated %s", "m003")
    get_logger("bli_memory.daemon", space="repo_x").info("search served", hits=3)
    logging.getLogger("bli_memory.store").debug("below the level")
    stdlib_line, structlog_line = _json_lines(out.getvalue())
    assert out.getvalue().count("\n") == 2
    assert stdlib_line["event"] == "store migrated m003"
    assert stdlib_line["logger"] == "bli_memory.store" and stdlib_line["level"] == "info"
    assert structlog_line["event"] == "search served" and structlog_line["hits"] == 3
    assert structlog_line["space"] == "repo_x" and structlog_line["logger"] == "bli_memory.daemon"
    for line in (stdlib_line, structlog_line):
        assert str(line["timestamp"]).endswith("Z")  # ISO-8601 in UTC


def test_an_exception_is_one_json_line_with_its_traceback(restore_logging: None) -> None:
    out = io.StringIO()
    configure_logging("warning", "json", stream=out)
    try:
        raise ValueError("bad page")
    except ValueError:
        logging.getLogger("bli_memory.ui").exception("page failed: %s", "/spaces")
    (line,) = _json_lines(out.getvalue())
    assert line["event"] == "page failed: /spaces" and line["level"] == "error"
    assert "ValueError: bad page" in str(line["exception"])


def test_console_format_is_one_human_line(restore_logging: None) -> None:
    out = io.StringIO()
    configure_logging("info", "console", stream=out)
    logging.getLogger("bli_memory.store").info("store migrated")
    (line,) = out.getvalue().splitlines()
    assert "store migrated" in line and "[info" in line and "bli_memory.store" in line
    assert not line.startswith("{")


def test_a_second_configuration_replaces_the_first(restore_logging: None) -> None:
    first, second = io.StringIO(), io.StringIO()
    configure_logging("info", "json", stream=first)
    configure_logging("info", "json", stream=second)
    logging.getLogger("bli_memory.t").warning("once")
    assert first.getvalue() == "" and len(_json_lines(second.getvalue())) == 1


@pytest.mark.e2e
@pytest.mark.e2e
def test_the_mcp_server_logs_json_to_stderr_and_keeps_stdout_json_rpc(tmp_path: Path) -> None:
    """The real server process, BLI_MEMORY_LOG_FORMAT=json: its store's lines parse as JSON."""
    requests = [
        {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "protocolVersion": "2025-06-18", "capabilities": {},
            "clientInfo": {"name": "t", "version": "0"}}},
        {"jsonrpc": "2.0", "method": "notifications/initialized"},
        {"jsonrpc": "2.0", "id": 2, "method": "tools/call",
         "params": {"name": "save_memory", "arguments": {"content": "Deploys go through Argo CD."}}},
    ]
    env = {**os.environ, "BLI_MEMORY_LOG_LEVEL": "info", "BLI_MEMORY_LOG_FORMAT": "json"}
    with subprocess.Popen([bin_path()], cwd=tmp_path, env=env, stdin=subprocess.PIPE,
                          stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) as proc:
        assert proc.stdin and proc.stdout and proc.stderr
        for request in requests:
            proc.stdin.write(json.dumps(request) + "\n")
            proc.stdin.flush()
            if "id" in request:
                assert json.loads(proc.stdout.readline())["id"] == request["id"]
        proc.stdin.close()
        proc.wait(timeout=60)
        err = proc.stderr.read()
    lines = _json_lines(err)
    migrated = [line for line in lines if line.get("logger") == "bli_memory.store"]
    assert migrated, err
    assert "store migrated" in str(migrated[0]["event"]) and migrated[0]["level"] == "info"
    assert str(migrated[0]["timestamp"]).endswith("Z")
    assert len(lines) == len([line for line in err.splitlines() if line.strip()]), err  # all JSON


@pytest.mark.e2e
@pytest.mark.e2e
def test_the_daemon_logs_json_to_stderr(tmp_path: Path) -> None:
    """The real daemon process: its store's migration line comes out as one JSON object."""
    env = {**os.environ, "BLI_MEMORY_LOG_LEVEL": "info", "BLI_MEMORY_LOG_FORMAT": "json"}
    log = tmp_path / "daemon.log"
    with log.open("wb") as fh:
        proc = subprocess.Popen([bin_path(), "daemon", "--idle-seconds", "120"], env=env,
                                stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=fh)
    try:
        deadline = time.monotonic() + 90
        while "daemon ready" not in log.read_text() and proc.poll() is None:
            assert time.monotonic() < deadline, log.read_text()
            time.sleep(0.1)
    finally:
        proc.terminate()
        proc.wait(30)
    migrated = [line for line in _json_lines(log.read_text()) if line.get("logger") == "bli_memory.store"]
    assert migrated and "store migrated" in str(migrated[0]["event"]), log.read_text()
