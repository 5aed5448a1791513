"""The ``cockpit`` command: the memory subset of the BLI cockpit CLI.

::

    cockpit memory install|uninstall|status [--host H|all] [--dry-run]
    cockpit memory log win|loss|noise --store bli|supermemory|both "reason"
    cockpit ops --memory [--json]
    cockpit doctor [--json]
    cockpit login URL [TOKEN]

A thin front over the same installer, experience-log and ops APIs that
``bli-memory-mcp`` uses; nothing here is implemented twice.
"""

from __future__ import annotations

import sys
from typing import Any

__all__ = ["main"]

USAGE = """\
usage: cockpit COMMAND ...

commands:
  memory install|uninstall|status [--host H|all] [--dry-run]
                       register BLI Memory with agent hosts, remove it, or report it
  memory log win|loss|noise --store bli|supermemory|both "reason" [--reason-stdin] [--json]
                       record whether memory helped (win), hurt (loss) or only added noise,
                       in one line; --store names the memory it is about: bli (this one),
                       supermemory (the hosted service some teams move from), or both
  ops --memory [--json]
                       hook counts and experience totals
  doctor [--json]      one row per check: settings, host installs, the store or service,
                       the model files, the daemon, the side indexes
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
    from bli_memory.core.cli.exits import run_cli

    return run_cli("cockpit", _dispatch, args)


def _dispatch(args: list[str]) -> int:
    cmd, rest = args[0], args[1:]
    if cmd == "memory" and rest and rest[0] in ("install", "uninstall", "status"):
        from bli_memory.core.cli.commands import run_plugin_command

        code = run_plugin_command(rest[0], rest[1:], prog="cockpit memory")
        if code is not None:
            return code
    if cmd == "memory" and rest and rest[0] == "log":
        from bli_memory.core.cli.experience import main as log_main

        return log_main(rest[1:])
    if cmd == "ops":
        from bli_memory.core.cli.ops import main as ops_main

        return ops_main(rest)
    if cmd == "login":
        return _login(rest)
    if cmd == "logout":
        from bli_memory.core.team.client.pairing import clear_session

        sys.stdout.write("unpaired\n" if clear_session() else "this machine was not paired\n")
        return 0
    if cmd == "doctor":
        return _doctor(rest)
    sys.stderr.write(f"cockpit: unknown command {' '.join(args)!r}\n\n{USAGE}")
    return 2


def _login(argv: list[str]) -> int:
    """``cockpit login URL TOKEN``: check the token with the service, then pair this machine."""
    import argparse

    from bli_memory.core.team.client.pairing import login

    parser = argparse.ArgumentParser(prog="cockpit login")
    parser.add_argument("url", help="base URL of the memory service")
    parser.add_argument("token", nargs="?", help="device token (default: read from stdin)")
    args = parser.parse_args(argv)
    token = args.token or sys.stdin.readline().strip()
    session = login(args.url, token)
    sys.stdout.write(f"paired with {session.dashboard_url} as {session.person} ({session.device})\n")
    from urllib.parse import urlsplit

    parts = urlsplit(session.dashboard_url)
    if parts.scheme == "http" and parts.hostname not in ("localhost", "127.0.0.1", "::1"):
        sys.stderr.write("cockpit: warning: plain http to another machine sends the device token and "
                         "every memory unencrypted; put TLS in front of the service and use https://\n")
    return 0


def _doctor(argv: list[str]) -> int:
    """One row per check (``--json``: a JSON list); exit 1 when a check fails.

    Checks, in order: the settings parse; each host's install; where memory lives (the
    embedded store file, or the team service answering for this machine's token); the
    shipped model files' checksums; the daemon (pid and the memory it holds) and the
    route an MCP server would answer on; the optional side-index packages; the vendor
    secret rules (:mod:`~bli_memory.core.memory.redaction.vendor`).
    """
    import argparse
    import json

    parser = argparse.ArgumentParser(prog="cockpit doctor")
    parser.add_argument("--json", action="store_true", help="the checks as a JSON list")
    args = parser.parse_args(argv)
    rows: list[tuple[str, str, str]] = []  # (mark, check, detail)
    settings = _check_settings(rows)
    _check_hosts(rows)
    if settings is not None:
        _check_route(rows, settings)
    else:
        rows.append(("info", "memory store", "not checked: fix the settings first"))
    _check_model(rows, settings.embedder if settings is not None else None)
    daemon = _daemon_ping()
    state = _daemon_state(daemon)
    rows.append(("fail" if state.startswith("daemon cannot") else "info", "memory-daemon", state))
    rows.append(("info", "mcp route", _mcp_route(settings, daemon)))
    rows.append(("info", "side indexes", _side_index_state()))
    rows.append(_vendor_rules_row())
    if args.json:
        checks = [{"mark": m, "check": c, "detail": d} for m, c, d in rows]
        sys.stdout.write(json.dumps(checks, indent=2) + "\n")
    else:
        for mark, check, detail in rows:
            sys.stdout.write(f"[{mark:<4}] {check}: {detail}\n")
    return 1 if any(mark == "fail" for mark, _, _ in rows) else 0


def _vendor_rules_row() -> tuple[str, str, str]:
    """The vendor secret rules' row: ready, or why not (then redaction runs on our rules only)."""
    from bli_memory.core.memory.redaction.vendor import vendor_rules_status

    status = vendor_rules_status()
    if status["ready"]:
        return ("ok", "secret rules", f"{status['package']} {status['version']} (high confidence) loaded")
    return ("fail", "secret rules", f"{status['error']}; only the built-in rules redact (pip install "
                                    f"{status['package']})")


def _check_settings(rows: list[tuple[str, str, str]]) -> Any:
    from bli_memory.core.errors import BliMemoryError
    from bli_memory.core.settings import load_settings

    try:
        settings = load_settings()
        if settings.container_tag:  # a hook would refuse it (invalid_container_tag)
            from bli_memory.core.hooks.container_tag import check_forced_tag

            check_forced_tag(settings.container_tag)
    except BliMemoryError as exc:
        rows.append(("fail", "settings", exc.message))
        return None
    rows.append(("ok", "settings", "BLI_MEMORY_* variables parse"))
    return settings


def _check_hosts(rows: list[tuple[str, str, str]]) -> None:
    """The plugins' rows (``doctor_checks``): the installer's one row per host."""
    from bli_memory.core.paths import home_dir
    from bli_memory.core.plugins import get_plugin_manager

    pm = get_plugin_manager()
    for found in pm.hook.doctor_checks(home=home_dir(), plugin_manager=pm):
        rows.extend(found)


def _check_route(rows: list[tuple[str, str, str]], settings: Any) -> None:
    """Where memory lives for this machine, and whether it answers."""
    from bli_memory.core.errors import BliMemoryError

    try:
        from bli_memory.core.team.client.remote import RemoteBackend, remote_target

        target = remote_target(settings)
        if target is not None:
            url, token = target
            client = RemoteBackend(url, token=token, timeout=3.0)
            try:
                who = client.whoami()
            finally:
                client.close()
            rows.append(("ok", "memory store", f"team service {url}, as {who.get('person')} "
                         f"({who.get('device')})"))
            return
    except BliMemoryError as exc:
        rows.append(("fail", "memory store", exc.message))
        return
    _check_embedded_store(rows, settings.store_path, _model_id(settings.embedder))


def _model_id(configured: str) -> str:
    """The model id a store records for ``BLI_MEMORY_EMBEDDER`` (``mpnet`` is
    ``all-mpnet-base-v2-int8``); the setting itself when it names no known model."""
    from bli_memory.core.errors import BliMemoryError
    from bli_memory.core.settings import SHIPPED_EMBEDDER

    if configured == SHIPPED_EMBEDDER:
        return configured
    try:
        from bli_memory.core.memory.embedder import load_embedder

        return str(load_embedder(configured).name)  # the id only: nothing is loaded yet
    except BliMemoryError:
        return configured


def _check_embedded_store(rows: list[tuple[str, str, str]], path: Any, embedder: str) -> None:
    """Read the embedded store without changing it (:mod:`bli_memory.core.embedded.file_summary`)."""
    try:
        exists = path.exists()
    except OSError as exc:  # a loop of links, a HOME that is a file, ...
        rows.append(("fail", "memory store", f"{path} cannot be reached: {exc.strerror or exc}"))
        return
    if not exists:
        rows.append(("info", "memory store", f"{path} does not exist yet (the first save creates it)"))
        return
    from bli_memory.core.embedded.file_summary import describe
    from bli_memory.core.errors import StoreError

    try:
        found = describe(path)
    except StoreError as exc:
        rows.append(("fail", "memory store", exc.message))
        return
    live, model, moved, vectors = found.live, found.model, found.moved, found.has_vectors
    if model is not None and model != embedder and vectors:
        rows.append(("fail", "memory store", f"{path} holds vectors of {model}, but the embedder is "
                     f"{embedder} (BLI_MEMORY_EMBEDDER); every search and save would be refused"
                     + (f" ({moved} rows were moved by a `memory reembed` that stopped part way: run it "
                        "again to finish)" if moved else "")))
        return
    count = f"{live} live {'memory' if live == 1 else 'memories'}"
    recorded = f"model {model}" if model is not None else "no model recorded yet (the first save records it)"
    if moved:
        recorded += (f"; {moved} rows already hold vectors of another model (a `memory reembed` stopped "
                     "part way: run it again to finish)")
    rows.append(("ok", "memory store", f"embedded {path}: {count}, {recorded}"))


def _check_model(rows: list[tuple[str, str, str]], configured: str | None) -> None:
    """The configured embedding model (``BLI_MEMORY_EMBEDDER``), loaded and checked as the
    first embedding would: the shipped files' checksums, or another model's folder."""
    from importlib.resources import files

    from bli_memory.core.errors import BliMemoryError
    from bli_memory.core.settings import SHIPPED_EMBEDDER

    if configured is None or configured == SHIPPED_EMBEDDER:
        try:
            from bli_memory.core.memory.embeddings import read_verified_model_files

            read_verified_model_files(files("bli_memory.core.model"))
        except BliMemoryError as exc:
            rows.append(("fail", "embedding model", exc.message))
            return
        rows.append(("ok", "embedding model", "all-MiniLM-L6-v2 int8 files present, checksums match"))
        return
    try:
        from bli_memory.core.memory.embedder import load_embedder

        embedder = load_embedder(configured)
        loaded = getattr(embedder, "loaded", embedder)  # a model folder loads on first use
    except BliMemoryError as exc:
        rows.append(("fail", "embedding model", f"BLI_MEMORY_EMBEDDER={configured}: {exc.message}"))
        return
    rows.append(("ok", "embedding model", f"{loaded.name} ({loaded.dimensions} dimensions; "
                 f"BLI_MEMORY_EMBEDDER={configured}) loads, checksums match"))


def _daemon_ping() -> dict[str, Any] | None:
    """The running daemon's ping answer (pid, version, rss_bytes), or None when none answers."""
    try:
        from bli_memory.core.hooks import daemon_client

        return daemon_client.ping(with_config=True)
    except Exception:
        return None


def _daemon_state(daemon: dict[str, Any] | None) -> str:
    if daemon is None:
        from bli_memory.core.hooks import daemon_client, daemon_start

        problem = daemon_start.last_problem(config=daemon_client.config_of())
        if problem is not None:  # the last one left without serving
            return f"daemon {problem}; {daemon_client.PROBLEM_FIX}"
        held = daemon_start.held_off_text(config=daemon_client.config_of())
        return f"absent: {held}" if held else "absent (started on demand)"
    rss = daemon.get("rss_bytes")
    held = f", holding {rss / 2**20:.0f} MB" if isinstance(rss, int) else ""
    return f"running (version {daemon.get('version')}, pid {daemon.get('pid')}{held})"


def _mcp_route(settings: Any, daemon: dict[str, Any] | None) -> str:
    """Which route an MCP session started now would answer on (core/mcp/relay.py)."""
    from bli_memory.core.hooks import daemon_client

    if settings is not None:
        try:
            from bli_memory.core.team.client.remote import remote_target

            if remote_target(settings) is not None:
                return "in process, to the team service (the daemon route is for the embedded store)"
        except Exception:
            pass
    if not daemon_client.enabled():
        return "in process (BLI_MEMORY_DAEMON is off)"
    if daemon is None:
        return "through the daemon once one runs (an MCP server starts it); in process until then"
    if daemon.get("same_config") is False:
        return (f"in process: the running daemon (pid {daemon.get('pid')}) was started with other "
                "BLI_MEMORY_* settings than this shell's (env_mismatch); `bli-memory-mcp daemon --restart` "
                "from this shell replaces it")
    return f"through the daemon (pid {daemon.get('pid')}); in process whenever it cannot answer"


def _side_index_state() -> str:
    """Whether the optional side-index packages (the ``scale`` extra) can be imported."""
    from importlib.util import find_spec

    missing = [name for name in ("tantivy", "usearch") if find_spec(name) is None]
    if not missing:
        return "available (used by the daemon and MCP server for large spaces)"
    return (f"not installed ({', '.join(missing)} missing; large spaces use exact search; "
            'pip install "bli-memory-mcp[scale]")')
