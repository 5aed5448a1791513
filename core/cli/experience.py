"""``cockpit memory log``: record in one line whether memory helped.

::

    cockpit memory log win|loss|noise --store bli|supermemory|both "reason"
    cockpit memory log loss --store supermemory --reason-stdin < reason.txt
    cockpit memory log noise --store both "..." --json

The entry is appended to ``~/.codex/AGENT-EXPERIENCE.md``, gets a sidecar in
``~/.codex/agent-experience-outbox/``, and one sync tick ships it (to the memory
service when one is configured, else to the embedded store). A failed delivery leaves
it queued; the command still succeeds. See :mod:`bli_memory.core.experience.log`.

Exit codes: 0 recorded (shipped or queued); 2 refused input (bad verdict, store or
reason; nothing written); 1 the log could not be written or a setting is invalid.
"""

from __future__ import annotations

import argparse
import json
import sys

__all__ = ["main"]

#: Most bytes read from stdin for ``--reason-stdin``: far above 500 characters of
#: UTF-8, so a longer reason is refused by length with a clear message.
_STDIN_LIMIT = 64 * 1024


class _Refused(Exception):
    pass


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> None:  # type: ignore[override]
        raise _Refused(message)


def _parser() -> _Parser:
    p = _Parser(
        prog="cockpit memory log",
        description="Record whether memory helped, in one line (the experience log).",
        epilog='example: cockpit memory log win --store bli '
        '"The dated decision answered the question directly"',
    )
    p.add_argument("verdict", choices=("win", "loss", "noise"),
                   help="win: memory helped; loss: it misled or was missing; noise: it added "
                        "nothing that bore on the work")
    p.add_argument("reason", nargs="*", help="one line, at most 500 characters (quote it)")
    p.add_argument("--store", required=True, choices=("bli", "supermemory", "both"),
                   help="the memory the opinion is about: bli (this one), supermemory (the "
                        "hosted service some teams move from, compared side by side), or both")
    p.add_argument("--reason-stdin", action="store_true", help="read the reason from stdin")
    p.add_argument("--json", action="store_true",
                   help="print the entry id, receipt and shipped status as JSON")
    p.add_argument("--agent", help="who records it (default: the host this runs under, else cli)")
    p.add_argument("--project", help="what it is about (default: this folder's memory space name)")
    p.add_argument("--no-sync", action="store_true", help="record only; the next sync ships it")
    return p


def _read_stdin() -> str:
    data = sys.stdin.buffer.read(_STDIN_LIMIT + 1)
    if len(data) > _STDIN_LIMIT:
        raise _Refused("the reason on stdin is far longer than 500 characters")
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise _Refused("the reason on stdin is not UTF-8 text") from exc
    # One final newline is how a line ends (echo, a file), not a second line.
    if text.endswith("\r\n"):
        text = text[:-2]
    elif text.endswith("\n"):
        text = text[:-1]
    return text


def main(argv: list[str] | None = None) -> int:
    """Run ``cockpit memory log``; returns the exit code (0, 1 or 2, see the module docstring)."""
    args_list = list(sys.argv[1:] if argv is None else argv)
    parser = _parser()
    if any(a in ("-h", "--help") for a in args_list):
        parser.print_help(sys.stdout)
        return 0
    from bli_memory.core.cli.exits import EXIT_FAILED, EXIT_USAGE
    from bli_memory.core.errors import BliMemoryError, InvalidInputError

    try:
        args = parser.parse_intermixed_args(args_list)
        if args.reason_stdin and args.reason:
            raise _Refused("give the reason as an argument or with --reason-stdin, not both")
        if args.reason_stdin:
            reason = _read_stdin()
        elif args.reason:
            reason = " ".join(args.reason)
        else:
            raise _Refused('a reason is required: cockpit memory log win --store bli "why, in one line"')
        from bli_memory.core.experience.log import log_experience

        receipt = log_experience(args.verdict, args.store, reason, ship=not args.no_sync,
                                 agent=args.agent, project=args.project)
    except (_Refused, InvalidInputError) as exc:
        message = exc.message if isinstance(exc, InvalidInputError) else str(exc)
        _fail(f"refused: {message}", as_json=bool(args_list and "--json" in args_list), code="invalid_input")
        return EXIT_USAGE
    except BliMemoryError as exc:  # answered here, not by run_cli: --json wants the error as JSON
        _fail(exc.message, as_json="--json" in args_list, code=exc.reason)
        return EXIT_FAILED
    if args.json:
        sys.stdout.write(json.dumps(receipt.as_dict(), ensure_ascii=False, indent=2) + "\n")
        return 0
    e = receipt.entry
    out = [f"Recorded {e.verdict} for {e.store} {e.marker} (entry {e.id}).", f"  {e.line}"]
    if e.masked:
        out.append(f"  {e.masked} secret(s) in the reason were masked before writing.")
    if receipt.shipped:
        where = "the memory service" if receipt.shipped_to == "service" else "the local store"
        out.append(f"  Shipped to {where}.")
    elif args.no_sync:
        out.append("  Queued; the next sync ships it.")
    else:
        why = f" ({receipt.sync.reason})" if receipt.sync.reason else ""
        out.append(f"  Queued{why}; the next sync retries it under the same id.")
    sys.stdout.write("\n".join(out) + "\n")
    return 0


def _fail(message: str, *, as_json: bool, code: str) -> None:
    sys.stderr.write(f"cockpit memory log: {message}\n")
    if as_json:
        sys.stdout.write(json.dumps({"error": code, "message": message}, ensure_ascii=False) + "\n")
