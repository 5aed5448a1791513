"""The plugin manager: every hook specification, the core plugins, the host plugins and the rest.

The specifications live in :mod:`bli_memory.core.hookspecs`; this module builds the
:class:`pluggy.PluginManager` that holds them. Plugins come from two entry-point groups
(setuptools ``[project.entry-points]``):

- :data:`ENTRY_POINT_GROUP` (``bli_memory.hosts``): one adapter per agent host. core
  holds no table of hosts: a host is an adapter module plus one entry point.
- :data:`PLUGIN_ENTRY_POINT_GROUP` (``bli_memory.plugins``): everything else, such as
  the installer's commands (``register_commands``) and doctor checks.

Importing this module costs only ``pluggy``.
"""

from __future__ import annotations

import os
import sys
import weakref
from typing import TYPE_CHECKING

import pluggy

from bli_memory.core import hookspecs
from bli_memory.core.hookspecs import PROJECT_NAME

if TYPE_CHECKING:
    from bli_memory.core.memory.backend import MemoryBackend
    from bli_memory.core.settings import Settings

__all__ = [
    "DEFAULT_PLUGINS",
    "DISTRIBUTION",
    "ENTRY_POINT_GROUP",
    "PLUGIN_ENTRY_POINT_GROUP",
    "active_plugin_manager",
    "build_backend",
    "get_plugin_manager",
    "host_names",
    "load_entry_points",
    "own_entry_points",
    "register_core_plugins",
]

ENTRY_POINT_GROUP = "bli_memory.hosts"
PLUGIN_ENTRY_POINT_GROUP = "bli_memory.plugins"

#: The distribution whose entry points the hook's fast path reads (``pyproject.toml``).
DISTRIBUTION = "bli-memory-mcp"


# ---------------------------------------------------------------------------------
# Our own entry points, without importlib.metadata
# ---------------------------------------------------------------------------------

_OWN: dict[str, dict[str, str]] | None = None


def _dist_info_dir() -> str | None:
    """The ``<name>-<version>.dist-info`` folder of :data:`DISTRIBUTION` on ``sys.path``."""
    prefix = DISTRIBUTION.replace("-", "_") + "-"
    for entry in sys.path:
        try:
            names = os.listdir(entry or ".")
        except OSError:
            continue
        for name in names:
            if name.startswith(prefix) and name.endswith(".dist-info"):
                return os.path.join(entry or ".", name)
    return None


def own_entry_points(group: str) -> dict[str, str]:
    """``{name: object reference}`` of our distribution's entry points in ``group``.

    Read from the installed ``entry_points.txt`` (the PyPA entry points specification:
    ini-style, ``[group]`` headers and ``name = module[:attr]`` lines), not through
    :mod:`importlib.metadata`: importing that module and scanning every installed
    distribution costs tens to hundreds of milliseconds, and the hook entry runs on every
    prompt. ``{}`` when the distribution is not installed (a source tree on ``PYTHONPATH``).
    """
    global _OWN
    if _OWN is None:
        groups: dict[str, dict[str, str]] = {}
        folder = _dist_info_dir()
        text = ""
        if folder is not None:
            try:
                with open(os.path.join(folder, "entry_points.txt"), encoding="utf-8") as f:
                    text = f.read()
            except OSError:
                text = ""
        current: dict[str, str] | None = None
        for raw in text.splitlines():
            line = raw.strip()
            if not line or line[0] in "#;":
                continue
            if line.startswith("[") and line.endswith("]"):
                current = groups.setdefault(line[1:-1].strip(), {})
            elif current is not None and "=" in line:
                name, _, value = line.partition("=")
                current[name.strip()] = value.strip()
        _OWN = groups
    return dict(_OWN.get(group, {}))


# ---------------------------------------------------------------------------------
# The manager
# ---------------------------------------------------------------------------------

#: Core modules that are plugins themselves (like pytest's ``default_plugins``).
DEFAULT_PLUGINS: tuple[str, ...] = (
    "bli_memory.core.embedded.engine",
    "bli_memory.core.team.client.remote",
    "bli_memory.core.extraction.extractors",
)

_ACTIVE: pluggy.PluginManager | None = None
#: Managers built on the hook's fast path, whose ``bli_memory.plugins`` are loaded only
#: when the run reaches the backend (:func:`register_core_plugins`).
_DEFERRED: weakref.WeakSet[pluggy.PluginManager] = weakref.WeakSet()


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
    if pm in _DEFERRED:
        # The hook's fast path skipped the other plugins; a run that reaches the backend
        # needs them (a redaction rule plugin must mask what the stop hook queues).
        _DEFERRED.discard(pm)
        load_entry_points(pm, PLUGIN_ENTRY_POINT_GROUP)
    return pm


def load_entry_points(pm: pluggy.PluginManager, group: str) -> list[str]:
    """Register every plugin of the entry-point ``group``; returns the names of those skipped.

    A plugin that fails to import (or whose name is taken) is skipped with one line on
    stderr, rather than taking every other plugin down with it, as
    :meth:`pluggy.PluginManager.load_setuptools_entrypoints` would: one broken
    third-party package must not stop the MCP server, the installer or a hook.
    """
    from importlib import metadata

    skipped: list[str] = []
    for dist in list(metadata.distributions()):
        for ep in dist.entry_points:
            if ep.group != group or pm.is_blocked(ep.name):
                continue
            if pm.get_plugin(ep.name) is not None:
                if pm.get_plugin(ep.name) is not sys.modules.get(ep.value.partition(":")[0]):
                    sys.stderr.write(f"[bli-memory] plugin {ep.name!r} ({ep.value}) not loaded: "
                                     "another plugin has that name\n")
                    skipped.append(ep.name)
                continue
            try:
                plugin = ep.load()
                pm.register(plugin, name=ep.name)
            except Exception as exc:  # a broken plugin is skipped, never fatal
                sys.stderr.write(f"[bli-memory] plugin {ep.name!r} ({ep.value}) not loaded: "
                                 f"{type(exc).__name__}: {exc}\n")
                skipped.append(ep.name)
    return skipped


def get_plugin_manager(
    *, load_entrypoints: bool = True, host: str | None = None, core_plugins: bool = True
) -> pluggy.PluginManager:
    """Build a plugin manager with every spec, the core plugins and the installed plugins.

    The manager built last is the process's :func:`active_plugin_manager`, whose
    ``register_redaction_rules`` plugins every redaction applies.

    Args:
        load_entrypoints: Load the ``bli_memory.hosts`` and ``bli_memory.plugins`` entry
            points (built-in adapters and the installer included). Tests pass ``False``
            and register throwaway plugins.
        host: When only this host's adapter is needed (the hook entry point), the
            adapter our distribution declares for it is imported directly, with no
            scan of the installed distributions for hosts; the ``bli_memory.plugins``
            are loaded with the core plugins (at once, or when the hook's run reaches
            the backend). A host our distribution does not declare falls back to the
            full scan.
        core_plugins: Register :data:`DEFAULT_PLUGINS` now. The hook entry passes
            ``False`` and calls :func:`register_core_plugins` when the run reaches
            the backend.

    Returns:
        A fresh :class:`pluggy.PluginManager`; ``BLI_MEMORY_TRACE_PLUGINS=1`` prints
        every hook call and result to stderr.
    """
    import importlib

    global _ACTIVE
    pm = pluggy.PluginManager(PROJECT_NAME)
    pm.add_hookspecs(hookspecs)
    if core_plugins:
        register_core_plugins(pm)
    if load_entrypoints:
        module = own_entry_points(ENTRY_POINT_GROUP).get(host or "")
        if host is not None and module is not None:
            pm.register(importlib.import_module(module.partition(":")[0]), name=host)
            if core_plugins:
                load_entry_points(pm, PLUGIN_ENTRY_POINT_GROUP)
            else:
                _DEFERRED.add(pm)
        else:
            load_entry_points(pm, ENTRY_POINT_GROUP)
            load_entry_points(pm, PLUGIN_ENTRY_POINT_GROUP)
    pm.check_pending()
    if os.environ.get("BLI_MEMORY_TRACE_PLUGINS", "") not in ("", "0"):
        pm.trace.root.setwriter(lambda msg: sys.stderr.write(msg))
        pm.enable_tracing()
    _ACTIVE = pm
    return pm


def active_plugin_manager() -> pluggy.PluginManager | None:
    """The manager :func:`get_plugin_manager` built last in this process (kept alive here:
    the MCP server builds one at start and redacts with its rule plugins for its lifetime)."""
    return _ACTIVE


def build_backend(pm: pluggy.PluginManager, settings: Settings) -> MemoryBackend:
    """The backend ``pm``'s ``memory_backend`` plugins choose, built with ``pm`` itself.

    The manager is handed to the hook, so a backend loads embedders and extractors
    from the caller's plugins, not from a second manager that never saw them.

    Raises:
        ConfigError: no plugin offers a backend (no core plugins registered), or the
            configured embedder is not registered.
    """
    backend = pm.hook.memory_backend(settings=settings, plugin_manager=pm)
    if backend is None:
        from bli_memory.core.errors import ConfigError

        raise ConfigError("no plugin offers a memory backend (the core plugins are not registered)")
    return backend  # type: ignore[no-any-return]


def host_names(pm: pluggy.PluginManager) -> list[str]:
    """The names of the host plugins registered on ``pm``, sorted (for help texts)."""
    return sorted(str(info["name"]) for info in pm.hook.host_info())
