"""Run the real ``bli-memory-mcp hook`` subprocess and read what it printed."""

from __future__ import annotations

import json
import os
import re
import sqlite3
import subprocess
from contextlib import closing
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from bli_memory.core.hooks.receipts import REASONS
from bli_memory.core.paths import store_path
from tests.conftest import bin_path

RECEIPT = re.compile(r"^\[bli-memory\] (session-start|prompt|stop) (ok|skipped|failed) (\{.*\})$")


@dataclass
class HookRun:
    """What one hook process did."""

    returncode: int
    stdout: str
    stderr: str
    log: str = ""  # what the run appended to the receipt log (hosts that show stderr)

    @property
    def receipt(self) -> tuple[str, dict[str, Any]]:
        """The run's one receipt: from the receipt log when it wrote there, else stderr."""
        source = self.log or self.stderr
        lines = [ln for ln in source.splitlines() if ln.startswith("[bli-memory]")]
        assert len(lines) == 1, source
        m = RECEIPT.match(lines[0])
        assert m, lines[0]
        return m.group(2), json.loads(m.group(3))

    @property
    def reason(self) -> str | None:
        return self.receipt[1].get("reason")

    @property
    def context(self) -> str | None:
        """The injected block (from Claude's additionalContext JSON), or None if nothing."""
        if not self.stdout:
            return None
        assert self.stdout.count("\n") <= 1, self.stdout
        data = json.loads(self.stdout)
        return data["hookSpecificOutput"]["additionalContext"]


def reason_is_closed(reason: str) -> bool:
    return reason in REASONS or bool(re.match(r"^http_\d{3}$", reason)) or reason.startswith(
        "unknown_internal:"
    )


def run_hook(event: str, stdin: bytes | str | dict | None, *, cwd: Path | None = None,
             args: tuple[str, ...] = (), env: dict[str, str] | None = None, timeout: float = 60,
             close_stdin: bool = False) -> HookRun:
    """Run the hook with ``stdin`` (a dict is JSON-encoded); ``None`` means /dev/null."""
    if isinstance(stdin, dict):
        stdin = json.dumps(stdin)
    if isinstance(stdin, str):
        stdin = stdin.encode("utf-8", "surrogatepass")
    full_env = {**os.environ, **(env or {})}
    kwargs: dict[str, Any] = {}
    if close_stdin:
        kwargs["preexec_fn"] = lambda: os.close(0)
        kwargs["stdin"] = None
    elif stdin is None:
        kwargs["stdin"] = subprocess.DEVNULL
    else:
        kwargs["input"] = stdin
    log = receipt_log_path(full_env)
    start = log.stat().st_size if log.exists() else 0
    proc = subprocess.run([bin_path(), "hook", event, *args], cwd=cwd, env=full_env,
                          capture_output=True, timeout=timeout, **kwargs)
    written = ""
    if log.exists():
        with log.open("rb") as fh:
            fh.seek(start if log.stat().st_size >= start else 0)
            written = fh.read().decode("utf-8", "replace")
    return HookRun(proc.returncode, proc.stdout.decode("utf-8"), proc.stderr.decode("utf-8", "replace"),
                   written)


def receipt_log_path(environ: dict[str, str] | None = None) -> Path:
    """The receipt log of the environment's state dir."""
    from bli_memory.core.hooks.receipt_log import log_path
    from bli_memory.core.paths import state_dir

    return log_path(state_dir(environ))


def save(project: Path, *contents: str) -> None:
    """Save memories into the project's space through the engine (the tools' code path)."""
    from bli_memory.core.embedded.engine import EmbeddedBackend
    from bli_memory.core.memory.spaces import derive_space

    backend = EmbeddedBackend(store_path())
    try:
        for c in contents:
            backend.save(c, space=derive_space(project).tag)
    finally:
        backend.close()


def extract_jobs() -> list[dict]:
    """Every row of the extract-job queue, oldest first ([] before the store exists)."""
    if not store_path().exists():
        return []
    with closing(sqlite3.connect(store_path())) as conn, conn:
        conn.row_factory = sqlite3.Row
        return [dict(r) for r in conn.execute("SELECT * FROM memory_extract_jobs ORDER BY created_at")]


def summed_counts(stats: dict[str, Any], event: str) -> dict[str, int]:
    """The hook stats file's counts for ``event``, summed over its hour buckets (runs of
    one test may straddle the turn of an hour)."""
    counts: dict[str, int] = {}
    for hour in stats.get("hours", {}).values():
        for key, n in hour.get(event, {}).items():
            counts[key] = counts.get(key, 0) + n
    return counts
