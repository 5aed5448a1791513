"""The MCP server command as a relay to the MCP server inside the resident daemon.

A host starts one ``bli-memory-mcp`` per session. Importing the MCP SDK holds about
53 MB and takes 0.9 s (idle) to 5 s (loaded) here (``import mcp`` loads its client,
server, HTTP transport and two protocol type sets), while a bare interpreter holds about
11 MB and a relay 14 MB (docs/benchmarks.md, "MCP servers through the daemon"), so five
sessions that each import the SDK can never cost less than two in-process servers.
The SDK therefore runs once, in the daemon: this module is all a session process runs,
on the standard library and our bare modules only (no ``mcp``, no pydantic, no numpy).

- **Eligible** (:func:`eligible`): the daemon is not switched off
  (``BLI_MEMORY_DAEMON=0``) and the store is the embedded one (no
  ``BLI_MEMORY_DASHBOARD_URL``, the machine not paired); the daemon checks the rest (its
  backend, built from the same configuration, must keep a local store, else it answers
  ``not_local``).
- **Hello**: one line on the daemon's socket,
  ``{"mcp": "relay", "version", "config", "cwd", "env", "session"}``: the version and
  configuration the hooks send (:func:`bli_memory.core.hooks.daemon_client.config_of`),
  this process's folder, the variables that choose the space
  (:func:`~bli_memory.core.hooks.daemon_client.space_env`) and the session id
  (``mcp-<uuid4>``), chosen here so it survives a fallback. The daemon answers one line
  (``{"relay": true, ...}`` or ``{"error": code}``) and from then on the connection
  carries the session's JSON-RPC lines both ways, unchanged. When no daemon answers,
  one is started by the hooks' rule and waited for (:data:`START_WAIT_S`), as the
  prompt hook would.
- **Fallback**: when the daemon cannot be reached or refuses (another version or
  configuration, warming up too long, not a local store), the in-process server serves
  the session from its start. When it goes away mid-session (``kill -9``, a stop, a
  stand-down for a newer release), the in-process server takes over in this process: it
  is handed (:class:`Handover`) the saved ``initialize`` (its answer is not written
  again when the client already had it) and ``notifications/initialized``, then every
  request the daemon had not answered, in the order they were read, then the rest of
  stdin. A write whose answer was lost therefore runs again under today's rules: the
  same text saves as ``duplicate``, an update is ``unchanged``, an extract job keeps its
  id (:func:`bli_memory.core.mcp.tools.save_memory` derives it from the session and
  request ids) and a forget answers as the first one did: by id, or by exact text or
  query when a memory of the space matching it was forgotten since the request was
  first sent (it is not run again, so a query never takes the next match too). The
  time a request was first sent is taken before the daemon can read it, on the clock
  the daemon's forget reads too (one machine), so the forget of an earlier request,
  answered before this one was sent, is never taken for this one's.

stdout carries JSON-RPC only: whole lines the daemon wrote (a line cut by the daemon's
death is dropped and its request run again). Operational lines go to stderr
(``[bli-memory] mcp route <daemon|in-process> {json}``, docs/logging.md).
"""

from __future__ import annotations

import contextlib
import json
import os
import queue
import socket
import sys
import threading
import time
import uuid
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from bli_memory.core import paths
from bli_memory.core._version import VERSION
from bli_memory.core.hooks import daemon_client
from bli_memory.core.mcp.stdin_claim import claim_stdin
from bli_memory.core.memory.unicode_text import lone_surrogates_replaced

__all__ = [
    "CONNECT_BUDGET_S",
    "HELLO_TIMEOUT_S",
    "PING_TIMEOUT_S",
    "QUIET_S",
    "START_WAIT_S",
    "Handover",
    "eligible",
    "relay_session",
]

#: Seconds to connect to the daemon's socket (a local socket connects at once; the
#: hook's 50 ms budget is for a 2 s deadline a session's start does not have).
CONNECT_BUDGET_S = 1.0
#: Seconds for the daemon's answer to the hello (it answers at once, warm or not).
HELLO_TIMEOUT_S = 10.0
#: Seconds to wait for a daemon this relay (or a hook) just started to listen.
START_WAIT_S = 15.0


def _seconds_from_env(name: str, default: float) -> float:
    """Seconds from the environment variable ``name``: a number above 0 and up to an
    hour, else ``default`` (a session never fails on a setting)."""
    try:
        value = float(os.environ.get(name, ""))
    except ValueError:
        return default
    return value if 0 < value <= 3600 else default


#: A request unanswered this long makes the relay ping the daemon (a ping is answered
#: by its accept loop, whatever the sessions are doing); no answer within
#: :data:`PING_TIMEOUT_S` means a hung daemon, and the session goes on in process.
#: ``BLI_MEMORY_RELAY_QUIET_S`` and ``BLI_MEMORY_RELAY_PING_TIMEOUT_S`` override them
#: (docs/daemon.md): a shorter wait, for instance, where a hung daemon must be left sooner.
QUIET_S = _seconds_from_env("BLI_MEMORY_RELAY_QUIET_S", 30.0)
PING_TIMEOUT_S = _seconds_from_env("BLI_MEMORY_RELAY_PING_TIMEOUT_S", 5.0)

#: Failures after which a daemon is started (the hooks' rule decides whether it may be).
_STARTABLE = frozenset({"no_socket", "stale_socket", "stand_down"})
_FORCED = frozenset({"stale_socket", "stand_down"})


@dataclass
class Handover:
    """What the in-process server resumes a session from.

    Attributes:
        session_id: The session's id (``mcp-<uuid4>``), or None to let the server choose.
        lines: Queue of the stdin lines read after the handover (``None`` ends input);
            None when the relay never read stdin (the server reads it itself).
        replay: Lines to serve first: ``initialize``, ``notifications/initialized``, then
            the requests the daemon left unanswered, in the order read.
        drop_reply_to: Id of the replayed ``initialize`` whose answer the client already
            had (its second answer is not written), else None.
        replayed_at: Request id -> epoch seconds it was first sent to the daemon (taken
            just before sending), for every request run again.
        reason: Why the session is served in process (a
            :data:`bli_memory.core.hooks.daemon_client.REASONS` code, ``daemon_gone`` or
            ``daemon_hung``), None when the relay was not eligible.
    """

    session_id: str | None = None
    lines: queue.Queue[bytes | None] | None = None
    replay: list[bytes] = field(default_factory=list)
    drop_reply_to: str | int | None = None
    replayed_at: dict[str | int, float] = field(default_factory=dict)
    reason: str | None = None


def eligible(environ: Mapping[str, str] | None = None) -> bool:
    """Whether the session goes through the daemon (standard library only).

    True when the daemon is not switched off and nothing points the store at the team
    service: no ``BLI_MEMORY_DASHBOARD_URL`` and no paired session file. The MCP route
    of the team service's client stays in process (it holds no model).
    """
    env = os.environ if environ is None else environ
    if not daemon_client.enabled(env) or (env.get("BLI_MEMORY_DASHBOARD_URL") or "").strip():
        return False
    try:
        return not paths.session_file_path(env).exists()
    except OSError:
        return False


def relay_session(environ: Mapping[str, str] | None = None) -> Handover | None:
    """Relay this process's stdio to the daemon's MCP server until the session ends.

    Returns:
        None when the daemon served the whole session (the process exits 0); else the
        :class:`Handover` the in-process server resumes from (at once when the relay
        was not eligible or the daemon refused the hello).
    """
    env = dict(os.environ if environ is None else environ)
    if not eligible(env):
        return Handover()
    session_id = f"mcp-{uuid.uuid4()}"
    try:
        os.getcwd()
    except OSError:  # a folder removed under the host: the in-process server says what it says
        return Handover(session_id=session_id)
    try:
        sock, reader, pid = _hello(env, session_id)
    except daemon_client.DaemonUnavailable as exc:
        _log("in-process", reason=exc.reason)
        return Handover(session_id=session_id, reason=exc.reason)
    _log("daemon", pid=pid)
    return _Pipe(sock, reader, session_id, paths.daemon_socket_path(env)).run()


# --- the hello -----------------------------------------------------------------------


def _hello(env: dict[str, str], session_id: str) -> tuple[socket.socket, Any, int | None]:
    """Connect and greet the daemon, starting one if none answers.

    Raises:
        DaemonUnavailable: with the reason the session goes in process.
    """
    path = paths.daemon_socket_path(env)
    message = {"mcp": "relay", "version": VERSION, "config": daemon_client.config_of(env),
               "cwd": os.getcwd(), "env": daemon_client.space_env(env), "session": session_id}
    line = json.dumps(message, ensure_ascii=True, separators=(",", ":")).encode("ascii") + b"\n"
    for attempt in (1, 2):
        try:
            return _greet(path, line)
        except daemon_client.DaemonUnavailable as exc:
            if attempt == 1 and exc.reason in _STARTABLE and _start(env, path, exc.reason):
                continue
            raise
    raise daemon_client.DaemonUnavailable("unreachable")  # pragma: no cover - the loop returns


def _greet(path: Any, line: bytes) -> tuple[socket.socket, _Lines, int | None]:
    sock = daemon_client.connect(path, CONNECT_BUDGET_S)
    reader = _Lines(sock)
    try:
        sock.settimeout(HELLO_TIMEOUT_S)
        sock.sendall(line)
        raw = reader.readline(HELLO_TIMEOUT_S)
    except OSError:
        sock.close()
        raise daemon_client.DaemonUnavailable("unreachable") from None
    if raw is None:
        sock.close()
        raise daemon_client.DaemonUnavailable("reply_timeout")
    try:
        reply = json.loads(raw.decode("utf-8")) if raw.endswith(b"\n") else None
    except (UnicodeDecodeError, ValueError, RecursionError):
        reply = None
    if not isinstance(reply, dict) or reply.get("relay") is not True:
        sock.close()
        error = reply.get("error") if isinstance(reply, dict) else None
        reason = error if error in daemon_client.DAEMON_ERRORS else "bad_reply"
        raise daemon_client.DaemonUnavailable(str(reason))
    pid = reply.get("pid")
    return sock, reader, pid if isinstance(pid, int) else None


def _start(env: dict[str, str], path: Any, reason: str) -> bool:
    """Start a daemon (the hooks' rule) and wait for it to listen; True when one does."""
    if not daemon_client.spawn(force=reason in _FORCED, environ=env):
        return False  # the rule says wait (a start that failed, or a daemon stopped on request)
    if reason == "stand_down":
        time.sleep(0.2)  # let the old daemon leave its lock before the new one takes it
    give_up = time.monotonic() + START_WAIT_S
    while time.monotonic() < give_up:
        try:
            daemon_client.ping(path, timeout=0.5)
            return True
        except daemon_client.DaemonUnavailable:
            time.sleep(0.05)
    return False


# --- the pipe ------------------------------------------------------------------------


class _Lines:
    """Whole lines from a socket, with a timeout that loses nothing (``recv`` either
    returns bytes or times out, unlike a buffered file's ``readline``)."""

    def __init__(self, sock: socket.socket) -> None:
        self.sock = sock
        self.buf = bytearray()

    def readline(self, timeout: float) -> bytes | None:
        """The next line with its newline; what is left at EOF (``b""`` for nothing);
        None when no whole line came within ``timeout`` seconds.

        Raises:
            OSError: the connection broke.
        """
        while True:
            end = self.buf.find(b"\n")
            if end >= 0:
                line = bytes(self.buf[:end + 1])
                del self.buf[:end + 1]
                return line
            self.sock.settimeout(timeout)
            try:
                chunk = self.sock.recv(65536)
            except TimeoutError:
                return None
            if not chunk:
                rest = bytes(self.buf)
                self.buf.clear()
                return rest
            self.buf += chunk


class _Pipe:
    """stdin -> daemon and daemon -> stdout, keeping what a fallback needs."""

    def __init__(self, sock: socket.socket, reader: _Lines, session_id: str, path: Any) -> None:
        self.sock = sock
        self.reader = reader
        self.session_id = session_id
        self.path = path
        self.reason = "daemon_gone"
        self.lock = threading.Lock()
        self.fallen = False
        self.eof = False
        self.init_line: bytes | None = None
        self.init_id: str | int | None = None
        self.init_answered = False
        self.initialized_line: bytes | None = None
        self.inflight: dict[str | int, tuple[bytes, float]] = {}  # id -> (line, first sent)
        self.unsent: list[bytes] = []
        self.later: queue.Queue[bytes | None] = queue.Queue()

    def run(self) -> Handover | None:
        stdin = _claim_stdin()
        threading.Thread(target=self._pump_stdin, args=(stdin,), daemon=True, name="relay-stdin").start()
        ended = self._pump_daemon()
        with self.lock:
            if ended and self.eof and not self.inflight and not self.unsent:
                return None  # the client closed stdin and every request was answered
            return self._handover()

    def _note_sent(self, line: bytes, sent: float) -> None:
        message = _decode(line)
        if not isinstance(message, dict) or not isinstance(message.get("method"), str):
            return
        method = message["method"]
        ident = message.get("id")
        if method == "notifications/initialized":
            self.initialized_line = line
        if not isinstance(ident, str | int) or not _is_id(ident):
            return
        # The server answers a lone surrogate in an id as U+FFFD (core/mcp/stdio.py); track
        # the id as it will come back, or the answer would never close the request.
        ident = lone_surrogates_replaced(ident) if isinstance(ident, str) else ident
        if method == "initialize" and self.init_line is None:
            self.init_line, self.init_id = line, ident
        self.inflight[ident] = (line, sent)

    def _note_answer(self, line: bytes) -> None:
        message = _decode(line)
        ident = message.get("id") if isinstance(message, dict) and "method" not in message else None
        if isinstance(ident, str | int) and _is_id(ident):
            with self.lock:
                if self.inflight.pop(ident, None) is not None and ident == self.init_id:
                    self.init_answered = True

    def _pump_stdin(self, stdin: Any) -> None:
        """Read stdin lines; send them to the daemon, or queue them once it has gone."""
        for line in iter(stdin.readline, b""):
            with self.lock:
                if self.fallen:
                    self.later.put(line)
                    continue
                if self.unsent:  # the socket broke: keep the order for the handover
                    self.unsent.append(line)
                    continue
                sent = time.time()  # before the daemon can read it: its forget comes later
                try:
                    self.sock.sendall(line)
                except OSError:  # gone, or not reading for QUIET_S: end it, the handover follows
                    self.unsent.append(line)
                    with contextlib.suppress(OSError):
                        self.sock.shutdown(socket.SHUT_RDWR)
                    continue
                self._note_sent(line, sent)
        with self.lock:
            self.eof = True
            if self.fallen:
                self.later.put(None)
                return
        try:
            self.sock.shutdown(socket.SHUT_WR)  # the daemon's server answers what is in flight, then ends
        except OSError:
            pass

    def _pump_daemon(self) -> bool:
        """Copy the daemon's lines to stdout; True at a clean end, False when it went away."""
        out = sys.stdout.buffer
        while True:
            try:
                line = self.reader.readline(QUIET_S)
            except OSError:
                return False
            if line is None:
                if self._hung():
                    return False
                continue
            if not line:
                return True
            if not line.endswith(b"\n"):
                return False  # cut off mid-line: the daemon died while writing it
            self._note_answer(line)
            try:
                out.write(line)
                out.flush()
            except (OSError, ValueError):
                os._exit(0)  # the host went away: nobody reads this session any more

    def _hung(self) -> bool:
        """After :data:`QUIET_S` without a line: whether a request waits on a daemon that no
        longer answers even a ping (stopped, or stuck)."""
        with self.lock:
            waiting = bool(self.inflight) and not self.fallen
        if not waiting:
            return False
        try:
            daemon_client.ping(self.path, timeout=PING_TIMEOUT_S)
        except daemon_client.DaemonUnavailable:
            self.reason = "daemon_hung"
            return True
        return False

    def _handover(self) -> Handover:
        """Under the lock: stop relaying and say what the in-process server resumes from."""
        self.fallen = True
        try:
            self.sock.close()
        except OSError:
            pass
        replay: list[bytes] = []
        replayed: dict[str | int, float] = {}
        if self.init_line is not None:
            replay.append(self.init_line)
        if self.initialized_line is not None:
            replay.append(self.initialized_line)
        for ident, (line, sent) in self.inflight.items():
            if ident != self.init_id:
                replay.append(line)
                replayed[ident] = sent
        replay += self.unsent
        self.unsent = []
        if self.eof:
            self.later.put(None)
        _log("in-process", reason=self.reason, replayed=len(replayed))
        return Handover(session_id=self.session_id, lines=self.later, replay=replay,
                        drop_reply_to=self.init_id if self.init_answered else None,
                        replayed_at=replayed, reason=self.reason)


def _claim_stdin() -> Any:
    """The wire on a private descriptor, fd 0 on the null device (a child reads EOF)."""
    private = claim_stdin()
    return sys.stdin.buffer if private is None else os.fdopen(private, "rb", closefd=False)


def _decode(line: bytes) -> Any:
    try:
        return json.loads(line)
    except (ValueError, RecursionError):
        return None


def _is_id(value: object) -> bool:
    return isinstance(value, str) or (isinstance(value, int) and not isinstance(value, bool))


def _log(route: str, **fields: Any) -> None:
    """One operational line on stderr when the route is chosen or changes, at the debug log
    level only (docs/logging.md): hosts file a server's stderr as its errors (Claude's MCP
    log does), and a route is not one. ``cockpit doctor`` shows the route at any level."""
    if os.environ.get("BLI_MEMORY_LOG_LEVEL", "").strip().lower() != "debug":
        return
    try:
        sys.stderr.write(f"[bli-memory] mcp route {route} {json.dumps(fields)}\n")
        sys.stderr.flush()
    except (OSError, ValueError):
        pass
