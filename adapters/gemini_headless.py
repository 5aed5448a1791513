"""Gemini CLI runs one headless request for the ``host`` extractor.

Checked against ``gemini --help`` and a recording stub at 0.61.0 (the version CI pins):

- ``-p`` with the digest on stdin (stdin comes first, then the ``-p`` text), ``-o json``,
  ``--approval-mode plan`` (read-only), ``-e none`` (no extension, so none of their context
  files or MCP servers), ``--allowed-mcp-server-names`` with a name no server has (an empty
  allow-list means "no restriction");
- settings in the run folder's ``.gemini/settings.json``, which rank above the person's
  own (nothing in ``~/.gemini`` is edited): ``hooksConfig.enabled: false`` (no hook fires,
  whatever the person's settings say), ``tools.core: []`` (no built-in tool is declared;
  the request still carries one empty ``functionDeclarations`` list, which the CLI always
  builds), ``general.maxAttempts: 1`` (a dead endpoint fails in seconds, not after ten
  backed-off attempts, about 220 s), no checkpointing, telemetry or directory tree;
- ``GEMINI_CLI_TRUST_WORKSPACE=true``: workspace settings are read only in a trusted folder
  (``--skip-trust`` is read after the settings, too late), and ``plan`` mode needs one;
  ``GEMINI_CLI_NO_RELAUNCH=true``: no second process; ``GEMINI_SYSTEM_MD``: a short system
  prompt in place of the CLI's 25 kB one; ``TMPDIR``: error reports, which hold the prompt,
  stay in the run folder.

The answer (stdout) is ``{"response": text, "stats": {"models": {name: {"tokens": {"prompt",
"candidates", ...}}}}}``; the CLI reports no cost. On failure stdout is empty and the exit
code says why: 41 is an authentication problem (no auth method chosen, or a Google login
that needs a browser). The CLI keeps a chat log of every run per folder
(``~/.gemini/tmp/<folder>/chats``), holding the digest; the answer hook deletes the logs of
the run folder, which serves only these requests.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from bli_memory.adapters.gemini_trust import gemini_dir
from bli_memory.core.headless import (
    HeadlessAnswer,
    HeadlessCommand,
    HeadlessInfo,
    HeadlessRequest,
    HeadlessRun,
)
from bli_memory.core.hookspecs import hookimpl

__all__ = ["host_headless_answer", "host_headless_command", "host_headless_info"]

HOST = "gemini"
#: The small model's alias (``gemini --help``, ``-m``); the CLI resolves it.
DEFAULT_MODEL = "flash"
#: Exit code of an authentication failure (``gemini -p`` with no auth method, or a
#: Google login that cannot complete headless), seen at 0.61.0.
EXIT_AUTH = 41
_NO_SERVER = "__bli_memory_none__"
_SYSTEM = "You extract durable facts from a session digest. Reply with one JSON object only.\n"
_SETTINGS: dict[str, Any] = {
    "hooksConfig": {"enabled": False, "notifications": False},
    "tools": {"core": [], "useRipgrep": False},
    "mcp": {"allowed": [_NO_SERVER]},
    "skills": {"enabled": False},
    "experimental": {"enableAgents": False, "autoMemory": False},
    "context": {"includeDirectoryTree": False},
    "model": {"skipNextSpeakerCheck": True, "disableLoopDetection": True},
    "general": {"checkpointing": {"enabled": False}, "enableAutoUpdate": False,
                "enableAutoUpdateNotification": False, "maxAttempts": 1},
    "telemetry": {"enabled": False},
    "privacy": {"usageStatisticsEnabled": False},
}


@hookimpl
def host_headless_command(host: str, request: HeadlessRequest) -> HeadlessCommand | None:
    """``gemini -p`` in plan mode with no tools, extensions, MCP servers or hooks (see the module)."""
    if host != HOST:
        return None
    argv = ("gemini", "-p", "Answer with the facts JSON for the digest above.", "-m",
            request.model or DEFAULT_MODEL, "-o", "json", "--approval-mode", "plan", "-e", "none",
            "--allowed-mcp-server-names", _NO_SERVER)
    env = {"GEMINI_CLI_TRUST_WORKSPACE": "true", "GEMINI_CLI_NO_RELAUNCH": "true",
           "GEMINI_SYSTEM_MD": str(request.workdir / "system.md"), "TMPDIR": str(request.workdir / "tmp")}
    files = {".gemini/settings.json": json.dumps(_SETTINGS, indent=2), "system.md": _SYSTEM, "tmp/.keep": ""}
    return HeadlessCommand(argv=argv, env=env, files=files, stdin=request.prompt)


def _drop_chat_logs(workdir: Path) -> None:
    """Delete the chat logs the CLI kept for the run folder (they hold the digest)."""
    try:
        listed = (gemini_dir(Path.home()) / "projects.json").read_text(encoding="utf-8")
        projects = json.loads(listed)["projects"]
        slug = projects.get(str(workdir)) or projects.get(str(workdir.resolve()))
    except (OSError, ValueError, KeyError, TypeError, AttributeError):
        return
    if not isinstance(slug, str) or not slug or "/" in slug or slug.startswith("."):
        return
    for log in (gemini_dir(Path.home()) / "tmp" / slug / "chats").glob("*.json*"):
        try:
            log.unlink()
        except OSError:
            pass


def _tokens(stats: Any) -> tuple[int | None, int | None]:
    models = stats.get("models") if isinstance(stats, dict) else None
    if not isinstance(models, dict) or not models:
        return None, None
    per_model = [m for m in models.values() if isinstance(m, dict)]
    tokens = [m["tokens"] for m in per_model if isinstance(m.get("tokens"), dict)]
    prompt = [t.get("prompt", t.get("input")) for t in tokens]
    out = [t.get("candidates") for t in tokens]
    return (sum(p for p in prompt if isinstance(p, int)) if any(isinstance(p, int) for p in prompt) else None,
            sum(o for o in out if isinstance(o, int)) if any(isinstance(o, int) for o in out) else None)


@hookimpl
def host_headless_answer(host: str, run: HeadlessRun) -> HeadlessAnswer | None:
    """Read ``response`` and the token counts; ``not_logged_in`` on exit 41."""
    if host != HOST:
        return None
    _drop_chat_logs(run.workdir)
    if run.returncode == EXIT_AUTH:
        return HeadlessAnswer(None, "not_logged_in")
    try:
        data = json.loads(run.stdout) if run.stdout.strip() else None
    except ValueError:
        data = None
    if run.returncode != 0 or not isinstance(data, dict):
        said = run.stderr.lower()
        login = any(w in said for w in ("auth method", "authorization is required", "api key not valid",
                                        "401", "unauthenticated"))
        failed = "not_logged_in" if login else ("host_failed" if run.returncode else "bad_json")
        return HeadlessAnswer(None, failed)
    tokens_in, tokens_out = _tokens(data.get("stats"))
    text = data.get("response") if isinstance(data.get("response"), str) else None
    if data.get("error"):
        return HeadlessAnswer(None, "host_failed", tokens_in, tokens_out)
    return HeadlessAnswer(text, None, tokens_in, tokens_out, None)


@hookimpl
def host_headless_info(host: str, home: Path) -> HeadlessInfo | None:
    """Gemini CLI's account: ``active`` of ``~/.gemini/google_accounts.json``, else an API
    key from the environment, else unknown."""
    if host != HOST:
        return None
    account = None
    try:
        accounts = (gemini_dir(home) / "google_accounts.json").read_text(encoding="utf-8")
        active = json.loads(accounts).get("active")
        account = f"{active} (Google login)" if isinstance(active, str) and active else None
    except (OSError, ValueError, AttributeError):
        pass
    if account is None and os.environ.get("GEMINI_API_KEY"):
        account = "the API key in GEMINI_API_KEY"
    return HeadlessInfo(host=HOST, display="Gemini CLI", cli="gemini", default_model=DEFAULT_MODEL,
                        provider="Google", account=account)
