"""The host extractor's daily ledger and its one-request-at-a-time lock.

Two files in the state folder (``$XDG_STATE_HOME/bli-cockpit``):

- ``host-extractor.lock``: held (``flock``) from the budget check until the request's
  spend is written, so across every worker process of the machine (the daemon,
  ``bli-memory-mcp worker``, each MCP server's drain) one request runs at a time and the
  budget cannot be overrun by two at once. While a request runs, the file names its
  process group and folder; a worker that takes the lock after a holder died (kill -9)
  kills what that holder left running (:func:`reap_leftover`).
- ``host-extractor.json``: per UTC day, the requests made, tokens and cost the host
  reported, and fallbacks by reason, for the last :data:`KEEP_DAYS` days. ``cockpit ops
  --memory`` and the browser's Captures page read it.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import shutil
import signal
import time
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import IO, Any

from bli_memory.core import paths
from bli_memory.core.private_files import FILE_MODE, atomic_write, make_private_dir

__all__ = [
    "KEEP_DAYS",
    "group_members",
    "held_lock",
    "ledger_path",
    "note_running",
    "read_days",
    "reap_leftover",
    "record",
    "run_folder",
    "today",
    "used_today",
]

#: Days of spend the ledger keeps.
KEEP_DAYS = 30


def ledger_path() -> Path:
    """The ledger file."""
    return paths.state_dir() / "host-extractor.json"


def _lock_path() -> Path:
    return paths.state_dir() / "host-extractor.lock"


def today() -> str:
    """The current UTC day, ``YYYY-MM-DD`` (the budget's day)."""
    return datetime.now(UTC).strftime("%Y-%m-%d")


def read_days() -> dict[str, dict[str, Any]]:
    """``{day: {"requests", "input_tokens", "output_tokens", "cost_usd", "fallbacks": {reason: n}}}``;
    ``{}`` when nothing was recorded or the file is unreadable."""
    try:
        data = json.loads(ledger_path().read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    days = data.get("days") if isinstance(data, dict) else None
    return {k: v for k, v in days.items() if isinstance(v, dict)} if isinstance(days, dict) else {}


def used_today() -> int:
    """Requests made so far today."""
    return int(read_days().get(today(), {}).get("requests", 0) or 0)


def record(*, requested: bool, input_tokens: int | None = None, output_tokens: int | None = None,
           cost_usd: float | None = None, fallback: str | None = None) -> None:
    """Add one job's spend to today's line, under a lock of its own (a fallback outside the
    request lock may record at the same moment as a request)."""
    path = ledger_path()
    make_private_dir(path.parent)
    with open(path.parent / "host-extractor-ledger.lock", "a", encoding="utf-8") as guard:  # its own lock
        fcntl.flock(guard, fcntl.LOCK_EX)
        _add(requested=requested, input_tokens=input_tokens, output_tokens=output_tokens,
             cost_usd=cost_usd, fallback=fallback)


def _add(*, requested: bool, input_tokens: int | None, output_tokens: int | None, cost_usd: float | None,
         fallback: str | None) -> None:
    days = read_days()
    line = days.setdefault(today(), {})
    line["requests"] = int(line.get("requests", 0) or 0) + int(requested)
    line["input_tokens"] = int(line.get("input_tokens", 0) or 0) + int(input_tokens or 0)
    line["output_tokens"] = int(line.get("output_tokens", 0) or 0) + int(output_tokens or 0)
    line["cost_usd"] = round(float(line.get("cost_usd", 0.0) or 0.0) + float(cost_usd or 0.0), 6)
    if fallback:
        fallbacks = line.setdefault("fallbacks", {})
        fallbacks[fallback] = int(fallbacks.get(fallback, 0) or 0) + 1
    kept = dict(sorted(days.items())[-KEEP_DAYS:])
    atomic_write(ledger_path(), json.dumps({"days": kept}, indent=1, sort_keys=True), mode=FILE_MODE)


@contextlib.contextmanager
def held_lock(timeout_s: float) -> Iterator[IO[str] | None]:
    """Hold the one-request lock; yields the open lock file, or None when another request
    held it for ``timeout_s`` seconds (the caller falls back: ``busy``)."""
    path = _lock_path()
    make_private_dir(path.parent)
    fd = os.open(path, os.O_RDWR | os.O_CREAT, FILE_MODE)
    handle = os.fdopen(fd, "r+", encoding="utf-8")
    try:
        deadline = time.monotonic() + timeout_s
        while True:
            try:
                fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                if time.monotonic() >= deadline:
                    yield None
                    return
                time.sleep(0.2)
        try:
            reap_leftover(handle)
            yield handle
        finally:
            note_running(handle, None)
            fcntl.flock(handle, fcntl.LOCK_UN)
    finally:
        handle.close()


@contextlib.contextmanager
def run_folder(host: str) -> Iterator[Path]:
    """The empty folder a host's request runs in, ``<state>/headless/bli-memory-<host>``
    (mode 0700), emptied before the request and after it.

    One fixed folder per host rather than a new temporary one per request: Gemini CLI
    records every folder it runs in (``~/.gemini/projects.json``) with a chat log of its
    own, which a new folder per request would multiply in the person's home.
    """
    base = paths.state_dir() / "headless"
    folder = base / f"bli-memory-{host}"
    if folder.resolve().parent != base.resolve() or not host.replace("-", "").replace("_", "").isalnum():
        raise ValueError(f"not a host's name: {host!r}")  # never a folder outside our own
    shutil.rmtree(folder, ignore_errors=True)
    make_private_dir(folder)
    try:
        yield folder
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def note_running(handle: IO[str], running: dict[str, Any] | None) -> None:
    """Write (or clear) ``{"pgid", "workdir"}`` of the request running under the lock."""
    handle.seek(0)
    handle.truncate()
    if running:
        handle.write(json.dumps(running))
    handle.flush()


def group_members(pgid: int) -> list[int]:
    """Process ids whose process group is ``pgid`` (Linux ``/proc``; ``[]`` elsewhere)."""
    members = []
    for entry in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = entry.read_text().rsplit(")", 1)[1].split()
        except (OSError, IndexError):
            continue
        if len(fields) > 2 and fields[2] == str(pgid) and fields[0] != "Z":
            members.append(int(entry.parent.name))
    return members


def reap_leftover(handle: IO[str]) -> int:
    """Kill the process group a dead holder of the lock left running; returns how many
    processes were signalled.

    Only a group one of whose processes still works in the request's folder is killed, so
    a process id reused by something else is left alone.
    """
    handle.seek(0)
    try:
        running = json.loads(handle.read() or "null")
    except ValueError:
        return 0
    if not isinstance(running, dict) or not isinstance(running.get("pgid"), int):
        return 0
    pgid, workdir = running["pgid"], str(running.get("workdir") or "")
    members = group_members(pgid)
    ours = bool(workdir) and Path(workdir).is_dir() and any(
        _cwd(pid).startswith(workdir) for pid in members)
    if not ours:
        return 0
    with contextlib.suppress(OSError):
        os.killpg(pgid, signal.SIGKILL)
    return len(members)


def _cwd(pid: int) -> str:
    try:
        return os.readlink(f"/proc/{pid}/cwd")
    except OSError:
        return ""
