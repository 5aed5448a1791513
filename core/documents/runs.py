"""One index run at a time, and what it is doing: a lock and a progress file beside the index.

A run of ``documents index`` on a large repository takes minutes (the first index of
Django's 600 documentation files: about 100 s here; ``docs/benchmarks.md``), so it may run in
the background (``documents index --background``) while ``documents status``, ``memory_info``
and the browser show how far it got. Two runs on one index would embed the same files twice,
so a run holds an exclusive ``flock`` on ``<index>.lock`` for its whole length; a second run
is refused with what the first is doing (:class:`IndexBusy`). The lock goes with the process,
so a run killed with ``kill -9`` never leaves the index locked.

Progress is a small JSON file (``<index>.run.json``: pid, space, stage, done, total, start
time), replaced atomically at most once a second, and removed at the end. It is kept out of
the SQLite file on purpose: a progress write there would invalidate every reader's cached
vectors (``PRAGMA data_version``). A progress file whose lock is free is stale (its run
died) and is reported as nothing running.
"""

from __future__ import annotations

import contextlib
import json
import os
import time
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

from bli_memory.core.errors import InvalidInputError

__all__ = ["IndexBusy", "RunProgress", "current_run", "index_run"]

#: Shortest time between two progress writes, in seconds.
PROGRESS_EVERY_S = 1.0


@dataclass(frozen=True)
class RunProgress:
    """What a running index run is doing: its process, space, stage (``documents`` or
    ``commits``), items done of total, and when it started (ISO 8601 UTC)."""

    pid: int
    space: str
    stage: str
    done: int
    total: int
    started_at: str

    def describe(self) -> str:
        """One line, e.g. ``indexing space repo_x: documents 120/607 since 2026-12-06T19:40Z (pid 4242)``."""
        return (f"indexing space {self.space}: {self.stage} {self.done}/{self.total} "
                f"since {self.started_at[:16]}Z (pid {self.pid})")


class IndexBusy(InvalidInputError):
    """Another run holds the index (its progress, if known, in :attr:`running`)."""

    def __init__(self, running: RunProgress | None) -> None:
        what = running.describe() if running else "another documents index run is going"
        super().__init__(f"{what}; `bli-memory-mcp documents status` shows its progress")
        self.running = running


def _paths(index_path: Path) -> tuple[Path, Path]:
    name = index_path.name
    return index_path.with_name(name + ".lock"), index_path.with_name(name + ".run.json")


def _read(progress_file: Path) -> RunProgress | None:
    try:
        raw = json.loads(progress_file.read_text())
        return RunProgress(pid=int(raw["pid"]), space=str(raw["space"]), stage=str(raw["stage"]),
                           done=int(raw["done"]), total=int(raw["total"]), started_at=str(raw["startedAt"]))
    except (OSError, ValueError, KeyError, TypeError):
        return None


def _held(lock_file: Path) -> bool:
    """Whether some process holds the run lock (False when there is no lock file)."""
    import fcntl

    try:
        fd = os.open(lock_file, os.O_RDWR)
    except OSError:
        return False
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        return True
    finally:
        os.close(fd)
    return False


def current_run(index_path: Path) -> RunProgress | None:
    """The run going on the index at ``index_path``, or None (none, or its process died)."""
    lock_file, progress_file = _paths(index_path)
    if not _held(lock_file):
        return None
    return _read(progress_file)


class _Run:
    """The running side: :meth:`progress` is the indexer's progress callback."""

    def __init__(self, progress_file: Path, space: str) -> None:
        self._file = progress_file
        self._space = space
        self._started = datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%S")
        self._last = 0.0
        self._stage = ""
        self.progress("starting", 0, 0)

    def progress(self, stage: str, done: int, total: int) -> None:
        """Record ``done`` of ``total`` in ``stage`` (at most once a second, and at a stage's
        start and end)."""
        now = time.monotonic()
        if now - self._last < PROGRESS_EVERY_S and done != total and stage == self._stage:
            return
        self._last, self._stage = now, stage
        from bli_memory.core.private_files import atomic_write

        data = {"pid": os.getpid(), "space": self._space, "stage": stage, "done": done, "total": total,
                "startedAt": self._started}
        with contextlib.suppress(OSError):
            atomic_write(self._file, json.dumps(data), mode=0o600)


@contextlib.contextmanager
def index_run(index_path: Path, space: str) -> Iterator[_Run]:
    """Hold the index's run lock for one run on ``space``; yields the progress recorder.

    Raises:
        IndexBusy: another run holds the lock.
    """
    import fcntl

    from bli_memory.core.private_files import make_own_private_dir

    lock_file, progress_file = _paths(index_path)
    make_own_private_dir(lock_file.parent)
    fd = os.open(lock_file, os.O_RDWR | os.O_CREAT, 0o600)
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            raise IndexBusy(_read(progress_file)) from None
        try:
            yield _Run(progress_file, space)
        finally:
            with contextlib.suppress(OSError):
                progress_file.unlink()
    finally:
        os.close(fd)
