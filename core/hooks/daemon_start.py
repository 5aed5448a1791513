"""Starting the resident daemon from a hook: when to, and how. Standard library only.

The prompt hook calls :func:`spawn` after its answer is out, when it found no daemon.
When to start one depends on how the last start went, which two files under the
state dir record:

- ``memory-daemon.stamp``: ``<epoch seconds of the last start> <failed starts in a row>``;
- ``memory-daemon.ready``: written by the daemon once it serves (:func:`mark_ready`) and
  removed when it leaves on an explicit stop request (``bli-memory-mcp daemon --stop``,
  ``uninstall``), so a daemon someone stopped on purpose is not started again at once.
  A daemon whose model failed to load writes ``failed`` there before it leaves: that
  start counts as failed.
- ``<data dir>/memory-daemon.failed``: why it failed (:func:`mark_failed`), with a
  fingerprint of the settings it ran with. ``daemon --status``, ``status`` and
  ``cockpit doctor`` show the reason (:func:`last_problem`) only to a process whose
  settings are those (the settings by which a daemon serves a caller or answers
  ``env_mismatch``): after a fix of the setting, or with another data dir, the record is
  not theirs. A daemon that serves removes the record of its data dir.

Rules (BLI Memory spec, "The resident daemon": the hook starts it at most once an hour):

- the last daemon reached ready after its start, then went away (idle exit, crash,
  ``kill -9``): start a new one **at once**, since every prompt meanwhile pays the direct
  path (400-500 ms cold, docs/benchmarks-hooks.md);
- the last start never reached ready (a failed start): back off,
  :data:`FAILED_START_BACKOFF_S` after the first failure, then the next, and from the
  third failure in a row on the spec's once an hour (:data:`SPAWN_INTERVAL_S`); but when
  it recorded its problem under other settings than the caller's (a setting fixed
  since), start **at once**;
- after a stand-down or a stale socket (``force``), at most one start per
  :data:`RECOVERY_SPAWN_INTERVAL_S`;
- a daemon stopped on request: once an hour (``install`` forgets the stop:
  :func:`release`); ``status`` and ``cockpit doctor`` say until when (:func:`held_off`);
- no stamp yet: at once.
"""

from __future__ import annotations

import os
import sys
import time
from collections.abc import Mapping
from pathlib import Path

from bli_memory.core import paths
from bli_memory.core.private_files import atomic_write, make_private_dir

__all__ = [
    "FAILED_START_BACKOFF_S",
    "RECOVERY_SPAWN_INTERVAL_S",
    "SPAWN_INTERVAL_S",
    "clear_ready",
    "held_off",
    "held_off_text",
    "last_problem",
    "mark_failed",
    "mark_ready",
    "problem_record_path",
    "ready_marker_path",
    "release",
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


def problem_record_path(environ: Mapping[str, str] | None = None) -> Path:
    """File recording why the last daemon of this data dir could not serve (:func:`mark_failed`)."""
    return paths.data_dir(environ) / "memory-daemon.failed"


def mark_ready(pid: int, environ: Mapping[str, str] | None = None) -> None:
    """Record that a daemon started and serves (mode 0600), and drop the problem its data
    dir recorded (never raises)."""
    _write_marker(f"{pid} ready\n", environ)
    try:
        problem_record_path(environ).unlink(missing_ok=True)
    except OSError:
        pass


def clear_ready(environ: Mapping[str, str] | None = None) -> None:
    """Record that the daemon was stopped on request, so it is not restarted at once."""
    _write_marker("stopped\n", environ)


def _fingerprint(config: Mapping[str, str]) -> str:
    import hashlib
    import json

    data = json.dumps(dict(config), sort_keys=True).encode("utf-8", "surrogatepass")
    return hashlib.sha256(data).hexdigest()


def mark_failed(problem: str, environ: Mapping[str, str] | None = None, *, config: Mapping[str, str]) -> None:
    """Record that the daemon of the last start could not serve, and why (one line, such
    as ``cannot embed: the mpnet embedding model is not installed ...``), under its data
    dir with a SHA-256 fingerprint of its settings (mode 0600; never raises).

    Args:
        problem: Why, for a person.
        environ: The daemon's environment (default ``os.environ``): its data dir.
        config: The daemon's settings as it compares them with its callers'
            (:func:`~bli_memory.core.hooks.daemon_client.config_of`, the token hashed).
    """
    import json

    _write_marker("failed\n", environ)
    record = {"problem": " ".join(problem.split())[:1000], "config": _fingerprint(config),
              "dataDir": str(paths.data_dir(environ))}
    try:
        path = problem_record_path(environ)
        make_private_dir(path.parent)
        atomic_write(path, json.dumps(record) + "\n", mode=0o600)
    except OSError:
        pass


def last_problem(environ: Mapping[str, str] | None = None, *, config: Mapping[str, str],
                 since: float | None = None) -> str | None:
    """Why the daemon of the last start left without serving (:func:`mark_failed`), naming
    the data dir, as ``cannot embed: ... (data dir /path)``.

    Args:
        environ: The caller's environment (default ``os.environ``): its data dir.
        config: The caller's settings (:func:`~bli_memory.core.hooks.daemon_client.config_of`).
        since: Epoch seconds; a record older than this is not the problem.

    Returns:
        None when that daemon served or was stopped on request, when no start recorded a
        problem, or when the record is of other settings than ``config``: another data
        dir (whose record lives in that dir; the variables that choose the data dir are
        settings too), a model setting fixed since, any setting by which that daemon would
        not serve this caller (``env_mismatch``).
    """
    try:
        if ready_marker_path(environ).read_text(encoding="utf-8").partition("\n")[0].strip() != "failed":
            return None
    except (OSError, UnicodeDecodeError):
        return None
    found = _recorded_problem(environ, config, since=since)
    if found is None or not found[1]:
        return None
    return f"{found[0]} (data dir {paths.data_dir(environ)})"


def _recorded_problem(environ: Mapping[str, str] | None, config: Mapping[str, str], *,
                      since: float | None) -> tuple[str, bool] | None:
    """``(problem, under config's settings)`` from the record of ``environ``'s data dir
    (:func:`mark_failed`; ``"unknown"`` when it names none), or None: no record, one that
    cannot be read or is not a JSON object, or one older than epoch ``since`` (1 s for
    clock granularity)."""
    import json

    path = problem_record_path(environ)
    try:
        if since is not None and path.stat().st_mtime < since - 1.0:
            return None
        record = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, ValueError):
        return None
    if not isinstance(record, dict):
        return None
    problem = record.get("problem")
    problem = problem if isinstance(problem, str) and problem.strip() else "unknown"
    return problem, record.get("config") == _fingerprint(config)


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
          now: float | None = None, config: Mapping[str, str] | None = None,
          _asked: bool = False) -> bool:
    """Start ``bli-memory-mcp daemon`` detached, unless the rules above say wait.

    Never blocks and never raises: the child gets its own session, ``/dev/null`` for
    stdin/stdout/stderr and the caller's environment; nobody waits for it. A second
    daemon that races this one exits 0 by itself (``daemon_already_running``).

    Args:
        force: After a stand-down or a stale socket; at most one start per
            :data:`RECOVERY_SPAWN_INTERVAL_S` (unless the last daemon ran fine: at once).
        environ: Environment for the child (default ``os.environ``).
        now: Current epoch seconds (default ``time.time()``).
        config: The caller's settings
            (:func:`~bli_memory.core.hooks.daemon_client.config_of`). When the last start
            failed and recorded why (:func:`mark_failed`) under other settings, the
            back-off is not this caller's: a fixed setting starts a daemon at once.

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
        interval, failures, _ = _wait(started, failures, env, config)
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


def _wait(started: float, failures: int, env: Mapping[str, str],
          config: Mapping[str, str] | None) -> tuple[float, int, str]:
    """The rules above: ``(seconds to wait after the start at epoch `started`, failed starts
    in a row to record, why: "ready" | "stopped" | "failed" | "none")``."""
    last = None if started != started else _last_run(started, env)  # NaN: never started
    if started != started or last == "ready":
        return 0.0, 0, "ready" if last else "none"  # it ran fine and has gone: start again at once
    if last == "stopped":
        return SPAWN_INTERVAL_S, 0, "stopped"
    if config is not None and _failed_under_other_settings(started, config, env):
        return 0.0, 0, "failed"  # the setting it failed with was changed since
    failures += 1  # the last start never reached ready
    return FAILED_START_BACKOFF_S[min(failures, len(FAILED_START_BACKOFF_S)) - 1], failures, "failed"


def held_off(environ: Mapping[str, str] | None = None, *, config: Mapping[str, str] | None = None,
             now: float | None = None) -> tuple[float, str] | None:
    """When a prompt hook would next start a daemon, if not now: ``(epoch seconds, why)``,
    ``why`` being ``stopped`` (stopped on request) or ``failed`` (the last start failed);
    None when a hook would start one at once. For ``status`` and ``cockpit doctor``."""
    env = dict(os.environ if environ is None else environ)
    now = time.time() if now is None else now
    try:
        fd = os.open(spawn_stamp_path(env), os.O_RDONLY)
    except OSError:
        return None
    try:
        started, failures = _read_stamp(fd)
    finally:
        os.close(fd)
    interval, _, why = _wait(started, failures, env, config)
    if 0 <= now - started < interval:
        return started + interval, why
    return None


def held_off_text(environ: Mapping[str, str] | None = None, *,
                  config: Mapping[str, str] | None = None) -> str | None:
    """:func:`held_off` as ``status`` and ``cockpit doctor`` say it, or None."""
    found = held_off(environ, config=config)
    if found is None:
        return None
    until, why = found
    cause = ("it was stopped on request" if why == "stopped"
             else "its last start has not reached ready: it is still starting, or it failed")
    return (f"prompt hooks will not start it before {time.strftime('%H:%M %Z', time.localtime(until))} "
            f"({cause}); `bli-memory-mcp daemon --restart` starts it now")


def release(environ: Mapping[str, str] | None = None) -> None:
    """Forget a stop on request, so the next prompt hook starts a daemon at once: ``install``
    calls it, since a daemon stopped by ``daemon --stop`` or ``uninstall`` must not hold off
    a new install's. A daemon that runs, or a failed start, is left as it is: a later
    ``daemon --stop`` must still hold it off. Never raises."""
    try:
        state = ready_marker_path(environ).read_text(encoding="utf-8").split("\n", 1)[0].strip()
    except (OSError, UnicodeDecodeError):
        return
    if state != "stopped":
        return
    for path in (spawn_stamp_path(environ), ready_marker_path(environ)):
        try:
            path.unlink()
        except OSError:
            pass


def _failed_under_other_settings(started: float, config: Mapping[str, str], env: Mapping[str, str]) -> bool:
    """True when the start at epoch ``started`` recorded its problem (:func:`mark_failed`,
    in ``env``'s data dir, no older than that start) under settings other than ``config``."""
    found = _recorded_problem(env, config, since=started)
    return found is not None and not found[1]


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
