"""Secret redaction for everything that reaches the store from a transcript.

This module owns the one function every transcript-derived write passes through,
:func:`redact`, and the ordered rule table it applies, :data:`DEFAULT_RULES`. It
imports only the standard library because it runs inside the stop hook, on the
person's critical path.

Each secret is replaced by a typed placeholder, ``[REDACTED:<kind>]``, so the fact
around it survives ("the deploy reads ``FOO_TOKEN``") while the value does not.
Where the secret sits inside something worth keeping, only the secret goes: the
scheme, user and host of a URL stay, and so does the name of a variable.

Rules run in a fixed order, most specific first:

1. PEM private key blocks (``-----BEGIN ... PRIVATE KEY-----``), whole; a block
   whose ``END`` line is missing loses its header and every base64 line after it.
   PuTTY key files (``PuTTY-User-Key-File-N:`` to ``Private-MAC``) the same way.
2. Provider credentials recognised by their documented prefix and length:
   Anthropic, OpenAI, OpenRouter, GitHub, GitLab, Slack, AWS access key ids,
   Google, Stripe, npm, PyPI, Hugging Face, Twilio, SendGrid, DigitalOcean,
   Shopify, Atlassian, Databricks, Groq, xAI, Replicate, Perplexity, Linear,
   Postman, HashiCorp Vault, Doppler, Sentry, Supabase, Notion, Grafana,
   Square, LangSmith, Telegram and Discord bot tokens, age secret keys, Mailgun,
   Mailchimp, JFrog Artifactory, a Heroku key (a UUID) after the word "heroku", and the secret path of
   Slack and Discord webhook URLs.
   (:mod:`~bli_memory.core.memory.redaction.providers`)
3. JSON Web Tokens (three or more base64url segments, header starting ``eyJ``).
4. HTTP credentials: ``Authorization: Bearer|Basic|Token|SSWS|Splunk ...``
   headers, ``curl -u user:password`` (not ``curl -u http://app``), and a
   free-standing ``Bearer <token>``. (:mod:`~bli_memory.core.memory.redaction.http`)
5. The password of a URL (``scheme://user:password@host``) and secret-named
   query parameters (``?access_token=...``).
6. Named secrets: the value assigned to a name that says it is secret, in
   ``.env`` and shell lines, YAML, INI, TOML, code, CLI flags, HTTP headers and
   JSON-ish ``"key": "value"`` pairs. A name qualifies when it contains SECRET,
   TOKEN, PASSWORD, PASSWD, PASSPHRASE, API_KEY/APIKEY, PRIVATE_KEY,
   ACCESS_KEY, CREDENTIAL(S) or a ``<purpose>_KEY`` such as SIGNING_KEY, in any
   case and with ``_``, ``-`` or camelCase word breaks, or ends in the word PW
   or PWD (``pw=``, ``db_pwd:``; not the shell's ``PWD=/home/me``). The name is
   kept; only the value is masked. Command lines too: registry, ``az`` and ``sshpass``
   logins, ``mysql -pX``, ``redis-cli -a X``, ``--password word``.
   (:mod:`~bli_memory.core.memory.redaction.named`, :mod:`~bli_memory.core.memory.redaction.commands`)
7. Passwords told in prose: "the staging wifi password is kkcglHpqS&3".
   (:mod:`~bli_memory.core.memory.redaction.prose`)
8. Generic high-entropy values (20+ characters mixing letters and digits)
   assigned to a weaker name such as ``*key*``, ``*auth*``, ``*session*``; a
   UUID counts only under a key-like name, so a session, request or job id stays.

What is deliberately left alone, so prose and code keep their meaning:

- Prose that mentions keys, tokens or passwords without assigning one ("set the
  API key in the dashboard", "the token expires after an hour").
- Names whose secret word is part of a longer word or a plural that counts
  things (``TOKENIZERS_PARALLELISM``, ``max_tokens``, ``passwordless``), and
  names that end in a word describing the secret rather than holding it
  (``TOKEN_TTL``, ``PASSWORD_MIN_LENGTH``, ``SECRET_KEY_FILE``, ``TOKEN_URL``).
- Values that are obviously not secrets: empty values; values that are already
  placeholders; references such as ``$VAR``, ``${VAR}``, ``$(command)``,
  ``%VAR%``, ``{{ template }}`` and ``<your-key>``; values starting with
  ``your``; masked or elided values (``xxx``, ``***``, ``sk-...``); numbers of
  at most six digits (TTLs, limits); and a short list of stand-in words
  (``changeme``, ``password``, ``secret``, ``none``, ``true``, ...).
- In code, assignments whose value is code: calls (``os.getenv(...)``),
  attribute chains (``settings.api_key``), type annotations (``password: str``)
  and variables named after the secret (``api_key=api_key``). A lowercase
  ``name=value`` in the middle of a line is masked only when the value holds a
  digit or symbol, since a bare word there is usually a variable.

``masked`` counts the secrets found. Redaction is idempotent: running
:func:`redact` on its own output changes nothing and reports ``masked == 0``.
Every pattern is written so that matching stays linear in the input, and
:func:`redact` never raises on a ``str``.
"""

from __future__ import annotations

import re

from bli_memory.core.memory.redaction.benign import _is_benign
from bli_memory.core.memory.redaction.commands import _COMMAND_LINE_RULES
from bli_memory.core.memory.redaction.http import _HTTP_AUTH_RULES, _URL_RULES
from bli_memory.core.memory.redaction.named import (
    _BLOCK_SCALAR_RULES,
    _GENERIC_RULES,
    _NAMED_SECRET_RULES,
)
from bli_memory.core.memory.redaction.prose import _PROSE_RULES
from bli_memory.core.memory.redaction.providers import (
    _JWT_RULES,
    _PRIVATE_KEY_RULES,
    _PROVIDER_RULES,
    _PUTTY_RULES,
)
from bli_memory.core.memory.redaction.rule import Redacted, RedactionRule

__all__ = ["DEFAULT_RULES", "Redacted", "RedactionRule", "active_rules", "redact", "rules_with_plugins"]

DEFAULT_RULES: tuple[RedactionRule, ...] = (
    *_PRIVATE_KEY_RULES,
    *_PUTTY_RULES,
    *_PROVIDER_RULES,
    *_JWT_RULES,
    *_HTTP_AUTH_RULES,
    *_URL_RULES,
    *_BLOCK_SCALAR_RULES,
    *_NAMED_SECRET_RULES,
    *_COMMAND_LINE_RULES,
    *_PROSE_RULES,
    *_GENERIC_RULES,
)
"""The built-in rules, in the order :func:`redact` applies them."""


# ---------------------------------------------------------------------------
# The entry point
# ---------------------------------------------------------------------------


# A further pass only widens a placeholder over what is left of a secret
# around it, which ends; in practice the second pass finds nothing. The bound
# is a backstop.
_MAX_PASSES = 8


def redact(text: str, *, rules: tuple[RedactionRule, ...] | None = None) -> Redacted:
    """Replace every secret in ``text`` with a typed placeholder.

    Rules run in order, each over the output of the one before, so a later,
    more general rule sees ``[REDACTED:...]`` where an earlier, more specific
    one already matched, and leaves it alone. When a pass masks anything, the
    rules run again until nothing changes, so that the result is stable.

    Args:
        text: Any string, e.g. the last exchange of a transcript. Lone
            surrogates, NUL characters and megabytes of input are fine.
        rules: The rules to apply, in order. Default: :func:`active_rules`, the
            built-in rules and those the process's plugins register, so every
            path that redacts (save, update, stored metadata and customId,
            capture, the experience log) honours a rule plugin. Pass
            ``(*DEFAULT_RULES, extra)`` to choose exactly.

    Returns:
        The redacted text and the number of secrets masked. A value that
        swallows an earlier placeholder, like a password holding a GitHub
        token, counts once. Running :func:`redact` again on the text changes
        nothing and reports 0.
    """
    if rules is None:
        rules = active_rules()
    masked = 0
    for _ in range(_MAX_PASSES):
        changes = 0
        for rule in rules:
            text, fresh, changed = _apply(rule, text)
            masked += fresh
            changes += changed
        if not changes:
            break
    return Redacted(text=text, masked=masked)


def _apply(rule: RedactionRule, text: str) -> tuple[str, int, int]:
    """Apply one rule.

    Returns:
        The new text, how many new secrets it masked, and how many values it
        replaced in all (including ones that swallowed a placeholder).
    """
    placeholder = f"[REDACTED:{rule.kind}]"
    group = 0 if rule.group is None else rule.group
    fresh = changed = 0

    def replace(match: re.Match[str]) -> str:
        nonlocal fresh, changed
        value = match.group(group)
        if value is None or _is_benign(value):
            return match.group(0)
        changed += 1
        if "[REDACTED:" not in value:
            fresh += 1
        start, end = match.span(group)
        whole_start, whole_end = match.span()
        return match.string[whole_start:start] + placeholder + match.string[end:whole_end]

    return rule.pattern.sub(replace, text), fresh, changed


def rules_with_plugins(pm: object) -> tuple[RedactionRule, ...]:
    """The built-in rules followed by every rule plugins register.

    Args:
        pm: A plugin manager (``bli_memory.core.plugins.get_plugin_manager()``); its
            ``register_redaction_rules`` hook is called with a ``register(rule)`` callback.

    Returns:
        ``DEFAULT_RULES`` plus the plugins' rules, in registration order.
    """
    extra: list[RedactionRule] = []
    pm.hook.register_redaction_rules(register=extra.append)  # type: ignore[attr-defined]
    return DEFAULT_RULES + tuple(extra)



def active_rules() -> tuple[RedactionRule, ...]:
    """:func:`rules_with_plugins` of the process's plugin manager, or ``DEFAULT_RULES``.

    The manager is the one :func:`bli_memory.core.plugins.get_plugin_manager` built
    last (:func:`~bli_memory.core.plugins.active_plugin_manager`): the MCP server's,
    the hook's, the daemon's, the command's. Its rule plugins are asked on each call,
    so a plugin registered on it after it was built is honoured too.
    """
    from bli_memory.core.plugins import active_plugin_manager

    pm = active_plugin_manager()
    return DEFAULT_RULES if pm is None else rules_with_plugins(pm)
