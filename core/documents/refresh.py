"""Index runs in a process of their own: ``documents index --background``, and the refresh a
session start asks for.

A space's documents index is opt-in: it exists once the person ran ``documents index``. From
then on it should follow the repository without anyone thinking of it, so the session-start
hook asks for a refresh (:func:`refresh_in_background`): when the last run is older than
:data:`REFRESH_AFTER_S` and none is going, one starts in a new process with the last run's
folder and globs. The hook only spawns it (a fork and exec); the run itself, which may embed
for minutes, never happens inside a hook's deadline. An unchanged repository costs that
process a stat per file (0.04 s for Django's 607 documentation files; ``docs/benchmarks.md``)
on top of its start.
"""

from __future__ import annotations

import contextlib
import os
import subprocess
import sys
import threading
import time
from collections.abc import Sequence
from datetime import UTC, datetime
from pathlib import Path

from bli_memory.core.documents.index_store import DocumentIndex
from bli_memory.core.documents.runs import current_run

__all__ = ["CLAIM_S", "LOG_KEEP_BYTES", "REFRESH_AFTER_S", "log_path", "refresh_in_background",
           "spawn_index_run"]

#: A session start refreshes an index last refreshed longer ago than this, in seconds: a
#: burst of sessions (a host starting sub-agents) starts one run, not one each.
REFRESH_AFTER_S = 600


#: Seconds a refresh claim holds off other session starts (see :func:`_claim`).
CLAIM_S = 60

#: The background runs' log is started afresh past this size, in bytes (a run writes a line).
LOG_KEEP_BYTES = 256 * 1024


def log_path(index_path: Path) -> Path:
    """Where a background run's output goes: ``<index>.log``."""
    return index_path.with_name(index_path.name + ".log")


def spawn_index_run(index_path: Path, space: str, root: Path, *, include: Sequence[str] = (),
                    exclude: Sequence[str] = ()) -> int:
    """Start ``bli-memory-mcp documents index`` for ``space`` in a new session, with this
    interpreter and environment, its output in :func:`log_path`.

    Returns:
        The child's process id.

    Raises:
        OSError: the process could not be started.
    """
    from bli_memory.core.private_files import make_own_private_dir

    argv = [sys.executable, "-m", "bli_memory.core.cli.main", "documents", "index", "--space", space,
            "--root", str(root)]
    for glob in include:
        argv += ["--include", glob]
    for glob in exclude:
        argv += ["--exclude", glob]
    log = log_path(index_path)
    make_own_private_dir(log.parent)
    with contextlib.suppress(OSError):
        if log.stat().st_size > LOG_KEEP_BYTES:
            log.unlink()
    with open(os.open(log, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600), "a") as out:
        child = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=out, stderr=subprocess.STDOUT,  # noqa: S603
                                 close_fds=True, start_new_session=True)
    # A long-lived parent (the daemon) reaps the run when it ends; a short one exits first and
    # leaves the run to init.
    threading.Thread(target=child.wait, name="documents-run-reaper", daemon=True).start()
    return child.pid


def _age_s(stamp: str) -> float:
    then = datetime.strptime(stamp[:19], "%Y-%m-%dT%H:%M:%S").replace(tzinfo=UTC)
    return (datetime.now(UTC) - then).total_seconds()


def _claim(index_path: Path) -> bool:
    """Whether this caller may start the refresh: the first of a burst of session starts (a
    host starting sub-agents) creates ``<index>.refresh``; the others find it younger than
    :data:`CLAIM_S` and start nothing."""
    stamp = index_path.with_name(index_path.name + ".refresh")
    for _ in range(2):
        try:
            os.close(os.open(stamp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600))
            return True
        except FileExistsError:
            try:
                if time.time() - stamp.stat().st_mtime < CLAIM_S:
                    return False
                stamp.unlink()
            except OSError:
                return False
        except OSError:
            return False
    return False


def _inside(folder: str, root: str) -> bool:
    try:
        return Path(folder).resolve().is_relative_to(Path(root).resolve())
    except (OSError, ValueError):
        return False


def refresh_in_background(index: DocumentIndex, space: str, *, folder: str | None = None,
                          after_s: float = REFRESH_AFTER_S) -> int | None:
    """Start a refresh of ``space``'s index when it is due; returns the run's pid, or None
    when none was started: never indexed, refreshed less than ``after_s`` seconds ago, a run
    going or starting (:func:`_claim`), its folder gone, or ``folder`` (the session's, which
    the space was derived from) not inside the repository the index was built from. Never
    raises for a run it could not start: None."""
    state = index.state(space)
    if not state.root or not state.refreshed_at or _age_s(state.refreshed_at) < after_s:
        return None
    if folder is not None and not _inside(folder, state.root):
        return None
    if current_run(index.path) is not None or not Path(state.root).is_dir() or not _claim(index.path):
        return None
    try:
        return spawn_index_run(index.path, space, Path(state.root), include=state.include,
                               exclude=state.exclude)
    except OSError:
        return None
