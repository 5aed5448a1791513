"""Commands that plugins add to the command lines (the ``register_commands`` hook).

``bli-memory-mcp install|uninstall|status|--print-config`` and ``cockpit memory
install|uninstall|status`` are the installer's: it registers them from its plugin
(``bli_memory.installers.plugin``, entry-point group ``bli_memory.plugins``), so the
command lines run them without importing the installer, and another distribution
can add commands the same way.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import pluggy

__all__ = ["plugin_commands", "run_plugin_command"]


def plugin_commands(pm: pluggy.PluginManager) -> dict[str, Callable[..., int]]:
    """``{name: run}`` of every command ``pm``'s plugins register (the first name wins).

    A plugin whose ``register_commands`` raises is skipped with one line on stderr, so
    one broken plugin cannot take the installer's commands down with it.
    """
    import sys

    found: dict[str, Callable[..., int]] = {}
    for impl in reversed(pm.hook.register_commands.get_hookimpls()):  # pluggy's call order
        try:
            impl.function(register=lambda name, run: found.setdefault(name, run))
        except Exception as exc:
            sys.stderr.write(f"[bli-memory] plugin {impl.plugin_name!r} could not register its "
                             f"commands: {type(exc).__name__}: {exc}\n")
    return found


def run_plugin_command(
    name: str, argv: list[str], *, prog: str, pm: pluggy.PluginManager | None = None
) -> int | None:
    """Run the plugin command ``name`` with ``argv``; ``None`` when no plugin registers it.

    Args:
        name: The command (``install``, ``print-config``, ...).
        argv: Its arguments.
        prog: The program name its usage lines show (``bli-memory-mcp``, ``cockpit memory``).
        pm: The caller's plugin manager (default: a new one with the installed plugins).

    Returns:
        The command's exit status, or ``None``.
    """
    from bli_memory.core.plugins import get_plugin_manager

    pm = pm if pm is not None else get_plugin_manager()
    run = plugin_commands(pm).get(name)
    if run is None:
        return None
    return run(argv, prog=prog, pm=pm)
