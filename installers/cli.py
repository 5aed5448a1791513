"""Command-line front of the installer: ``--print-config``, ``install``, ``uninstall``, ``status``.

Shared by ``bli-memory-mcp`` and ``cockpit memory``. Output goes to stdout, errors to
stderr as one line with a non-zero exit (the caller prints our errors in one place).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from bli_memory.installers.contract import build_contract

__all__ = ["print_config", "run"]


def _pm():
    from bli_memory.core.contracts import get_plugin_manager

    return get_plugin_manager()


def print_config(host: str | None) -> int:
    """Print the contract (``claude``), one host's block, or every host's with headings.

    Prints to stdout and returns without opening any transport.
    """
    pm = _pm()
    contract = build_contract()
    from bli_memory.installers.apply import known_hosts

    hosts = known_hosts(pm)
    if host:
        if host not in hosts:
            sys.stderr.write(f"bli-memory-mcp: unknown host {host!r}; known: {', '.join(sorted(hosts))}\n")
            return 2
        sys.stdout.write(pm.hook.host_print_config(host=host, contract=contract).rstrip("\n") + "\n")
        return 0
    blocks = []
    for name, info in sorted(hosts.items()):
        text = pm.hook.host_print_config(host=name, contract=contract)
        if text:
            blocks.append(f"# {info['display_name']} ({name})\n{text.rstrip()}\n")
    sys.stdout.write("\n".join(blocks))
    return 0


def _home() -> Path:
    from bli_memory.core.paths import home_dir

    return home_dir()


def run(command: str, argv: list[str], *, prog: str = "bli-memory-mcp") -> int:
    """Run ``install``, ``uninstall`` or ``status``; returns the exit code."""
    parser = argparse.ArgumentParser(prog=f"{prog} {command}")
    parser.add_argument("--host", default="claude", help="claude, codex, gemini, hermes, or all")
    if command != "status":
        parser.add_argument("--dry-run", action="store_true", help="print the unified diff, write nothing")
    args = parser.parse_args(argv)
    from bli_memory.installers.apply import apply_plans, plan_hosts, select_hosts, status_hosts

    pm = _pm()
    contract = build_contract()
    hosts, skipped = select_hosts(pm, args.host)
    home = _home()
    out = sys.stdout.write
    if command == "status":
        for st in status_hosts(pm, hosts, contract, home):
            out(f"{st.host}: {st.state}\n")
            for d in st.details:
                out(f"  - {d}\n")
        for host in skipped:
            out(f"{host}: not_found (skipped)\n")
        _daemon_line(out)
        return 0
    plans = plan_hosts(pm, hosts, contract, home, uninstall=command == "uninstall")
    reports = apply_plans(plans, dry_run=args.dry_run)
    for r in reports:
        if args.dry_run:
            out(r.diff or f"# {r.host}: nothing to change\n")
            continue
        if r.outcome == "unchanged":
            verb = "already installed" if command == "install" else "nothing of ours to remove"
            out(f"{r.host}: {verb}; nothing changed\n")
        else:
            verb = "installed" if command == "install" else "uninstalled"
            out(f"{r.host}: {verb} ({', '.join(r.files)})\n")
            if r.backups:
                out(f"  previous versions kept as {', '.join(r.backups)}\n")
        for note in r.notes:
            out(f"  - {note}\n")
    for host in skipped:
        out(f"{host}: not found on this machine; skipped\n")
    return 0


def _daemon_line(out) -> None:
    try:
        from bli_memory.core.daemon_client import status as daemon_status
    except ImportError:
        return
    try:
        st = daemon_status()
    except Exception:
        return
    if st.get("running"):
        out(f"daemon: running (version {st.get('version')}, pid {st.get('pid')})\n")
    else:
        out("daemon: not running (the prompt hook starts it on demand)\n")
