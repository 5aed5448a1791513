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
    """Print one host's block, or every host's with headings (no host, or ``all``).

    Prints to stdout and returns without opening any transport.
    """
    pm = _pm(pm)
    contract = build_contract()
    from bli_memory.installers.apply import known_hosts

    hosts = known_hosts(pm)
    if host == "all":  # as install/uninstall/status take it: every host, with headings
        host = None
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


#: The one-line description each command's --help opens with.
_DESCRIPTIONS = {
    "install": "Register the BLI Memory MCP server and its lifecycle hooks with an agent host, "
               "writing the host's own config files (a backup of each changed file is kept). "
               "Run it again after an upgrade; it changes only what differs.",
    "uninstall": "Remove exactly what install added to each host's config files. When no host "
                 "keeps BLI Memory, also stop the daemon and remove its logs, state and caches; your "
                 "memories stay, and the command says where they are.",
    "status": "Report, per host, whether BLI Memory is installed, outdated (an older install: "
              "run install again) or absent, and the daemon's state.",
}


def run(command: str, argv: list[str], *, prog: str = "bli-memory-mcp", pm=None) -> int:
    """Run ``install``, ``uninstall`` or ``status``; returns the exit code."""
    from bli_memory.core.defaults import DEFAULT_HOST

    pm = _pm(pm)
    hosts_help = f"{_host_list(pm)}, several (gemini,codex, or --host twice), or all"
    parser = argparse.ArgumentParser(prog=f"{prog} {command}", description=_DESCRIPTIONS[command])
    if command == "status":
        parser.add_argument("--host", action="append", default=None,
                            help=f"{hosts_help} (default: every host that has "
                                 "our entries or whose CLI is on PATH)")
        parser.add_argument("--check", action="store_true",
                            help="also start each installed host's MCP server exactly as its config "
                                 "writes it, and run initialize, tools/list and one search; exit 1 "
                                 "when one fails")
    else:
        parser.add_argument("--host", action="append", default=None,
                            help=f"{hosts_help} (default: {DEFAULT_HOST})")
    if command != "status":
        parser.add_argument("--dry-run", action="store_true",
                            help="print what would change, per host and file, and write nothing")
        parser.add_argument("--verbose", action="store_true",
                            help="with --dry-run, show the full diff of plugin files too")
    if command == "install":
        parser.add_argument("--extractor", choices=("host", "rules"),
                            help="what distils captured exchanges: rules (the default, offline) or host: "
                                 "the installed host's own CLI and login (claude, codex, gemini; "
                                 "docs/extraction.md says what is sent and what it costs)")
    # Host-specific flags come from the host plugins (hook spec host_install_options).
    options = [o for batch in pm.hook.host_install_options() for o in batch] if command == "install" else []
    for option in options:
        if option.metavar is None:
            parser.add_argument(option.flag, action="store_true", help=option.help)
        else:
            parser.add_argument(option.flag, metavar=option.metavar, help=option.help)
    args = parser.parse_args(argv)
    if args.host:
        args.host = ",".join(args.host)
    elif command != "status":
        args.host = DEFAULT_HOST
    from bli_memory.installers.apply import apply_plans, known_hosts, plan_hosts, select_hosts, status_hosts

    contract = build_contract()
    hosts, skipped = select_hosts(pm, args.host or "all")
    home = _home()
    out = sys.stdout.write
    if command == "status":
        if args.host is None:
            checked = status_hosts(pm, sorted(known_hosts(pm)), contract, home)
            code = _status_found(pm, checked, out)
        else:
            checked = status_hosts(pm, hosts, contract, home)
            for st in checked:
                _status_lines(st, out)
            for host in skipped:
                out(f"{host}: not_found (skipped)\n")
            _daemon_line(out)
            code = 0
        if args.check:
            from bli_memory.installers.check import check_hosts

            code = check_hosts(checked, out) or code
        return code
    skipped_status = {st.host: st for st in status_hosts(pm, skipped, contract, home)}
    if command == "uninstall":
        # A host whose CLI is gone (or was never on PATH) may still hold our entries:
        # `uninstall --host all` takes them away too.
        ours = [h for h in skipped if skipped_status[h].state in ("installed", "outdated")]
        hosts, skipped = hosts + ours, [h for h in skipped if h not in ours]
    extractor_host = None
    if command == "install" and args.extractor == "host":
        extractor_host = _extractor_host(pm, hosts, home)  # refused before anything is written
    plans = plan_hosts(pm, hosts, contract, home, uninstall=command == "uninstall")
    plans, after_apply = _adjust_plans(pm, plans, options, args, home, uninstall=command == "uninstall")
    reports = apply_plans(plans, dry_run=args.dry_run, uninstall=command == "uninstall")
    if args.dry_run:
        from bli_memory.installers.dryrun import render

        names = {h: info.get("display_name", h) for h, info in known_hosts(pm).items()}
        out(render(reports, names, verbose=args.verbose, skipped=tuple(skipped)))
        return 0
    for done in after_apply:
        done()
    if command == "install" and args.extractor:
        _choose_extractor(pm, args.extractor, extractor_host, out)
    elif command == "install":
        _say_saved_extractor(out)
    else:
        _drop_extractor_of(hosts, out)
    if command == "install":
        from bli_memory.core.hooks.daemon_start import release
        from bli_memory.core.memory.redaction.vendor import warm

        release()  # a daemon stopped by an uninstall or `daemon --stop` must not hold this one off
        warm()  # compile the secret rules now, not in the first stop hook
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


def _extractor_host(pm, hosts: list[str], home: Path) -> str:
    """The host whose model ``install --extractor host`` uses: the one host installed with
    it that can run headless.

    Raises:
        ConfigError: none of the hosts installed can, or several can.
    """
    from bli_memory.core.errors import ConfigError
    from bli_memory.core.extraction.host_config import headless_hosts

    can = headless_hosts(pm, home)
    able = [h for h in hosts if h in can]
    if not able:
        raise ConfigError(
            f"--extractor host needs a host whose CLI runs headless ({', '.join(can)}); "
            f"{', '.join(hosts) or 'none'} cannot", reason="config_invalid")
    if len(able) != 1:
        raise ConfigError(
            "--extractor host uses the model of the one host installed with it; installing "
            f"{', '.join(hosts)}: name one with --host, or run "
            "`bli-memory-mcp extractor use host --host NAME`",
            reason="config_invalid")
    return able[0]


def _say_saved_extractor(out) -> None:
    """A plain ``install`` says so when an earlier opt-in still sends captures to a host's model."""
    from bli_memory.core.extraction.host_config import choice_path, load_choice

    saved = load_choice()
    if saved.get("extractor") == "host":
        out(f"extractor: host ({saved.get('host')}) stays chosen, saved in {choice_path()}: captures go to "
            "that host's model; `bli-memory-mcp extractor use rules` turns it off\n")


def _drop_extractor_of(hosts: list[str], out) -> None:
    """``uninstall`` of the host whose model distils captures puts the rules back."""
    from bli_memory.core.extraction.host_config import load_choice, save_choice

    saved = load_choice()
    if saved.get("extractor") == "host" and saved.get("host") in hosts:
        save_choice("default")
        out(f"extractor: back to the rules (offline); the host extractor used {saved['host']}, "
            "now uninstalled\n")


def _choose_extractor(pm, kind: str, host: str | None, out) -> None:
    """``install --extractor``: save the choice (``host``: say what it means first)."""
    from bli_memory.core.cli.extractor import opt_in
    from bli_memory.core.extraction.host_config import save_choice

    if kind == "rules" or host is None:
        save_choice("default")
        out("extractor: the rules (offline); no host CLI will be started\n")
        return
    opt_in(pm, host, out=out)


def _adjust_plans(pm, plans: list, options: list, args, home: Path, *, uninstall: bool) -> tuple[list, list]:
    """Each host's plan with the edits its own install flags ask for (hook spec ``host_adjust_plan``).

    Returns the plans and what to run once they are written.

    Raises:
        ConfigError: a flag was given for a host that is not being installed (the
            option's ``misuse`` message), or a host refused its value.
    """
    values = {o.flag: getattr(args, o.flag.lstrip("-").replace("-", "_"), None) for o in options}
    planned = {p.host for p in plans}
    for option in options:
        if values[option.flag] and option.host not in planned:
            from bli_memory.core.errors import ConfigError

            raise ConfigError(option.misuse)
    adjusted, after_apply = [], []
    for plan in plans:
        result = pm.hook.host_adjust_plan(host=plan.host, plan=plan, options={} if uninstall else values,
                                          home=home, uninstall=uninstall)
        adjusted.append(plan if result is None else result.plan)
        if result is not None and result.after_apply is not None:
            after_apply.append(result.after_apply)
    return adjusted, after_apply


def _status_lines(st, out) -> None:
    out(f"{st.host}: {st.state}\n")
    if st.state == "absent":
        out(f"  - its CLI is here, but BLI Memory is not set up for it; "
            f"`bli-memory-mcp install --host {st.host}` adds it\n")
    for d in st.details:
        out(f"  - {d}\n")


def _status_found(pm, every: list, out) -> int:
    """``status`` without ``--host``: the hosts that have our entries or whose CLI is on
    PATH, then every other known host as ``not found`` (with how to point at it, when
    its plugin says), so no host is silently left out. ``every`` holds each known host's
    :class:`~bli_memory.core.models.HostStatus`."""
    shown = [st for st in every if st.state != "not_found"]
    for st in shown:
        _status_lines(st, out)
    if not shown:
        out(f"no host found: none has our entries and no host CLI ({_host_list(pm)}) is on "
            "PATH\n")
    for st in every:
        if st.state == "not_found":
            out(f"{st.host}: not found\n")
            for d in st.details or ("its CLI is not on PATH and it has no entries of ours",):
                out(f"  - {d}\n")
    _daemon_line(out)
    return 0


def _stop_daemon_if_unused(pm, contract, home: Path, out) -> None:
    """After an uninstall that left no host with our entries, stop the daemon (its hooks
    are gone), remove the hook state and say where the data stays
    (:func:`~bli_memory.installers.leftovers.remove_hook_state`)."""
    from bli_memory.installers.apply import known_hosts, status_hosts

    states = [st.state for st in status_hosts(pm, sorted(known_hosts(pm)), contract, home)]
    if any(state in ("installed", "outdated") for state in states):
        return
    from bli_memory.installers.leftovers import remove_hook_state

    try:
        from bli_memory.core.hooks.daemon_client import stop
    except ImportError:
        stop = None
    pid = stop() if stop is not None else None
    if pid is not None and _gone(pid, within_s=5.0):
        out(f"daemon: stopped (pid {pid}); no host runs our hooks any more\n")
    elif pid is not None:
        out(f"daemon: asked to stop (pid {pid}), still finishing its work; no host runs our hooks any more\n")
    remove_hook_state(out)


def _gone(pid: int, *, within_s: float) -> bool:
    """Whether process ``pid`` has exited within ``within_s`` seconds (polled every 50 ms):
    the daemon answers a stop at once and exits after closing its store."""
    import os
    import time

    give_up = time.monotonic() + within_s
    while True:
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return True
        except PermissionError:
            return False  # another user's process now has that pid: not ours to wait for
        if _zombie(pid):
            return True  # exited; its parent (a long-lived MCP relay) has not reaped it yet
        if time.monotonic() >= give_up:
            return False
        time.sleep(0.05)


def _zombie(pid: int) -> bool:
    """Whether ``pid`` has exited and awaits its parent (state ``Z`` in Linux's
    ``/proc/PID/stat``; False where there is no ``/proc``)."""
    try:
        stat = open(f"/proc/{pid}/stat", encoding="ascii", errors="replace").read()
    except OSError:
        return False
    return stat.rpartition(")")[2].split()[:1] == ["Z"]


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
    elif st.get("problem"):
        out(f"daemon: not running; daemon {st['problem']}; {st.get('fix')}\n")
    elif held := _held_off():
        out(f"daemon: not running; {held}\n")
    else:
        out("daemon: not running (an installed host starts it on demand: a prompt hook or an MCP server)\n")


def _held_off() -> str | None:
    from bli_memory.core.hooks import daemon_client, daemon_start

    return daemon_start.held_off_text(config=daemon_client.config_of())
