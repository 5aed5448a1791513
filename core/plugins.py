"""The plugin manager: every hook specification, the core plugins and the host plugins.

The specifications live in :mod:`bli_memory.core.hookspecs`; this module builds the
:class:`pluggy.PluginManager` that holds them. Importing it costs only ``pluggy``.
"""

from __future__ import annotations

import os
import sys

import pluggy

from bli_memory.core import hookspecs
from bli_memory.core.hookspecs import PROJECT_NAME

__all__ = [
    "DEFAULT_PLUGINS",
    "ENTRY_POINT_GROUP",
    "get_plugin_manager",
    "register_core_plugins",
]

ENTRY_POINT_GROUP = "bli_memory.hosts"


# ---------------------------------------------------------------------------------
# The manager
# ---------------------------------------------------------------------------------

#: Core modules that are plugins themselves (like pytest's ``default_plugins``).
DEFAULT_PLUGINS: tuple[str, ...] = (
    "bli_memory.core.embedded.engine",
    "bli_memory.core.team.remote",
    "bli_memory.core.extraction.extractors",
)


def register_core_plugins(pm: pluggy.PluginManager) -> pluggy.PluginManager:
    """Register :data:`DEFAULT_PLUGINS` on ``pm`` (those not registered yet); returns ``pm``.

    Importing them imports the engine, the remote client and the extractors, so the
    hook entry calls this only once a run needs the backend: a skipped prompt never
    pays for them (docs/benchmarks-hooks.md, "What a skipped prompt imports").
    """
    import importlib

    for name in DEFAULT_PLUGINS:
        if pm.get_plugin(name) is None:
            pm.register(importlib.import_module(name), name=name)
    return pm


def get_plugin_manager(
    *, load_entrypoints: bool = True, host: str | None = None, core_plugins: bool = True
) -> pluggy.PluginManager:
    """Build a plugin manager with every spec, the core plugins and the host plugins.

    Args:
        load_entrypoints: Load the ``bli_memory.hosts`` entry points (built-in adapters
            included). Tests pass ``False`` and register throwaway plugins.
        host: When only this host's adapter is needed (the hook entry point), a
            built-in adapter is registered directly and the entry-point scan is skipped;
            an unknown name falls back to the scan.
        core_plugins: Register :data:`DEFAULT_PLUGINS` now. The hook entry passes
            ``False`` and calls :func:`register_core_plugins` when the run reaches
            the backend.

    Returns:
        A fresh :class:`pluggy.PluginManager`; ``BLI_MEMORY_TRACE_PLUGINS=1`` prints
        every hook call and result to stderr.
    """
    import importlib

    pm = pluggy.PluginManager(PROJECT_NAME)
    pm.add_hookspecs(hookspecs)
    if core_plugins:
        register_core_plugins(pm)
    if load_entrypoints:
        from bli_memory.adapters import BUILTIN_HOSTS

        if host is not None and host in BUILTIN_HOSTS:
            pm.register(importlib.import_module(BUILTIN_HOSTS[host]), name=host)
        else:
            pm.load_setuptools_entrypoints(ENTRY_POINT_GROUP)
    pm.check_pending()
    if os.environ.get("BLI_MEMORY_TRACE_PLUGINS", "") not in ("", "0"):
        pm.trace.root.setwriter(lambda msg: sys.stderr.write(msg))
        pm.enable_tracing()
    return pm
