"""The daemon's warm context: one backend (store and model) shared by every host's hooks.

Plugin managers are built once per host; the :class:`~bli_memory.core.hooks.events.HookContext`
of the backend is built on first need and rebuilt when the store file was replaced or
removed, so the daemon never serves a ghost file.

Two problems are told apart from passing ones (a busy store, which the next request
retries): settings that cannot build a backend (:func:`startup_problem`: an unknown
``BLI_MEMORY_EMBEDDER``, a model folder without its manifest), which keep the daemon from
starting at all, and a model that fails to load (:attr:`WarmContext.cannot_embed`), after
which the daemon leaves (docs/daemon.md, "A daemon that cannot work").
"""

from __future__ import annotations

import os
import threading
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from bli_memory.core.memory.backend import MemoryBackend

__all__ = ["WarmContext", "refuse_unusable_settings", "report_warm_up_problem", "startup_problem"]


def startup_problem() -> Any:
    """The error every request of a daemon started now would fail with, else None.

    Builds the backend the warm-up would build, without opening the store or loading
    the model: an unknown ``BLI_MEMORY_EMBEDDER`` or an invalid setting
    (``config_invalid``), or a model folder whose manifest is missing
    (``embedder_failed``). A store that cannot be opened now is not such a problem: the
    daemon starts and its requests retry.

    Returns:
        The :class:`~bli_memory.core.errors.ConfigError` or
        :class:`~bli_memory.core.errors.EmbedderError`, or None.
    """
    from bli_memory.core.defaults import DEFAULT_HOST
    from bli_memory.core.errors import ConfigError, EmbedderError
    from bli_memory.core.hooks.events import HookContext
    from bli_memory.core.plugins import get_plugin_manager

    try:
        HookContext.build(get_plugin_manager(host=DEFAULT_HOST)).backend.close()
    except (ConfigError, EmbedderError) as exc:
        return exc
    except Exception:  # a store or plugin problem: the daemon's requests retry it
        return None
    return None


def refuse_unusable_settings() -> bool:
    """Say so in one line on stderr and return True when the settings would fail every
    request (:func:`startup_problem`), as the MCP server refuses them: ``daemon`` and
    ``daemon --restart`` then exit 1 with nothing stopped or started."""
    import sys

    problem = startup_problem()
    if problem is not None:
        sys.stderr.write(f"[bli-memory] the daemon cannot start: {problem.reason}: {problem}\n")
    return problem is not None


def report_warm_up_problem(pid: object, *, since: float, until: float) -> bool:
    """For ``daemon --restart``: wait for the daemon ``pid``, started at the epoch seconds
    ``since``, to finish its warm-up (or leave), until the monotonic time ``until``.

    Returns:
        True, after one line on stderr (``daemon cannot embed: <reason>; fix ...``), when
        it recorded a problem (:func:`~bli_memory.core.hooks.daemon_start.mark_failed`);
        False when it is ready, or still warming up at ``until``.
    """
    import sys
    import time

    from bli_memory.core.hooks import daemon_client, daemon_start

    while time.monotonic() < until:
        try:
            pong: dict[str, Any] | None = daemon_client.ping(timeout=0.5)
        except daemon_client.DaemonUnavailable:
            pong = None
        if pong is None or pong.get("pid") != pid or pong.get("ready"):
            problem = daemon_start.last_problem(config=daemon_client.config_of(), since=since)
            if problem is not None:
                sys.stderr.write(f"[bli-memory] daemon {problem}; {daemon_client.PROBLEM_FIX}\n")
            return problem is not None
        time.sleep(0.1)
    return False


class WarmContext:
    """The warm backend and the per-host plugin managers of one daemon (thread-safe)."""

    def __init__(self) -> None:
        self._ctx_lock = threading.Lock()
        self._base: Any = None  # HookContext of the warm backend
        self._store_id: tuple[int, int] | None = None
        self._pms: dict[str, Any] = {}
        #: Why the model failed to load at the warm-up (the error's message), else None.
        #: The backend is kept: it still answers what needs no model (``memory_info``,
        #: listing, reading, forgetting) until the daemon has left.
        self.cannot_embed: str | None = None

    def pm(self, host: str) -> Any:
        """Plugin manager for ``host``, built once (unknown hosts share one full scan)."""
        from bli_memory.core.plugins import ENTRY_POINT_GROUP, own_entry_points

        key = host if host in own_entry_points(ENTRY_POINT_GROUP) else "*"
        pm = self._pms.get(key)
        if pm is None:
            from bli_memory.core.plugins import get_plugin_manager

            pm = get_plugin_manager(host=host if key != "*" else None)
            self._pms[key] = pm
        return pm

    def _store_identity(self, backend: MemoryBackend) -> tuple[int, int] | None:
        path = backend.store_path
        if path is None:
            return None
        try:
            st = os.stat(path)
        except OSError:
            return None
        return (st.st_dev, st.st_ino)

    def context(self, pm: Any) -> Any:
        """The warm :class:`HookContext` for ``pm``'s host, built on first need.

        A model that fails to load does not fail the context: the error is kept in
        :attr:`cannot_embed` and each embedding raises it again.

        Raises:
            BliMemoryError: the backend cannot be built or its store opened (the request
                fails with that reason, as it would on the direct path; the next one
                retries).
        """
        from bli_memory.core.errors import EmbedderError
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
                try:
                    base.backend.warm_up()
                except EmbedderError as exc:
                    self.cannot_embed = str(exc)
                self._base = base
                self._store_id = self._store_identity(base.backend)
        if base.pm is pm:
            return base
        return HookContext(pm=pm, settings=base.settings, backend=base.backend)

    def close(self) -> None:
        """Close the warm backend, if one was built (never raises)."""
        base = self._base
        if base is not None:
            try:
                base.backend.close()
            except Exception:
                pass
