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
2. Provider credentials recognised by their documented prefix and length:
   Anthropic, OpenAI, OpenRouter, GitHub, GitLab, Slack, AWS access key ids,
   Google, Stripe, npm, PyPI, Hugging Face, Twilio, SendGrid, DigitalOcean,
   Shopify, Atlassian, Databricks, Groq, xAI, Replicate, Perplexity, Linear,
   Postman, HashiCorp Vault, Doppler, Sentry, Supabase, Notion, Grafana,
   Square, LangSmith, Telegram and Discord bot tokens, age secret keys, and the
   secret path of Slack and Discord webhook URLs.
3. JSON Web Tokens (three or more base64url segments, header starting ``eyJ``).
4. HTTP credentials: ``Authorization: Bearer|Basic|Token ...`` headers,
   ``curl -u user:password``, and a free-standing ``Bearer <token>``.
5. The password of a URL (``scheme://user:password@host``) and secret-named
   query parameters (``?access_token=...``).
6. Named secrets: the value assigned to a name that says it is secret, in
   ``.env`` and shell lines, YAML, INI, TOML, code, CLI flags, HTTP headers and
   JSON-ish ``"key": "value"`` pairs. A name qualifies when it contains SECRET,
   TOKEN, PASSWORD, PASSWD, PASSPHRASE, API_KEY/APIKEY, PRIVATE_KEY,
   ACCESS_KEY, CREDENTIAL(S) or a ``<purpose>_KEY`` such as SIGNING_KEY, in any
   case and with ``_``, ``-`` or camelCase word breaks. The name is kept; only
   the value is masked.
7. Generic high-entropy values (20+ characters mixing letters and digits)
   assigned to a weaker name such as ``*key*``, ``*auth*``, ``*session*``.

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
from dataclasses import dataclass

__all__ = ["DEFAULT_RULES", "Redacted", "RedactionRule", "redact", "rules_with_plugins"]


@dataclass(frozen=True)
class Redacted:
    """The result of :func:`redact`.

    Attributes:
        text: The input with every secret replaced by ``[REDACTED:<kind>]``.
        masked: How many placeholders were inserted; 0 when nothing was found.
    """

    text: str
    masked: int


@dataclass(frozen=True)
class RedactionRule:
    """One kind of secret and the pattern that finds it.

    For each match of ``pattern``, the text of ``group`` (the whole match when
    ``group`` is None) is replaced by ``[REDACTED:<kind>]``; the rest of the
    match is kept, which is how a rule keeps a variable name or a URL's host.
    A captured value that is obviously not a secret is left as it is, whatever
    the rule: empty, already a placeholder, a reference like ``$VAR`` or
    ``<your-key>``, masked like ``***``, a number of at most six digits, or a
    stand-in word (see the module docstring).

    Attributes:
        kind: The placeholder label, lower snake case, e.g. ``"github_token"``.
        pattern: The compiled pattern. It must not be able to backtrack
            catastrophically: redaction runs on untrusted text in the hook.
        group: The group holding the secret, by number or name; None for the
            whole match.
    """

    kind: str
    pattern: re.Pattern[str]
    group: int | str | None = None


# ---------------------------------------------------------------------------
# Building blocks
# ---------------------------------------------------------------------------
#
# Every pattern must stay linear on hostile input. Two habits keep it so: no
# two quantifiers can split the same characters between them, and a scan that
# may run long (a look-ahead over a name or value) starts at most once per run
# of the characters it scans, or is bounded.

# A token starts where no letter or digit precedes it, or right after a
# percent-escape (``%3Dghp_...`` in a URL-encoded body). The check sits after
# the token's first character so that ``re`` can skip ahead to that character
# instead of entering the pattern at every position.
_AFTER_FIRST = r"(?:(?<![A-Za-z0-9].)|(?<=%[0-9A-Fa-f]{2}.))"
# A fixed-length token must not run on into more token characters.
_END = r"(?![A-Za-z0-9])"

# Words that make a name secret. Each must end a word: the next character is
# not a letter of the same case, so ``TOKENIZER`` and ``max_tokens`` don't
# qualify while ``apiToken`` and ``TOKEN_2`` do.
_SECRET_WORDS = (
    r"secret|token|passw(?:or)?d|passphrase|credentials?"
    r"|(?:api|private|access|signing|encryption|master|hmac|app|auth|license"
    r"|service)[_-]?key"
)
_WORD_END = r"(?:(?<=[a-z])(?![a-z])|(?<=[A-Z])(?![A-Z]))"
_SECRET_WORD = rf"(?i:{_SECRET_WORDS}){_WORD_END}"
# Weaker words, trusted only together with a high-entropy value.
_WEAK_WORD = r"(?i:key|auth|pass|pwd|sig|signature|salt|session|cookie|cred)"

# A name ending in one of these words describes the secret instead of holding
# it. Short numbers are never masked anyway, so the list is mostly about names
# whose value is a location, an identifier or a unit.
_DESCRIPTIVE_WORDS = (
    "ttl|timeout|expiry|expires|expire|expiration|lifetime|age|in|length|len"
    "|size|limit|count|url|uri|endpoint|host|port|file|path|dir|name|type"
    "|header|id|field|param|alg|algorithm|enabled|required|mode|version"
    "|scopes?|issuer|audience|ref|arn|hint"
)


def _name(
    *,
    words: str = _SECRET_WORD,
    first: str = "A-Za-z_-",
    chars: str = r"\w.-",
    not_after: str | None = r"\w.$=-",
    descriptive: bool = True,
    extra: str = "",
) -> str:
    """Build the pattern of a name that holds one of ``words``.

    The name is one character of ``first`` then any of ``chars`` (both given
    as the inside of a character class). The pattern opens with that first
    character, so that ``re`` can skip to candidates; every check is a
    look-behind over it, wrapping a look-ahead from the name's start:

    - nothing in ``not_after`` precedes the name, so a run of name characters
      has one start and the scans below stay linear (None when the caller
      already anchors the start);
    - ``=`` or ``:`` follows it, a cheap test that rejects most words early;
    - it holds one of ``words``, found by one scan;
    - with ``descriptive``, it doesn't end in a descriptive word after a
      separator or camelCase hump.

    ``extra`` is added after the checks, still at the first character.
    """
    checks = [
        rf"(?<=(?=[{chars}]*\\?[\"']?[ \t]*[:=]).)",
        rf"(?<=(?=[{chars}]*?{words}).)",
    ]
    if not_after is not None:
        checks.insert(0, rf"(?<![{not_after}].)")
    if descriptive:
        checks.append(
            rf"(?<=(?![{chars}]*?(?:[_.-]|[a-z0-9](?=[A-Z]))"
            rf"(?i:{_DESCRIPTIVE_WORDS})(?![{chars}])).)"
        )
    return f"[{first}]" + "".join(checks) + extra + f"[{chars}]*"


# An identifier (dots and dashes allowed, as in ``spring.datasource.password``
# or ``--db-password``) that holds a secret word and doesn't end descriptively.
_SECRET_NAME = _name()
_UPPER_SECRET_NAME = _name(first="A-Z_", chars="A-Z0-9_", not_after=r"\w.$=")

# A bare value: one token without whitespace or quotes.
_BARE = r"[^\s\"'`]+"
# End of a one-assignment line: an optional trailing comment, then the end.
_EOL = r"(?=[ \t]*(?:#[^\r\n]*)?(?![^\r\n]))"
# The start of a one-assignment line: indentation, then ``export``, ``set``,
# Docker's ``ENV``/``ARG`` or a YAML list dash; and its separator.
_LINE_PREFIX = r"(?m:^)[ \t]*(?:(?:export|set|ENV|ARG|-)[ \t]+)?"
_LINE_SEPARATOR = r"[ \t]*(?:=(?![=~])|:(?=[ \t]))[ \t]*"
# Line values that are code, not secrets: a call or literal, an attribute
# chain (``settings.api_key``), a type (``str``, ``Optional[str]``,
# ``SecretStr``), or a variable named after the secret (``api_key``,
# ``self.token``, ``accessToken``: no digits, and a secret word starts a
# word, so ``supersecret`` and ``Password123`` are still masked).
_CALL_OR_LITERAL = r"[^\s\"'`]*[(\[{<]"
_ATTRIBUTE_CHAIN = rf"[A-Za-z_$][\w$]*(?:\.[A-Za-z_$][\w$]*)+[,;]?{_EOL}"
_TYPE_NAME = (
    r"&?(?:'[a-z]+[ \t]+)?"
    r"(?:str|string|bytes|int|integer|float|double|bool|boolean|number|any"
    r"|unknown|object|dict|list|tuple|void|char|[iu](?:8|16|32|64|128|size)"
    rf"|[A-Z][A-Za-z]*)\??[,;]?{_EOL}"
)
_SECRET_VARIABLE = (
    rf"(?=[A-Za-z_$][A-Za-z_$.]*[,;]?{_EOL})"
    rf"[A-Za-z_$.]*?(?:(?<![A-Za-z])|(?<=[a-z])(?=[A-Z])){_SECRET_WORD}"
)
# A mid-line value ends at whitespace, quotes, brackets, separators or a
# final full stop (but an ellipsis, as in ``sk-...``, stays part of it). An '&'
# ends it only where a query parameter follows (``&user=bob``); elsewhere it is
# part of the secret (``Tr0ub4dor&3``).
_INLINE_CHAR = r"[^\s\"'`,;()\[\]{}<>|]"
_INLINE_VALUE = (
    r"(?:[^\s\"'`,;()\[\]{}<>&|.]"
    r"|&(?![\w.\[\]-]*=)(?=[^\s\"'`,;()\[\]{}<>&|])"
    r"|\.(?=[^\s\"'`,;()\[\]{}<>&|])"
    r"|(?<=\.)\.(?![^\s\"'`,;()\[\]{}<>&|]))+"
)

# A token-like value: 8+ characters with a digit, or 20+ without one.
_TOKEN_CHAR = r"(?:[A-Za-z0-9_~+/-]|\.(?=[A-Za-z0-9_~+/-]))"
_TOKEN_LIKE = (
    r"(?:(?=[A-Za-z0-9._~+/-]{0,255}[0-9])"
    rf"{_TOKEN_CHAR}{{8,}}|{_TOKEN_CHAR}{{20,}})=*"
)
# A high-entropy value: 20 to 512 characters mixing letters and digits.
_HIGH_ENTROPY = (
    r"(?P<value>(?=[A-Za-z0-9+/_=-]{0,511}[0-9])"
    r"(?=[A-Za-z0-9+/_=-]{0,511}[A-Za-z])"
    r"[A-Za-z0-9+/_=-]{20,512})(?![A-Za-z0-9+/_=.-])"
)


def _rule(kind: str, pattern: str, group: int | str | None = None) -> RedactionRule:
    return RedactionRule(kind, re.compile(pattern), group)


def _token(kind: str, first: str, rest: str) -> RedactionRule:
    """Build a rule for a token that starts with ``first`` then ``rest``."""
    return _rule(kind, first + _AFTER_FIRST + rest)


# ---------------------------------------------------------------------------
# The rule table
# ---------------------------------------------------------------------------

_PEM_LABEL = r"(?:[A-Z0-9]+ ){0,4}PRIVATE KEY(?: BLOCK)?"
_PRIVATE_KEY_RULES = (
    _rule(
        "private_key",
        rf"-----BEGIN {_PEM_LABEL}-----"
        # A whole block. The body can't hold "-----", so it stops at the END
        # line, or at the next armour line when END is missing.
        rf"(?:[^-]*(?:-(?!----)[^-]*)*-----END {_PEM_LABEL}-----"
        # A truncated block: header lines and base64 lines, each a whole line.
        r"|(?:[ \t]*\r?\n[ \t]*"
        r"(?:[A-Za-z][A-Za-z0-9-]*:[^\r\n]*|[A-Za-z0-9+/=]*)"
        r"[ \t]*(?![^\r\n]))*)",
    ),
)

_PROVIDER_RULES = (
    _token("anthropic_api_key", "s", r"k-ant-[A-Za-z0-9_-]{20,}"),
    _token("openrouter_api_key", "s", r"k-or-v1-[A-Za-z0-9]{32,}"),
    _token(
        "openai_api_key",
        "s",
        r"k-(?:(?:proj|svcacct|admin|None)-[A-Za-z0-9_-]{20,}|[A-Za-z0-9]{20,})",
    ),
    _token("github_token", "g", r"(?:h[pousr]_[A-Za-z0-9]{36,}|ithub_pat_\w{22,})"),
    _token(
        "gitlab_token",
        "g",
        r"l(?:pat|dt|rt|ptt|ft|imt|soat|cbt|agent|oas|ffct)-"
        r"[A-Za-z0-9_-]{20,}(?:\.[A-Za-z0-9_-]+)*",
    ),
    _token(
        "slack_token",
        "x",
        r"(?:oxe\.xox[abeoprs]|ox[abeoprs]|app)-[A-Za-z0-9-]{10,}",
    ),
    _rule(
        "slack_webhook",
        r"hooks\.slack\.com/(?:services|workflows|triggers)/"
        r"(?P<path>[A-Za-z0-9_/-]{10,})",
        "path",
    ),
    _rule(
        "discord_webhook",
        r"discord(?:app)?\.com/api/webhooks/[0-9]+/(?P<token>[A-Za-z0-9_-]{20,})",
        "token",
    ),
    _token(
        "aws_access_key_id",
        "A",
        r"(?:3T[A-Z0-9]|KIA|SIA|BIA|CCA)[A-Z0-9]{16}" + _END,
    ),
    _token("google_api_key", "A", r"Iza[A-Za-z0-9_-]{35}(?![A-Za-z0-9_-])"),
    _token("google_oauth_client_secret", "G", r"OCSPX-[A-Za-z0-9_-]{24,}"),
    _token("google_oauth_token", "y", r"a29\.[A-Za-z0-9_-]{20,}"),
    _token("google_oauth_token", "1", r"(?<![/.]1)//0[A-Za-z0-9_-]{30,}"),
    _token("stripe_key", "[spr]", r"k_(?:live|test)_[A-Za-z0-9]{16,}"),
    _token("stripe_key", "w", r"hsec_[A-Za-z0-9]{24,}"),
    _token("npm_token", "n", r"pm_[A-Za-z0-9]{36}" + _END),
    _token("pypi_token", "p", r"ypi-Ag[A-Za-z0-9_-]{50,}"),
    _token("huggingface_token", "h", r"f_[A-Za-z0-9]{30,}"),
    _token("twilio_api_key", "S", r"K[0-9a-fA-F]{32}" + _END),
    _token("sendgrid_api_key", "S", r"G\.[A-Za-z0-9_-]{22}\.[A-Za-z0-9_-]{43}"),
    _token("digitalocean_token", "d", r"o[por]_v1_[a-f0-9]{64}" + _END),
    _token("shopify_token", "s", r"hp(?:at|ca|pa|ss)_[a-fA-F0-9]{32}" + _END),
    _token("atlassian_api_token", "A", r"TATT3[A-Za-z0-9_=-]{50,}"),
    _token("databricks_token", "d", r"api[a-f0-9]{32}(?:-[0-9]+)?" + _END),
    _token("groq_api_key", "g", r"sk_[A-Za-z0-9]{48,}"),
    _token("xai_api_key", "x", r"ai-[A-Za-z0-9]{60,}"),
    _token("replicate_api_token", "r", r"8_[A-Za-z0-9]{37}" + _END),
    _token("perplexity_api_key", "p", r"plx-[A-Za-z0-9]{40,}"),
    _token("linear_api_key", "l", r"in_api_[A-Za-z0-9]{40}" + _END),
    _token("postman_api_key", "P", r"MAK-[a-f0-9]{24}-[a-f0-9]{34}" + _END),
    _token("vault_token", "h", r"v[sb]\.[A-Za-z0-9_-]{24,}"),
    _token("doppler_token", "d", r"p\.(?:pt|st|sa|ct|scim|audit)\.[A-Za-z0-9]{40,}"),
    _token("sentry_token", "s", r"ntry[su]_[A-Za-z0-9_+/=-]{40,}"),
    _token("supabase_key", "s", r"(?:bp_[a-f0-9]{40}" + _END + r"|b_secret_[\w-]{20,})"),
    _token("notion_token", "n", r"tn_[A-Za-z0-9]{40,}"),
    _token("notion_token", "s", r"ecret_[A-Za-z0-9]{43}" + _END),
    _token(
        "grafana_token",
        "g",
        r"l(?:c_[A-Za-z0-9+/]{32,}={0,2}|sa_[A-Za-z0-9]{32}_[A-Fa-f0-9]{8}" + _END + ")",
    ),
    _token("square_token", "s", r"q0(?:atp|csp)-[A-Za-z0-9_-]{22,}"),
    _token("langsmith_api_key", "l", r"sv2_(?:pt|sk)_[a-f0-9]{32}_[a-f0-9]{10}" + _END),
    _token(
        "telegram_bot_token",
        "[0-9]",
        r"[0-9]{7,9}:AA[A-Za-z0-9_-]{33}(?![A-Za-z0-9_-])",
    ),
    _token(
        "discord_bot_token",
        "[MNO]",
        r"[A-Za-z0-9_-]{23,27}\.[A-Za-z0-9_-]{6}\.[A-Za-z0-9_-]{27,40}(?![\w-])",
    ),
    _token("age_secret_key", "A", r"GE-SECRET-KEY-1[0-9A-Z]{58}" + _END),
)

_JWT_RULES = (
    _token(
        "jwt",
        "e",
        r"yJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{4,}"
        r"\.[A-Za-z0-9_-]*(?:\.[A-Za-z0-9_-]+){0,2}",
    ),
)

_AUTHORIZATION = r"[Aa](?i:uthorization)[\"']?[ \t]*[:=][ \t]*[\"']?"
_HTTP_AUTH_RULES = (
    # In an Authorization header any credential counts, however short.
    _rule(
        "bearer_token",
        rf"{_AUTHORIZATION}(?i:bearer)[ \t]+(?P<token>{_TOKEN_CHAR}+=*)",
        "token",
    ),
    _rule(
        "basic_auth",
        rf"{_AUTHORIZATION}(?i:basic)[ \t]+(?P<token>[A-Za-z0-9+/]+={{0,2}})",
        "token",
    ),
    _rule(
        "auth_header",
        rf"{_AUTHORIZATION}(?!(?i:bearer|basic)[ \t])"
        r"(?:(?i:token|bot|apikey|key|sso-key)[ \t]+)?"
        rf"(?P<token>{_TOKEN_LIKE})",
        "token",
    ),
    # curl -u user:password
    _rule(
        "basic_auth",
        r"-(?<!\S-)(?:u|-user)[ \t]+[\"']?[^\s:\"']+:(?P<password>[^\s\"']+)",
        "password",
    ),
    # Elsewhere "Bearer" must be followed by something token-like, so that
    # "Bearer tokens are..." stays.
    _rule(
        "bearer_token",
        rf"[Bb](?<![\w-].)(?i:earer)[ \t]+(?P<token>{_TOKEN_LIKE})",
        "token",
    ),
)

_URL_RULES = (
    _rule(
        "url_password",
        # The password may hold '@' or ':'; greedy matching ends it at the
        # last '@' before the host. Excluding '/' keeps each scan to one URL.
        r"://[^\s:/?#@\"'<>\[\]]*:(?P<password>[^\s/?#\"'<>]+)@",
        "password",
    ),
    _rule(
        "query_secret",
        r"[?&](?:"
        + _name(first=r"\w\[\].-", chars=r"\w\[\].-", not_after=None)
        + r"|(?i:key|sig|signature|auth|pass|pwd|x-amz-signature"
        r"|x-amz-credential))=(?P<value>[^&\s#\"'<>]+)",
        "value",
    ),
)

_NAMED_SECRET_RULES = (
    _rule(
        "aws_secret_access_key",
        r"[Aa](?i:ws_?secret_?(?:access_?)?key)[\"']?[ \t]*(?::|=>|=)[ \t]*[\"']?"
        r"(?P<value>[A-Za-z0-9/+=]{40})(?![A-Za-z0-9/+=])",
        "value",
    ),
    _rule(
        "azure_key",
        r"[AS](?<![\w.-].)(?:ccountKey|haredAccessKey)="
        r"(?P<value>[A-Za-z0-9+/]{20,}={0,2})",
        "value",
    ),
    # "password": "value", 'api_key' => 'value', and \"token\": \"value\"
    # inside an escaped JSON string.
    _rule(
        "json_secret",
        rf"(?P<kq>\\?[\"']){_SECRET_NAME}(?P=kq)[ \t]*(?::|=>|=)[ \t]*"
        r"(?P<vq>\\?[\"'])"
        r"(?P<value>(?:(?!(?P=vq))(?:[^\\\r\n]|\\[^\r\n]))*)(?P=vq)",
        "value",
    ),
    # HTTP-style headers: X-Api-Key: value, X-Auth-Token: value. The dash in
    # the name tells a header from prose.
    _rule(
        "header_secret",
        r"[A-Za-z](?<![\w-].)(?<=(?=[A-Za-z0-9]*-[A-Za-z0-9-]*[ \t]*:).)"
        rf"(?<=(?=[A-Za-z0-9-]*?{_SECRET_WORD}).)[A-Za-z0-9-]*"
        rf"[ \t]*:[ \t]*(?P<value>{_TOKEN_LIKE})",
        "value",
    ),
    # Environment variables anywhere: API_KEY=value, -e DB_PASSWORD=value.
    _rule(
        "env_secret",
        rf"{_UPPER_SECRET_NAME}=(?![=~])(?P<value>{_BARE})",
        "value",
    ),
    # One assignment on a line of its own (.env, INI, YAML, properties); with
    # an upper-case name any value counts...
    _rule(
        "env_secret",
        rf"{_LINE_PREFIX}{_UPPER_SECRET_NAME}{_LINE_SEPARATOR}"
        rf"(?!{_CALL_OR_LITERAL})(?!{_ATTRIBUTE_CHAIN})"
        rf"(?P<value>{_BARE}){_EOL}",
        "value",
    ),
    # ...while other names are more often code than config.
    _rule(
        "env_secret",
        rf"{_LINE_PREFIX}(?=[\w.-]*?[a-z]){_SECRET_NAME}{_LINE_SEPARATOR}"
        rf"(?!{_CALL_OR_LITERAL})(?!{_ATTRIBUTE_CHAIN})(?!{_TYPE_NAME})"
        rf"(?!{_SECRET_VARIABLE})(?P<value>{_BARE}){_EOL}",
        "value",
    ),
    # Any other assignment, in code, logs, form bodies and flags:
    # password = "value", apiKey: 'value', export TOKEN="value",
    # api_key: str = "value", --password=value, "my password: hunter2!".
    # A quoted value counts whole, unless the name sits right after a quote
    # (``getpass("Password: ")``). An unquoted value needs a digit or symbol,
    # since a bare word there is usually a variable; after ':' a dash doesn't
    # count, so a hyphenated word in prose stays.
    _rule(
        "env_secret",
        _name(extra=r"(?:(?<=[\"'`].)(?P<in_quote>))?")
        + r"(?:[ \t]*(?::[ \t]*[A-Za-z_][\w.\[\], |]{0,60}?[ \t]*=(?![=>~])"
        r"|:=|=>|=(?![=~])|:(?![:/]))[ \t]*(?(in_quote)(?!))"
        r"(?P<q>[\"'`])(?![ \t+,;.)])"
        r"|(?P<eq>=)(?![=~$])"
        r"|:[ \t]*(?![$]))"
        r"(?P<value>(?(q)(?:(?!(?P=q))[^\\\r\n]|\\[^\r\n])*"
        rf"|(?(eq)(?={_INLINE_CHAR}{{0,255}}[0-9+/=@!#%^*~$-])"
        rf"|(?={_INLINE_CHAR}{{0,255}}[0-9+/=@!#%^*~$])){_INLINE_VALUE}))"
        r"(?(q)(?P=q))",
        "value",
    ),
)

_GENERIC_RULES = (
    _rule(
        "generic_secret",
        _name(words=_WEAK_WORD, not_after=r"\w.$\"'=-", descriptive=False)
        + r"[ \t]*(?::=|=>|=(?![=~])|:)[ \t]*[\"'`]?"
        + _HIGH_ENTROPY,
        "value",
    ),
    _rule(
        "generic_secret",
        rf"(?P<nq>[\"'])(?=[\w.-]*?{_WEAK_WORD})[A-Za-z_][\w.-]*(?P=nq)"
        r"[ \t]*(?::|=>|=)[ \t]*[\"'`]?" + _HIGH_ENTROPY,
        "value",
    ),
)

_SECRET_FLAG_WORD = r"(?:password|passwd|passphrase|pass|secret|token|api[_-]?key|credentials?)"

# Secrets passed on command lines, the way people paste them into a session.
_COMMAND_LINE_RULES = (
    # Registry logins: docker/podman/helm/oras login -p VALUE / --password VALUE.
    _rule(
        "cli_password",
        r"(?i:\b(?:docker|podman|nerdctl|buildah|helm|oras|skopeo)[ \t]+(?:registry[ \t]+)?login\b)"
        r"[^\r\n]{0,400}?[ \t](?:-p|--password)(?:[ \t]+|=)(?P<value>[^\s\"'`]+)",
        "value",
    ),
    # MySQL-family clients take the password glued to -p: mysql -uroot -pVALUE.
    _rule(
        "cli_password",
        r"\b(?:mysql|mysqldump|mysqladmin|mariadb|mariadb-dump)\b[^\r\n]{0,400}?[ \t]-p(?P<value>[^\s\"'`]+)",
        "value",
    ),
    # A long flag named for a secret, with its value after a space or '=':
    # --password VALUE, --api-key=VALUE, --auth-token VALUE (not --password-stdin).
    _rule(
        "cli_password",
        rf"(?<![\w-])--(?i:[\w-]*?{_SECRET_FLAG_WORD})(?:[ \t]+|=)(?![-$])"
        r"(?=[^\s\"'`]*[0-9!@#%^&*_+=/.:~])(?P<value>[^\s\"'`]+)",
        "value",
    ),
    # key=value pairs inside another flag: kubectl --from-literal=password=VALUE,
    # helm --set db.password=VALUE.
    _rule(
        "cli_password",
        rf"(?:--from-literal=|--set(?:-string)?[ \t=])[\w.-]*?(?i:{_SECRET_FLAG_WORD})="
        r"(?P<value>[^\s\"'`,]+)",
        "value",
    ),
)

# A YAML block scalar under a secret name: ``token: |`` and the indented lines below.
_BLOCK_SCALAR_RULES = (
    _rule(
        "yaml_block_secret",
        rf"(?m:^)(?P<indent>[ \t]*)[\w.-]*?(?i:{_SECRET_FLAG_WORD}|private[_-]?key)s?[ \t]*:"
        r"[ \t]*[|>][-+0-9]*[ \t]*\r?\n"
        r"(?P<value>(?P=indent)[ \t]+[^\r\n]*(?:\r?\n(?P=indent)[ \t]+[^\r\n]*)*)",
        "value",
    ),
)

DEFAULT_RULES: tuple[RedactionRule, ...] = (
    *_PRIVATE_KEY_RULES,
    *_PROVIDER_RULES,
    *_JWT_RULES,
    *_HTTP_AUTH_RULES,
    *_URL_RULES,
    *_BLOCK_SCALAR_RULES,
    *_NAMED_SECRET_RULES,
    *_COMMAND_LINE_RULES,
    *_GENERIC_RULES,
)
"""The built-in rules, in the order :func:`redact` applies them."""


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


# ---------------------------------------------------------------------------
# The entry point
# ---------------------------------------------------------------------------


# A further pass only widens a placeholder over what is left of a secret
# around it, which ends; in practice the second pass finds nothing. The bound
# is a backstop.
_MAX_PASSES = 8


def redact(text: str, *, rules: tuple[RedactionRule, ...] = DEFAULT_RULES) -> Redacted:
    """Replace every secret in ``text`` with a typed placeholder.

    Rules run in order, each over the output of the one before, so a later,
    more general rule sees ``[REDACTED:...]`` where an earlier, more specific
    one already matched, and leaves it alone. When a pass masks anything, the
    rules run again until nothing changes, so that the result is stable.

    Args:
        text: Any string, e.g. the last exchange of a transcript. Lone
            surrogates, NUL characters and megabytes of input are fine.
        rules: The rules to apply, in order. Pass ``(*DEFAULT_RULES, extra)``
            to add a rule.

    Returns:
        The redacted text and the number of secrets masked. A value that
        swallows an earlier placeholder, like a password holding a GitHub
        token, counts once. Running :func:`redact` again on the text changes
        nothing and reports 0.
    """
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
        pm: A plugin manager (``bli_memory.core.contracts.get_plugin_manager()``); its
            ``register_redaction_rules`` hook is called with a ``register(rule)`` callback.

    Returns:
        ``DEFAULT_RULES`` plus the plugins' rules, in registration order.
    """
    extra: list[RedactionRule] = []
    pm.hook.register_redaction_rules(register=extra.append)  # type: ignore[attr-defined]
    return DEFAULT_RULES + tuple(extra)
