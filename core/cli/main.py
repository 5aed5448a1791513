"""The ``bli-memory-mcp`` command.

::

    bli-memory-mcp                      run the MCP server on stdio (what hosts start)
    bli-memory-mcp demo                 save and recall through the real server, in a scratch store
    bli-memory-mcp hook <event>         lifecycle hook: session-start | prompt | stop
    bli-memory-mcp --print-config[=H]   print the install contract / a host's config block
    bli-memory-mcp install|uninstall|status [--host H] [--dry-run]
    bli-memory-mcp ui [--no-open] [--port N]   the memory browser on 127.0.0.1

This module imports nothing at the top beyond the standard library's ``sys``: the
``hook`` branch runs on every prompt and must stay on the standard library, so each
branch imports what it needs inside it.
"""

from __future__ import annotations

import os
import sys
from typing import NoReturn

__all__ = ["main"]

#: The help text; ``{default_host}`` is :data:`bli_memory.core.defaults.DEFAULT_HOST` (see :func:`_usage`).
USAGE = """\
usage: bli-memory-mcp [--print-config[=HOST]] [COMMAND] ...

Memory for AI coding agents: an MCP server on stdio, lifecycle hooks, an installer.

commands:
  (none)                 run the MCP server on stdio (this is what agent hosts start)
  demo                   save and recall through the real server in a scratch store
  daemon                 resident daemon that keeps recall warm (the prompt hook starts it)
  worker [--once]        run queued extract jobs
  service [--database-url URL] [--host H --port N]
                         the team memory service (HTTP, Postgres + pgvector)
  memory search|save|update|recall|list|get|forget|purge|export|import|audit|...
                         search, save, correct, inspect and manage the stored memories
                         (`memory --help` lists them all)
  documents index|status|search|forget|delete
                         the project's documents and commit messages, searched beside
                         its memories
  extractor status|use host --host H|use rules
                         what distils captured exchanges: the rules (default, offline)
                         or, opted in, your own claude/codex/gemini CLI's model
  model list|install NAME
                         embedding models: install mpnet (all-mpnet-base-v2) to use it
  ui [--no-open] [--port N]
                         a local web page to see, search, correct and forget memories
  hook EVENT [--host H] [--probe]
                         lifecycle hook reading the host's JSON on stdin;
                         EVENT is session-start, prompt or stop
  install [--host H|all] [--dry-run] [--extractor host|rules]
                         register the server and hooks with an agent host (default: {default_host})
  uninstall [--host H|all] [--dry-run]
                         remove exactly what install added
  status [--host H|all] [--check]
                         installed / outdated / absent, per host; --check starts each
                         installed host's MCP server as configured and runs a search
  --print-config[=HOST]  print the install contract ({default_host}) or a host's config block
  --version              print the version

example:
  bli-memory-mcp demo && bli-memory-mcp install --dry-run

`cockpit` is the companion command: `cockpit doctor` checks the whole set-up, `cockpit
login` pairs with a team service, `cockpit ops --memory` shows the hooks' counts.
"""


def main(argv: list[str] | None = None) -> int:
    """Entry point of ``bli-memory-mcp``; returns the process exit code."""
    args = list(sys.argv[1:] if argv is None else argv)
    if args and args[0] == "hook":
        if os.environ.get("BLI_MEMORY_HOOKS_OFF") == "1":  # inside a headless request (core/headless.py)
            return 0
        from bli_memory.core.hooks.main import main as hook_main

        return hook_main(args[1:])
    if args and args[0] in ("-h", "--help", "help"):
        sys.stdout.write(_usage())
        return 0
    if args and args[0] == "--version":
        from bli_memory.core._version import VERSION

        sys.stdout.write(f"bli-memory-mcp {VERSION}\n")
        return 0
    from bli_memory.core.cli.exits import run_cli

    return run_cli("bli-memory-mcp", _dispatch, args)


def _usage() -> str:
    from bli_memory.core.defaults import DEFAULT_HOST

    return USAGE.format(default_host=DEFAULT_HOST)


def _dispatch(args: list[str]) -> int:
    if args and args[0].startswith("--print-config"):
        _, _, host = args[0].partition("=")
        rest = args[1:]
        if not host and rest:
            # `--print-config --claude` (the spec's spelling) or `--print-config claude`.
            host, rest = rest[0].removeprefix("--"), rest[1:]
        if rest or not (args[0] == "--print-config" or args[0].startswith("--print-config=")):
            sys.stderr.write(f"bli-memory-mcp: unexpected arguments {' '.join(args)!r}; "
                             "use --print-config[=HOST]\n")
            return 2
        return _plugin_command("print-config", [host] if host else [], args)
    if args and args[0] in ("install", "uninstall", "status"):
        return _plugin_command(args[0], args[1:], args)
    if args and args[0] in _SUBCOMMANDS:
        import importlib

        module = importlib.import_module(_SUBCOMMANDS[args[0]])
        code = int(module.main(args[1:]) or 0)
        if args[0] == "daemon":
            _leave(code)  # it may still be building a side index (see _leave)
        return code
    if args and args[0] not in ("serve",):
        if args[0].startswith("-"):
            sys.stderr.write(f"bli-memory-mcp: unknown command {args[0]!r}\n\n{_usage()}")
            return 2
        # Any other word may be a command a plugin registers (``register_commands``).
        return _plugin_command(args[0], args[1:], args)
    return _serve()


def _plugin_command(name: str, argv: list[str], args: list[str]) -> int:
    """A command a plugin registers (the installer's); unknown when none does."""
    from bli_memory.core.cli.commands import run_plugin_command

    code = run_plugin_command(name, argv, prog="bli-memory-mcp")
    if code is None:
        sys.stderr.write(f"bli-memory-mcp: unknown command {args[0]!r}\n\n{_usage()}")
        return 2
    return code


#: Subcommands implemented in their own module, each with ``main(argv) -> int``.
_SUBCOMMANDS = {
    "demo": "bli_memory.core.cli.demo",
    "daemon": "bli_memory.core.daemon.server",
    "worker": "bli_memory.core.cli.worker",
    "service": "bli_memory.core.cli.service",
    "memory": "bli_memory.core.cli.memory",
    "documents": "bli_memory.core.cli.documents",
    "extractor": "bli_memory.core.cli.extractor",
    "model": "bli_memory.core.cli.model",
    "ui": "bli_memory.core.ui.cli",
}


#: Said on stderr when the server is started by hand in a terminal: it reads JSON-RPC from
#: stdin and prints nothing more, which looks like a hang.
TERMINAL_HINT = (
    "bli-memory-mcp: this is the MCP server; it talks JSON-RPC on stdin/stdout with an agent "
    "host and prints nothing more. Press Ctrl-D to leave. To try it: bli-memory-mcp demo; to "
    "register it with a host: bli-memory-mcp install; all commands: bli-memory-mcp --help\n")


def _in_a_terminal() -> bool:
    """Whether stdin is a terminal (False when the process has no stdin at all)."""
    try:
        return sys.stdin is not None and sys.stdin.isatty()
    except (OSError, ValueError):
        return False


def _serve() -> int:
    if _in_a_terminal():
        sys.stderr.write(TERMINAL_HINT)
    # With the embedded store the session is relayed to the daemon's MCP server, on the
    # standard library (core/mcp/relay.py); a handover means this process serves it.
    from bli_memory.core.mcp.relay import relay_session

    handover = relay_session()
    if handover is None:
        _leave(0)  # the daemon served the whole session
    from bli_memory.core.logs import configure_logging
    from bli_memory.core.settings import load_settings

    settings = load_settings()
    configure_logging(settings.log_level, settings.log_format)
    from bli_memory.core.team.client.pairing import check_paired

    check_paired(settings)  # a configured service without a token: one sentence, exit 1
    from bli_memory.core.mcp.server import run_stdio

    run_stdio(settings, handover)
    _leave(0)  # the client closed stdin: done


def _leave(code: int) -> NoReturn:
    """End a long-lived process (MCP server, daemon) once its work is done.

    Native threads may still be running there (the model loading in onnxruntime, a
    side index being built in tantivy or usearch); finalising the interpreter under
    them aborts the process (SIGABRT, exit 134) instead of ending it, so flush and
    leave without finalising. Stores are closed by the caller before this.
    """
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
