"""``bli-memory-mcp memory list|search|save|update|recall|get|forget|purge|export|import|audit|...``.

The same operations the MCP tools run, for a person at a terminal: inspect what is
kept, read one memory with its history, forget or purge one, back up and restore
(JSON Lines that round-trip exactly, history included), and check the store.

Every command works through the configured backend: the embedded store, or the team
memory service when one is configured (``BLI_MEMORY_DASHBOARD_URL`` or a paired
machine). To move to the service, export with no service configured, then import with
it configured; on the service, export, import and audit cover the rows you own. A
space defaults to the current folder's.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from typing import Any

from bli_memory.core.cli import memory_recall

__all__ = ["main"]


def _backend() -> Any:
    from bli_memory.core.plugins import build_backend, get_plugin_manager
    from bli_memory.core.settings import load_settings

    return build_backend(get_plugin_manager(), load_settings())


def _space(arg: str | None) -> str:
    from bli_memory.core.errors import InvalidInputError
    from bli_memory.core.memory.spaces import validate_tag
    from bli_memory.core.memory.stored_secrets import check_container_tag

    if arg:
        try:
            tag = validate_tag(arg)
        except ValueError as exc:
            raise InvalidInputError(str(exc)) from exc
        check_container_tag(tag, name="--space")  # a token as --space would be echoed in every answer
        return tag
    from bli_memory.core.hooks.container_tag import checked_space

    return checked_space(os.getcwd(), environ=os.environ).tag  # as the hooks refuse a forced tag


def _memory_id(value: str) -> str:
    """argparse type: a memory id, which is a whole UUID (as ``list`` and ``search`` show).

    The value is not repeated in the message: what is pasted where an id goes may be a token.
    """
    import uuid

    try:
        return str(uuid.UUID(value.strip()))
    except ValueError:
        raise argparse.ArgumentTypeError(
            "that is not a whole memory id (what was typed is not shown back, in case it was "
            "a secret): ids are UUIDs of 36 characters, such as "
            "d95c4a72-8bdf-4ced-8858-eba258a6976b, as `memory list` and `memory search` show "
            "them; the first 8 characters the browser shows are not enough") from None


def _limit(value: str) -> int:
    """argparse type: an integer from 1 to 100."""
    try:
        n = int(value)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{value!r} is not a whole number") from None
    if not 1 <= n <= 100:
        raise argparse.ArgumentTypeError(f"{n} is outside 1-100")
    return n


def _audit_text(report: dict[str, Any]) -> str:
    """One human line for an audit report (``--json`` gives the whole report)."""
    problems = ", ".join(
        f"{report[k]} {k.replace('_', ' ')}"
        for k in ("missing_keyword", "stale_keyword", "missing_vector", "wrong_model") if report.get(k)
    )
    counts = ", ".join(f"{n} {state}" for state, n in report.get("counts", {}).items())
    if report["ok"]:
        return f"intact ({counts})"
    after = report.get("after")
    if after is not None:
        verdict = "now intact" if after.get("ok") else "still NOT intact after repair"
        return f"was not intact ({problems}); repaired, {verdict} ({counts})"
    return f"NOT intact: {problems}; run `bli-memory-mcp memory audit --repair` ({counts})"


def _line(m: Any) -> str:
    text = " ".join(m.content.split())
    return f"{m.id}  [{m.created_at[:10]}] {text[:160]}"


class _Formatter(argparse.HelpFormatter):
    """Help that reads the same on CPython 3.11 to 3.13 (docs/cli.md is compared on each).

    The subcommands go under one ``command`` metavar (a usage line listing all ten choices
    is wider than a terminal, and 3.13 wraps it differently), and the help column is fixed
    at 20 (3.13 measures the subcommand names' indent differently, so it would place it at
    22 where earlier versions place it at 20).
    """

    def __init__(self, prog: str) -> None:
        super().__init__(prog, max_help_position=20)


def main(argv: list[str]) -> int:
    """Run one ``memory`` subcommand; returns the exit code."""
    from bli_memory.core.memory.wire import record_of

    parser = argparse.ArgumentParser(
        prog="bli-memory-mcp memory",
        description="Inspect, back up, move and check the stored memories (and recorded session turns).",
        formatter_class=_Formatter,
    )
    sub = parser.add_subparsers(dest="cmd", required=True, metavar="command")
    p = sub.add_parser("list", help="newest live memories of a space")
    p.add_argument("--space", help="container tag (default: this folder's)")
    p.add_argument("--limit", type=_limit, default=20, help="how many, 1-100 (default 20)")
    p.add_argument("--json", action="store_true", help="JSON instead of one line per memory")
    memory_recall.add_parsers(sub, _limit, _memory_id)
    p = sub.add_parser("get", help="one memory with its history")
    p.add_argument("id", type=_memory_id)
    p.add_argument("--include-inactive", action="store_true",
                   help="also read a superseded or forgotten version, and show them in the history")
    p.add_argument("--json", action="store_true", help="JSON output")
    p = sub.add_parser("forget", help="tombstone one memory by id")
    p.add_argument("id", type=_memory_id)
    p.add_argument("--space")
    p = sub.add_parser("purge", help="erase a memory and all its versions from the store (secrets)")
    p.add_argument("id", type=_memory_id)
    p.add_argument("--yes", action="store_true", help="confirm: without it nothing is erased")
    p = sub.add_parser("export", help="write every row (history included) as JSON Lines to stdout")
    p.add_argument("--space", help="only this space (default: every space; on a service, every one you own)")
    p = sub.add_parser("import", help="read JSON Lines from a file (or - for stdin) into the store")
    p.add_argument("file")
    p = sub.add_parser("recordings", help="recorded session turns of a space (record_session), newest first")
    p.add_argument("--space", help="container tag (default: this folder's)")
    p.add_argument("--limit", type=_limit, default=20, help="how many, 1-100 (default 20)")
    p.add_argument("--json", action="store_true", help="JSON, with the full text")
    p = sub.add_parser("clear-recordings", help="erase the recorded session turns of a space")
    p.add_argument("--space", help="container tag (default: this folder's)")
    p.add_argument("--yes", action="store_true", help="confirm: without it nothing is erased")
    p = sub.add_parser("reembed", help="re-embed the embedded store with the configured model "
                       "(BLI_MEMORY_EMBEDDER); resumable, safe to interrupt",
                       description="Needed after a change of embedding model (BLI_MEMORY_EMBEDDER): a "
                       "store holds vectors of one model, and search and save refuse a store of "
                       "another. This computes the vector of every row that keeps one again with the "
                       "configured model, a batch per transaction; ids, versions and tombstones stay "
                       "as they are. Interrupt it at any time and run it again to finish.")
    p.add_argument("--batch", type=_limit, default=64, help="rows per transaction, 1-100 (default 64)")
    p.add_argument("--json", action="store_true", help="the result as JSON")
    p = sub.add_parser("audit", help="check the store's indexes; --repair rebuilds them")
    p.add_argument("--repair", action="store_true", help="rebuild the derived indexes from the rows")
    p.add_argument("--json", action="store_true", help="the full report as JSON")
    args = parser.parse_args(argv)
    out = sys.stdout.write
    if args.cmd == "reembed":
        from bli_memory.core.embedded import reembed
        from bli_memory.core.errors import ConfigError
        from bli_memory.core.settings import load_settings
        from bli_memory.core.team.client.remote import remote_target

        settings = load_settings()
        if remote_target(settings) is not None:  # the embedded wing never looks at the team's
            raise ConfigError("memory reembed works on the embedded store; this machine uses a memory "
                              "service, whose vectors the service keeps")
        return reembed.main(settings, batch_rows=args.batch, as_json=args.json)
    from bli_memory.core.memory.version_ids import version_note

    backend = _backend()
    try:
        if args.cmd in memory_recall.COMMANDS:
            return memory_recall.run(args, backend, _space(args.space), out)
        if args.cmd == "list":
            space = _space(args.space)
            rows = backend.list_memories(space=space, limit=args.limit)
            if args.json:
                out(json.dumps([record_of(m) for m in rows], ensure_ascii=False, indent=2) + "\n")
            else:
                out("".join(_line(m) + "\n" for m in rows) or f"(no live memories in space {space})\n")
        elif args.cmd == "get":
            memory, history = backend.get_memory(args.id.strip(), include_inactive=args.include_inactive)
            if args.json:
                out(json.dumps({"memory": record_of(memory), "history": [record_of(m) for m in history]},
                               ensure_ascii=False, indent=2) + "\n")
            else:
                out(f"{memory.content}\n\nid {memory.id} · version {memory.version} · {memory.state} · "
                    f"space {memory.space} · created {memory.created_at}\n")
                note = version_note(args.id, memory, history=history)
                if note:
                    out(note.strip() + "\n")
                for m in history:
                    out(f"  v{m.version} {m.state} {m.created_at}: {' '.join(m.content.split())[:160]}\n")
        elif args.cmd == "forget":
            res = backend.forget(space=_space(args.space), id=args.id)
            out(f"forgotten: {res.memory.id}\n")
            note = version_note(args.id, res.memory, res.named)
            if note:
                out(note.strip() + "\n")
        elif args.cmd == "purge":
            if not args.yes:
                sys.stderr.write("purge erases every version of the memory for good; add --yes to confirm\n")
                return 2
            n = backend.purge(args.id)
            out(f"purged {n} row(s)\n")
        elif args.cmd == "export":
            only = _space(args.space) if args.space else None
            for record in backend.export(space=only):
                out(json.dumps(record, ensure_ascii=False, sort_keys=True) + "\n")
        elif args.cmd == "import":
            try:
                fh = sys.stdin if args.file == "-" else open(args.file, encoding="utf-8")  # noqa: SIM115
            except OSError as exc:
                from bli_memory.core.errors import InvalidInputError

                message = f"cannot read {args.file}: {exc.strerror}; nothing was imported"
                raise InvalidInputError(message) from exc
            records = []
            with fh:
                for n, line in enumerate(fh, 1):
                    if not line.strip():
                        continue
                    try:
                        records.append(json.loads(line))
                    except ValueError as exc:
                        from bli_memory.core.errors import InvalidInputError

                        message = f"line {n} is not JSON ({exc}); nothing was imported"
                        raise InvalidInputError(message) from exc
            res = backend.import_records(records)
            masked = int(res.get("masked") or 0)
            forgotten = int(res.get("forgotten") or 0)
            note = f"; {masked} secret{'s' if masked != 1 else ''} masked" if masked else ""
            left = f", left out {forgotten} (forgotten in the space)" if forgotten else ""
            out(f"imported {res['imported']}, skipped {res['skipped']} (already present){left}{note}\n")
        elif args.cmd == "recordings":
            space = _space(args.space)
            recs = backend.recordings(space=space, limit=args.limit)
            if args.json:
                out(json.dumps(recs, ensure_ascii=False, indent=2) + "\n")
            else:
                lines = [f"{r['id']}  [{r['createdAt'][:16]}] {' '.join(r['text'].split())[:160]}"
                         for r in recs]
                out("".join(line + "\n" for line in lines) or f"(no recorded turns in space {space})\n")
        elif args.cmd == "clear-recordings":
            space = _space(args.space)
            if not args.yes:
                sys.stderr.write(f"this erases every recorded turn of space {space}; add --yes to confirm\n")
                return 2
            out(f"erased {backend.clear_recordings(space=space)} recorded turn(s) of space {space}\n")
        elif args.cmd == "audit":
            report = backend.audit(repair=args.repair)
            if args.json:
                out(json.dumps(report, indent=2) + "\n")
            else:
                out(_audit_text(report) + "\n")
            return 0 if (report["ok"] or report.get("after", {}).get("ok")) else 1
    finally:
        backend.close()
    return 0
