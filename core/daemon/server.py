"""``bli-memory-mcp daemon``: the resident daemon that keeps recall warm.

A hook is a fresh process, and opening the store and loading the model on every
prompt is time the person waits for. One daemon per OS user holds them warm and
answers hooks by running :func:`bli_memory.core.hooks.events.answer_hook`, the very
function the hook's direct path runs; there is no second implementation of recall
(BLI Memory spec, "The resident daemon"; design.md section 6).

- **Endpoint**: ``$XDG_STATE_HOME/bli-cockpit/memory-daemon.sock``, mode 0600, in a
  0700 folder. The daemon refuses to start when the folder or the socket path belongs
  to another user (exit 1, ``socket_not_owned``).
- **Protocol**: one JSON line in, one out, then the connection closes (see
  :mod:`bli_memory.core.hooks.daemon_client`). Malformed, oversized or slow requests get an
  error line; no request can crash the daemon. One thread per connection, at most
  :data:`MAX_CONNECTIONS` at once (more are answered ``busy``).
- **One per user**: an exclusive ``flock`` on ``memory-daemon.lock`` for its whole
  life. A second instance finds the first alive and exits 0 with
  ``daemon_already_running``. A socket file left by a killed daemon (no lock holder,
  nobody listening) is detected and replaced.
- **Stops** after :data:`IDLE_SECONDS` without a hook request (2 h, spec;
  ``BLI_MEMORY_DAEMON_IDLE_SECONDS`` or ``--idle-seconds`` override), on SIGTERM /
  SIGINT / SIGHUP, on a ``stop`` request, and when a request carries a later version
  or the machine was paired or unpaired since it started (it answers ``stand_down``
  first, and the hook starts a current daemon). A request of an earlier version (a
  session left running across an upgrade) gets ``outdated_caller`` and answers itself.
- **Warm**: the store is opened and the model loaded in a background thread right
  after the socket is bound; until then requests are answered ``warming_up`` (the
  hook goes direct) while pings already answer. If the store file is replaced or
  removed, the next request reopens it.
- **MCP sessions**: a connection that opens with a relay's hello
  (:mod:`bli_memory.core.mcp.relay`) stays open for the session and is served by the
  official MCP SDK server on the warm backend (:mod:`bli_memory.core.daemon.mcp_sessions`),
  so five open sessions share one SDK, one model and one set of caches. Sessions do
  not count against :data:`MAX_CONNECTIONS` (they are long-lived), and the daemon is
  never idle while one is open. When the daemon stops or stands down their
  connections close and each relay serves its session in its own process.
- **Extract jobs**: a background thread drains the queue every :data:`DRAIN_INTERVAL_S`
  and shortly after a stop hook or an MCP save queued one, off the request path.
- **No orphans**: the daemon starts no child process; it removes its socket on exit.
  Its operational lines go to stderr (``[bli-memory] daemon <what> {json}``).
"""

from __future__ import annotations

import json
import os
import signal
import socket
import sys
import threading
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from bli_memory.core import paths
from bli_memory.core._version import VERSION
from bli_memory.core.daemon.drain import DRAIN_AFTER_STOP_S, DRAIN_INTERVAL_S, DRAIN_MAX_JOBS, drain_loop
from bli_memory.core.daemon.endpoint import Endpoint, Refused
from bli_memory.core.daemon.mcp_sessions import end_sessions, hello_of, open_session, serve_session
from bli_memory.core.daemon.oplog import log
from bli_memory.core.daemon.protocol import is_newer, read_request, reply_line, rss_bytes
from bli_memory.core.daemon.warm import WarmContext, refuse_unusable_settings
from bli_memory.core.defaults import DEFAULT_HOST
from bli_memory.core.hooks import daemon_client, daemon_start

__all__ = [
    "DRAIN_AFTER_STOP_S",
    "DRAIN_INTERVAL_S",
    "DRAIN_MAX_JOBS",
    "IDLE_SECONDS",
    "MAX_CONNECTIONS",
    "READ_TIMEOUT_S",
    "Daemon",
    "main",
]

#: Idle time after which the daemon exits (spec: 2 hours).
IDLE_SECONDS = 2 * 3600.0
#: Connections served at once; more get ``busy`` and the hook goes direct.
MAX_CONNECTIONS = 32
#: A client must send its whole request line within this many seconds.
READ_TIMEOUT_S = 5.0

_EVENTS = ("session-start", "prompt", "stop")

USAGE = """\
usage: bli-memory-mcp daemon [--idle-seconds N] | --status | --stop | --restart

Resident daemon that keeps the memory store and the embedding model warm and answers
the lifecycle hooks on a Unix socket (the prompt hook starts it for you).

  --idle-seconds N   exit after N seconds without a hook request (default 7200;
                     env BLI_MEMORY_DAEMON_IDLE_SECONDS)
  --status           print whether a daemon answers on the socket (JSON) and exit
  --stop             ask the running daemon to exit (hooks start one again after an hour)
  --restart          stop the running daemon and start a new one now, with this shell's
                     settings (after changing BLI_MEMORY_EMBEDDER or another setting)
"""


class Daemon:
    """One resident daemon: its socket, its warm context and its background threads.

    Args:
        socket_path: Where to listen (normally :func:`paths.daemon_socket_path`).
        idle_seconds: Exit after this long without a hook request.
        environ: The environment whose settings the daemon serves (default
            ``os.environ``); requests from a different one get ``env_mismatch``.
    """

    def __init__(self, *, socket_path: Path, idle_seconds: float = IDLE_SECONDS,
                 environ: Mapping[str, str] | None = None) -> None:
        self.socket_path = socket_path
        self.idle_seconds = idle_seconds
        self.environ = dict(os.environ if environ is None else environ)
        self.config = daemon_client.config_of(self.environ)
        # Pairing or unpairing the machine changes which backend answers: stand down then.
        self.paired = paths.session_file_path(self.environ).exists()
        self.pid = os.getpid()
        self.started = time.monotonic()
        self.last_request = self.started
        self.stop_reason: str | None = None
        self._stop = threading.Event()
        self._ready = threading.Event()
        self._drain_wake = threading.Event()
        self.warm = WarmContext()
        self.endpoint = Endpoint(socket_path)
        self._active = 0
        self._relays: set[socket.socket] = set()  # open MCP sessions (long-lived: not in _active)
        self._active_lock = threading.Lock()
        self._threads: set[threading.Thread] = set()
        self.requests = 0
        self.sessions = 0

    # --- lifecycle -------------------------------------------------------------------

    def request_stop(self, reason: str) -> None:
        """Ask the accept loop to finish (idempotent; the first reason is kept)."""
        if self.stop_reason is None:
            self.stop_reason = reason
        self._stop.set()

    def run(self) -> int:
        """Start, serve until told to stop, clean up. Returns the process exit code.

        Returns:
            0 after a normal stop or when another daemon is already running (stderr
            says ``daemon_already_running``); 1 when the socket path is not ours or the
            model could not be loaded (``cannot_embed``).
        """
        try:
            if not self.endpoint.acquire():
                return 0
            self.endpoint.bind()
        except Refused as exc:
            log("refused", reason=exc.reason)
            self.endpoint.release()
            return 1
        log("started", pid=self.pid, version=VERSION, idle_seconds=self.idle_seconds)
        from bli_memory.core.memory.embeddings import import_numpy_here

        import_numpy_here()  # before the warm-up thread starts

        self._start_thread(self._warm, "daemon-warm")
        self._start_thread(self._drain, "daemon-drain")
        try:
            self._serve()
        finally:
            self._shutdown()
        log("stopped", reason=self.stop_reason, requests=self.requests)
        return 1 if self.stop_reason == "cannot_embed" else 0

    def _start_thread(self, target: Any, name: str, *args: Any) -> threading.Thread:
        thread = threading.Thread(target=target, name=name, args=args, daemon=True)
        thread.start()
        return thread

    def _serve(self) -> None:
        listener = self.endpoint.listener
        assert listener is not None
        while not self._stop.is_set():
            try:
                conn, _ = listener.accept()
            except TimeoutError:
                self._check_idle()
                continue
            except OSError:
                if self._stop.is_set():
                    break
                time.sleep(0.05)
                continue
            with self._active_lock:
                crowded = self._active >= MAX_CONNECTIONS
                if not crowded:
                    self._active += 1
            if crowded:
                self._refuse_quickly(conn, "busy")
                continue
            thread = threading.Thread(target=self._connection, args=(conn,), name="daemon-conn", daemon=True)
            self._threads.add(thread)
            thread.start()
            self._threads = {t for t in self._threads if t.is_alive()}
            self._check_idle()

    def _check_idle(self) -> None:
        if not self._ready.is_set():
            return  # idle time counts from ready: a slow warm-up is not idleness
        with self._active_lock:
            busy = self._active > 0 or bool(self._relays)
        if not busy and time.monotonic() - self.last_request > self.idle_seconds:
            self.request_stop("idle")

    def _shutdown(self) -> None:
        self.endpoint.close()
        with self._active_lock:
            end_sessions(self._relays)  # each relay sees its session end and serves it itself
        give_up = time.monotonic() + 2.0
        for thread in list(self._threads):
            thread.join(max(0.0, give_up - time.monotonic()))
        self._drain_wake.set()
        self.warm.close()
        if self.stop_reason == "stop_requested":
            daemon_start.clear_ready()  # stopped on purpose: not restarted at once
        self.endpoint.release()

    # --- the warm context ----------------------------------------------------------

    def _warm(self) -> None:
        started = time.monotonic()
        try:
            self.warm.context(self.warm.pm(DEFAULT_HOST))
            from bli_memory.core.memory.redaction.vendor import warm as warm_vendor_rules

            warm_vendor_rules()  # so no stop hook waits on the secret rules' load
            if self.warm.cannot_embed is None:  # "ready" only for a daemon that can embed
                log("ready", warm_ms=int((time.monotonic() - started) * 1000))
        except Exception as exc:  # the store may be unavailable now; requests retry
            from bli_memory.core.hooks.events import reason_of

            log("warm_up_failed", reason=reason_of(exc))
        finally:
            self.last_request = time.monotonic()  # idle time counts from ready
            if self.warm.cannot_embed is None:
                daemon_start.mark_ready(self.pid, self.environ)  # a hook restarts one that ran, at once
            else:  # recorded before ready: `daemon --restart` reads it then
                daemon_start.mark_failed(f"cannot embed: {self.warm.cannot_embed}", self.environ,
                                         config=self.config)
            self._ready.set()
        if self.warm.cannot_embed is not None:  # leave; why: docs/daemon.md
            log("cannot_embed", reason=self.warm.cannot_embed[:300])
            self.request_stop("cannot_embed")

    # --- extract jobs ------------------------------------------------------------------

    def _drain(self) -> None:
        drain_loop(stop=self._stop, wake=self._drain_wake, ready=self._ready, pid=self.pid,
                   context=lambda: self.warm.context(self.warm.pm(DEFAULT_HOST)))

    # --- one connection ----------------------------------------------------------------

    def _refuse_quickly(self, conn: socket.socket, code: str) -> None:
        try:
            conn.settimeout(0.05)
            conn.sendall(reply_line({"error": code}, pid=self.pid))
        except OSError:
            pass
        finally:
            conn.close()

    def _connection(self, conn: socket.socket) -> None:
        relay = False
        try:
            conn.settimeout(READ_TIMEOUT_S)
            line, error = read_request(conn)
            hello = None if error else hello_of(line)
            if hello is not None:
                relay = True
                with self._active_lock:  # a session is long-lived: out of the busy count
                    self._active -= 1
                    self._relays.add(conn)
                self._relay(conn, hello)
                return
            reply = {"error": error} if error else self._respond(line)
            conn.settimeout(READ_TIMEOUT_S)
            conn.sendall(reply_line(reply, pid=self.pid))
        except OSError:
            pass  # the hook gave up (deadline) or went away: nothing to tell anyone
        except Exception as exc:  # never let one request take the daemon down
            log("request_failed", error=type(exc).__name__, relay=relay)
            try:
                if not relay:  # a session's line must be JSON-RPC: its relay sees the close
                    conn.sendall(reply_line({"error": "internal"}, pid=self.pid))
            except OSError:
                pass
        finally:
            try:
                conn.close()
            except OSError:
                pass
            with self._active_lock:
                if relay:
                    self._relays.discard(conn)
                    self.last_request = time.monotonic()
                else:
                    self._active -= 1

    def _relay(self, conn: socket.socket, hello: dict[str, Any]) -> None:
        """Answer a relay's hello, then serve its MCP session until it ends."""
        reply = self._version_refusal(hello.get("version")) or self._refusal(hello)
        session = None
        backend = lambda: self.warm.context(self.warm.pm(DEFAULT_HOST)).backend  # noqa: E731
        if reply is None:
            reply, session = open_session(hello, ready=self._ready, backend=backend)
        conn.sendall(reply_line(reply, pid=self.pid))
        if session is None:
            return
        self.sessions += 1
        serve_session(conn, session, backend=backend, ready=self._ready, wake=self._drain_wake)

    def _version_refusal(self, version: object) -> dict[str, Any] | None:
        """The refusal a request of another version gets (a later one stops us), else None."""
        if version is None or version == VERSION:
            return None
        if not is_newer(version, VERSION):
            # A session still running the release before an upgrade: it answers itself,
            # and the current daemon stays for every current caller.
            return {"error": "outdated_caller"}
        log("stand_down", caller_version=str(version)[:40])
        self.request_stop("stand_down")
        return {"error": "stand_down"}

    def _respond(self, line: bytes) -> dict[str, Any]:
        try:
            message = json.loads(line.decode("utf-8"))
        except (UnicodeDecodeError, ValueError, RecursionError):
            return {"error": "malformed"}
        if not isinstance(message, dict):
            return {"error": "malformed"}
        refused = self._version_refusal(message.get("version"))
        if refused is not None:
            return refused
        if message.get("ping") is True:
            with self._active_lock:
                relays = len(self._relays)
            return {"alive": True, "ready": self._ready.is_set(),
                    "uptime_s": int(time.monotonic() - self.started), "requests": self.requests,
                    "sessions": self.sessions, "relays": relays,
                    "rss_bytes": rss_bytes(),
                    # A ping that carries a config learns whether this daemon would serve it.
                    **({"same_config": message["config"] == self.config} if "config" in message else {})}
        if message.get("stop") is True:
            self.request_stop("stop_requested")
            return {"stopping": True}
        return self._hook(message)

    def _refusal(self, message: dict[str, Any]) -> dict[str, Any] | None:
        """The refusal a request from another configuration or pairing gets, else None."""
        if message.get("config") != self.config:
            return {"error": "env_mismatch"}
        if paths.session_file_path(self.environ).exists() != self.paired:
            log("stand_down", reason="pairing_changed")
            self.request_stop("stand_down")
            return {"error": "stand_down"}
        return None

    def _hook(self, message: dict[str, Any]) -> dict[str, Any]:
        event = message.get("event")
        host = message.get("host")
        payload = message.get("payload")
        cwd = message.get("cwd")
        env = message.get("env") or {}
        config = message.get("config")
        if (
            event not in _EVENTS
            or not isinstance(host, str) or not host
            or not isinstance(payload, dict)
            or not (cwd is None or isinstance(cwd, str))
            or not isinstance(env, dict)
            or not all(isinstance(k, str) and isinstance(v, str) for k, v in env.items())
            or not isinstance(message.get("version"), str)
            or not isinstance(config, dict)
        ):
            return {"error": "malformed"}
        refused = self._refusal(message)
        if refused is not None:
            return refused
        if not self._ready.is_set():
            return {"error": "warming_up"}
        self.last_request = time.monotonic()
        self.requests += 1

        from bli_memory.core.hooks.events import answer_hook, failed_answer, reason_of

        try:
            pm = self.warm.pm(host)
        except Exception as exc:  # a broken third-party plugin: fail like the direct path
            answer = failed_answer(None, host, event, reason_of(exc))
        else:
            answer = answer_hook(
                pm, host=host, event=event, payload=payload,
                context=lambda: self.warm.context(pm), cwd=cwd, environ=env,
            )
        if event == "stop" and answer.outcome == "ok":
            self._drain_wake.set()
        self.last_request = time.monotonic()
        return answer.to_wire()


# --- command line ------------------------------------------------------------------


def _idle_seconds(argv: list[str], environ: Mapping[str, str]) -> float | None:
    value: str | None = environ.get("BLI_MEMORY_DAEMON_IDLE_SECONDS") or None
    it = iter(argv)
    for arg in it:
        if arg == "--idle-seconds":
            value = next(it, None)
        elif arg.startswith("--idle-seconds="):
            value = arg.split("=", 1)[1]
    if value is None:
        return IDLE_SECONDS
    try:
        seconds = float(value)
    except ValueError:
        return None
    return seconds if seconds > 0 else None


def _configure_logging() -> None:
    """The store's and libraries' log lines in the one format (docs/logging.md).

    Settings that do not validate leave logging as it is: every request reports them.
    """
    from bli_memory.core.errors import BliMemoryError
    from bli_memory.core.logs import configure_logging
    from bli_memory.core.settings import load_settings

    try:
        settings = load_settings()
    except BliMemoryError:
        return
    configure_logging(settings.log_level, settings.log_format)


def main(argv: list[str]) -> int:
    """Run ``bli-memory-mcp daemon [--idle-seconds N] | --status | --stop | --restart``.

    Returns:
        0 after serving (or when a daemon is already running, or for ``--status`` /
        ``--stop``); 1 when the socket path is not ours or the settings cannot work; 2 on bad usage.
    """
    if any(a in ("-h", "--help") for a in argv):
        sys.stdout.write(USAGE)
        return 0
    # ``daemon stop`` reads as ``daemon --stop``; any other word is refused, never served.
    argv = [f"--{a}" if a in ("status", "stop", "restart") else a for a in argv]
    stray = [a for i, a in enumerate(argv)
             if not a.startswith("-") and not (i and argv[i - 1] == "--idle-seconds")]
    if stray:
        sys.stderr.write(f"bli-memory-mcp daemon: unexpected argument {stray[0]!r}\n{USAGE}")
        return 2
    if "--status" in argv:
        sys.stdout.write(json.dumps(daemon_client.status()) + "\n")
        return 0
    if "--stop" in argv:
        pid = daemon_client.stop()
        sys.stderr.write(f"[bli-memory] daemon {'stopping' if pid else 'not_running'} "
                         f"{json.dumps({'pid': pid})}\n")
        return 0
    if "--restart" in argv:
        from bli_memory.core.daemon.restart import restart

        return 1 if refuse_unusable_settings() else restart()
    unknown = [a for a in argv if a.startswith("-") and not a.startswith("--idle-seconds")]
    idle = _idle_seconds(argv, os.environ)
    if unknown or idle is None:
        sys.stderr.write(USAGE)
        return 2
    try:
        os.chdir("/")  # never pin the folder of the hook that started us
    except OSError:
        pass
    # One BLAS thread: a query is one 384-wide matrix-vector product, and BLAS threads
    # spinning beside the model's own threads made it 10x slower on 2 busy cores
    # (docs/benchmarks-hooks.md). Set before numpy is imported; an explicit value wins.
    os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
    if refuse_unusable_settings():
        return 1
    _configure_logging()
    daemon = Daemon(socket_path=paths.daemon_socket_path(), idle_seconds=idle)
    for signum in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
        signal.signal(signum, lambda *_: daemon.request_stop("signal"))
    return daemon.run()


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main(sys.argv[1:]))
