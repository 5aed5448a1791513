"""The plugin seams of BLI Memory, as pluggy hook specifications.

Four groups of hooks (see ``docs/plugin-hooks.md`` for one section per hook):

- **Host contract** (``host_*``): one plugin per agent host parses hook payloads,
  renders results, reads transcripts and plans config edits. Every ``host_*`` hook
  except :func:`host_info` takes ``host: str``, is ``firstresult`` and an adapter
  returns ``None`` for any host that is not its own. Host plugins are loaded from the
  entry-point group ``bli_memory.hosts``; the built-in adapters are registered the same way.
- **Memory backend** (``memory_backend``): returns the object that implements the
  memory tool contract (:class:`~bli_memory.core.memory.backend.MemoryBackend`): the
  embedded SQLite engine, or the client of the memory service.
- **Extension points** (``register_*``): embedders, extractors and redaction rules are
  handed to a ``register`` callback, as in simonw/llm.
- **Commands** (``register_commands``, ``doctor_checks``): command-line commands and
  ``cockpit doctor`` rows a plugin adds (the installer, loaded from the entry-point
  group ``bli_memory.plugins``), so core imports neither installers nor adapters.

Importing this module costs only ``pluggy``; heavy types live under ``TYPE_CHECKING``.
The manager that loads them is :mod:`bli_memory.core.plugins`.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pluggy

if TYPE_CHECKING:
    from bli_memory.core.headless import (
        HeadlessAnswer,
        HeadlessCommand,
        HeadlessInfo,
        HeadlessRequest,
        HeadlessRun,
    )
    from bli_memory.core.memory.backend import MemoryBackend
    from bli_memory.core.models import (
        AdjustedPlan,
        Exchange,
        HookInput,
        HookResult,
        HostConfigPlan,
        HostConventions,
        HostStatus,
        InstallOption,
        RenderedOutput,
    )
    from bli_memory.core.settings import Settings

__all__ = ["PROJECT_NAME", "hookimpl", "hookspec"]

PROJECT_NAME = "bli_memory"

hookspec = pluggy.HookspecMarker(PROJECT_NAME)
hookimpl = pluggy.HookimplMarker(PROJECT_NAME)


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
    raise NotImplementedError  # a spec: pluggy calls the implementations, never this body


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


@hookspec
def host_install_options() -> list[InstallOption]:
    """Declare the extra flags ``install`` offers for this plugin's host.

    Called by the installer when it builds ``install``'s parser; results are collected
    in plugin order, which is the order of the flags in ``install --help``. A value given
    reaches :func:`host_adjust_plan` under the option's ``flag``.

    Returns:
        The options (often ``[]``).
    """
    raise NotImplementedError  # a spec: pluggy calls the implementations, never this body


@hookspec(firstresult=True)
def host_adjust_plan(
    host: str, plan: HostConfigPlan, options: dict[str, Any], home: Path, uninstall: bool
) -> AdjustedPlan | None:
    """Add a host's optional edits to its install or uninstall plan.

    Called by the installer for every host it plans, after :func:`host_plan_config`.

    Args:
        host: Adapter name.
        plan: The host's plan from :func:`host_plan_config`.
        options: ``{flag: value}`` of every option from :func:`host_install_options`
            (``None`` when not given); ``{}`` for uninstall.
        home: The home folder whose config files are edited.
        uninstall: The plan removes; take away what the options once added.

    Returns:
        The adjusted plan (and what to run once it is written), or ``None`` when ``host``
        is not this plugin's or there is nothing to add. Stops at first non-None result.

    Raises:
        ConfigError: an option's value is unusable.
        InstallConflict: a file the edits touch is malformed; nothing may be written.
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


@hookspec(firstresult=True)
def host_headless_command(host: str, request: HeadlessRequest) -> HeadlessCommand | None:
    """How the host's own CLI runs one headless request for the ``host`` extractor.

    The command must run with no tools, no MCP servers, no hooks and no session kept,
    and print JSON; it runs in ``request.workdir`` (an empty temporary folder) with
    ``BLI_MEMORY_HOOKS_OFF=1`` set (:mod:`bli_memory.core.headless`). Check the flags
    against the CLI's ``--help`` at the version CI pins.

    Returns:
        The command, or ``None`` when ``host`` is not this plugin's (or its CLI cannot
        run headless). Stops at first non-None result.
    """


@hookspec(firstresult=True)
def host_headless_answer(host: str, run: HeadlessRun) -> HeadlessAnswer | None:
    """Read the answer and the reported spend from a finished headless request.

    Also called after a request that was killed or never started (``returncode`` -9, no
    output), whose answer is not used: the plugin removes what its CLI kept of the request
    either way (Gemini CLI's chat log of the digest).

    Returns:
        The answer (``error`` set to a reason of
        :data:`~bli_memory.core.headless.HEADLESS_FAILURES` when the run failed), or
        ``None`` when ``host`` is not this plugin's. Stops at first non-None result.
    """


@hookspec(firstresult=True)
def host_headless_info(host: str, home: Path) -> HeadlessInfo | None:
    """Name the CLI, default model, provider and account a headless request would use.

    Args:
        host: Adapter name.
        home: The home folder whose host login is read (never written).

    Returns:
        The description, or ``None`` when ``host`` is not this plugin's. Stops at first
        non-None result.
    """


# ---------------------------------------------------------------------------------
# Memory backend
# ---------------------------------------------------------------------------------


@hookspec(firstresult=True)
def memory_backend(settings: Settings, plugin_manager: pluggy.PluginManager) -> MemoryBackend | None:
    """Return the backend that implements the memory tool contract.

    Called once per process by the MCP server, the hook direct path and the daemon,
    through :func:`bli_memory.core.plugins.build_backend`.

    Args:
        settings: The process's settings (remote URL, store path, ...).
        plugin_manager: The caller's manager: a backend loads embedders and extractors
            from it, so plugins registered there are honoured.

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
            :class:`~bli_memory.core.memory.redaction.RedactionRule`.
    """


# ---------------------------------------------------------------------------------
# Commands
# ---------------------------------------------------------------------------------


@hookspec
def register_commands(register: Callable[[str, Callable[..., int]], None]) -> None:
    """Register command-line commands (the installer's ``install``, ``uninstall``, ...).

    Args:
        register: Call ``register(name, run)``; ``run(argv, *, prog, pm) -> int`` gets
            the arguments after the command name, the program name to show in usage
            lines (``bli-memory-mcp``, ``cockpit memory``) and the caller's plugin
            manager, and returns the exit code. ``bli-memory-mcp --print-config[=HOST]``
            runs the command ``print-config`` with ``[HOST]`` or ``[]``.
    """


@hookspec
def doctor_checks(home: Path, plugin_manager: pluggy.PluginManager) -> list[tuple[str, str, str]]:  # type: ignore[empty-body]
    """Rows a plugin adds to ``cockpit doctor``, after the settings check.

    Args:
        home: The home folder whose config files are read.
        plugin_manager: The caller's manager (with every host plugin).

    Returns:
        ``[(mark, check, detail), ...]`` with ``mark`` one of ``ok``, ``warn``,
        ``fail``, ``info`` (``fail`` makes the doctor exit 1). The results are collected.
    """


# ---------------------------------------------------------------------------------
# Host conventions
# ---------------------------------------------------------------------------------


@hookspec
def host_conventions() -> HostConventions:  # type: ignore[empty-body]
    """Say how this host names itself and marks the text it adds.

    Core names no host: the experience log reads which agent runs a command from
    ``env_markers`` and ``client_names``, and the hooks strip the ``context_wrappers``
    a host puts around injected context from captured text. Every host plugin returns
    one; the results are collected (order is not significant: callers sort by ``host``).

    Returns:
        A :class:`~bli_memory.core.models.HostConventions`.
    """
