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


def _pm(pm=None):
    """The caller's plugin manager, or a new one with every installed host plugin."""
    if pm is not None:
        return pm
    from bli_memory.core.plugins import get_plugin_manager

    return get_plugin_manager()


def _host_list(pm) -> str:
    """``claude, codex, ...``: the installed host plugins, for help texts."""
    from bli_memory.core.plugins import host_names

    return ", ".join(host_names(pm))


def print_config(host: str | None, *, pm=None) -> int:
    """Print the contract (``claude``), one host's block, or every host's with headings.

    Prints to stdout and returns without opening any transport.
    """
    pm = _pm(pm)
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


def run(command: str, argv: list[str], *, prog: str = "bli-memory-mcp", pm=None) -> int:
    """Run ``install``, ``uninstall`` or ``status``; returns the exit code."""
    from bli_memory.core.models import DEFAULT_HOST

    pm = _pm(pm)
    hosts_help = f"{_host_list(pm)}, or all"
    parser = argparse.ArgumentParser(prog=f"{prog} {command}")
    if command == "status":
        parser.add_argument("--host", default=None,
                            help=f"{hosts_help} (default: every host that has "
                                 "our entries or whose CLI is on PATH)")
    else:
        parser.add_argument("--host", default=DEFAULT_HOST, help=hosts_help)
    if command != "status":
        parser.add_argument("--dry-run", action="store_true",
                            help="print what would change, per host and file, and write nothing")
        parser.add_argument("--verbose", action="store_true",
                            help="with --dry-run, show the full diff of plugin files too")
    if command == "install":
        parser.add_argument("--trust-folder", metavar="PATH",
                            help="Gemini only: also trust PATH in ~/.gemini/trustedFolders.json "
                                 "(Gemini disables MCP servers in untrusted folders); uninstall removes it")
        parser.add_argument("--copilot-instructions", action="store_true",
                            help="GitHub Copilot CLI only: also write a custom-instructions entry asking the "
                                 "agent to search memory before work; uninstall removes it")
    args = parser.parse_args(argv)
    from bli_memory.installers.apply import apply_plans, plan_hosts, select_hosts, status_hosts

    contract = build_contract()
    hosts, skipped = select_hosts(pm, args.host or "all")
    home = _home()
    out = sys.stdout.write
    if command == "status":
        if args.host is None:
            return _status_found(pm, contract, home, out)
        for st in status_hosts(pm, hosts, contract, home):
            _status_lines(st, out)
        for host in skipped:
            out(f"{host}: not_found (skipped)\n")
        _daemon_line(out)
        return 0
    skipped_status = {st.host: st for st in status_hosts(pm, skipped, contract, home)}
    if command == "uninstall":
        # A host whose CLI is gone (or was never on PATH) may still hold our entries:
        # `uninstall --host all` takes them away too.
        ours = [h for h in skipped if skipped_status[h].state in ("installed", "outdated")]
        hosts, skipped = hosts + ours, [h for h in skipped if h not in ours]
    plans = plan_hosts(pm, hosts, contract, home, uninstall=command == "uninstall")
    plans, trusted, untrusted = _gemini_trust(plans, args, command, home)
    plans = _copilot_instructions(plans, args, home)
    reports = apply_plans(plans, dry_run=args.dry_run, uninstall=command == "uninstall")
    if args.dry_run:
        from bli_memory.installers.apply import known_hosts
        from bli_memory.installers.dryrun import render

        names = {h: info.get("display_name", h) for h, info in known_hosts(pm).items()}
        out(render(reports, names, verbose=args.verbose, skipped=tuple(skipped)))
        return 0
    _record_trust(trusted, untrusted)
    for r in reports:
        if r.outcome == "unchanged":
            verb = "already installed" if command == "install" else "nothing of ours to remove"
            out(f"{r.host}: {verb}; nothing changed\n")
        else:
            verb = "installed" if command == "install" else "uninstalled"
            out(f"{r.host}: {verb} ({', '.join(r.files)})\n")
            for backup in r.backups:
                out(f"  - backup of the previous version: {backup}\n")
        for note in r.notes:
            out(f"  - {note}\n")
    for host in skipped:
        out(f"{host}: not found on this machine; skipped\n")
        for detail in skipped_status[host].details:
            out(f"  - {detail}\n")
    if command == "uninstall" and not args.dry_run:
        _stop_daemon_if_unused(pm, contract, home, out)
    return 0


def _gemini_trust(plans: list, args, command: str, home: Path) -> tuple[list, str | None, bool]:
    """Add ``--trust-folder``'s entry to Gemini's install plan, or the recorded ones' removal
    to its uninstall plan; returns the plans, the folder to record, and whether to forget them."""
    folder = getattr(args, "trust_folder", None)
    gemini = [i for i, p in enumerate(plans) if p.host == "gemini"]
    if folder and not gemini:
        from bli_memory.core.errors import ConfigError

        raise ConfigError("--trust-folder is for Gemini CLI: use it with --host gemini (or --host all "
                          "with Gemini CLI on PATH)")
    if not gemini:
        return plans, None, False
    from bli_memory.adapters.gemini_trust import with_trust, with_untrust

    i = gemini[0]
    plans = list(plans)
    if command == "uninstall":
        from bli_memory.installers.created import Record

        plans[i] = with_untrust(plans[i], Record().trusted, home)
        return plans, None, True
    if not folder:
        return plans, None, False
    import os

    plans[i], resolved = with_trust(plans[i], folder, home, os.getcwd())
    return plans, resolved, False


def _copilot_instructions(plans: list, args, home: Path) -> list:
    """Add the custom-instructions file to Copilot's install plan when ``--copilot-instructions`` asks."""
    if not getattr(args, "copilot_instructions", False):
        return plans
    copilot = [i for i, p in enumerate(plans) if p.host == "copilot"]
    if not copilot:
        from bli_memory.core.errors import ConfigError

        raise ConfigError("--copilot-instructions is for GitHub Copilot CLI: use it with --host copilot "
                          "(or --host all with copilot on PATH)")
    from bli_memory.adapters.copilot import with_instructions

    plans = list(plans)
    plans[copilot[0]] = with_instructions(plans[copilot[0]], home)
    return plans


def _record_trust(trusted: str | None, forget: bool) -> None:
    if trusted is None and not forget:
        return
    from bli_memory.installers.created import Record

    record = Record()
    if forget:
        record.trusted.clear()
    if trusted is not None:
        record.trusted.add(trusted)
    try:
        record.save()
    except OSError:
        pass


def _status_lines(st, out) -> None:
    out(f"{st.host}: {st.state}\n")
    if st.state == "absent":
        out(f"  - its CLI is here, but BLI Memory is not set up for it; "
            f"`bli-memory-mcp install --host {st.host}` adds it\n")
    for d in st.details:
        out(f"  - {d}\n")


def _status_found(pm, contract, home: Path, out) -> int:
    """``status`` without ``--host``: every host that has our entries or whose CLI is on PATH."""
    from bli_memory.installers.apply import known_hosts, status_hosts

    every = status_hosts(pm, sorted(known_hosts(pm)), contract, home)
    shown = [st for st in every if st.state != "not_found"]
    for st in shown:
        _status_lines(st, out)
    if not shown:
        out(f"no host found: none has our entries and no host CLI ({_host_list(pm)}) is on "
            "PATH\n")
    _daemon_line(out)
    return 0


def _stop_daemon_if_unused(pm, contract, home: Path, out) -> None:
    """After an uninstall that left no host with our entries, stop the daemon (its hooks are gone)."""
    from bli_memory.installers.apply import known_hosts, status_hosts

    states = [st.state for st in status_hosts(pm, sorted(known_hosts(pm)), contract, home)]
    if any(state in ("installed", "outdated") for state in states):
        return
    try:
        from bli_memory.core.hooks.daemon_client import stop
    except ImportError:
        return
    pid = stop()
    if pid is not None:
        out(f"daemon: stopped (pid {pid}); no host runs our hooks any more\n")


def _daemon_line(out) -> None:
    try:
        from bli_memory.core.hooks.daemon_client import status as daemon_status
    except ImportError:
        return
    try:
        st = daemon_status()
    except Exception:
        return
    if st.get("running"):
        out(f"daemon: running (version {st.get('version')}, pid {st.get('pid')})\n")
    else:
        out("daemon: not running (a prompt hook of an installed host starts it on demand)\n")
