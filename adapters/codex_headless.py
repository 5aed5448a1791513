"""Codex CLI runs one headless request for the ``host`` extractor.

Checked against ``codex exec --help``, ``codex features list`` and a recording stub at
0.171.0 (the version CI pins). The person's own ``config.toml`` is read (their provider,
``openai_base_url`` and login stay theirs); everything that would act is switched off:

- ``codex login status`` first: a request made logged out sends no credentials and
  retries, with no word of a login, so the check (0.1 s, exit 1 "Not logged in") is what
  tells ``not_logged_in``; skipped when ``CODEX_API_KEY`` or ``OPENAI_API_KEY`` is set,
  which ``exec`` uses while ``login status`` does not count them;
- ``exec --ephemeral`` (no session file, which would hold the digest),
  ``--skip-git-repo-check`` (the run folder is no repository), ``--sandbox read-only``,
  ``--ignore-rules``, the digest on stdin (``-``);
- ``--disable hooks`` (no hook fires, whatever is configured), ``-c notify=[]``, and
  ``-c mcp_servers.<name>.enabled=false`` for every MCP server the config names (an empty
  ``mcp_servers`` override does not stop them);
- no tool in the request: ``--disable shell_tool view_image multi_agent goals plugins``,
  ``-c web_search=disabled``, ``-c tools.experimental_request_user_input.enabled=false``,
  and a model catalog of one entry, the model asked for, with no ``apply_patch`` tool
  (``model_catalog_json``; every model of the bundled catalog declares one);
- ``model_instructions_file``: a short system prompt in place of the 21 kB agent prompt;
  no permissions, environment or skills blocks; ``project_doc_max_bytes=0``;
- ``--disable unbounded_connection_retries`` and ``-c analytics.enabled=false``: an
  unreachable API fails in about 30 s instead of waiting for the network for ever;
- ``--output-schema``: the facts schema, sent as ``text.format`` (structured output, not a tool).

The answer (``--json``, stdout) is JSON lines: the text is the ``item.completed`` event
whose item is an ``agent_message``, the usage is on ``turn.completed``
(``input_tokens``, ``output_tokens``); a failure ends with ``turn.failed``. No cost is
reported. ``$CODEX_HOME/AGENTS.md``, the person's global instructions, is still sent:
no switch at this version leaves it out.
"""

from __future__ import annotations

import json
import os
import re
from pathlib import Path
from typing import Any

from bli_memory.adapters.codex_config import codex_home
from bli_memory.core.headless import (
    HeadlessAnswer,
    HeadlessCommand,
    HeadlessInfo,
    HeadlessRequest,
    HeadlessRun,
)
from bli_memory.core.hookspecs import hookimpl

__all__ = ["host_headless_answer", "host_headless_command", "host_headless_info"]

HOST = "codex"
#: "Fast and affordable model for easier tasks": the small model of the catalog bundled
#: with Codex CLI 0.171.0.
DEFAULT_MODEL = "gpt-6-luna"
_SYSTEM = "You extract durable facts from a session digest. Reply with one JSON object only.\n"
_BARE_KEY = re.compile(r"^[A-Za-z0-9_-]+$")


def _catalog(model: str) -> dict[str, Any]:
    """A model catalog of one entry: the fields Codex requires, and no ``apply_patch``."""
    return {"models": [{
        "slug": model, "display_name": model, "visibility": "list", "supported_in_api": True, "priority": 1,
        "supported_reasoning_levels": [{"effort": "low", "description": "lighter reasoning"}],
        "default_reasoning_level": "low", "shell_type": "unified_exec", "support_verbosity": True,
        "default_verbosity": "low", "truncation_policy": {"mode": "tokens", "limit": 10000},
        "experimental_supported_tools": [], "apply_patch_tool_type": None, "base_instructions": "",
    }]}


def _mcp_servers(home: Path) -> list[str]:
    """The MCP server names the person's ``config.toml`` configures."""
    import tomllib

    try:
        config = tomllib.loads((codex_home(home) / "config.toml").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return []
    servers = config.get("mcp_servers")
    return sorted(servers) if isinstance(servers, dict) else []


@hookimpl
def host_headless_command(host: str, request: HeadlessRequest) -> HeadlessCommand | None:
    """``codex exec`` with no tools, MCP servers, hooks or session (see the module)."""
    if host != HOST:
        return None
    model = request.model or DEFAULT_MODEL
    folder = request.workdir
    switches = [arg for name in ("hooks", "shell_tool", "view_image", "multi_agent", "goals", "plugins",
                                 "unbounded_connection_retries") for arg in ("--disable", name)]
    settings = {"model": json.dumps(model), "model_reasoning_effort": '"low"', "web_search": '"disabled"',
                "tools.experimental_request_user_input.enabled": "false", "notify": "[]",
                "analytics.enabled": "false", "include_permissions_instructions": "false",
                "include_environment_context": "false", "skills.include_instructions": "false",
                "project_doc_max_bytes": "0",
                "model_instructions_file": json.dumps(str(folder / "system.md")),
                "model_catalog_json": json.dumps(str(folder / "catalog.json"))}
    for name in _mcp_servers(Path.home()):
        key = name if _BARE_KEY.match(name) else json.dumps(name)
        settings[f"mcp_servers.{key}.enabled"] = "false"
    overrides = [arg for key, value in settings.items() for arg in ("-c", f"{key}={value}")]
    argv = ("codex", "exec", "--json", "--ephemeral", "--skip-git-repo-check", "--sandbox", "read-only",
            "--ignore-rules", *switches, *overrides, "--output-schema", str(folder / "schema.json"), "-")
    files = {"system.md": _SYSTEM, "catalog.json": json.dumps(_catalog(model)),
             "schema.json": json.dumps(request.schema)}
    # A key in the environment serves `codex exec` while `login status` says "Not logged in".
    keyed = any(os.environ.get(k) for k in ("CODEX_API_KEY", "OPENAI_API_KEY"))
    return HeadlessCommand(argv=argv, files=files, stdin=request.prompt,
                           login_check=None if keyed else ("codex", "login", "status"))


def _events(stdout: str) -> list[dict[str, Any]]:
    out = []
    for line in stdout.splitlines():
        try:
            event = json.loads(line)
        except ValueError:
            continue
        if isinstance(event, dict):
            out.append(event)
    return out


@hookimpl
def host_headless_answer(host: str, run: HeadlessRun) -> HeadlessAnswer | None:
    """Read the last ``agent_message`` and the turn's usage from the JSON lines."""
    if host != HOST:
        return None
    events = _events(run.stdout)
    text = None
    tokens_in = tokens_out = None
    failed = False
    for event in events:
        item = event.get("item") if isinstance(event.get("item"), dict) else {}
        if event.get("type") == "item.completed" and item.get("type") == "agent_message":
            text = item.get("text") if isinstance(item.get("text"), str) else text
        elif event.get("type") == "turn.completed" and isinstance(event.get("usage"), dict):
            usage = event["usage"]
            tokens_in = usage.get("input_tokens") if isinstance(usage.get("input_tokens"), int) else None
            tokens_out = usage.get("output_tokens") if isinstance(usage.get("output_tokens"), int) else None
        elif event.get("type") == "turn.failed":
            failed = True
    if failed or run.returncode != 0:
        said = (run.stdout + run.stderr).lower()
        login = "401" in said or "unauthorized" in said or "not logged in" in said
        return HeadlessAnswer(None, "not_logged_in" if login else "host_failed", tokens_in, tokens_out)
    if text is None:
        return HeadlessAnswer(None, "bad_json", tokens_in, tokens_out)
    return HeadlessAnswer(text, None, tokens_in, tokens_out, None)


@hookimpl
def host_headless_info(host: str, home: Path) -> HeadlessInfo | None:
    """Codex CLI's account: the email in ``auth.json``'s ChatGPT token, else "an API key"."""
    if host != HOST:
        return None
    account = None
    try:
        auth = json.loads((codex_home(home) / "auth.json").read_text(encoding="utf-8"))
        if auth.get("OPENAI_API_KEY"):
            account = "the API key saved by `codex login --with-api-key`"
        token = ((auth.get("tokens") or {}).get("id_token") or "").split(".")
        if len(token) == 3:
            import base64

            claims = json.loads(base64.urlsafe_b64decode(token[1] + "=" * (-len(token[1]) % 4)))
            email = claims.get("email")
            account = f"{email} (ChatGPT login)" if isinstance(email, str) and email else account
    except (OSError, ValueError, AttributeError, TypeError):
        pass
    return HeadlessInfo(host=HOST, display="Codex CLI", cli="codex", default_model=DEFAULT_MODEL,
                        provider="OpenAI", account=account)
