"""The installer as a plugin: its commands and its ``cockpit doctor`` rows.

Loaded from the entry point ``installers`` of the group ``bli_memory.plugins``
(``pyproject.toml``), so the command lines in ``bli_memory.core.cli`` reach the
installer through hooks (:mod:`bli_memory.core.hookspecs`, ``register_commands`` and
``doctor_checks``) and core imports no installer module. Importing this module
imports nothing beyond the hook marker; each hook imports what it runs.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from bli_memory.core.hookspecs import hookimpl

__all__ = ["doctor_checks", "register_commands"]


def _installer(command: str) -> Callable[..., int]:
    def run(argv: list[str], *, prog: str, pm: Any) -> int:
        from bli_memory.installers.cli import run as installer_run

        return installer_run(command, argv, prog=prog, pm=pm)

    return run


def _print_config(argv: list[str], *, prog: str, pm: Any) -> int:
    from bli_memory.installers.cli import print_config

    return print_config(argv[0] if argv else None, pm=pm)


@hookimpl
def register_commands(register: Callable[[str, Callable[..., int]], None]) -> None:
    """``install``, ``uninstall``, ``status`` (:func:`bli_memory.installers.cli.run`) and
    ``print-config`` (:func:`bli_memory.installers.cli.print_config`)."""
    for command in ("install", "uninstall", "status"):
        register(command, _installer(command))
    register("print-config", _print_config)


@hookimpl
def doctor_checks(home: Path, plugin_manager: Any) -> list[tuple[str, str, str]]:
    """One ``memory (<host>)`` row per host plugin: installed, outdated, absent or not found.

    ``fail`` for an outdated install or a host config file that cannot be read (one
    host's broken file does not hide the others); ``warn`` for an install with
    something to know; ``info`` when the host or our entries are not there.
    """
    from bli_memory.core.errors import BliMemoryError
    from bli_memory.installers.apply import known_hosts, status_hosts
    from bli_memory.installers.contract import build_contract

    contract = build_contract()
    rows: list[tuple[str, str, str]] = []
    statuses = []
    for host in sorted(known_hosts(plugin_manager)):
        try:
            statuses += status_hosts(plugin_manager, [host], contract, home)
        except BliMemoryError as exc:
            rows.append(("fail", f"memory ({host})", exc.message))
    for st in statuses:
        if st.state == "outdated":
            mark = "fail"
        elif st.state == "installed":
            mark = "warn" if st.details else "ok"  # installed, with something to know
        else:
            mark = "info"
        details = list(st.details)
        if st.state == "absent":  # the host is here; BLI Memory is not registered with it
            details.insert(0, f"not registered; `bli-memory-mcp install --host {st.host}` adds it")
        detail = st.state + (" - " + "; ".join(details) if details else "")
        rows.append((mark, f"memory ({st.host})", detail))
    return rows
