"""Claude Code runs one headless request for the ``host`` extractor.

Checked against ``claude --help`` and a recording stub at 2.1.197 (the version CI pins):

- ``-p`` with the prompt on stdin (a prompt passed as an argument that starts with ``/``
  would be a slash command; ``--disable-slash-commands`` too), ``--output-format json``;
- ``--tools ""``: the request carries ``"tools": []``. ``--json-schema`` is not used: it
  adds a ``StructuredOutput`` tool to the request, and a second request when the model
  answers in text, so the JSON is asked for in the prompt and read from ``result``;
- ``--strict-mcp-config --mcp-config '{"mcpServers":{}}'``: no MCP server starts;
- ``--settings '{"disableAllHooks": true, ...}'``: no hook fires, whatever the person's
  settings say (``alwaysThinkingEnabled: false``: no thinking budget of 32k tokens);
- ``--no-session-persistence``: no transcript; ``--name``: without it each ``-p`` run
  makes a second, hidden request for a session title;
- ``--system-prompt``: a short one in place of the 26 kB agent prompt;
- ``CLAUDE_CODE_DISABLE_CLAUDE_MDS=1``: the person's ``CLAUDE.md`` is not sent;
  ``CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1``: no telemetry; ``CLAUDE_CODE_MAX_RETRIES=2``:
  an unreachable API fails in seconds, not after eleven backed-off retries (~3 min).

The answer (stdout) is one JSON object: ``result`` (the text), ``is_error``, ``usage``
(``input_tokens``, ``cache_*_input_tokens``, ``output_tokens``) and ``total_cost_usd``.
Without a login it prints ``is_error: true`` with "Not logged in · Please run /login" and
exits 1 within about two seconds.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from bli_memory.core.headless import (
    HeadlessAnswer,
    HeadlessCommand,
    HeadlessInfo,
    HeadlessRequest,
    HeadlessRun,
)
from bli_memory.core.hookspecs import hookimpl

__all__ = ["host_headless_answer", "host_headless_command", "host_headless_info"]

HOST = "claude"
#: The small model's alias (``claude --help``: "an alias for the latest model (e.g. 'sonnet'
#: or 'opus')"); it resolves to Claude Haiku.
DEFAULT_MODEL = "haiku"
_SYSTEM = "You extract durable facts from a session digest. Reply with one JSON object only."
_SETTINGS = {"disableAllHooks": True, "alwaysThinkingEnabled": False}


@hookimpl
def host_headless_command(host: str, request: HeadlessRequest) -> HeadlessCommand | None:
    """``claude -p`` with no tools, MCP servers, hooks, thinking or session (see the module)."""
    if host != HOST:
        return None
    argv = ("claude", "-p", "--model", request.model or DEFAULT_MODEL, "--output-format", "json",
            "--tools", "", "--strict-mcp-config", "--mcp-config", '{"mcpServers":{}}',
            "--settings", json.dumps(_SETTINGS), "--no-session-persistence", "--name", "bli-memory-extract",
            "--disable-slash-commands", "--system-prompt", _SYSTEM)
    env = {"CLAUDE_CODE_DISABLE_CLAUDE_MDS": "1", "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
           "CLAUDE_CODE_MAX_RETRIES": "2"}
    return HeadlessCommand(argv=argv, env=env, stdin=request.prompt)


def _tokens(usage: dict[str, Any]) -> tuple[int | None, int | None]:
    if not isinstance(usage, dict):
        return None, None
    parts = [usage.get(k) for k in ("input_tokens", "cache_creation_input_tokens", "cache_read_input_tokens")]
    numbers = [p for p in parts if isinstance(p, int)]
    out = usage.get("output_tokens")
    return (sum(numbers) if numbers else None), (out if isinstance(out, int) else None)


@hookimpl
def host_headless_answer(host: str, run: HeadlessRun) -> HeadlessAnswer | None:
    """Read ``result``, the usage and the cost; ``not_logged_in`` for a missing or refused login."""
    if host != HOST:
        return None
    try:
        data = json.loads(run.stdout.strip().splitlines()[-1]) if run.stdout.strip() else None
    except ValueError:
        data = None
    if not isinstance(data, dict):
        return HeadlessAnswer(None, "bad_json" if run.returncode == 0 else "host_failed")
    tokens_in, tokens_out = _tokens(data.get("usage") or {})
    cost = data.get("total_cost_usd")
    cost = float(cost) if isinstance(cost, (int, float)) else None
    text = data.get("result") if isinstance(data.get("result"), str) else None
    if data.get("is_error") or run.returncode != 0:
        said = (text or "").lower()
        login = ("not logged in" in said or "/login" in said or "invalid api key" in said
                 or data.get("api_error_status") in (401, 403))
        return HeadlessAnswer(None, "not_logged_in" if login else "host_failed", tokens_in, tokens_out, cost)
    return HeadlessAnswer(text, None, tokens_in, tokens_out, cost)


@hookimpl
def host_headless_info(host: str, home: Path) -> HeadlessInfo | None:
    """Claude Code's account: ``oauthAccount.emailAddress`` of ``~/.claude.json``, else
    an API key from the environment, else unknown."""
    if host != HOST:
        return None
    import os

    account = None
    try:
        data = json.loads((home / ".claude.json").read_text(encoding="utf-8"))
        email = (data.get("oauthAccount") or {}).get("emailAddress")
        account = f"{email} (Claude subscription login)" if isinstance(email, str) and email else None
    except (OSError, ValueError, AttributeError):
        pass
    if account is None and os.environ.get("ANTHROPIC_API_KEY"):
        account = "the API key in ANTHROPIC_API_KEY"
    return HeadlessInfo(host=HOST, display="Claude Code", cli="claude", default_model=DEFAULT_MODEL,
                        provider="Anthropic", account=account)
