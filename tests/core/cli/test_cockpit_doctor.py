"""``cockpit doctor``: one row per check, exit 1 when one fails, never a traceback."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest

from tests.conftest import bin_path

pytestmark = [pytest.mark.e2e, pytest.mark.e2e]  # starts processes or servers (tests/tiers.py)


def _doctor(tmp_path: Path, *args: str, **env: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([bin_path("cockpit"), "doctor", *args], capture_output=True, text=True,
                          env={**os.environ, **env}, cwd=tmp_path, timeout=120)


def test_a_healthy_embedded_machine(tmp_path: Path) -> None:
    r = _doctor(tmp_path, "--json")
    assert r.returncode == 0, r.stdout + r.stderr
    rows = {row["check"]: row for row in json.loads(r.stdout)}
    assert rows["settings"]["mark"] == "ok"
    assert rows["memory store"]["mark"] == "info" and "does not exist yet" in rows["memory store"]["detail"]
    assert rows["embedding model"]["mark"] == "ok"
    assert {"memory-daemon", "side indexes"} <= set(rows)
    assert rows["memory-daemon"]["detail"] == "absent (started on demand)"
    assert rows["mcp route"]["detail"] == "in process (BLI_MEMORY_DAEMON is off)"  # tests/conftest.py
    # Reading the store never creates or changes it.
    assert not (Path(os.environ["HOME"]) / ".local/share/bli-memory/memory.sqlite3").exists()


def test_bad_settings_and_an_unreachable_service_fail(tmp_path: Path) -> None:
    r = _doctor(tmp_path, BLI_MEMORY_SIMILARITY_FLOOR="abc")
    assert r.returncode == 1 and "[fail] settings: BLI_MEMORY_SIMILARITY_FLOOR is invalid" in r.stdout
    assert "memory store: not checked" in r.stdout
    # Every bad variable is named at once, including ones only a later use would trip on.
    r = _doctor(tmp_path, BLI_MEMORY_CONTAINER_TAG="password=walrus1", BLI_MEMORY_DASHBOARD_URL="notaurl",
                BLI_MEMORY_EXPERIENCE_TZ="Mars/Base", BLI_MEMORY_RECALL_LIMIT="-3")
    assert r.returncode == 1
    for name in ("CONTAINER_TAG", "DASHBOARD_URL", "EXPERIENCE_TZ", "RECALL_LIMIT"):
        assert f"BLI_MEMORY_{name} is invalid" in r.stdout, name
    assert "character 9 is '='" in r.stdout and "walrus1" not in r.stdout + r.stderr  # never repeated
    # A zone folder (an OSError inside zoneinfo) and a relative store folder are settings errors too.
    r = _doctor(tmp_path, "--json", BLI_MEMORY_EXPERIENCE_TZ="Europe", BLI_MEMORY_DATA_DIR="data")
    rows = {row["check"]: row for row in json.loads(r.stdout)}
    assert r.returncode == 1 and "Traceback" not in r.stderr
    assert "BLI_MEMORY_EXPERIENCE_TZ is invalid" in rows["settings"]["detail"]
    assert "BLI_MEMORY_DATA_DIR is invalid" in rows["settings"]["detail"]
    assert not (tmp_path / "data").exists()
    r = _doctor(tmp_path, BLI_MEMORY_DASHBOARD_URL="http://127.0.0.1:1", BLI_MEMORY_DEVICE_TOKEN="x")
    assert r.returncode == 1
    assert "[fail] memory store: the memory service at http://127.0.0.1:1 is unreachable" in r.stdout
    r = _doctor(tmp_path, BLI_MEMORY_DASHBOARD_URL="http://127.0.0.1:1")
    assert r.returncode == 1 and "not paired" in r.stdout
    assert "Traceback" not in r.stderr


def test_a_store_of_another_model_and_a_broken_host_config_are_failures_not_the_end(tmp_path: Path) -> None:
    import sqlite3
    from contextlib import closing

    home = Path(os.environ["HOME"])
    store = home / ".local/share/bli-memory/memory.sqlite3"
    store.parent.mkdir(parents=True)
    from bli_memory.core.embedded.engine import EmbeddedBackend

    EmbeddedBackend(store).save("A fact.", space="s1")
    with closing(sqlite3.connect(store)) as conn, conn:
        conn.execute("UPDATE store_meta SET value = 'some-other-model' WHERE key = 'embedding_model'")
    (home / ".claude.json").write_text("{ not json")
    r = _doctor(tmp_path, "--json")
    assert r.returncode == 1, r.stdout + r.stderr
    rows = {row["check"]: row for row in json.loads(r.stdout)}
    assert rows["memory store"]["mark"] == "fail" and "some-other-model" in rows["memory store"]["detail"]
    assert rows["memory (claude)"]["mark"] == "fail"
    assert rows["embedding model"]["mark"] == "ok" and "side indexes" in rows  # the later checks still ran


def test_a_bad_setting_is_named_by_the_server_and_the_hooks(tmp_path: Path) -> None:
    env = {**os.environ, "BLI_MEMORY_CONTAINER_TAG": "bad tag!"}
    r = subprocess.run([bin_path()], input="", capture_output=True, text=True, env=env, cwd=tmp_path,
                       timeout=120)
    assert r.returncode == 1 and "BLI_MEMORY_CONTAINER_TAG is invalid" in r.stderr
    assert "Traceback" not in r.stderr
    payload = json.dumps({"prompt": "how do we deploy the billing service", "session_id": "s",
                          "cwd": str(tmp_path), "hook_event_name": "UserPromptSubmit"})
    r = subprocess.run([bin_path(), "hook", "prompt"], input=payload, capture_output=True, text=True,
                       env=env, cwd=tmp_path, timeout=120)
    assert r.returncode == 0 and r.stdout == "" and '"reason":"config_invalid"' in r.stderr


def test_a_running_daemon_is_named_with_its_memory_and_the_mcp_route_through_it(
        tmp_path: Path, temp_home: Path, monkeypatch) -> None:
    from tests.core.daemon.test_daemon import Daemons

    monkeypatch.setenv("BLI_MEMORY_DAEMON", "1")
    daemons = Daemons(temp_home, tmp_path)
    try:
        r = _doctor(tmp_path, "--json")
        rows = {row["check"]: row["detail"] for row in json.loads(r.stdout)}
        assert rows["mcp route"].startswith("through the daemon once one runs")
        proc = daemons.start()
        rows = {row["check"]: row["detail"] for row in json.loads(_doctor(tmp_path, "--json").stdout)}
        # From a shell whose settings differ from the daemon's, an MCP server answers in process.
        other = _doctor(tmp_path, "--json", BLI_MEMORY_SIMILARITY_FLOOR="0.3")
        other_rows = {row["check"]: row["detail"] for row in json.loads(other.stdout)}
    finally:
        daemons.kill_all()
    route = other_rows["mcp route"]
    assert route.startswith("in process: the running daemon") and "env_mismatch" in route
    assert rows["memory-daemon"].startswith("running (version ") and f"pid {proc.pid}, holding " in rows[
        "memory-daemon"] and rows["memory-daemon"].endswith(" MB)")
    assert rows["mcp route"] == f"through the daemon (pid {proc.pid}); in process whenever it cannot answer"
    r = _doctor(tmp_path, "--json", BLI_MEMORY_DASHBOARD_URL="http://127.0.0.1:1",
                BLI_MEMORY_DEVICE_TOKEN="x")
    rows = {row["check"]: row["detail"] for row in json.loads(r.stdout)}
    assert rows["mcp route"].startswith("in process, to the team service")


def test_the_embedding_model_row_checks_the_configured_model(tmp_path: Path) -> None:
    from tests.core.memory.tiny_model import write_tiny_model

    r = _doctor(tmp_path, "--json", BLI_MEMORY_EMBEDDER="mpnet")  # configured, not installed
    rows = {row["check"]: row for row in json.loads(r.stdout)}
    assert r.returncode == 1 and rows["embedding model"]["mark"] == "fail"
    assert "bli-memory-mcp model install mpnet" in rows["embedding model"]["detail"]
    r = _doctor(tmp_path, "--json", BLI_MEMORY_EMBEDDER="mpnt")
    row = {row["check"]: row for row in json.loads(r.stdout)}["embedding model"]
    assert row["mark"] == "fail" and "not a registered embedder" in row["detail"]
    folder = write_tiny_model(tmp_path / "tiny")
    r = _doctor(tmp_path, "--json", BLI_MEMORY_EMBEDDER=str(folder))
    row = {row["check"]: row for row in json.loads(r.stdout)}["embedding model"]
    assert row["mark"] == "ok" and "tiny-bag-16 (16 dimensions" in row["detail"]


def test_reembed_refuses_a_model_that_is_not_installed_and_doctor_knows_mpnets_id(tmp_path: Path) -> None:
    from tests.core.memory.tiny_model import write_tiny_model

    r = subprocess.run([bin_path(), "memory", "reembed"], capture_output=True, text=True, timeout=120,
                       env={**os.environ, "BLI_MEMORY_EMBEDDER": "mpnet"}, cwd=tmp_path)
    assert r.returncode == 1 and "bli-memory-mcp model install mpnet" in r.stderr
    # Installed under its short name, mpnet is the store's all-mpnet-base-v2-int8, not a mismatch.
    data = Path(os.environ["HOME"]) / ".local/share/bli-memory/models/all-mpnet-base-v2-int8"
    write_tiny_model(data, name="all-mpnet-base-v2-int8")
    r = subprocess.run([bin_path(), "memory", "reembed"], capture_output=True, text=True, timeout=120,
                       env={**os.environ, "BLI_MEMORY_EMBEDDER": "mpnet"}, cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    row = {row["check"]: row for row in json.loads(_doctor(tmp_path, "--json", BLI_MEMORY_EMBEDDER="mpnet")
                                                   .stdout)}["memory store"]
    assert row["mark"] == "ok" and "all-mpnet-base-v2-int8" in row["detail"], row
