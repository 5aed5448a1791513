"""The daemon's warm context: one backend (store and model) shared by every host's hooks.

Plugin managers are built once per host; the :class:`~bli_memory.core.hooks.events.HookContext`
of the backend is built on first need and rebuilt when the store file was replaced or
removed, so the daemon never serves a ghost file.
"""

from __future__ import annotations

import os
import threading
from typing import Any

__all__ = ["WarmContext"]


class WarmContext:
    """The warm backend and the per-host plugin managers of one daemon (thread-safe)."""

    def __init__(self) -> None:
        self._ctx_lock = threading.Lock()
        self._base: Any = None  # HookContext of the warm backend
        self._store_id: tuple[int, int] | None = None
        self._pms: dict[str, Any] = {}

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

    def _store_identity(self, backend: Any) -> tuple[int, int] | None:
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

    def close(self) -> None:
        """Close the warm backend, if one was built (never raises)."""
        base = self._base
        if base is not None:
            try:
                base.backend.close()
            except Exception:
                pass
