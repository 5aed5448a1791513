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
  :mod:`bli_memory.core.daemon.client`). Malformed, oversized or slow requests get an
  error line; no request can crash the daemon. One thread per connection, at most
  :data:`MAX_CONNECTIONS` at once (more are answered ``busy``).
- **One per user**: an exclusive ``flock`` on ``memory-daemon.lock`` for its whole
  life. A second instance finds the first alive and exits 0 with
  ``daemon_already_running``. A socket file left by a killed daemon (no lock holder,
  nobody listening) is detected and replaced.
- **Stops** after :data:`IDLE_SECONDS` without a hook request (2 h, spec;
  ``BLI_MEMORY_DAEMON_IDLE_SECONDS`` or ``--idle-seconds`` override), on SIGTERM /
  SIGINT / SIGHUP, on a ``stop`` request, and when a request carries another version
  or the machine was paired or unpaired since it started (it answers ``stand_down``
  first, and the hook starts a current daemon).
- **Warm**: the store is opened and the model loaded in a background thread right
  after the socket is bound; until then requests are answered ``warming_up`` (the
  hook goes direct) while pings already answer. If the store file is replaced or
  removed, the next request reopens it.
- **Extract jobs**: when :mod:`bli_memory.core.extraction.worker` exists and has
  ``drain(backend, *, max_jobs, worker_id)``, a background thread runs it every
  :data:`DRAIN_INTERVAL_S` and shortly after a stop hook was answered, off the
  request path.
- **No orphans**: the daemon starts no child process; it removes its socket on exit.

Its operational lines go to stderr (``[bli-memory] daemon <what> {json}``); the
prompt hook starts it with stdio on ``/dev/null``.
"""

from __future__ import annotations

import fcntl
import json
import os
import signal
import socket
import stat
import sys
import threading
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from bli_memory.core import paths
from bli_memory.core._version import VERSION
from bli_memory.core.daemon import client as daemon_client
from bli_memory.core.daemon import start as daemon_start
from bli_memory.core.private_files import make_private_dir

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
#: Extract jobs are drained this often when a worker module exists...
DRAIN_INTERVAL_S = 30.0
#: ...and this long after a stop hook was answered (its job was just queued).
DRAIN_AFTER_STOP_S = 1.0
#: Jobs per drain call, so one drain never runs for long.
DRAIN_MAX_JOBS = 16
#: How long a starting instance waits for a previous one that is standing down.
LOCK_WAIT_S = 10.0

_EVENTS = ("session-start", "prompt", "stop")

USAGE = """\
usage: bli-memory-mcp daemon [--idle-seconds N] | --status | --stop

Resident daemon that keeps the memory store and the embedding model warm and answers
the lifecycle hooks on a Unix socket (the prompt hook starts it for you).

  --idle-seconds N   exit after N seconds without a hook request (default 7200;
                     env BLI_MEMORY_DAEMON_IDLE_SECONDS)
  --status           print whether a daemon answers on the socket (JSON) and exit
  --stop             ask the running daemon to exit
"""


def _log(what: str, **fields: Any) -> None:
    try:
        body = json.dumps(fields, separators=(",", ":"), sort_keys=False, default=str)
        sys.stderr.write(f"[bli-memory] daemon {what} {body}\n")
        sys.stderr.flush()
    except (OSError, ValueError, AttributeError):
        pass


class _Refused(Exception):
    """The daemon cannot start here; ``reason`` names why (exit 1)."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


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
        self._ctx_lock = threading.Lock()
        self._base: Any = None  # HookContext of the warm backend
        self._store_id: tuple[int, int] | None = None
        self._pms: dict[str, Any] = {}
        self._active = 0
        self._active_lock = threading.Lock()
        self._threads: set[threading.Thread] = set()
        self._listener: socket.socket | None = None
        self._socket_ino: int | None = None
        self._lock_fd: int | None = None
        self.requests = 0

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
            says ``daemon_already_running``); 1 when the socket path is not ours.
        """
        try:
            if not self._acquire():
                return 0
            self._bind()
        except _Refused as exc:
            _log("refused", reason=exc.reason)
            self._release()
            return 1
        _log("started", pid=self.pid, version=VERSION, idle_seconds=self.idle_seconds)
        self._start_thread(self._warm, "daemon-warm")
        self._start_thread(self._drain_loop, "daemon-drain")
        try:
            self._serve()
        finally:
            self._shutdown()
        _log("stopped", reason=self.stop_reason, requests=self.requests)
        return 0

    def _start_thread(self, target: Any, name: str, *args: Any) -> threading.Thread:
        thread = threading.Thread(target=target, name=name, args=args, daemon=True)
        thread.start()
        return thread

    def _acquire(self) -> bool:
        """Take the per-user lock; False when another live daemon holds it."""
        folder = self.socket_path.parent
        try:
            make_private_dir(folder)
            st = os.lstat(folder)
        except OSError as exc:
            raise _Refused("state_dir_unavailable") from exc
        if not stat.S_ISDIR(st.st_mode) or st.st_uid != os.getuid():
            raise _Refused("socket_not_owned")
        if st.st_mode & 0o077:
            os.chmod(folder, 0o700)
        lock_path = folder / "memory-daemon.lock"
        try:
            fd = os.open(lock_path, os.O_RDWR | os.O_CREAT, 0o600)
        except OSError as exc:
            raise _Refused("state_dir_unavailable") from exc
        give_up = time.monotonic() + LOCK_WAIT_S
        while True:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                self._lock_fd = fd
                return True
            except OSError:
                pass
            other = self._ping_other()
            if other is not None and other.get("version") == VERSION:
                os.close(fd)
                _log("skipped", reason="daemon_already_running", pid=other.get("pid"))
                return False
            # Otherwise an older daemon is leaving, or the holder is still binding:
            # its lock is released or its socket answers in a moment.
            if time.monotonic() > give_up:
                os.close(fd)
                _log("skipped", reason="daemon_already_running", pid=None)
                return False
            time.sleep(0.05)

    def _ping_other(self) -> dict[str, Any] | None:
        """Ping the lock holder with our version: one of another version stands down.

        Returns:
            Its ping reply; ``{"stand_down": True}`` when it is leaving; None when
            nothing answers (it is still starting, or it just left).
        """
        try:
            return daemon_client.exchange(
                {"ping": True, "version": VERSION}, deadline=time.monotonic() + 0.5,
                path=self.socket_path, connect_budget=0.5,
            )
        except daemon_client.DaemonUnavailable as exc:
            return {"stand_down": True} if exc.reason == "stand_down" else None

    def _bind(self) -> None:
        path = self.socket_path
        try:
            st = os.lstat(path)
        except FileNotFoundError:
            st = None
        except OSError as exc:
            raise _Refused("state_dir_unavailable") from exc
        if st is not None:
            if st.st_uid != os.getuid():
                raise _Refused("socket_not_owned")
            if not stat.S_ISSOCK(st.st_mode):
                raise _Refused("socket_path_not_a_socket")
            # We hold the lock, so no daemon of ours listens there: a killed one left it.
            try:
                os.unlink(path)
            except FileNotFoundError:
                pass
            except OSError as exc:
                raise _Refused("stale_socket_not_removable") from exc
            _log("stale_socket_replaced")
        listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        old_umask = os.umask(0o177)
        try:
            with daemon_client.socket_address(path) as address:
                listener.bind(address)
        except OSError as exc:
            listener.close()
            raise _Refused("socket_bind_failed") from exc
        finally:
            os.umask(old_umask)
        os.chmod(path, 0o600)
        listener.listen(128)
        listener.settimeout(0.25)
        self._listener = listener
        self._socket_ino = os.lstat(path).st_ino

    def _serve(self) -> None:
        assert self._listener is not None
        while not self._stop.is_set():
            try:
                conn, _ = self._listener.accept()
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
        with self._active_lock:
            busy = self._active > 0
        if not busy and time.monotonic() - self.last_request > self.idle_seconds:
            self.request_stop("idle")

    def _shutdown(self) -> None:
        if self._listener is not None:
            try:
                self._listener.close()
            except OSError:
                pass
        try:
            if self._socket_ino is not None and os.lstat(self.socket_path).st_ino == self._socket_ino:
                os.unlink(self.socket_path)
        except OSError:
            pass
        give_up = time.monotonic() + 2.0
        for thread in list(self._threads):
            thread.join(max(0.0, give_up - time.monotonic()))
        self._drain_wake.set()
        base = self._base
        if base is not None:
            try:
                base.backend.close()
            except Exception:
                pass
        if self.stop_reason == "stop_requested":
            daemon_start.clear_ready()  # stopped on purpose: not restarted at once
        self._release()

    def _release(self) -> None:
        if self._lock_fd is not None:
            try:
                os.close(self._lock_fd)  # releases the flock
            except OSError:
                pass
            self._lock_fd = None

    # --- the warm context ----------------------------------------------------------

    def _pm(self, host: str) -> Any:
        """Plugin manager for ``host``, built once (unknown hosts share one full scan)."""
        from bli_memory.core.plugins import ENTRY_POINT_GROUP, own_entry_points

        key = host if host in own_entry_points(ENTRY_POINT_GROUP) else "*"
        pm = self._pms.get(key)
        if pm is None:
            from bli_memory.core.plugins import get_plugin_manager

            pm = get_plugin_manager(host=host if key != "*" else None)
            self._pms[key] = pm
        return pm

    def _store_identity(self, backend: Any) -> tuple[int, int] | None:
        path = backend.store_path
        if path is None:
            return None
        try:
            st = os.stat(path)
        except OSError:
            return None
        return (st.st_dev, st.st_ino)

    def _context(self, pm: Any) -> Any:
        """The warm :class:`HookContext` for ``pm``'s host, built on first need.

        Raises:
            BliMemoryError: the backend cannot be built or warmed (the request fails
                with that reason, as it would on the direct path; the next one retries).
        """
        from bli_memory.core.hooks.events import HookContext

        with self._ctx_lock:
            base = self._base
            if base is not None and self._store_id is not None:
                if self._store_identity(base.backend) != self._store_id:
                    # The store file was replaced or removed: never serve a ghost file.
                    base.backend.close()
                    base = self._base = None
            if base is None:
                base = HookContext.build(pm)
                base.backend.warm_up()
                self._base = base
                self._store_id = self._store_identity(base.backend)
        if base.pm is pm:
            return base
        return HookContext(pm=pm, settings=base.settings, backend=base.backend)

    def _warm(self) -> None:
        started = time.monotonic()
        try:
            self._context(self._pm("claude"))
            _log("ready", warm_ms=int((time.monotonic() - started) * 1000))
        except Exception as exc:  # the store may be unavailable now; requests retry
            from bli_memory.core.hooks.events import reason_of

            _log("warm_up_failed", reason=reason_of(exc))
        finally:
            self.last_request = time.monotonic()  # idle time counts from ready
            self._ready.set()
            daemon_start.mark_ready(self.pid)  # a hook restarts a daemon that ran, at once

    # --- extract jobs ------------------------------------------------------------------

    def _drain_loop(self) -> None:
        import importlib

        try:
            worker = importlib.import_module("bli_memory.core.extraction.worker")
        except ModuleNotFoundError as exc:
            if exc.name != "bli_memory.core.extraction.worker":
                _log("worker_unavailable", error=type(exc).__name__)
            return
        except Exception as exc:
            _log("worker_unavailable", error=type(exc).__name__)
            return
        drain = getattr(worker, "drain", None)
        if not callable(drain):
            return
        import inspect

        extra: dict[str, Any] = {}
        try:
            if "stop" in inspect.signature(drain).parameters:
                extra["stop"] = self._stop  # a stopping daemon claims no further job
        except (TypeError, ValueError):
            pass
        worker_id = f"daemon-{self.pid}"
        while not self._stop.is_set():
            woken = self._drain_wake.wait(DRAIN_INTERVAL_S)
            if self._stop.is_set():
                break
            if woken:
                self._drain_wake.clear()
                if self._stop.wait(DRAIN_AFTER_STOP_S):
                    break
            if not self._ready.is_set():
                continue
            try:
                ctx = self._context(self._pm("claude"))
                done = drain(ctx.backend, max_jobs=DRAIN_MAX_JOBS, worker_id=worker_id, **extra)
                if done:
                    _log("drained", jobs=done)
                self._ship_spool(ctx.backend)
            except Exception as exc:
                from bli_memory.core.hooks.events import reason_of

                _log("drain_failed", reason=reason_of(exc))

    def _ship_spool(self, backend: Any) -> None:
        """Send captures spooled while the team service was away (core/team/spool.py)."""
        from bli_memory.core.team.spool import ship_backlog

        sent = ship_backlog(backend)
        if sent is not None and (sent.shipped or sent.rejected):
            _log("spool_shipped", jobs=len(sent.shipped), rejected=sent.rejected, left=sent.left)

    # --- one connection ----------------------------------------------------------------

    def _refuse_quickly(self, conn: socket.socket, code: str) -> None:
        try:
            conn.settimeout(0.05)
            conn.sendall(self._line({"error": code}))
        except OSError:
            pass
        finally:
            conn.close()

    def _line(self, reply: dict[str, Any]) -> bytes:
        reply.setdefault("version", VERSION)
        reply.setdefault("pid", self.pid)
        return json.dumps(reply, ensure_ascii=True, separators=(",", ":")).encode("ascii") + b"\n"

    def _connection(self, conn: socket.socket) -> None:
        try:
            conn.settimeout(READ_TIMEOUT_S)
            line, error = self._read_request(conn)
            reply = {"error": error} if error else self._respond(line)
            conn.settimeout(READ_TIMEOUT_S)
            conn.sendall(self._line(reply))
        except OSError:
            pass  # the hook gave up (deadline) or went away: nothing to tell anyone
        except Exception as exc:  # never let one request take the daemon down
            _log("request_failed", error=type(exc).__name__)
            try:
                conn.sendall(self._line({"error": "internal"}))
            except OSError:
                pass
        finally:
            try:
                conn.close()
            except OSError:
                pass
            with self._active_lock:
                self._active -= 1

    @staticmethod
    def _read_request(conn: socket.socket) -> tuple[bytes, str | None]:
        buf = bytearray()
        while True:
            try:
                chunk = conn.recv(65536)
            except TimeoutError:
                return b"", "malformed"
            if not chunk:
                if len(buf) > daemon_client.MAX_LINE_BYTES:
                    return b"", "too_large"
                return bytes(buf), (None if buf.strip() else "malformed")
            buf += chunk
            end = buf.find(b"\n", len(buf) - len(chunk))
            if end > daemon_client.MAX_LINE_BYTES or (end < 0 and len(buf) > daemon_client.MAX_LINE_BYTES):
                return b"", "too_large"
            if end >= 0:
                return bytes(buf[:end]), None

    def _respond(self, line: bytes) -> dict[str, Any]:
        try:
            message = json.loads(line.decode("utf-8"))
        except (UnicodeDecodeError, ValueError, RecursionError):
            return {"error": "malformed"}
        if not isinstance(message, dict):
            return {"error": "malformed"}
        version = message.get("version")
        if version is not None and version != VERSION:
            _log("stand_down", caller_version=str(version)[:40])
            self.request_stop("stand_down")
            return {"error": "stand_down"}
        if message.get("ping") is True:
            return {"alive": True, "ready": self._ready.is_set(),
                    "uptime_s": int(time.monotonic() - self.started), "requests": self.requests}
        if message.get("stop") is True:
            self.request_stop("stop_requested")
            return {"stopping": True}
        return self._hook(message)

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
        if config != self.config:
            return {"error": "env_mismatch"}
        if paths.session_file_path(self.environ).exists() != self.paired:
            _log("stand_down", reason="pairing_changed")
            self.request_stop("stand_down")
            return {"error": "stand_down"}
        if not self._ready.is_set():
            return {"error": "warming_up"}
        self.last_request = time.monotonic()
        self.requests += 1

        from bli_memory.core.hooks.events import answer_hook, failed_answer, reason_of

        try:
            pm = self._pm(host)
        except Exception as exc:  # a broken third-party plugin: fail like the direct path
            answer = failed_answer(None, host, event, reason_of(exc))
        else:
            answer = answer_hook(
                pm, host=host, event=event, payload=payload,
                context=lambda: self._context(pm), cwd=cwd, environ=env,
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
    """Run ``bli-memory-mcp daemon [--idle-seconds N] | --status | --stop``.

    Returns:
        0 after serving (or when a daemon is already running, or for ``--status`` /
        ``--stop``); 1 when the socket path belongs to someone else; 2 on bad usage.
    """
    if any(a in ("-h", "--help") for a in argv):
        sys.stdout.write(USAGE)
        return 0
    if "--status" in argv:
        sys.stdout.write(json.dumps(daemon_client.status()) + "\n")
        return 0
    if "--stop" in argv:
        pid = daemon_client.stop()
        sys.stderr.write(f"[bli-memory] daemon {'stopping' if pid else 'not_running'} "
                         f"{json.dumps({'pid': pid})}\n")
        return 0
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
    _configure_logging()
    daemon = Daemon(socket_path=paths.daemon_socket_path(), idle_seconds=idle)
    for signum in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
        signal.signal(signum, lambda *_: daemon.request_stop("signal"))
    return daemon.run()


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main(sys.argv[1:]))
