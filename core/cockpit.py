"""The ``cockpit`` command: the memory subset of the BLI cockpit CLI.

::

    cockpit memory install|uninstall|status [--host H|all] [--dry-run]
    cockpit memory log win|loss|noise --store bli|supermemory|both "reason"
    cockpit ops --memory [--json]
    cockpit doctor
    cockpit login URL [TOKEN]

A thin front over the same installer, experience-log and ops APIs that
``bli-memory-mcp`` uses; nothing here is implemented twice.
"""

from __future__ import annotations

import sys

__all__ = ["main"]

USAGE = """\
usage: cockpit COMMAND ...

commands:
  memory install|uninstall|status [--host H|all] [--dry-run]
                       register BLI Memory with agent hosts, remove it, or report it
  memory log win|loss|noise --store bli|supermemory|both "reason" [--reason-stdin] [--json]
                       record whether memory helped, in one line
  ops --memory [--json]
                       hook counts and experience totals
  doctor               one row per check: memory install and the memory daemon
  login URL [TOKEN]    pair this machine with a team memory service (token on stdin if omitted)
  logout               forget the pairing

example:
  cockpit memory install --dry-run
"""


def main(argv: list[str] | None = None) -> int:
    """Entry point of ``cockpit``; returns the exit code."""
    args = list(sys.argv[1:] if argv is None else argv)
    if not args or args[0] in ("-h", "--help", "help"):
        sys.stdout.write(USAGE)
        return 0 if args else 2
    from bli_memory.core.errors import BliMemoryError

    try:
        return _dispatch(args)
    except BliMemoryError as exc:
        sys.stderr.write(f"cockpit: {exc.message}\n")
        return 1


def _dispatch(args: list[str]) -> int:
    cmd, rest = args[0], args[1:]
    if cmd == "memory" and rest and rest[0] in ("install", "uninstall", "status"):
        from bli_memory.installers.cli import run

        return run(rest[0], rest[1:], prog="cockpit memory")
    if cmd == "memory" and rest and rest[0] == "log":
        from bli_memory.core.experience_cli import main as log_main

        return log_main(rest[1:])
    if cmd == "ops":
        from bli_memory.core.ops import main as ops_main

        return ops_main(rest)
    if cmd == "login":
        return _login(rest)
    if cmd == "logout":
        from bli_memory.core.pairing import clear_session

        sys.stdout.write("unpaired\n" if clear_session() else "this machine was not paired\n")
        return 0
    if cmd == "doctor":
        return _doctor()
    sys.stderr.write(f"cockpit: unknown command {' '.join(args)!r}\n\n{USAGE}")
    return 2


def _login(argv: list[str]) -> int:
    """``cockpit login URL TOKEN``: check the token with the service, then pair this machine."""
    import argparse

    from bli_memory.core.pairing import login

    parser = argparse.ArgumentParser(prog="cockpit login")
    parser.add_argument("url", help="base URL of the memory service")
    parser.add_argument("token", nargs="?", help="device token (default: read from stdin)")
    args = parser.parse_args(argv)
    token = args.token or sys.stdin.readline().strip()
    session = login(args.url, token)
    sys.stdout.write(f"paired with {session.dashboard_url} as {session.person} ({session.device})\n")
    return 0


def _doctor() -> int:
    """Print one row per check; the daemon row is informational and never red."""
    from bli_memory.core.contracts import get_plugin_manager
    from bli_memory.core.paths import home_dir
    from bli_memory.installers.apply import known_hosts, status_hosts
    from bli_memory.installers.contract import build_contract

    pm = get_plugin_manager()
    contract = build_contract()
    hosts = sorted(known_hosts(pm))
    worst = 0
    for st in status_hosts(pm, hosts, contract, home_dir()):
        mark = {"installed": "ok  ", "outdated": "warn", "absent": "info", "not_found": "info"}[st.state]
        worst = max(worst, 1 if st.state == "outdated" else 0)
        line = f"[{mark}] memory ({st.host}): {st.state}"
        if st.details:
            line += " - " + "; ".join(st.details)
        sys.stdout.write(line + "\n")
    try:
        from bli_memory.core.daemon_client import status as daemon_status

        d = daemon_status()
        state = f"running (version {d.get('version')})" if d.get("running") else "absent (started on demand)"
    except Exception:
        state = "absent (started on demand)"
    sys.stdout.write(f"[info] memory-daemon: {state}\n")
    sys.stdout.write(f"[info] side indexes: {_side_index_state()}\n")
    return worst


def _side_index_state() -> str:
    """Whether the optional side-index packages (the ``scale`` extra) can be imported."""
    from importlib.util import find_spec

    missing = [name for name in ("tantivy", "usearch") if find_spec(name) is None]
    if not missing:
        return "available (used by the daemon and MCP server for large spaces)"
    return (f"not installed ({', '.join(missing)} missing; large spaces use exact search; "
            'pip install "bli-memory-mcp[scale]")')
