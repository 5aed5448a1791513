"""Fixtures of the memory browser tests: a seeded store and ``bli-memory-mcp ui`` as a
real subprocess on a loopback port.

``ui_server`` (module scope) runs the command in its own temporary HOME, from a plain
project folder, with ``--no-open``; it reads the URL from the first stdout line, as a
person would. Tests check what changed by reading the same SQLite file.
"""

from __future__ import annotations

import os
import subprocess
import threading
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import pytest

from tests.conftest import bin_path

#: Stored content that must render as text and never run.
SCRIPT_MEMORY = ("<script>window.__pwned = 1; document.title = 'pwned'</script>"
                 "<img src=x onerror=\"window.__pwned = 2\"> a stored script")


@dataclass
class UiServer:
    """A running ``bli-memory-mcp ui``."""

    url: str          # the printed URL, token included
    base: str         # http://127.0.0.1:PORT
    port: int
    token: str
    proc: subprocess.Popen[str]
    home: Path
    store_path: Path
    space: str
    stderr: Path
    ids: dict[str, str]

    def store(self) -> Any:
        """A fresh read of the store file (the server's writes are committed)."""
        from bli_memory.core.embedded.store import SQLiteStore
        from bli_memory.core.memory import embeddings

        return SQLiteStore(self.store_path, model_name=embeddings.MODEL_NAME,
                           dimensions=embeddings.DIMENSIONS)


def ui_env(home: Path) -> dict[str, str]:
    """The environment of a ui process living in ``home`` (no BLI_MEMORY_/XDG_ settings)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("BLI_MEMORY_", "XDG_"))}
    env.update(HOME=str(home), BLI_MEMORY_DAEMON="0", GIT_CONFIG_GLOBAL="/dev/null", GIT_CONFIG_NOSYSTEM="1")
    return env


def start_ui(home: Path, cwd: Path, *args: str, timeout: float = 60,
             env: dict[str, str] | None = None) -> tuple[subprocess.Popen[str], str]:
    """Start ``bli-memory-mcp ui --no-open ARGS`` (``env`` added to :func:`ui_env`) and
    return it with its first stdout line."""
    stderr = (home / "ui-stderr.log").open("a")
    proc = subprocess.Popen([bin_path(), "ui", "--no-open", *args], cwd=cwd,
                            env={**ui_env(home), **(env or {})}, stdout=subprocess.PIPE, stderr=stderr,
                            text=True)
    stderr.close()
    first: list[str] = []
    reader = threading.Thread(target=lambda: first.append(proc.stdout.readline()), daemon=True)  # type: ignore[union-attr]
    reader.start()
    reader.join(timeout)
    if not first or not first[0]:
        stop(proc)
        log = (home / "ui-stderr.log").read_text()
        pytest.fail(f"bli-memory-mcp ui printed no URL within {timeout} s; stderr:\n{log}")
    return proc, first[0].strip()


def stop(proc: subprocess.Popen[str]) -> None:
    """Stop a ui process (SIGTERM, then SIGKILL)."""
    if proc.poll() is None:
        proc.terminate()
        try:
            proc.wait(10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
    if proc.stdout is not None:
        proc.stdout.close()


def seed(store_path: Path, space: str) -> dict[str, str]:
    """Write the memories the browser tests read; returns their ids by name."""
    from bli_memory.core.embedded.engine import EmbeddedBackend

    backend = EmbeddedBackend(store_path)
    try:
        ids = {}
        for i in range(30):  # more than one page, older than the memories the tests open
            backend.save(f"Filler note number {i} about widget calibration batch {i * 7}.", space=space)
        first = backend.save("The staging cluster runs in eu-west-1; deploys go through terraform apply.",
                             space=space, metadata={"kind": "decision"}, source="mcp", session_id="s-1")
        moved = backend.update("The staging cluster runs in eu-west-2; deploys go through terraform apply.",
                               space=space, id=first.memory.id)
        ids["deploy_v1"], ids["deploy"] = first.memory.id, moved.memory.id
        ids["tests"] = backend.save("Run the tests with .venv/bin/python -m pytest -q before every push.",
                                    space=space, metadata={"kind": "convention"}).memory.id
        ids["script"] = backend.save(SCRIPT_MEMORY, space=space).memory.id
        ids["forget_me"] = backend.save("The office coffee machine needs descaling every Friday.",
                                        space=space).memory.id
        ids["edit_me"] = backend.save("Release notes live in docs/CHANGES.md.", space=space).memory.id
        other = backend.save("The billing service owns invoice numbering.", space="team_billing")
        ids["other"] = other.memory.id
        backend.store.add_alias("billing_old", "team_billing")
        return ids
    finally:
        backend.close()


@pytest.fixture(scope="module")
def ui_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[UiServer]:
    """``bli-memory-mcp ui`` over a seeded store, for every test of a module."""
    from bli_memory.core.memory.spaces import derive_space

    root = tmp_path_factory.mktemp("ui")
    home, project = root / "home", root / "project"
    home.mkdir()
    project.mkdir()
    space = derive_space(project, environ={}).tag
    store_path = home / ".local" / "share" / "bli-memory" / "memory.sqlite3"
    ids = seed(store_path, space)
    proc, url = start_ui(home, project)
    parts = urlsplit(url)
    try:
        yield UiServer(url=url, base=f"{parts.scheme}://{parts.netloc}", port=int(parts.port or 0),
                       token=parts.query.removeprefix("token="), proc=proc, home=home,
                       store_path=store_path, space=space, stderr=home / "ui-stderr.log", ids=ids)
    finally:
        stop(proc)
