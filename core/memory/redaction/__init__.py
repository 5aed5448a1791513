"""Secret redaction for everything that reaches the store from a transcript.

This module owns the one function every transcript-derived write passes through,
:func:`redact`, and the ordered rule table it applies, :data:`DEFAULT_RULES`. It
imports only the standard library because it runs inside the stop hook, on the
person's critical path; the vendor rule set of the last step loads on first use.

Each secret is replaced by a typed placeholder, ``[REDACTED:<kind>]``, so the fact
around it survives ("the deploy reads ``FOO_TOKEN``") while the value does not.
Where the secret sits inside something worth keeping, only the secret goes: the
scheme, user and host of a URL stay, and so does the name of a variable.

Text inside a JSON string literal is redacted decoded, then escaped again
(:mod:`~bli_memory.core.memory.redaction.json_strings`): tool output arrives as JSON.
Then the rules run in a fixed order, most specific first:

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
   or PWD (``pw=``, ``db_pwd:``; not the shell's ``PWD=/home/me``), or PASS as its
   last word (``DB_PASS``, ``PGPASS``, a bare ``pass=`` at the start of a line; not
   ``BYPASS`` or ``first_pass``). The secret word is the
   name's head noun, its last word but for a number or a qualifier (``TOKEN_2``,
   ``DB_PASSWORD_PROD``; not ``token_usage``, ``passwordEncoder``). The name is kept; only the
   value is masked. Spaces around ``=`` count, and so do fish's ``set -x NAME value``
   and csh's ``setenv``. Of several targets (``user, password := "bob", "x"``) the value
   at each secret name's place. A literal behind a bytes prefix or a conversion
   counts as the literal (``b"x"``, ``[]byte("x")``, ``Buffer.from("x")``). Command
   lines too: registry, ``az`` and ``sshpass``
   logins, ``mysql -pX``, ``redis-cli -a X``, ``--password word``, ``htpasswd -b``,
   ``chpasswd``, ``net user USER X``, ``dotnet user-secrets set Db:Password X``,
   keytool's and jarsigner's ``-storepass``/``-keypass X``. Statements: the
   default of ``os.getenv('DB_PASSWORD', 'x')``, the value of a call that sets a
   secret-named variable (``os.Setenv``, ``os.putenv``, ``os.environ.setdefault``,
   ``env::set_var``, ``Environment.SetEnvironmentVariable``), the password argument of
   ``NetworkCredential``, ``HTTPBasicAuth`` and requests' ``auth=(...)``, SQL's ``PASSWORD 'x'`` and
   ``IDENTIFIED BY 'x'``, a libpq ``password=x`` beside ``host=``, Docker's
   ``ENV NAME value`` (:mod:`~bli_memory.core.memory.redaction.statements`); a quoted
   subscript key (``config['password'] = 'x'``). Markup: the text of
   an element named for a secret (``<password>...</password>``) and a value given
   beside a secret name (``<add key="DbPassword" value="..."/>``, a Kubernetes
   ``env`` entry).
   (:mod:`~bli_memory.core.memory.redaction.named`, :mod:`~bli_memory.core.memory.redaction.commands`,
   :mod:`~bli_memory.core.memory.redaction.markup`)
7. Passwords told in prose: "the staging wifi password is kkcglHpqS&3", and
   passphrases of several words, whole ("password: correct horse battery staple").
   (:mod:`~bli_memory.core.memory.redaction.prose`)
8. Generic high-entropy values (20+ characters mixing letters and digits)
   assigned to a weaker name such as ``*key*``, ``*auth*``, ``*session*``; a
   UUID counts only under a key-like name, so a session, request or job id stays.

What is deliberately left alone, so prose and code keep their meaning:

- Prose that mentions keys, tokens or passwords without assigning one ("set the
  API key in the dashboard", "the token expires after an hour"), and pointers to
  where a secret lives ("password: see the vault").
- Names whose secret word is part of a longer word or a plural that counts
  things (``TOKENIZERS_PARALLELISM``, ``max_tokens``, ``passwordless``), and
  names that end in a word describing the secret rather than holding it
  (``TOKEN_TTL``, ``PASSWORD_MIN_LENGTH``, ``SECRET_KEY_FILE``, ``TOKEN_URL``).
- Values that are obviously not secrets: empty values; values that are already
  placeholders; references such as ``$VAR``, ``${VAR}``, ``${VAR:-}``, ``$(command)``,
  ``%VAR%``, ``{{ template }}`` and ``<your-key>``; values starting with
  ``your``; masked or elided values (``xxx``, ``***``, ``sk-...``); numbers of
  at most six digits (TTLs, limits); and a short list of stand-in words
  (``changeme``, ``password``, ``secret``, ``value``, ``none``, ``true``, ...).
- In code, assignments whose value is code: calls (``os.getenv(...)``),
  attribute chains (``settings.api_key``), type annotations (``password: str``,
  also in a parameter list: ``def login(self, password: str):``, ``password: &str``),
  variables named after the secret (``api_key=api_key``), a keyword argument that
  closes a call (``token=token)``), YAML's null (``token: ~``) and a YAML tag before a
  reference (``password: !ENV ${DB_PASSWORD}``). A lowercase
  ``name=value`` or ``name = value`` in the middle of a line is masked only when
  the value holds a digit or symbol (with spaces, 8 characters at least and not a
  call or an attribute), since a bare word there is usually a variable.

After our rules, the vendor rule set (kingfisher-secret-scanner's ``high`` confidence
rules: :mod:`~bli_memory.core.memory.redaction.vendor`) masks the vendor credential
formats ours do not name, each as ``[REDACTED:<its rule>]``, e.g. ``[REDACTED:pulumi_api_token]``.

``masked`` counts the secrets found. Redaction is idempotent: running
:func:`redact` on its own output changes nothing and reports ``masked == 0``.
Every pattern is written so that matching stays linear in the input, and
:func:`redact` never raises on a ``str``.
"""

from __future__ import annotations

import re

from bli_memory.core.memory.redaction.benign import _is_benign
from bli_memory.core.memory.redaction.commands import _COMMAND_LINE_RULES
from bli_memory.core.memory.redaction.http import _COOKIE_RULES, _HTTP_AUTH_RULES, _URL_RULES
from bli_memory.core.memory.redaction.json_strings import redact_json_strings
from bli_memory.core.memory.redaction.markup import _MARKUP_RULES
from bli_memory.core.memory.redaction.named import (
    _BLOCK_SCALAR_RULES,
    _GENERIC_RULES,
    _NAMED_SECRET_RULES,
)
from bli_memory.core.memory.redaction.phrases import _PHRASE_RULES
from bli_memory.core.memory.redaction.prose import _PROSE_RULES
from bli_memory.core.memory.redaction.providers import (
    _JWT_RULES,
    _PRIVATE_KEY_RULES,
    _PROVIDER_RULES,
    _PUTTY_RULES,
)
from bli_memory.core.memory.redaction.rule import Redacted, RedactionRule
from bli_memory.core.memory.redaction.seed_phrases import _SEED_PHRASE_RULES
from bli_memory.core.memory.redaction.statements import _STATEMENT_RULES
from bli_memory.core.memory.redaction.vendor import mask_vendor_secrets

__all__ = ["DEFAULT_RULES", "Redacted", "RedactionRule", "active_rules", "redact", "rules_with_plugins"]

DEFAULT_RULES: tuple[RedactionRule, ...] = (
    *_PRIVATE_KEY_RULES,
    *_PUTTY_RULES,
    *_PROVIDER_RULES,
    *_JWT_RULES,
    *_HTTP_AUTH_RULES,
    *_COOKIE_RULES,
    *_URL_RULES,
    *_BLOCK_SCALAR_RULES,
    *_PHRASE_RULES,
    *_NAMED_SECRET_RULES,
    *_MARKUP_RULES,
    *_COMMAND_LINE_RULES,
    *_STATEMENT_RULES,
    *_PROSE_RULES,
    *_SEED_PHRASE_RULES,
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
# Applications of a rule marked ``repeat`` in one pass: one per target of a multiple
# assignment, which counts at most three targets before the secret one (named.py).
_REPEATS = 4


def redact(text: str, *, rules: tuple[RedactionRule, ...] | None = None) -> Redacted:
    """Replace every secret in ``text`` with a typed placeholder.

    Rules run in order, each over the output of the one before, so a later,
    more general rule sees ``[REDACTED:...]`` where an earlier, more specific
    one already matched, and leaves it alone. When a pass masks anything, the
    rules run again until nothing changes, so that the result is stable. The
    vendor rule set (:mod:`~bli_memory.core.memory.redaction.vendor`) then runs
    once over the result, whatever ``rules`` are given.

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
        nothing and reports 0. When a no-break space, an invisible character, a
        NUL, a lone surrogate or a fullwidth form hid a secret from the rules
        (``password:\u00a0...``, ``ghp_\u00ad...``), the text is returned in plain
        form (:func:`_plain`: those characters only) with that secret masked; a text
        that hides none keeps its characters.
    """
    if rules is None:
        rules = active_rules()
    first = _redact_once(text, rules)
    if _plain(text) == text:
        return first
    # The odd characters may hide a secret whole: mask it over what the first pass masked.
    more = _redact_once(_plain(first.text), rules)
    if more.masked:
        return Redacted(text=more.text, masked=first.masked + more.masked)
    # Or part of one (a passphrase the first pass cut at a no-break space): the plain text,
    # masked, when it masks as many secrets and more of the text.
    again = _redact_once(_plain(text), rules)
    if again.masked and again.masked >= first.masked and _plain(first.text) != again.text:
        return again
    return first


def _redact_once(text: str, rules: tuple[RedactionRule, ...]) -> Redacted:
    text, masked = redact_json_strings(text, lambda inner: _apply_all(rules, inner))
    text, found = _apply_all(rules, text)
    return Redacted(text=text, masked=masked + found)


# Characters that hide a secret from rules written for plain text: no-break and other
# Unicode spaces (as a space), invisible ones, NUL and lone surrogates (dropped), and the
# fullwidth forms of ASCII (as ASCII: ``＿`` is ``_``). Nothing else changes: a whole-text
# NFKC turned "x²" into "x2" and "ﬁchier" into "fichier".
_PLAIN = {**dict.fromkeys((0xA0, 0x1680, *range(0x2000, 0x200B), 0x202F, 0x205F, 0x3000), " "),
          **dict.fromkeys((0, 0xAD, 0x200B, 0x200C, 0x200D, 0x2060, 0xFEFF, *range(0xD800, 0xE000))),
          **{code: code - 0xFEE0 for code in range(0xFF01, 0xFF5F)}}


def _plain(text: str) -> str:
    """``text`` as a rule written for plain text reads it (:data:`_PLAIN`). Used only where
    it reveals a secret (:func:`redact`)."""
    return text.translate(_PLAIN)


def _apply_all(rules: tuple[RedactionRule, ...], text: str) -> tuple[str, int]:
    """Our rules, then the vendor rule set over what they left; the text and the count."""
    text, ours = _apply_rules(rules, text)
    text, vendors = mask_vendor_secrets(text)
    return text, ours + vendors


def _apply_rules(rules: tuple[RedactionRule, ...], text: str) -> tuple[str, int]:
    """Apply ``rules`` in passes until a pass changes nothing; return the text and the count."""
    masked = 0
    for _ in range(_MAX_PASSES):
        changes = 0
        for rule in rules:
            for _ in range(_REPEATS if rule.repeat else 1):
                text, fresh, changed = _apply(rule, text)
                masked += fresh
                changes += changed
                if not changed:
                    break
        if not changes:
            break
    return text, masked


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
        if value is None or _is_benign(value) or (rule.accept is not None and not rule.accept(value)):
            return match.group(0)
        if value.endswith(("=", ":")) and match.string.startswith("[REDACTED:", match.end(group)):
            return match.group(0)  # the name of an assignment already masked: "DB_PASSWORD=[REDACTED:...]"
        start = match.start(group)
        if match.string.rfind("[REDACTED:", 0, start) > match.string.rfind("]", 0, start):
            return match.group(0)  # it starts inside a placeholder: "[REDACTED:kind]" read as user:password
        changed += 1
        if "[REDACTED:" not in value:
            fresh += 1
        end = match.end(group)
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
