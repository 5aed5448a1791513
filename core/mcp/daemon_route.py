"""The MCP server's daemon route: answer every memory call through the resident daemon.

A host starts one MCP server per session, and each one that opened the store and
loaded the model itself held about 190 MB (docs/benchmarks.md, "MCP servers through the
daemon"). :class:`DaemonRoute` is a :class:`~bli_memory.core.memory.backend.MemoryBackend`
that sends each call to the one resident daemon of this user instead (the socket,
version check and config check of the hooks, :mod:`bli_memory.core.hooks.daemon_client`;
the call kind, :mod:`bli_memory.core.daemon.calls`), so the server process imports
neither numpy nor the model, and every write goes through the process that keeps the
warm caches. The tools do not know which route answered.

Rules:

- **Start**: when no daemon answers (no socket, or a stale one after ``kill -9``) the
  route starts one by the hooks' own rule (:func:`bli_memory.core.hooks.daemon_start.spawn`)
  and waits up to :data:`START_WAIT_S` for it to listen; a daemon still loading the
  model makes the call wait for it (up to ``CALL_READY_WAIT_S``) rather than load a
  second copy here.
- **Fallback**: any failure (no daemon and none to start, another version, another
  configuration, a timeout, a reply that is not a result, the daemon killed mid-call)
  makes that call run in process on the backend today's server would have used, with
  the same results and errors. The first call in process imports numpy and starts the
  server's extract drain, as the in-process server does at start.
- **Re-probing**: after a failure the next :data:`REPROBE_S` seconds of calls go in
  process (:data:`REPROBE_AFTER_TIMEOUT_S` after a timeout, so a hung daemon cannot cost
  every call its deadline); then the daemon is tried again, so a daemon started later
  is picked up.
- **Writes whose answer was lost** (the daemon died after committing, before replying)
  are run again in process: a save of the same text answers ``duplicate``, an update
  ``unchanged``, a queued extract job keeps the id the route chose for it (it is queued
  once); a forget answers ``not_found``.
- **Only the embedded store**: a server whose backend is the team service's client talks
  HTTP to the service itself and never takes this route (:func:`eligible`).
"""

from __future__ import annotations

import os
import sys
import threading
import time
from collections.abc import Callable, Iterable, Mapping
from typing import TYPE_CHECKING, Any, Literal, cast

from bli_memory.core import paths
from bli_memory.core._version import VERSION
from bli_memory.core.hooks import daemon_client
from bli_memory.core.memory import backend_wire

if TYPE_CHECKING:
    from pathlib import Path

    from bli_memory.core.memory.backend import MemoryBackend
    from bli_memory.core.models import (
        ForgetResult,
        Memory,
        Profile,
        SaveResult,
        SearchResult,
        UpdateResult,
    )

__all__ = [
    "CALL_TIMEOUT_S",
    "CONNECT_BUDGET_S",
    "REPROBE_AFTER_TIMEOUT_S",
    "REPROBE_S",
    "START_WAIT_S",
    "DaemonRoute",
    "eligible",
]

#: Seconds to connect to the daemon's socket (a local socket connects at once; the
#: hook's 50 ms budget is for a 2 s deadline an MCP call does not have).
CONNECT_BUDGET_S = 1.0
#: Seconds for a call's answer: the daemon's wait for its warm-up (20 s) plus the call.
CALL_TIMEOUT_S = 60.0
#: Seconds for ``audit`` (a repair re-embeds every broken row), as for the service.
AUDIT_TIMEOUT_S = 300.0
#: Seconds to wait for a daemon this route (or a hook) just started to listen.
START_WAIT_S = 15.0
#: Calls go in process for this long after a failure, then the daemon is tried again.
REPROBE_S = 2.0
#: The same after a call timed out (a hung daemon must not cost every call its timeout).
REPROBE_AFTER_TIMEOUT_S = 60.0

#: Failures after which a daemon is started (the hooks' rule decides whether it may be).
_STARTABLE = frozenset({"no_socket", "stale_socket", "stand_down"})
_FORCED = frozenset({"stale_socket", "stand_down"})


def eligible(backend: MemoryBackend, environ: Mapping[str, str] | None = None) -> bool:
    """Whether an MCP server with ``backend`` answers through the daemon.

    True when the daemon is not switched off (``BLI_MEMORY_DAEMON=0``) and the backend
    keeps a local store (the embedded SQLite file); the team service's client keeps
    none (``store_path`` is None).
    """
    return daemon_client.enabled(environ) and backend.store_path is not None


class DaemonRoute:
    """A :class:`MemoryBackend` answering through the resident daemon, else in process.

    Args:
        local: The backend this process would use on its own (built, never opened
            until a call falls back).
        environ: The server's environment (default ``os.environ``): its socket path and
            the configuration the daemon must share.
        on_local: Called once, after the first call that runs in process (the server
            starts its extract drain then).

    Attributes:
        last_route: ``daemon`` or ``in-process``: which route answered the last call
            (None before the first).
        last_reason: Why the last call ran in process (a
            :data:`bli_memory.core.hooks.daemon_client.REASONS` code), or None.
        daemon_pid: Pid of the daemon that answered last.

    Thread-safe: tools call it from worker threads.
    """

    spool_captures = False

    def __init__(self, local: MemoryBackend, *, environ: Mapping[str, str] | None = None,
                 on_local: Callable[[], None] | None = None) -> None:
        self.local = local
        self.on_local = on_local
        self._environ = dict(os.environ if environ is None else environ)
        self._config = daemon_client.config_of(self._environ)
        self._socket: Path = paths.daemon_socket_path(self._environ)
        self._lock = threading.Lock()
        self._local_ready = False
        self._retry_at = 0.0
        self._started_at: float | None = None
        self.last_route: Literal["daemon", "in-process"] | None = None
        self.last_reason: str | None = None
        self.daemon_pid: int | None = None

    def __repr__(self) -> str:
        return f"DaemonRoute({self.local!r})"

    # --- the route -------------------------------------------------------------------

    def _start(self, reason: str) -> bool:
        """Start a daemon (hooks' rule) and wait for it to listen; True when one does."""
        now = time.monotonic()
        spawned = daemon_client.spawn(force=reason in _FORCED, environ=self._environ)
        if spawned:
            self._started_at = now
        elif self._started_at is None or now - self._started_at > START_WAIT_S:
            return False  # none started, and none of ours is on its way
        if reason == "stand_down":
            time.sleep(0.2)  # let the old daemon leave its lock before the new one takes it
        give_up = (self._started_at or now) + START_WAIT_S
        while time.monotonic() < give_up:
            try:
                daemon_client.ping(self._socket, timeout=0.5)
                return True
            except daemon_client.DaemonUnavailable:
                time.sleep(0.05)
        return False

    def _ask(self, name: str, kwargs: dict[str, Any]) -> tuple[bool, Any]:
        """``(True, reply)`` from the daemon, or ``(False, None)`` to answer in process."""
        if time.monotonic() < self._retry_at:
            return False, None
        message = {"call": name, "args": kwargs, "version": VERSION, "config": self._config}
        timeout = AUDIT_TIMEOUT_S if name == "audit" else CALL_TIMEOUT_S
        for attempt in (1, 2):
            try:
                reply = daemon_client.exchange(
                    message, deadline=time.monotonic() + timeout, path=self._socket,
                    connect_budget=CONNECT_BUDGET_S)
            except daemon_client.DaemonUnavailable as exc:
                if attempt == 1 and exc.reason in _STARTABLE and self._start(exc.reason):
                    continue
                self._fell_back(exc.reason)
                return False, None
            except Exception:  # never let the route cost the person their answer
                self._fell_back("unreachable")
                return False, None
            if "result" not in reply and "raised" not in reply:
                self._fell_back("bad_reply")
                return False, None
            return True, reply
        return False, None  # pragma: no cover - the loop always returns

    def _fell_back(self, reason: str) -> None:
        # A hung daemon, or one of a later release than this server: neither answers soon.
        pause = REPROBE_AFTER_TIMEOUT_S if reason in ("reply_timeout", "outdated_caller") else REPROBE_S
        self._retry_at = time.monotonic() + pause
        if self.last_route != "in-process" or self.last_reason != reason:
            _log("in-process", reason=reason)
        self.last_reason = reason

    def _use_local(self) -> MemoryBackend:
        first = False
        with self._lock:
            if not self._local_ready:
                # One thread imports numpy (two at once can get a half-initialised module).
                import numpy  # noqa: F401

                self._local_ready = first = True
        if first and self.on_local is not None:
            self.on_local()
        return self.local

    def _route(self, name: str, kwargs: dict[str, Any]) -> Any:
        answered, reply = self._ask(name, kwargs)
        if answered:
            if "raised" in reply:
                self._answered_by_daemon(reply)
                raise backend_wire.decode_error(reply["raised"])
            try:
                value = backend_wire.decode_result(name, reply["result"])
            except (KeyError, TypeError, ValueError, IndexError):
                self._fell_back("bad_reply")
            else:
                self._answered_by_daemon(reply)
                return value
        local = self._use_local()
        self.last_route = "in-process"
        return getattr(local, name)(**kwargs)

    def _answered_by_daemon(self, reply: dict[str, Any]) -> None:
        pid = reply.get("pid")
        if self.last_route != "daemon":
            _log("daemon", pid=pid)
        self.last_route, self.last_reason = "daemon", None
        self.daemon_pid = pid if isinstance(pid, int) else None

    def daemon_status(self) -> dict[str, Any] | None:
        """``{"pid", "version", "rssBytes"}`` of the daemon that answers, or None when none does."""
        try:
            reply = daemon_client.ping(self._socket)
        except daemon_client.DaemonUnavailable:
            return None
        rss = reply.get("rss_bytes")
        return {"pid": reply.get("pid"), "version": reply.get("version"),
                "rssBytes": rss if isinstance(rss, int) else None}

    # --- the process around it ---------------------------------------------------------

    @property
    def store_path(self) -> Path | None:
        """The embedded store's file (the daemon and this process open the same one)."""
        return self.local.store_path

    def warm_up(self) -> None:
        """Reach the daemon now, starting one if none answers; warm in process only
        when no daemon can be had (so the first call is as fast as in-process)."""
        try:
            daemon_client.ping(self._socket)
            return
        except daemon_client.DaemonUnavailable as exc:
            if exc.reason in _STARTABLE and self._start(exc.reason):
                return
            self._fell_back(exc.reason)
        self._use_local().warm_up()

    def close(self) -> None:
        """Close the in-process backend (the daemon keeps running for the others)."""
        self.local.close()

    # --- the contract, through the route ------------------------------------------

    def search(self, query: str, *, space: str, limit: int = 10,
               include_profile: bool = False) -> SearchResult:
        """See :meth:`MemoryBackend.search`."""
        args = {"query": query, "space": space, "limit": limit, "include_profile": include_profile}
        return cast("SearchResult", self._route("search", args))

    def save(self, content: str, *, space: str, custom_id: str | None = None,
             metadata: dict[str, Any] | None = None, source: str = "mcp",
             session_id: str | None = None, expires_at: str | None = None) -> SaveResult:
        """See :meth:`MemoryBackend.save`."""
        args = {"content": content, "space": space, "custom_id": custom_id, "metadata": metadata,
                "source": source, "session_id": session_id, "expires_at": expires_at}
        return cast("SaveResult", self._route("save", args))

    def update(self, content: str, *, space: str, id: str | None = None,
               custom_id: str | None = None) -> UpdateResult:
        """See :meth:`MemoryBackend.update`."""
        args = {"content": content, "space": space, "id": id, "custom_id": custom_id}
        return cast("UpdateResult", self._route("update", args))

    def forget(self, *, space: str, id: str | None = None, content: str | None = None,
               query: str | None = None) -> ForgetResult:
        """See :meth:`MemoryBackend.forget`."""
        args = {"space": space, "id": id, "content": content, "query": query}
        return cast("ForgetResult", self._route("forget", args))

    def profile(self, *, space: str, limit: int = 10) -> Profile:
        """See :meth:`MemoryBackend.profile`."""
        return cast("Profile", self._route("profile", {"space": space, "limit": limit}))

    def term_frequencies(self, query: str, *, space: str) -> tuple[list[tuple[str, int]], int]:
        """See :meth:`MemoryBackend.term_frequencies`."""
        args = {"query": query, "space": space}
        return cast("tuple[list[tuple[str, int]], int]", self._route("term_frequencies", args))

    def history(self, id: str) -> list[Memory]:
        """See :meth:`MemoryBackend.history`."""
        return cast("list[Memory]", self._route("history", {"id": id}))

    def enqueue_extract(self, text: str, *, space: str, source: str, session_id: str | None = None,
                        job_id: str | None = None) -> str:
        """See :meth:`MemoryBackend.enqueue_extract`; the route chooses the job id when the
        caller gave none, so a call run again after a lost answer queues one job."""
        from bli_memory.core.extraction.job_ids import new_job_id

        args = {"text": text, "space": space, "source": source, "session_id": session_id,
                "job_id": job_id or new_job_id()}
        return cast("str", self._route("enqueue_extract", args))

    def record_turn(self, text: str, *, space: str, source: str, session_id: str | None = None) -> str:
        """See :meth:`MemoryBackend.record_turn`."""
        args = {"text": text, "space": space, "source": source, "session_id": session_id}
        return cast("str", self._route("record_turn", args))

    def info(self, *, space: str) -> dict[str, Any]:
        """See :meth:`MemoryBackend.info`."""
        return cast("dict[str, Any]", self._route("info", {"space": space}))

    def list_memories(self, *, space: str, limit: int = 20) -> list[Memory]:
        """See :meth:`MemoryBackend.list_memories`."""
        return cast("list[Memory]", self._route("list_memories", {"space": space, "limit": limit}))

    def get_memory(self, id: str, *, include_inactive: bool = False) -> tuple[Memory, list[Memory]]:
        """See :meth:`MemoryBackend.get_memory`."""
        args = {"id": id, "include_inactive": include_inactive}
        return cast("tuple[Memory, list[Memory]]", self._route("get_memory", args))

    def audit(self, *, repair: bool = False) -> dict[str, Any]:
        """See :meth:`MemoryBackend.audit`."""
        return cast("dict[str, Any]", self._route("audit", {"repair": repair}))

    def purge(self, id: str) -> int:
        """See :meth:`MemoryBackend.purge`."""
        return cast("int", self._route("purge", {"id": id}))

    def recordings(self, *, space: str, limit: int = 20) -> list[dict[str, Any]]:
        """See :meth:`MemoryBackend.recordings`."""
        return cast("list[dict[str, Any]]", self._route("recordings", {"space": space, "limit": limit}))

    def clear_recordings(self, *, space: str) -> int:
        """See :meth:`MemoryBackend.clear_recordings`."""
        return cast("int", self._route("clear_recordings", {"space": space}))

    def export(self, *, space: str | None = None) -> Iterable[dict[str, Any]]:
        """See :meth:`MemoryBackend.export`; always in process (bulk, not an MCP tool)."""
        return self._use_local().export(space=space)

    def import_records(self, records: list[dict[str, Any]]) -> dict[str, int]:
        """See :meth:`MemoryBackend.import_records`; always in process (bulk, not an MCP tool)."""
        return self._use_local().import_records(records)


def _log(route: str, **fields: Any) -> None:
    """One operational line on stderr when the route changes (docs/logging.md)."""
    import json

    try:
        sys.stderr.write(f"[bli-memory] mcp route {route} {json.dumps(fields)}\n")
        sys.stderr.flush()
    except (OSError, ValueError):
        pass
