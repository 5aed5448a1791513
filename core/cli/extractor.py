"""``bli-memory-mcp extractor``: which extractor distils captured exchanges.

    bli-memory-mcp extractor status [--json]
    bli-memory-mcp extractor use host --host claude|codex|gemini [--model M]
                                      [--daily-requests N] [--max-tokens N] [--timeout S]
    bli-memory-mcp extractor use rules

The rules (``default``) distil by default, offline. ``use host`` opts in to the person's
own host CLI (:mod:`bli_memory.core.extraction.host_model`); before anything is saved it
says which CLI, model, provider and account will be used, and what is sent
(``docs/extraction.md``). ``install --extractor host`` does the same through
:func:`opt_in`.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Callable
from typing import Any

from bli_memory.core.errors import ConfigError

__all__ = ["disclosure", "main", "opt_in"]


def disclosure(pm: Any, host: str, model: str | None) -> list[str]:
    """The lines that say what opting in means for ``host``: CLI, model, provider,
    account, what is sent and what it costs.

    Raises:
        ConfigError: no adapter can run ``host`` headless.
    """
    from bli_memory.core.paths import home_dir

    info = pm.hook.host_headless_info(host=host, home=home_dir())
    if info is None:
        raise ConfigError(f"no host plugin runs {host!r} headless", reason="config_invalid")
    account = (f"{info.account}" if info.account else
               f"no login found in {info.display}'s files: until `{info.cli}` is logged in, every capture "
               "falls back to the rules (not_logged_in)")
    return [
        f"capture will ask {info.display}'s model ({model or info.default_model}) at {info.provider}, "
        f"through your own `{info.cli}` login: {account}.",
        "each request sends a digest of the exchange (your statements, candidate sentences from the "
        "replies, file names; secrets masked, no file bodies), never the transcript.",
        "requests count against that account's usage or bill, and its provider's terms for "
        "subscription use apply (docs/extraction.md).",
    ]


def opt_in(pm: Any, host: str, *, out: Callable[[str], Any], model: str | None = None,
           daily_requests: int | None = None, max_tokens: int | None = None,
           timeout_s: float | None = None) -> None:
    """Save the host extractor for ``host`` and print what that means.

    Raises:
        ConfigError: the host cannot run headless, or a limit is out of range.
    """
    from bli_memory.core.extraction.host_config import host_choice, save_choice
    from bli_memory.core.settings import load_settings

    lines = disclosure(pm, host, model)
    path = save_choice("host", host=host, model=model, daily_requests=daily_requests,
                       max_tokens=max_tokens, timeout_s=timeout_s)
    choice = host_choice(load_settings())
    out(f"extractor: host ({host})\n")
    for line in lines:
        out(f"  - {line}\n")
    out(f"  - at most {choice.daily_requests} requests a day, {choice.max_tokens} digest tokens each, "
        f"{choice.timeout_s:g} s; past the budget, or on any failure, the rules capture instead.\n")
    out(f"  - saved in {path}; `bli-memory-mcp extractor use rules` turns it off.\n")


def _status(as_json: bool) -> int:
    from bli_memory.core.extraction import host_ledger
    from bli_memory.core.extraction.host_config import choice_path, headless_hosts, host_choice, load_choice
    from bli_memory.core.paths import home_dir
    from bli_memory.core.plugins import get_plugin_manager
    from bli_memory.core.settings import load_settings

    settings = load_settings()
    saved = load_choice()
    chosen = settings.extractor or saved.get("extractor") or ("openai" if settings.extract_url else "default")
    view: dict[str, Any] = {"extractor": chosen, "saved_in": str(choice_path()) if saved else None}
    if chosen == "host":
        pm = get_plugin_manager()
        choice = host_choice(settings)
        info = pm.hook.host_headless_info(host=choice.host, home=home_dir())
        view.update(host=choice.host, model=choice.model or (info.default_model if info else None),
                    account=info.account if info else None, daily_requests=choice.daily_requests,
                    max_tokens=choice.max_tokens, timeout_s=choice.timeout_s,
                    today=host_ledger.read_days().get(host_ledger.today(), {}))
    if as_json:
        sys.stdout.write(json.dumps(view, indent=2) + "\n")
        return 0
    out = sys.stdout.write
    if chosen == "host":
        out(f"extractor: host: {view['host']}'s own model, {view['model']}"
            f" ({view['account'] or 'no login found in its files'})\n")
        today = view["today"]
        fell = ", ".join(f"{k} {v}" for k, v in sorted((today.get("fallbacks") or {}).items())) or "none"
        out(f"  today (UTC): {today.get('requests', 0)} of {view['daily_requests']} requests, "
            f"{today.get('input_tokens', 0)} tokens in, {today.get('output_tokens', 0)} out, "
            f"${today.get('cost_usd', 0.0):.4f} reported; fell back to the rules: {fell}\n")
        out("  `extractor use rules` turns it off\n")
        return 0
    names = {"default": "rules: offline, no model", "openai": "openai: an OpenAI-compatible endpoint"}
    out(f"extractor: {names.get(chosen, chosen + ': a plugin')}\n")
    able = headless_hosts(get_plugin_manager(), home_dir())
    out(f"  the model of a host you run can distil instead: `extractor use host --host "
        f"{'|'.join(able) or 'NAME'}` (docs/extraction.md)\n")
    return 0


def main(argv: list[str]) -> int:
    """Entry point of ``bli-memory-mcp extractor``; returns the exit code."""
    parser = argparse.ArgumentParser(prog="bli-memory-mcp extractor",
                                     description="Choose what distils captured exchanges: the rules "
                                                 "(default, offline) or your own host CLI's model.")
    sub = parser.add_subparsers(dest="command", required=True)
    status = sub.add_parser("status", help="the extractor in use, and today's host-model spend")
    status.add_argument("--json", action="store_true", help="print JSON")
    use = sub.add_parser("use", help="choose the extractor",
                         description="Choose what distils captured exchanges: `use rules` (offline, the "
                                     "default) or `use host --host NAME` (that host's CLI and login; "
                                     "docs/extraction.md says what is sent and what it costs). A limit "
                                     "not given keeps the saved one.")
    use.add_argument("kind", choices=("host", "rules"), help="host: your host CLI's model; rules: offline")
    use.add_argument("--host", help="whose CLI and login: a host that runs headless "
                                    "(`extractor status` lists them)")
    use.add_argument("--model", help="the model to ask for (default: the host's small one)")
    use.add_argument("--daily-requests", type=int, metavar="N",
                     help="most requests per UTC day (default 200)")
    use.add_argument("--max-tokens", type=int, metavar="N",
                     help="most digest tokens per request (default 4000)")
    use.add_argument("--timeout", type=float, metavar="S", help="seconds per request (default 120)")
    args = parser.parse_args(argv)
    if args.command == "status":
        return _status(args.json)
    if args.kind == "rules":
        from bli_memory.core.extraction.host_config import save_choice

        if args.host or args.model or args.daily_requests is not None or args.max_tokens is not None \
                or args.timeout is not None:
            use.error("use rules takes no --host, --model or limits")
        save_choice("default")
        sys.stdout.write("extractor: the rules (offline); no host CLI will be started\n")
        return 0
    from bli_memory.core.extraction.host_config import headless_hosts
    from bli_memory.core.paths import home_dir
    from bli_memory.core.plugins import get_plugin_manager

    able = headless_hosts(get_plugin_manager(), home_dir())
    if not args.host:
        use.error(f"use host needs --host {'|'.join(able)}")
    if args.host not in able:
        use.error(f"{args.host} cannot run headless; the host extractor runs {', '.join(able)}")
    opt_in(get_plugin_manager(), args.host, out=sys.stdout.write, model=args.model,
           daily_requests=args.daily_requests, max_tokens=args.max_tokens, timeout_s=args.timeout)
    return 0
