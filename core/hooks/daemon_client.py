"""The hook's side of the resident daemon: connect, ask, start it. Standard library only.

The prompt hook is a fresh process on the person's critical path, so this module
imports nothing but the standard library (design.md section 5) and gives the daemon
a fixed, small budget: a 50 ms connect inside the hook's own unchanged deadline
(BLI Memory spec, "The resident daemon"). Any failure raises
:class:`DaemonUnavailable` with a short reason and the hook takes its direct path.

Wire protocol (one JSON object per line, one line in and one line out, then the
connection closes; UTF-8, ASCII-escaped)::

    -> {"event": "prompt", "host": "claude", "payload": {...}, "cwd": "/repo",
        "version": "0.1.0", "env": {...}, "config": {...}}
    <- {"stdout": "...", "outcome": "ok", "reason": null, "fields": {"hits": 2},
        "backend": true, "receiptLog": false, "version": "0.1.0",
        "injected": {"host": "claude", "session": "...", "ids": [...]}}

    -> {"ping": true}
    <- {"alive": true, "version": "0.1.0", "pid": 4242, "ready": true}

    -> {"stop": true}
    <- {"stopping": true, "version": "0.1.0", "pid": 4242}

    <- {"error": "<code>", "version": "0.1.0", "pid": 4242}   on any refusal

``injected`` (only when ``stdout`` gives memories) names them: the daemon holds them for
the session, and the hook records them as given once it has written ``stdout``, or lets
them go when the write failed (:mod:`bli_memory.core.hooks.injection_log`).

``env`` carries the two variables that choose the space
(``BLI_MEMORY_CONTAINER_TAG``, ``BLI_MEMORY_ISOLATE_WORKTREES``); ``config`` carries
every other variable that changes what the engine does (the other ``BLI_MEMORY_*``,
``HOME``, ``XDG_DATA_HOME``, ``XDG_CONFIG_HOME``), with the device token replaced by
its SHA-256 so it never crosses the socket. A daemon whose own config differs answers
``env_mismatch`` and the hook goes direct. A message of a later ``version`` than the
daemon's makes it answer ``stand_down`` and exit, and the hook then starts a current
one; a message of an earlier version (a session still running the release before an
upgrade) gets ``outdated_caller`` and answers itself, so it never stops the current
daemon.

Fallback reasons (the ``daemon`` field of a direct run's receipt), :data:`REASONS`:
``no_socket``, ``stale_socket`` (a socket file nobody listens on, e.g. after
``kill -9`` or a reboot), ``foreign_socket`` (the path is not a socket owned by this
user: never connected to), ``connect_timeout``, ``unreachable``, ``reply_timeout``,
``bad_reply``, and the daemon's refusals ``warming_up``, ``stand_down``,
``outdated_caller``, ``env_mismatch``, ``busy``, ``malformed``, ``too_large``, ``internal``, and
``not_local`` (an MCP relay's hello to a daemon whose backend keeps no local store).

The MCP relay (:mod:`bli_memory.core.mcp.relay`) uses the same socket, version and
config checks for its hello, then keeps the connection for its session's JSON-RPC
lines (:mod:`bli_memory.core.daemon.mcp_sessions`).
"""

from __future__ import annotations

import errno
import json
import os
import socket
import stat
import time
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from bli_memory.core import paths
from bli_memory.core._version import VERSION
from bli_memory.core.defaults import SHIPPED_EMBEDDER
from bli_memory.core.hooks import daemon_start
from bli_memory.core.hooks.daemon_start import (
    RECOVERY_SPAWN_INTERVAL_S,
    SPAWN_INTERVAL_S,
    spawn_stamp_path,
)

__all__ = [
    "CONNECT_BUDGET_S",
    "DAEMON_ERRORS",
    "MAX_LINE_BYTES",
    "PROBLEM_FIX",
    "REASONS",
    "RECOVERY_SPAWN_INTERVAL_S",
    "SPAWN_INTERVAL_S",
    "DaemonUnavailable",
    "config_of",
    "connect",
    "enabled",
    "exchange",
    "ping",
    "request",
    "socket_address",
    "space_env",
    "spawn",
    "spawn_stamp_path",
    "status",
    "stop",
]

#: Connect budget of a hook (BLI Memory spec: 50 ms, inside the hook's deadline).
CONNECT_BUDGET_S = 0.05
#: Longest line either side accepts: the largest hook payload (4 MiB, see
#: :mod:`bli_memory.core.hooks.stdin`) plus room for the envelope.
MAX_LINE_BYTES = 4 * 1024 * 1024 + 64 * 1024

#: Error codes a daemon may answer with; anything else reads as ``bad_reply``.
DAEMON_ERRORS = frozenset(
    {"warming_up", "stand_down", "outdated_caller", "env_mismatch", "busy", "malformed", "too_large",
     "internal", "not_local"}
)
REASONS = DAEMON_ERRORS | {
    "no_socket",
    "stale_socket",
    "foreign_socket",
    "connect_timeout",
    "unreachable",
    "reply_timeout",
    "bad_reply",
}

_OFF = frozenset({"0", "false", "no", "off"})
_SPACE_VARS = ("BLI_MEMORY_CONTAINER_TAG", "BLI_MEMORY_ISOLATE_WORKTREES")
#: Variables that steer the daemon route itself, not what the engine answers.
#: Variables that change how a caller waits or which route it takes, never what the
#: engine answers: a daemon serves callers whatever their values.
_ROUTE_VARS = frozenset({"BLI_MEMORY_DAEMON", "BLI_MEMORY_DAEMON_IDLE_SECONDS", "BLI_MEMORY_TRACE_PLUGINS",
                         "BLI_MEMORY_HOOK_DEADLINE_SCALE", "BLI_MEMORY_RELAY_QUIET_S",
                         "BLI_MEMORY_RELAY_PING_TIMEOUT_S"})
_CONFIG_EXTRA = ("HOME", "XDG_DATA_HOME", "XDG_CONFIG_HOME")
#: The settings that change what the engine computes, hence which daemon may answer a
#: caller (core/settings.py's fields, less the space variables, the route's and the
#: logs'; tests/core/hooks/test_daemon_config.py keeps the two lists in step). Any other
#: variable (BLI_MEMORY_HERMES_BIN, which the README has Hermes users export; a log level)
#: does not make a caller's daemon another's.
_ENGINE_VARS = frozenset({
    "BLI_MEMORY_DATA_DIR", "BLI_MEMORY_DASHBOARD_URL", "BLI_MEMORY_DEVICE_TOKEN", "BLI_MEMORY_DATABASE_URL",
    "BLI_MEMORY_EMBEDDER", "BLI_MEMORY_SIMILARITY_FLOOR", "BLI_MEMORY_RECALL_LIMIT",
    "BLI_MEMORY_RECALL_BUDGET_CHARS", "BLI_MEMORY_KEYWORD_INDEX_MIN_ROWS", "BLI_MEMORY_VECTOR_INDEX_MIN_ROWS",
    "BLI_MEMORY_EXPERIENCE_TZ", "BLI_MEMORY_EXTRACTOR", "BLI_MEMORY_EXTRACT_URL", "BLI_MEMORY_EXTRACT_MODEL",
    "BLI_MEMORY_EXTRACT_API_KEY", "BLI_MEMORY_EXTRACT_PLUGINS", "BLI_MEMORY_EXTRACT_HOST",
    "BLI_MEMORY_EXTRACT_HOST_MODEL", "BLI_MEMORY_EXTRACT_DAILY_REQUESTS", "BLI_MEMORY_EXTRACT_MAX_TOKENS",
    "BLI_MEMORY_EXTRACT_TIMEOUT_S",
})
_SECRET_VARS = frozenset({"BLI_MEMORY_DEVICE_TOKEN", "BLI_MEMORY_EXTRACT_API_KEY", "BLI_MEMORY_DATABASE_URL"})
#: Values that mean the same as leaving the variable unset (core/settings.py reads them so).
_UNSET_WHEN = {"BLI_MEMORY_EMBEDDER": frozenset({"", SHIPPED_EMBEDDER})}
#: AF_UNIX paths longer than this go through ``/proc/self/fd`` (the kernel limit is 108).
_SUN_PATH_MAX = 100


class DaemonUnavailable(Exception):
    """The daemon did not answer this request; the hook takes the direct path.

    Attributes:
        reason: One of :data:`REASONS`.
        reply: The daemon's error reply, when it sent one.
    """

    def __init__(self, reason: str, reply: dict[str, Any] | None = None) -> None:
        super().__init__(reason)
        self.reason = reason
        self.reply = reply


def _env(environ: Mapping[str, str] | None) -> Mapping[str, str]:
    return os.environ if environ is None else environ


def enabled(environ: Mapping[str, str] | None = None) -> bool:
    """False when ``BLI_MEMORY_DAEMON`` is ``0``/``false``/``no``/``off`` (spec: the off switch)."""
    return _env(environ).get("BLI_MEMORY_DAEMON", "1").strip().lower() not in _OFF


def spawn(*, force: bool = False, environ: Mapping[str, str] | None = None) -> bool:
    """Start the daemon detached unless the hooks' rules say wait
    (:func:`~bli_memory.core.hooks.daemon_start.spawn`, with this caller's :func:`config_of`)."""
    return daemon_start.spawn(force=force, environ=environ, config=config_of(environ))


def space_env(environ: Mapping[str, str] | None = None) -> dict[str, str]:
    """The caller's variables that choose the memory space (sent with each request)."""
    env = _env(environ)
    return {k: env[k] for k in _SPACE_VARS if k in env}


def config_of(environ: Mapping[str, str] | None = None) -> dict[str, str]:
    """The caller's variables that change what the engine answers, token hashed.

    Returns:
        ``{name: value}`` for each setting that changes what the engine computes
        (``_ENGINE_VARS``: not the space variables, the daemon's own switches, the caller's
        waits, the log settings or another tool's path), plus ``HOME``, ``XDG_DATA_HOME``
        and ``XDG_CONFIG_HOME``; a token, key or database URL becomes ``sha256:<hex>``.
        ``BLI_MEMORY_EMBEDDER`` set to the shipped model or to blank is left out: the
        settings read both as unset, and a shell that exported the default (as the
        "another model" error advises) would otherwise never be served by a daemon started
        without it (every hook in process, about 20x slower).
    """
    env = _env(environ)
    out: dict[str, str] = {}
    for key, value in env.items():
        if key in _UNSET_WHEN and value.strip() in _UNSET_WHEN[key]:
            continue
        if key in _CONFIG_EXTRA or key in _ENGINE_VARS:
            if key in _SECRET_VARS:
                import hashlib

                value = "sha256:" + hashlib.sha256(value.encode("utf-8", "surrogatepass")).hexdigest()
            out[key] = value
    return dict(sorted(out.items()))


# --- the socket ------------------------------------------------------------------


@contextmanager
def socket_address(path: Path) -> Iterator[str]:
    """An ``AF_UNIX`` address for ``path`` that fits the kernel's 108-byte limit.

    Long paths (deep temporary homes) are reached through the folder's descriptor as
    ``/proc/self/fd/<n>/<name>`` on Linux; elsewhere the path is used as it is.
    """
    text = os.fspath(path)
    if len(os.fsencode(text)) <= _SUN_PATH_MAX or not os.path.isdir("/proc/self/fd"):
        yield text
        return
    fd = os.open(os.path.dirname(text) or ".", os.O_RDONLY | os.O_DIRECTORY)
    try:
        yield f"/proc/self/fd/{fd}/{os.path.basename(text)}"
    finally:
        os.close(fd)


def _check_socket_file(path: Path) -> None:
    try:
        st = os.lstat(path)
    except FileNotFoundError:
        raise DaemonUnavailable("no_socket") from None
    except OSError:
        raise DaemonUnavailable("unreachable") from None
    if not stat.S_ISSOCK(st.st_mode) or st.st_uid != os.getuid():
        # Never hand a prompt to a socket another user could be listening on.
        raise DaemonUnavailable("foreign_socket")


def _connect(path: Path, budget: float) -> socket.socket:
    _check_socket_file(path)
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        sock.settimeout(max(budget, 0.001))
        with socket_address(path) as address:
            sock.connect(address)
    except (TimeoutError, BlockingIOError):
        sock.close()
        raise DaemonUnavailable("connect_timeout") from None
    except OSError as exc:
        sock.close()
        if exc.errno == errno.ECONNREFUSED:
            raise DaemonUnavailable("stale_socket") from None
        if exc.errno == errno.ENOENT:
            raise DaemonUnavailable("no_socket") from None
        if exc.errno == errno.EAGAIN:
            raise DaemonUnavailable("connect_timeout") from None
        raise DaemonUnavailable("unreachable") from None
    return sock


def connect(path: Path, budget: float = CONNECT_BUDGET_S) -> socket.socket:
    """A connected socket to the daemon at ``path`` (the relay's long-lived session).

    Args:
        path: Socket path; it must be a socket owned by this user.
        budget: Seconds the connect may take.

    Raises:
        DaemonUnavailable: ``no_socket``, ``foreign_socket``, ``stale_socket``,
            ``connect_timeout`` or ``unreachable``.
    """
    return _connect(path, budget)


def _read_line(sock: socket.socket, deadline: float, limit: int) -> bytes:
    buf = bytearray()
    while True:
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            raise DaemonUnavailable("reply_timeout")
        sock.settimeout(remaining)
        try:
            chunk = sock.recv(65536)
        except TimeoutError:
            raise DaemonUnavailable("reply_timeout") from None
        except OSError:
            raise DaemonUnavailable("unreachable") from None
        if not chunk:
            if not buf:
                raise DaemonUnavailable("bad_reply")
            return bytes(buf)
        buf += chunk
        end = buf.find(b"\n", len(buf) - len(chunk))
        if end > limit or (end < 0 and len(buf) > limit):
            raise DaemonUnavailable("bad_reply")
        if end >= 0:
            return bytes(buf[:end])


def exchange(
    message: dict[str, Any],
    *,
    deadline: float,
    path: Path | None = None,
    connect_budget: float = CONNECT_BUDGET_S,
) -> dict[str, Any]:
    """Send one message and read the daemon's one-line reply.

    Args:
        message: A JSON-serialisable object.
        deadline: ``time.monotonic()`` value by which the reply must have arrived.
        path: Socket path (default :func:`bli_memory.core.paths.daemon_socket_path`).
        connect_budget: Seconds the connect may take (capped by ``deadline``).

    Returns:
        The reply object (never an ``error`` reply).

    Raises:
        DaemonUnavailable: no socket, stale or foreign socket, connect or reply
            timeout, a reply that is not one JSON object, or the daemon's own error
            (its code, or ``bad_reply`` for a code outside :data:`DAEMON_ERRORS`).
    """
    path = paths.daemon_socket_path() if path is None else path
    budget = min(connect_budget, deadline - time.monotonic())
    if budget <= 0:
        raise DaemonUnavailable("connect_timeout")
    data = json.dumps(message, ensure_ascii=True, separators=(",", ":")).encode("ascii") + b"\n"
    sock = _connect(path, budget)
    try:
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            raise DaemonUnavailable("reply_timeout")
        sock.settimeout(remaining)
        try:
            sock.sendall(data)
        except TimeoutError:
            raise DaemonUnavailable("reply_timeout") from None
        except OSError:
            # The daemon may have refused mid-send (too_large) and closed: read its word.
            pass
        raw = _read_line(sock, deadline, MAX_LINE_BYTES)
    finally:
        sock.close()
    try:
        reply = json.loads(raw.decode("utf-8"))
    except (UnicodeDecodeError, ValueError, RecursionError):
        raise DaemonUnavailable("bad_reply") from None
    if not isinstance(reply, dict):
        raise DaemonUnavailable("bad_reply")
    error = reply.get("error")
    if error is not None:
        raise DaemonUnavailable(error if error in DAEMON_ERRORS else "bad_reply", reply)
    return reply


def request(
    event: str,
    host: str,
    payload: dict[str, Any],
    *,
    deadline: float,
    cwd: str | None = None,
    environ: Mapping[str, str] | None = None,
    path: Path | None = None,
    connect_budget: float = CONNECT_BUDGET_S,
) -> dict[str, Any]:
    """Ask the daemon to answer one hook run.

    Args:
        event: ``session-start``, ``prompt`` or ``stop``.
        host: Adapter name.
        payload: The host's decoded JSON payload.
        deadline: ``time.monotonic()`` value by which the answer must have arrived.
        cwd: The hook's working folder (used when the payload names none).
        environ: The hook's environment (default ``os.environ``).
        path: Socket path (default: the user's).
        connect_budget: Seconds the connect may take.

    Returns:
        ``{"stdout": str, "outcome": "ok"|"skipped"|"failed", "reason": str|None,
        "fields": dict, "backend": bool, "receipt_log": bool, "injected": Injected|None}``,
        checked for shape (``receipt_log``: the host's receipts go to the log file, the
        wire's ``receiptLog``; ``injected``: the memories in ``stdout``, held for the
        session until the caller has written it,
        :func:`~bli_memory.core.hooks.answers.settle_injected`).

    Raises:
        DaemonUnavailable: see :func:`exchange`; ``bad_reply`` for a wrong shape.
    """
    message = {
        "event": event,
        "host": host,
        "payload": payload,
        "cwd": cwd,
        "version": VERSION,
        "env": space_env(environ),
        "config": config_of(environ),
    }
    reply = exchange(message, deadline=deadline, path=path, connect_budget=connect_budget)
    outcome = reply.get("outcome")
    stdout = reply.get("stdout", "")
    reason = reply.get("reason")
    fields = reply.get("fields") or {}
    backend = reply.get("backend", False)
    if (
        outcome not in ("ok", "skipped", "failed")
        or not isinstance(stdout, str)
        or not (reason is None or isinstance(reason, str))
        or not isinstance(fields, dict)
        or not isinstance(backend, bool)
    ):
        raise DaemonUnavailable("bad_reply")
    from bli_memory.core.hooks.answers import injected_of

    return {"stdout": stdout, "outcome": outcome, "reason": reason, "fields": fields, "backend": backend,
            "receipt_log": reply.get("receiptLog") is True, "injected": injected_of(reply.get("injected"))}


def ping(path: Path | None = None, *, timeout: float = 0.5, with_config: bool = False) -> dict[str, Any]:
    """Ask whether a daemon answers on the socket.

    A ping carries no version, so it never makes a daemon stand down. With
    ``with_config`` it carries this process's :func:`config_of`, and the answer's
    ``same_config`` says whether the daemon would serve this process or answer
    ``env_mismatch``.

    Returns:
        ``{"alive": True, "version": str, "pid": int, "ready": bool, ...}``.

    Raises:
        DaemonUnavailable: nothing answered.
    """
    deadline = time.monotonic() + timeout
    message: dict[str, Any] = {"ping": True}
    if with_config:
        message["config"] = config_of()
    reply = exchange(message, deadline=deadline, path=path, connect_budget=timeout)
    if reply.get("alive") is not True:
        raise DaemonUnavailable("bad_reply")
    return reply


def stop(path: Path | None = None, *, timeout: float = 2.0) -> int | None:
    """Ask a running daemon to exit; returns its pid, or None when none answered."""
    try:
        reply = exchange({"stop": True}, deadline=time.monotonic() + timeout, path=path,
                         connect_budget=timeout)
    except DaemonUnavailable:
        return None
    pid = reply.get("pid")
    return pid if isinstance(pid, int) else None


#: What to do about a daemon that could not serve (``status()["fix"]``).
PROBLEM_FIX = ("fix what the problem names (it says how), then run `bli-memory-mcp daemon --restart`; "
               "until then hooks and MCP servers answer in their own process")


def status(environ: Mapping[str, str] | None = None) -> dict[str, Any]:
    """Whether the daemon's socket answers (for ``bli-memory-mcp status``).

    Returns:
        ``{"running": bool, "version": str|None, "pid": int|None, "socket": str}``;
        ``running`` is True only when a daemon answered a ping within 0.5 s. When none
        runs because the last one could not serve (its model failed to load), ``problem``
        says why (``cannot embed: ...``) and ``fix`` what to do.
    """
    path = paths.daemon_socket_path(environ)
    try:
        reply = ping(path)
    except DaemonUnavailable:
        answer: dict[str, Any] = {"running": False, "version": None, "pid": None, "socket": str(path)}
        problem = daemon_start.last_problem(environ, config=config_of(environ))
        if problem is not None:
            answer["problem"] = problem
            answer["fix"] = PROBLEM_FIX
        return answer
    version = reply.get("version")
    pid = reply.get("pid")
    return {
        "running": True,
        "version": version if isinstance(version, str) else None,
        "pid": pid if isinstance(pid, int) else None,
        "socket": str(path),
    }
