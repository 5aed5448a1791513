"""The saved extractor choice, and the host extractor's limits.

``install --extractor host`` (or ``bli-memory-mcp extractor use host``) saves the choice in
``$XDG_CONFIG_HOME/bli-cockpit/extractor.json`` (mode 0600) so every worker (the daemon,
``bli-memory-mcp worker``, the MCP server's drain) reads the same one at the next job,
without a restart::

    {"extractor": "host", "host": "claude", "model": null,
     "daily_requests": 200, "max_tokens": 4000, "timeout_s": 120}

``BLI_MEMORY_EXTRACTOR`` and the ``BLI_MEMORY_EXTRACT_*`` variables win over the file. A
missing file means the rules: the host extractor is never chosen by default.
"""

from __future__ import annotations

import json
import math
import re
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from bli_memory.core import paths
from bli_memory.core.errors import ConfigError
from bli_memory.core.private_files import FILE_MODE, atomic_write, make_private_dir

if TYPE_CHECKING:
    import pluggy

    from bli_memory.core.settings import Settings

__all__ = [
    "DEFAULT_DAILY_REQUESTS",
    "DEFAULT_MAX_TOKENS",
    "DEFAULT_TIMEOUT_S",
    "HostChoice",
    "choice_path",
    "clear_choice",
    "headless_hosts",
    "host_choice",
    "load_choice",
    "save_choice",
]

#: Requests per UTC day. A person's busy day is about a hundred turns (one job each);
#: past the budget, jobs capture through the rules. At Claude Haiku's list price, 200
#: requests of a 4,000-token digest cost about a dollar (docs/extraction.md).
DEFAULT_DAILY_REQUESTS = 200
#: Tokens of digest per request, counted as 4 characters a token (OpenAI's rule of thumb
#: for English text); the digest is cut to it, the user's statements first.
DEFAULT_MAX_TOKENS = 4000
#: Seconds a request may take before its whole process group is killed. A headless
#: CLI start plus a small model's answer takes seconds; two minutes leaves room for a
#: loaded machine without holding the worker long.
DEFAULT_TIMEOUT_S = 120.0


@dataclass(frozen=True)
class HostChoice:
    """The host extractor's settings, after the variables are laid over the saved file.

    Attributes:
        host: Adapter name whose CLI runs the requests.
        model: The model asked for, or None for the host's small default.
        daily_requests: Most requests per UTC day.
        max_tokens: Most digest tokens per request.
        timeout_s: Seconds before a request is killed.
    """

    host: str
    model: str | None = None
    daily_requests: int = DEFAULT_DAILY_REQUESTS
    max_tokens: int = DEFAULT_MAX_TOKENS
    timeout_s: float = DEFAULT_TIMEOUT_S


def headless_hosts(pm: pluggy.PluginManager, home: Path) -> list[str]:
    """The hosts whose plugin can run one tool-less, hook-less request with JSON output
    (it answers ``host_headless_info``): Claude Code, Codex CLI and Gemini CLI among the
    built-in ones; Hermes Agent and Copilot CLI have no such mode."""
    names = sorted(str(info.get("name")) for info in pm.hook.host_info() if info.get("name"))
    return [h for h in names if pm.hook.host_headless_info(host=h, home=home) is not None]


def choice_path() -> Path:
    """Where the choice is saved."""
    return paths.config_dir() / "extractor.json"


def load_choice() -> dict[str, Any]:
    """The saved choice, or ``{}`` when none is saved or the file is unreadable."""
    try:
        data = json.loads(choice_path().read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def save_choice(extractor: str, *, host: str | None = None, model: str | None = None,
                daily_requests: int | None = None, max_tokens: int | None = None,
                timeout_s: float | None = None) -> Path:
    """Save ``extractor`` (``host`` or ``default``) and, for ``host``, its limits: a limit
    not given keeps the saved one, else its default.

    Raises:
        ConfigError: no ``host`` is named for ``host`` (whether its plugin can run headless
            is the caller's check, :func:`headless_hosts`), or a limit is out of range.
    """
    if extractor not in ("host", "default"):
        raise ConfigError(f"unknown extractor {extractor!r}: use host or default", reason="config_invalid")
    data: dict[str, Any] = {"extractor": extractor}
    before = load_choice()
    daily_requests = before.get("daily_requests") if daily_requests is None else daily_requests
    max_tokens = before.get("max_tokens") if max_tokens is None else max_tokens
    timeout_s = before.get("timeout_s") if timeout_s is None else timeout_s
    if extractor == "host":
        _check_host(host)
        data.update(host=host, model=model or None,
                    daily_requests=DEFAULT_DAILY_REQUESTS if daily_requests is None else daily_requests,
                    max_tokens=DEFAULT_MAX_TOKENS if max_tokens is None else max_tokens,
                    timeout_s=DEFAULT_TIMEOUT_S if timeout_s is None else timeout_s)
        _check_limits(data)
    else:  # back to the rules: what was chosen for the host stays for the next opt-in
        data.update({k: before[k] for k in ("host", "model", "daily_requests", "max_tokens", "timeout_s")
                     if k in before})
    path = choice_path()
    make_private_dir(path.parent)
    atomic_write(path, json.dumps(data, indent=2) + "\n", mode=FILE_MODE)
    return path


def clear_choice() -> bool:
    """Forget the saved choice (the rules again); True when there was one."""
    try:
        choice_path().unlink()
        return True
    except FileNotFoundError:
        return False


_HOST_NAME = re.compile(r"^[a-z0-9][a-z0-9_-]{0,39}$")
#: The bounds of each limit. A timeout above a day would overflow the poll of a request's
#: pipes (epoll takes at most about 2,147,483 s) and holds a worker for no purpose.
_LIMITS: tuple[tuple[str, type | tuple[type, ...], float, float], ...] = (
    ("daily_requests", int, 0, 1_000_000), ("max_tokens", int, 200, 1_000_000),
    ("timeout_s", (int, float), 1, 86_400))


def _check_host(host: Any) -> None:
    """A host's name is a plugin name (it also names the request's run folder)."""
    if not isinstance(host, str) or not _HOST_NAME.match(host):
        raise ConfigError(f"the host extractor needs a host's name (claude, codex, gemini), not {host!r}",
                          reason="config_invalid")


def _check_limits(data: dict[str, Any]) -> None:
    for key, kind, least, most in _LIMITS:
        value = data.get(key)
        number = float(value) if isinstance(value, (int, float)) and isinstance(value, kind) \
            and not isinstance(value, bool) else math.nan
        if not math.isfinite(number) or not least <= number <= most:
            raise ConfigError(f"extractor setting {key} must be a number from {least:g} to {most:g}, "
                              f"not {value!r}", reason="config_invalid")


def host_choice(settings: Settings) -> HostChoice:
    """The host extractor's settings: the ``BLI_MEMORY_EXTRACT_*`` variables over the file.

    Raises:
        ConfigError: no host is named, or the saved limits are unusable.
    """
    saved = load_choice()
    host = settings.extract_host or saved.get("host")
    if not host:
        raise ConfigError(
            "the host extractor needs a host: set BLI_MEMORY_EXTRACT_HOST or run "
            "`bli-memory-mcp extractor use host --host NAME`", reason="config_invalid")
    _check_host(host)
    merged = {
        "daily_requests": settings.extract_daily_requests if settings.extract_daily_requests is not None
        else saved.get("daily_requests", DEFAULT_DAILY_REQUESTS),
        "max_tokens": settings.extract_max_tokens if settings.extract_max_tokens is not None
        else saved.get("max_tokens", DEFAULT_MAX_TOKENS),
        "timeout_s": settings.extract_timeout_s if settings.extract_timeout_s is not None
        else saved.get("timeout_s", DEFAULT_TIMEOUT_S),
    }
    _check_limits(merged)
    model = settings.extract_host_model or saved.get("model")
    return HostChoice(host=host, model=model if isinstance(model, str) and model else None,
                      daily_requests=int(merged["daily_requests"]), max_tokens=int(merged["max_tokens"]),
                      timeout_s=float(merged["timeout_s"]))
