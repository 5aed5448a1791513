"""The plugin seams of BLI Memory, as pluggy hook specifications, and the manager.

Three groups of hooks (see ``docs/plugin-hooks.md`` for one section per hook):

- **Host contract** (``host_*``): one plugin per agent host (Claude Code, Codex CLI,
  Gemini CLI, Hermes Agent) parses hook payloads, renders results, reads transcripts
  and plans config edits. Every ``host_*`` hook except :func:`host_info` takes
  ``host: str``, is ``firstresult`` and an adapter returns ``None`` for any host that
  is not its own. Host plugins are loaded from the entry-point group
  ``bli_memory.hosts``; the built-in adapters are registered the same way.
- **Memory backend** (``memory_backend``): returns the object that implements the
  memory tool contract (:class:`MemoryBackend`): the embedded SQLite engine, or the
  client of the memory service. The MCP server, the hooks and the daemon all call it;
  there is exactly one implementation of recall.
- **Extension points** (``register_*``): embedders, extractors and redaction rules are
  handed to a ``register`` callback, as in simonw/llm.

Importing this module costs only ``pluggy``; heavy types live under ``TYPE_CHECKING``.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

import pluggy

if TYPE_CHECKING:
    from bli_memory.core.models import (
        Exchange,
        ForgetResult,
        HookInput,
        HookResult,
        HostConfigPlan,
        HostStatus,
        Memory,
        Profile,
        RenderedOutput,
        SaveResult,
        SearchResult,
        UpdateResult,
    )
    from bli_memory.core.settings import Settings

__all__ = [
    "ENTRY_POINT_GROUP",
    "PROJECT_NAME",
    "MemoryBackend",
    "get_plugin_manager",
    "hookimpl",
    "hookspec",
    "register_core_plugins",
]

PROJECT_NAME = "bli_memory"
ENTRY_POINT_GROUP = "bli_memory.hosts"

hookspec = pluggy.HookspecMarker(PROJECT_NAME)
hookimpl = pluggy.HookimplMarker(PROJECT_NAME)


class MemoryBackend(Protocol):
    """The memory tool contract: what every store backend implements.

    ``space`` arguments are container tags; ``None`` is not accepted here (callers
    derive the space first). Every method raises
    :class:`~bli_memory.core.errors.BliMemoryError` subclasses, never a foreign
    exception.
    """

    def search(
        self, query: str, *, space: str, limit: int = 10, include_profile: bool = False
    ) -> SearchResult:
        """Search one space (and its aliases) by meaning, keyword and recency."""
        ...

    def save(
        self,
        content: str,
        *,
        space: str,
        custom_id: str | None = None,
        metadata: dict[str, Any] | None = None,
        source: str = "mcp",
        session_id: str | None = None,
        expires_at: str | None = None,
    ) -> SaveResult:
        """Remember ``content``; a ``custom_id`` upserts; identical live content is deduplicated."""
        ...

    def update(
        self, content: str, *, space: str, id: str | None = None, custom_id: str | None = None
    ) -> UpdateResult:
        """Replace a live memory's content, keeping the old version as history."""
        ...

    def forget(
        self,
        *,
        space: str,
        id: str | None = None,
        content: str | None = None,
        query: str | None = None,
    ) -> ForgetResult:
        """Tombstone a memory by id, by exact text, or by closest match (cosine >= 0.85)."""
        ...

    def profile(self, *, space: str, limit: int = 10) -> Profile:
        """Durable facts and recent context of a space, for session-start."""
        ...

    def term_frequencies(self, query: str, *, space: str) -> tuple[list[tuple[str, int]], int]:
        """``([(term, live memories holding it), ...], live memories)`` for the query's
        content terms, for the injection gate (:mod:`bli_memory.core.term_evidence`)."""
        ...

    def history(self, id: str) -> list[Memory]:
        """Every version of the memory ``id`` belongs to, newest first, tombstones included."""
        ...

    def enqueue_extract(
        self, text: str, *, space: str, source: str, session_id: str | None = None,
        job_id: str | None = None,
    ) -> str:
        """Queue raw text for extraction; returns the job id.

        ``job_id`` (a UUID the caller chose, :mod:`bli_memory.core.job_ids`) makes the
        call idempotent: a job of that id is queued once, and a retry answers the id.
        """
        ...

    def close(self) -> None:
        """Release connections and files."""
        ...


# ---------------------------------------------------------------------------------
# Host contract
# ---------------------------------------------------------------------------------


@hookspec
def host_info() -> dict[str, Any]:
    """Describe one host plugin.

    Called by the installer, ``status`` and the hook dispatcher to list hosts.

    Returns:
        ``{"name": str, "display_name": str, "events": {our_event: host_event, ...},
        "present": bool}``: ``events`` maps ``session-start``/``prompt``/``stop`` to the
        host's own event names; ``present`` says whether the host is installed on this
        machine. Every host plugin returns one; the results are collected.
    """


@hookspec(firstresult=True)
def host_parse_payload(host: str, event: str, payload: dict[str, Any]) -> HookInput | None:
    """Turn the JSON a host sent to a hook into a :class:`HookInput`.

    Args:
        host: Adapter name the hook was registered for (``claude``, ...).
        event: Our event name: ``session-start``, ``prompt`` or ``stop``.
        payload: The decoded JSON object from stdin.

    Returns:
        The normalised input, or ``None`` when ``host`` is not this plugin's.
        Stops at first non-None result.

    Raises:
        HookPayloadError: the payload is this host's but unusable (reason
            ``stdin_malformed``).
    """


@hookspec(firstresult=True)
def host_render(host: str, result: HookResult) -> RenderedOutput | None:
    """Render a hook's decision in the host's own output format.

    Args:
        host: Adapter name.
        result: What the hook decided (block to inject, outcome, reason).

    Returns:
        stdout text and exit code (always 0 for our hooks), or ``None`` when ``host`` is
        not this plugin's. Stops at first non-None result.
    """


@hookspec(firstresult=True)
def host_read_exchange(host: str, hook_input: HookInput, max_bytes: int) -> Exchange | None:
    """Read the last user/assistant exchange of the session.

    Args:
        host: Adapter name.
        hook_input: The parsed stop payload (transcript path, reply, ...).
        max_bytes: Read at most this many bytes from the end of the transcript.

    Returns:
        The exchange, or ``None`` when ``host`` is not this plugin's. Stops at first
        non-None result.

    Raises:
        HostError: reason ``no_transcript`` when there is nothing to read.
    """


@hookspec(firstresult=True)
def host_plan_config(
    host: str, contract: dict[str, Any], home: Path, uninstall: bool
) -> HostConfigPlan | None:
    """Plan the config edits that install (or remove) our server and hooks for a host.

    Args:
        host: Adapter name.
        contract: A validated ``bli-memory-install-config.v1`` with absolute commands.
        home: The home folder whose config files are edited.
        uninstall: Plan removal of exactly what install adds.

    Returns:
        The plan (files with old and new text), or ``None`` when ``host`` is not this
        plugin's. Stops at first non-None result.

    Raises:
        InstallConflict: an existing config file is malformed; nothing may be written.
    """


@hookspec(firstresult=True)
def host_status(host: str, contract: dict[str, Any], home: Path) -> HostStatus | None:
    """Report whether our server and hooks are installed, outdated or absent for a host.

    Returns:
        The status, or ``None`` when ``host`` is not this plugin's. Stops at first
        non-None result.
    """


@hookspec(firstresult=True)
def host_print_config(host: str, contract: dict[str, Any]) -> str | None:
    """Return the config block ``--print-config=<host>`` prints for a host.

    Returns:
        The text, or ``None`` when ``host`` is not this plugin's. Stops at first
        non-None result.
    """


# ---------------------------------------------------------------------------------
# Memory backend
# ---------------------------------------------------------------------------------


@hookspec(firstresult=True)
def memory_backend(settings: Settings) -> MemoryBackend | None:
    """Return the backend that implements the memory tool contract.

    Called once per process by the MCP server, the hook direct path and the daemon.

    Args:
        settings: The process's settings (remote URL, store path, ...).

    Returns:
        A :class:`MemoryBackend`, or ``None`` to let the next plugin decide (the
        embedded engine answers last). Stops at first non-None result.
    """


# ---------------------------------------------------------------------------------
# Extension points
# ---------------------------------------------------------------------------------


@hookspec
def register_embedders(register: Callable[[str, Callable[[], Any]], None]) -> None:
    """Register embedding models.

    Args:
        register: Call ``register(name, factory)``; ``factory()`` returns an object with
            ``name``, ``dimensions`` and ``embed(texts) -> float32 array (n, d)``.
    """


@hookspec
def register_extractors(register: Callable[[str, Callable[[], Any]], None]) -> None:
    """Register fact extractors (text -> atomic statements worth keeping).

    Args:
        register: Call ``register(name, factory)``.
    """


@hookspec
def register_redaction_rules(register: Callable[[Any], None]) -> None:
    """Register extra redaction rules, applied after the built-in ones.

    Args:
        register: Call ``register(rule)`` with a
            :class:`~bli_memory.core.redaction.RedactionRule`.
    """


# ---------------------------------------------------------------------------------
# The manager
# ---------------------------------------------------------------------------------

#: Core modules that are plugins themselves (like pytest's ``default_plugins``).
DEFAULT_PLUGINS: tuple[str, ...] = (
    "bli_memory.core.engine",
    "bli_memory.core.remote",
    "bli_memory.core.extraction",
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
    pm.add_hookspecs(sys.modules[__name__])
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
