"""Starting the resident daemon from a hook: when to, and how. Standard library only.

The prompt hook calls :func:`spawn` after its answer is out, when it found no daemon.
When to start one depends on how the last start went, which two files under the
state dir record:

- ``memory-daemon.stamp``: ``<epoch seconds of the last start> <failed starts in a row>``;
- ``memory-daemon.ready``: written by the daemon once it serves (:func:`mark_ready`) and
  removed when it leaves on an explicit stop request (``bli-memory-mcp daemon --stop``,
  ``uninstall``), so a daemon someone stopped on purpose is not started again at once.
  A daemon whose model failed to load writes ``failed`` and why (:func:`mark_failed`)
  before it leaves: that start counts as failed, and ``daemon --status``, ``status`` and
  ``cockpit doctor`` show the reason (:func:`last_problem`).

Rules (BLI Memory spec, "The resident daemon": the hook starts it at most once an hour):

- the last daemon reached ready after its start, then went away (idle exit, crash,
  ``kill -9``): start a new one **at once**, since every prompt meanwhile pays the direct
  path (400-500 ms cold, docs/benchmarks-hooks.md);
- the last start never reached ready (a failed start): back off,
  :data:`FAILED_START_BACKOFF_S` after the first failure, then the next, and from the
  third failure in a row on the spec's once an hour (:data:`SPAWN_INTERVAL_S`);
- after a stand-down or a stale socket (``force``), at most one start per
  :data:`RECOVERY_SPAWN_INTERVAL_S`;
- no stamp yet, or a daemon stopped on request: once an hour.
"""

from __future__ import annotations

import os
import sys
import time
from collections.abc import Mapping
from pathlib import Path

from bli_memory.core import paths
from bli_memory.core.private_files import make_private_dir

__all__ = [
    "FAILED_START_BACKOFF_S",
    "RECOVERY_SPAWN_INTERVAL_S",
    "SPAWN_INTERVAL_S",
    "clear_ready",
    "last_problem",
    "mark_failed",
    "mark_ready",
    "ready_marker_path",
    "spawn",
    "spawn_stamp_path",
    "start_now",
]

#: The prompt hook starts the daemon at most this often per user (spec: once an hour).
SPAWN_INTERVAL_S = 3600.0
#: After a stand-down or a stale socket the hourly stamp is ignored, but never more
#: than one start per this many seconds, so a daemon that keeps dying cannot turn
#: every prompt into a model load.
RECOVERY_SPAWN_INTERVAL_S = 10.0
#: Wait after the 1st, 2nd, 3rd-and-later failed start in a row before the next try.
#: The last is the spec's hour; the first two let a passing fault (a locked store, a
#: full disk freed) cost minutes rather than an hour of direct-path prompts.
FAILED_START_BACKOFF_S = (60.0, 600.0, SPAWN_INTERVAL_S)


def spawn_stamp_path(environ: Mapping[str, str] | None = None) -> Path:
    """File holding the time of the last start and the failed starts in a row."""
    return paths.state_dir(environ) / "memory-daemon.stamp"


def ready_marker_path(environ: Mapping[str, str] | None = None) -> Path:
    """File the daemon writes once it serves (its pid); see the module docstring."""
    return paths.state_dir(environ) / "memory-daemon.ready"


def mark_ready(pid: int, environ: Mapping[str, str] | None = None) -> None:
    """Record that a daemon started and serves (mode 0600; never raises)."""
    _write_marker(f"{pid} ready\n", environ)


def clear_ready(environ: Mapping[str, str] | None = None) -> None:
    """Record that the daemon was stopped on request, so it is not restarted at once."""
    _write_marker("stopped\n", environ)


def mark_failed(problem: str, environ: Mapping[str, str] | None = None) -> None:
    """Record that the daemon of the last start could not serve, and why (one line, such
    as ``cannot embed: the mpnet embedding model is not installed ...``; never raises)."""
    _write_marker("failed\n" + " ".join(problem.split())[:1000] + "\n", environ)


def last_problem(environ: Mapping[str, str] | None = None, *, since: float | None = None) -> str | None:
    """Why the daemon of the last start left without serving (:func:`mark_failed`), or
    None when it served, was stopped on request, or no start recorded a problem (none
    recorded at or after the epoch seconds ``since``, when given)."""
    path = ready_marker_path(environ)
    try:
        if since is not None and path.stat().st_mtime < since - 1.0:  # 1 s for clock granularity
            return None
        first, _, rest = path.read_text(encoding="utf-8").partition("\n")
    except (OSError, UnicodeDecodeError):
        return None
    return (rest.strip() or "unknown") if first.strip() == "failed" else None


def _write_marker(text: str, environ: Mapping[str, str] | None) -> None:
    try:
        fd = os.open(ready_marker_path(environ), os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            fh.write(text)
    except OSError:
        pass


def _read_stamp(fd: int) -> tuple[float, int]:
    try:
        parts = os.read(fd, 128).decode("ascii").split()
        started = float(parts[0]) if parts else float("nan")
        failures = int(parts[1]) if len(parts) > 1 else 0
    except (OSError, ValueError, UnicodeDecodeError):
        return float("nan"), 0
    return started, max(0, failures)


def _last_run(started: float, env: Mapping[str, str]) -> str | None:
    """How the daemon of the last start ended: ``ready`` (it served), ``stopped`` (on
    request), or None (it never reached ready: a failed start, or one still starting)."""
    path = ready_marker_path(env)
    try:
        if path.stat().st_mtime < started - 1.0:  # older than the start (1 s for clock granularity)
            return None
        state = path.read_text(encoding="utf-8").split("\n", 1)[0].strip()
    except (OSError, ValueError):
        return None
    if state == "failed":
        return None  # it left without serving: a failed start
    return "stopped" if state == "stopped" else "ready"


def start_now(environ: Mapping[str, str] | None = None, *, now: float | None = None) -> bool:
    """Start ``bli-memory-mcp daemon`` detached at once, whatever the hourly rule: the
    person asked (``daemon --restart``). Records the start as :func:`spawn` does.

    Returns:
        True when a daemon process was started (False: the stamp could not be written,
        another start holds its lock, or the process could not be spawned).
    """
    return spawn(environ=environ, now=now, _asked=True)


def spawn(*, force: bool = False, environ: Mapping[str, str] | None = None,
          now: float | None = None, _asked: bool = False) -> bool:
    """Start ``bli-memory-mcp daemon`` detached, unless the rules above say wait.

    Never blocks and never raises: the child gets its own session, ``/dev/null`` for
    stdin/stdout/stderr and the caller's environment; nobody waits for it. A second
    daemon that races this one exits 0 by itself (``daemon_already_running``).

    Args:
        force: After a stand-down or a stale socket; at most one start per
            :data:`RECOVERY_SPAWN_INTERVAL_S` (unless the last daemon ran fine: at once).
        environ: Environment for the child (default ``os.environ``).
        now: Current epoch seconds (default ``time.time()``).

    Returns:
        True when a daemon process was started.
    """
    import fcntl

    env = dict(os.environ if environ is None else environ)
    now = time.time() if now is None else now
    try:
        stamp = spawn_stamp_path(env)
        make_private_dir(stamp.parent)
        fd = os.open(stamp, os.O_RDWR | os.O_CREAT, 0o600)
    except OSError:
        return False
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            return False  # another hook is starting it right now
        started, failures = _read_stamp(fd)
        last = None if started != started else _last_run(started, env)  # NaN: never started
        if started != started or last == "ready":
            interval, failures = 0.0, 0  # it ran fine and has gone: start again at once
        elif last == "stopped":
            interval, failures = SPAWN_INTERVAL_S, 0
        else:
            failures += 1  # the last start never reached ready
            interval = FAILED_START_BACKOFF_S[min(failures, len(FAILED_START_BACKOFF_S)) - 1]
        if force:
            interval = min(interval, RECOVERY_SPAWN_INTERVAL_S)
        if _asked:
            interval, failures = 0.0, 0
        if 0 <= now - started < interval:
            return False
        os.lseek(fd, 0, os.SEEK_SET)
        os.ftruncate(fd, 0)
        os.write(fd, f"{now:.3f} {failures}\n".encode("ascii"))
        return _launch(env)
    except OSError:
        return False
    finally:
        os.close(fd)


def _launch(env: dict[str, str]) -> bool:
    argv = [sys.executable, "-m", "bli_memory.core.cli.main", "daemon"]
    try:
        actions = [
            (os.POSIX_SPAWN_OPEN, 0, os.devnull, os.O_RDONLY, 0),
            (os.POSIX_SPAWN_OPEN, 1, os.devnull, os.O_WRONLY, 0),
            (os.POSIX_SPAWN_OPEN, 2, os.devnull, os.O_WRONLY, 0),
        ]
        os.posix_spawn(sys.executable, argv, env, file_actions=actions, setsid=True)
        return True
    except (AttributeError, NotImplementedError):
        pass
    except OSError:
        return False
    import subprocess

    try:
        subprocess.Popen(  # noqa: S603 - our own interpreter and module
            argv, env=env, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL, close_fds=True, start_new_session=True,
        )
    except OSError:
        return False
    return True
