"""``bli-memory-mcp service`` fails fast and in one line when it cannot serve."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

from tests.conftest import bin_path


def test_an_unreachable_database_is_one_line_and_exit_1_before_listening(tmp_path: Path) -> None:
    r = subprocess.run(
        [bin_path(), "service", "--database-url", "postgresql://nobody@127.0.0.1:1/none", "--port", "1"],
        capture_output=True, text=True, env=dict(os.environ), cwd=tmp_path, timeout=120,
    )
    assert r.returncode == 1
    assert "cannot migrate the service database" in r.stderr and "Connection refused" in r.stderr
    assert "Traceback" not in r.stderr and "listening" not in r.stderr
    assert "setup plugin" not in r.stderr  # alembic's start-up chatter stays out
    assert len(r.stderr.strip().splitlines()) <= 4


def test_no_database_url_says_how_to_give_one(tmp_path: Path) -> None:
    r = subprocess.run([bin_path(), "service", "token", "list"], capture_output=True, text=True,
                       env=dict(os.environ), cwd=tmp_path, timeout=120)
    assert r.returncode == 1 and "BLI_MEMORY_DATABASE_URL" in r.stderr and "Traceback" not in r.stderr


def test_a_port_in_use_is_one_line_before_listening(tmp_path: Path, service_db: str) -> None:
    import socket

    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        port = busy.getsockname()[1]
        r = subprocess.run(
            [bin_path(), "service", "--database-url", service_db, "--port", str(port)],
            capture_output=True, text=True, env=dict(os.environ), cwd=tmp_path, timeout=120,
        )
    assert r.returncode == 1 and f"cannot listen on 127.0.0.1:{port}" in r.stderr
    assert "listening" not in r.stderr and "Traceback" not in r.stderr
