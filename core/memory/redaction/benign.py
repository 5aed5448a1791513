"""Values that are obviously not secrets, which no rule masks."""

from __future__ import annotations

import re

__all__ = []

# ---------------------------------------------------------------------------
# Values that are obviously not secrets
# ---------------------------------------------------------------------------

_PLACEHOLDER = re.compile(r"\[REDACTED:[A-Za-z0-9_.-]*\]")
# What may surround placeholders in a value that was already redacted, e.g.
# the escaped newline in "-----BEGIN...\n", the escaped quote that closes a JSON string
# inside another (\"), or an auth scheme before a token.
_PLACEHOLDER_RESIDUE = re.compile(r"(?:\s|\\[nrt]|[\"'`,;:.=()\[\]{}<>\\]|(?i:bearer|basic|token|bot))*")
# References to a secret kept elsewhere, and values already masked.
_REFERENCE = (
    r"\$[A-Za-z_][A-Za-z0-9_]*"  # $VAR
    r"|\$\{[A-Za-z_][A-Za-z0-9_.]*\}"  # ${VAR}, Maven's ${env.VAR}
    # The shell's expansions whose fallback is nothing or another variable, and its error
    # message: ${VAR:-}, ${VAR-$OTHER}, ${VAR:?not set}. A literal fallback,
    # ${DB_PASSWORD:-hunter2}, may itself be the secret and is not a reference.
    r"|\$\{[A-Za-z_][A-Za-z0-9_]*:?[-=+](?:\$[A-Za-z_][A-Za-z0-9_]*|\$\{[A-Za-z_][A-Za-z0-9_]*\})?\}"
    # ${VAR:?msg} closed at the value's end, or cut at a space; nothing may follow the '}'.
    r"|\$\{[A-Za-z_][A-Za-z0-9_]*:?\?(?:[^{}]*\}|[^{}\s]*)"
    r"|\$\{\{.*\}\}|\{\{.*\}\}"  # ${{ secrets.X }}, {{ var }}
    r"|\$\(.*"  # $(command), possibly cut at a space
    r"|%[A-Za-z_][A-Za-z0-9_]*%"  # %VAR%
    r"|\{[A-Za-z_][A-Za-z0-9_]*\}|%s|%\([A-Za-z_]\w*\)s"  # format fields
    r"|.*<[^<>\s]*>.*"  # <your-key>, sk-<key>
    r"|.*(?:\*\*\*|\u2022|\.\.\.|\u2026).*"  # ***, bullets, sk-...
)
_REFERENCE_VALUE = re.compile(_REFERENCE, re.DOTALL)
_BENIGN_VALUE = re.compile(
    _REFERENCE
    + r"|[xX]+|[0-9]{1,6}"  # xxxx, 3600
    r"|~"  # YAML's null
    r"|\[(?:PAD|UNK|CLS|SEP|MASK|BOS|EOS)\]"  # a tokenizer's special tokens
    # A type in a signature, not a value: password: str, password: &str, token: String.
    r"|&?(?:'[a-z]+[ \t]+)?(?:mut[ \t]+)?(?:str|string|String|bytes|int|integer|float|double"
    r"|bool|boolean|number|object|dict|list|tuple|char|[iu](?:8|16|32|64|128|size))\??[,;]?"
    # A keyword argument that closes a call: login(token=token), f(password=password)).
    r"|[A-Za-z_$][A-Za-z_$.]*\)+[,;:]?"
    r"|(?i:your)(?:[-_ .].*|[A-Z].*)?"  # your-api-key, YOUR_TOKEN, yourKey
    r"|(?i:changeme|change[-_]me|changeit|replace[-_]?me|todo|tbd|fixme"
    r"|placeholder|value|example|dummy|fake|sample|test|none|null|nil|undefined"
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
    # A backslash is quoting's residue (the \" of an escaped string), not a value.
    core = core.strip("\"'`\\").strip()
    return not core or _BENIGN_VALUE.fullmatch(core) is not None


def _is_reference(value: str) -> bool:
    """Tell whether a value points to a secret kept elsewhere or is already masked:
    ``$VAR``, ``${VAR}``, ``%VAR%``, ``{{ template }}``, ``<your-key>``, ``***``,
    ``sk-...`` or a placeholder. Stand-in words and short numbers are not references."""
    core = value.strip().strip("\"'`").strip()
    if "[REDACTED:" in core and _PLACEHOLDER_RESIDUE.fullmatch(_PLACEHOLDER.sub("", core)):
        return True
    return bool(core) and _REFERENCE_VALUE.fullmatch(core) is not None

