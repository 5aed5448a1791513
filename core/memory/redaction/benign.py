"""Values that are obviously not secrets, which no rule masks."""

from __future__ import annotations

import re

__all__ = []

# ---------------------------------------------------------------------------
# Values that are obviously not secrets
# ---------------------------------------------------------------------------

_PLACEHOLDER = re.compile(r"\[REDACTED:[A-Za-z0-9_.-]*\]")
# What may surround placeholders in a value that was already redacted, e.g.
# the escaped newline in "-----BEGIN...\n" or an auth scheme before a token.
_PLACEHOLDER_RESIDUE = re.compile(r"(?:\s|\\[nrt]|[\"'`,;:.=()\[\]{}<>]|(?i:bearer|basic|token|bot))*")
_BENIGN_VALUE = re.compile(
    r"\$[A-Za-z_][A-Za-z0-9_]*"  # $VAR
    r"|\$\{[A-Za-z_][A-Za-z0-9_]*\}"  # ${VAR}
    r"|\$\{\{.*\}\}|\{\{.*\}\}"  # ${{ secrets.X }}, {{ var }}
    r"|\$\(.*"  # $(command), possibly cut at a space
    r"|%[A-Za-z_][A-Za-z0-9_]*%"  # %VAR%
    r"|\{[A-Za-z_][A-Za-z0-9_]*\}|%s|%\([A-Za-z_]\w*\)s"  # format fields
    r"|.*<[^<>\s]*>.*"  # <your-key>, sk-<key>
    r"|.*(?:\*\*\*|\u2022|\.\.\.|\u2026).*"  # ***, bullets, sk-...
    r"|[xX]+|[0-9]{1,6}"  # xxxx, 3600
    r"|(?i:your)(?:[-_ .].*|[A-Z].*)?"  # your-api-key, YOUR_TOKEN, yourKey
    r"|(?i:changeme|change[-_]me|changeit|replace[-_]?me|todo|tbd|fixme"
    r"|placeholder|example|dummy|fake|sample|test|none|null|nil|undefined"
    r"|true|false|yes|no|on|off|password|passwd|pass|secret|token|redacted"
    r"|hidden|masked|include|omit|same-origin)",
    re.DOTALL,
)


def _is_benign(value: str) -> bool:
    """Tell whether a captured value is obviously not a secret."""
    core = value.strip()
    if "[REDACTED:" in core:
        rest = _PLACEHOLDER.sub("", core)
        if _PLACEHOLDER_RESIDUE.fullmatch(rest):
            return True
    core = core.strip("\"'`").strip()
    return not core or _BENIGN_VALUE.fullmatch(core) is not None

