"""``bli-memory-mcp service``: run the team memory service and manage its tokens.

::

    bli-memory-mcp service --database-url postgresql://... [--host 127.0.0.1] [--port 8765]
    bli-memory-mcp service migrate
    bli-memory-mcp service token create --person alice --device laptop [--json]
    bli-memory-mcp service token list [--person alice] [--json]
    bli-memory-mcp service token revoke TOKEN_ID
    bli-memory-mcp service share grant --owner alice --space TAG --to bob [--write] [--create-person]
    bli-memory-mcp service share revoke --owner alice --space TAG --to bob
    bli-memory-mcp service alias add ALIAS CANONICAL

The database URL comes from ``--database-url`` or ``BLI_MEMORY_DATABASE_URL`` (the
variable keeps a password out of the process list). A new token is printed once, on
stdout; only its hash is stored, and no command ever prints it again.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from typing import Any

__all__ = ["main"]

DEFAULT_PORT = 8765


def _parser() -> argparse.ArgumentParser:
    top = argparse.ArgumentParser(add_help=False)
    top.add_argument("--database-url", default=os.environ.get("BLI_MEMORY_DATABASE_URL"),
                     help="postgresql://user:pass@host:port/db (default: $BLI_MEMORY_DATABASE_URL)")
    # Subcommands accept the option too; SUPPRESS keeps their default from erasing a
    # value given before the subcommand.
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument("--database-url", default=argparse.SUPPRESS, help=argparse.SUPPRESS)
    parser = argparse.ArgumentParser(
        prog="bli-memory-mcp service", parents=[top],
        description="The team memory service (HTTP, Postgres + pgvector), and its device tokens.",
        epilog="example: bli-memory-mcp service --database-url postgresql://localhost/bli --port 8765",
    )
    parser.add_argument("--host", default="127.0.0.1", help="address to listen on (default 127.0.0.1)")
    parser.add_argument("--port", type=int, default=DEFAULT_PORT, help=f"port (default {DEFAULT_PORT})")
    parser.add_argument("--log-level", default=os.environ.get("BLI_MEMORY_LOG_LEVEL", "info"),
                        choices=("debug", "info", "warning", "error"))
    parser.add_argument("--no-jobs", action="store_true", help="do not distil extract jobs in this process")
    sub = parser.add_subparsers(dest="command")

    sub.add_parser("migrate", parents=[common], help="bring the database schema up to date and exit")

    tokens = sub.add_parser("token", parents=[common], help="device tokens")
    token = tokens.add_subparsers(dest="action", required=True)
    create = token.add_parser("create", parents=[common], help="issue a token for a person's device")
    create.add_argument("--person", required=True)
    create.add_argument("--device", required=True)
    create.add_argument("--json", action="store_true")
    listing = token.add_parser("list", parents=[common], help="list tokens (never the token itself)")
    listing.add_argument("--person")
    listing.add_argument("--json", action="store_true")
    revoke = token.add_parser("revoke", parents=[common], help="revoke a token by id")
    revoke.add_argument("token_id")

    sharing = sub.add_parser("share", parents=[common], help="share a space with another person")
    share = sharing.add_subparsers(dest="action", required=True)
    for name in ("grant", "revoke"):
        p = share.add_parser(name, parents=[common])
        p.add_argument("--owner", required=True, help="the person whose space it is")
        p.add_argument("--space", required=True, help="the container tag")
        p.add_argument("--to", required=True, dest="grantee", help="the person who gets (or loses) access")
        if name == "grant":
            p.add_argument("--write", action="store_true", help="also let them change memories")
            p.add_argument("--create-person", action="store_true",
                           help="create the owner or the grantee when nobody has that name yet")

    alias = sub.add_parser("alias", parents=[common], help="tags that name the same space").add_subparsers(
        dest="action")
    add = alias.add_parser("add", parents=[common])
    add.add_argument("alias")
    add.add_argument("canonical")
    return parser


def _admin(url: str | None) -> Any:
    from bli_memory.core.errors import ConfigError
    from bli_memory.core.team.postgres.store import PostgresBackend

    if not url:
        raise ConfigError("give --database-url or set BLI_MEMORY_DATABASE_URL", reason="config_invalid")
    return PostgresBackend(url, pool_size=2)


#: Modules the service needs beyond the client install (the ``service`` extra).
_SERVICE_MODULES = ("uvicorn", "starlette", "psycopg", "psycopg_pool", "sqlalchemy", "alembic",
                    "prometheus_client")


def _check_service_extra() -> None:
    """Raise one clear ConfigError when the ``service`` extra is not installed."""
    from importlib.util import find_spec

    from bli_memory.core.errors import ConfigError

    missing = [name for name in _SERVICE_MODULES if find_spec(name) is None]
    if missing:
        raise ConfigError(
            f"the team service needs the service extra ({', '.join(missing)} missing): "
            'pip install "bli-memory-mcp[service]"', reason="config_invalid",
        )


def _quiet_alembic() -> None:
    """Alembic logs a line per plugin at INFO on every start; keep only its warnings."""
    import logging

    logging.getLogger("alembic").setLevel(logging.WARNING)


def _check_port_free(host: str, port: int) -> None:
    """Raise one clear ConfigError when ``host:port`` cannot be bound (in use, no such address)."""
    import socket

    from bli_memory.core.errors import ConfigError

    try:
        infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
        family, kind, proto, _, address = infos[0]
        with socket.socket(family, kind, proto) as probe:
            probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # as uvicorn binds
            probe.bind(address)
    except OSError as exc:
        raise ConfigError(f"cannot listen on {host}:{port}: {exc.strerror or exc}",
                          reason="config_invalid") from exc


def _serve(args: argparse.Namespace) -> int:
    from bli_memory.core.errors import ConfigError

    if not args.database_url:
        raise ConfigError("give --database-url or set BLI_MEMORY_DATABASE_URL", reason="config_invalid")
    _check_service_extra()
    import uvicorn

    from bli_memory.core.logs import configure_logging
    from bli_memory.core.team.postgres.store import migrate
    from bli_memory.core.ui.service_app import create_service_app

    configure_logging(args.log_level, os.environ.get("BLI_MEMORY_LOG_FORMAT", "console"))
    _quiet_alembic()
    # Reach the database and bring its schema up to date before listening: a wrong URL
    # or a database that is down is one line and exit 1, not a server that fails later.
    applied = migrate(args.database_url)
    if applied:
        sys.stderr.write(f"[bli-memory] database schema migrated: {', '.join(applied)}\n")
    _check_port_free(args.host, args.port)
    app = create_service_app(database_url=args.database_url, run_jobs=not args.no_jobs)
    sys.stderr.write(f"[bli-memory] service listening on http://{args.host}:{args.port}\n")
    sys.stderr.flush()
    # access_log off: the service writes its own line per request (door, status, time,
    # person), which never carries a header. log_config None: uvicorn's own lines go through
    # the one configuration above (console or JSON) instead of uvicorn's formatters.
    uvicorn.run(app, host=args.host, port=args.port, log_level=args.log_level, access_log=False,
                lifespan="on", server_header=False, log_config=None)
    return 0


def main(argv: list[str]) -> int:
    """Run ``bli-memory-mcp service ...``; returns the exit code.

    Raises:
        BliMemoryError: configuration or database failures (the CLI prints one line).
    """
    args = _parser().parse_args(argv)
    if args.command is None:
        return _serve(args)
    _check_service_extra()
    if args.command == "migrate":
        from bli_memory.core.team.postgres.store import migrate

        if not args.database_url:
            sys.stderr.write("bli-memory-mcp service: give --database-url or set BLI_MEMORY_DATABASE_URL\n")
            return 2
        _quiet_alembic()
        applied = migrate(args.database_url)
        sys.stdout.write(("applied: " + ", ".join(applied) if applied else "schema is current") + "\n")
        return 0
    admin = _admin(args.database_url)
    try:
        return _admin_command(admin, args)
    finally:
        admin.close()


def _admin_command(admin: Any, args: argparse.Namespace) -> int:
    out = sys.stdout
    if args.command == "token" and args.action == "create":
        token_id, token = admin.create_token(args.person, args.device)
        if args.json:
            out.write(json.dumps({"id": token_id, "person": args.person, "device": args.device,
                                  "token": token}) + "\n")
        else:
            out.write(token + "\n")
            sys.stderr.write(
                f"token {token_id} for {args.person} on {args.device}: shown once, store it now\n"
            )
        return 0
    if args.command == "token" and args.action == "list":
        tokens = admin.list_tokens(args.person)
        if args.json:
            out.write(json.dumps([t.__dict__ for t in tokens], indent=2) + "\n")
        else:
            for t in tokens:
                state = f"revoked {t.revoked_at}" if t.revoked_at else "live"
                used = t.last_used_at or "never"
                out.write(f"{t.id}  {t.person}  {t.device}  created {t.created_at}  used {used}  {state}\n")
        return 0
    if args.command == "token" and args.action == "revoke":
        if not admin.revoke_token(args.token_id):
            sys.stderr.write(f"bli-memory-mcp service: no live token with id {args.token_id}\n")
            return 1
        out.write(f"revoked {args.token_id}\n")
        return 0
    if args.command == "share" and args.action == "grant":
        access = "write" if args.write else "read"
        admin.share_space(owner=args.owner, space=args.space, grantee=args.grantee, access=access,
                          create_people=args.create_person)
        out.write(f"{args.grantee} may {access} {args.owner}'s space {args.space}\n")
        return 0
    if args.command == "share" and args.action == "revoke":
        removed = admin.unshare_space(owner=args.owner, space=args.space, grantee=args.grantee)
        out.write(("withdrawn" if removed else "there was no such share") + "\n")
        return 0 if removed else 1
    if args.command == "alias" and args.action == "add":
        admin.add_alias(args.alias, args.canonical)
        out.write(f"{args.alias} now names the space {args.canonical}\n")
        return 0
    return 2  # pragma: no cover - argparse allows nothing else
