"""Building blocks shared by the rule tables: names, values and line shapes.

Every pattern here must stay linear on hostile input, since redaction runs on
untrusted text in the stop hook.
"""

from __future__ import annotations

import re

from bli_memory.core.memory.redaction.rule import RedactionRule

__all__ = []

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
    r"secret|token|passw(?:or)?d|pass[_-](?:word|phrase)|passphrase|credentials?"
    r"|(?:api|private|access|signing|encryption|master|hmac|app|auth|license"
    r"|service|secret)[_-]?key"
)
_WORD_END = r"(?:(?<=[a-z])(?![a-z])|(?<=[A-Z])(?![A-Z]))"
_SECRET_WORD = rf"(?i:{_SECRET_WORDS}){_WORD_END}"
# The head noun: a compound name holds a secret only when a secret word is its LAST word,
# as in English (a "token usage" is a usage, a "password policy" a policy): so
# token_usage, password_policy, api_key_env, PasswordPolicy, passwordEncoder, tokenStore
# and passwordHash are not secret names. What may follow the word is a number or a
# qualifier that says which copy of the secret it is (GITHUB_TOKEN_2, DB_PASSWORD_PROD,
# SECRET_KEY_BASE, apiKeyStaging). The caller checks that the name ends there.
_QUALIFIERS = (
    "production|prod|staging|stage|stg|development|dev|testing|test|qa|uat|local|live"
    "|sandbox|base|old|new|current|primary|secondary|backup|main|default|value|raw|plain"
)
_SEPARATOR = r"(?:[_.-]|(?<=[a-z])(?=[A-Z])|(?<=[A-Z])(?=[A-Z][a-z]))"
_TAIL = rf"(?:[_.-]?[0-9]+|{_SEPARATOR}(?i:{_QUALIFIERS})(?![a-z]))*"
_SECRET_HEAD = rf"{_SECRET_WORD}{_TAIL}"
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
    head: bool | None = None,
) -> str:
    """Build the pattern of a name that holds one of ``words``.

    The name is one character of ``first`` then any of ``chars`` (both given
    as the inside of a character class). The pattern opens with that first
    character, so that ``re`` can skip to candidates; every check is a
    look-behind over it, wrapping a look-ahead from the name's start:

    - nothing in ``not_after`` precedes the name, so a run of name characters
      has one start and the scans below stay linear (None when the caller
      already anchors the start);
    - ``=`` or ``:`` follows it (after a closing quote or a subscript's ``']``), a cheap
      test that rejects most words early;
    - it holds one of ``words``, found by one scan;
    - with ``descriptive``, it doesn't end in a descriptive word after a
      separator or camelCase hump.

    ``extra`` is added after the checks, still at the first character. With ``head``
    (the default for the secret words) the word must be the name's head noun, its last
    word but for a number or qualifier (see ``_TAIL``).
    """
    if head is None:
        head = words == _SECRET_WORD
    end = rf"{_TAIL}(?![\w.-])" if head else ""
    checks = [
        rf"(?<=(?=[{chars}]*\\?[\"']?\]?[ \t]*[:=]).)",
        rf"(?<=(?=[{chars}]*?{words}{end}).)",
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

# A variable name that holds a secret, as the assignment rules read it (DB_PASSWORD,
# OPENAI_API_KEY, TOKEN), or PASS or PWD as its last word (DB_PASS; not BYPASS); the
# caller puts it inside quotes or after a space, where it starts.
_QUOTED_SECRET_NAME = (
    rf"[\w.-]*?(?:{_SECRET_HEAD}|(?<![A-Za-z0-9])(?i:pass|pwd|pw))(?![\w.-])"
)
# The value of a command that takes it after the name and a space (fish's set, csh's
# setenv, dotnet user-secrets set): one word or a quoted string; not a command
# substitution, (gh auth token) in fish, nor a reference. An unquoted word keeps a ')'
# only where more of it follows, so "(set -x API_KEY v)" keeps its closing bracket.
_SET_VALUE = (
    r"[ \t]+(?![($])(?P<q>[\"'])?"
    r"(?P<value>(?(q)[^\"'\r\n]+|(?:[^\s\"'`;|&)]|\)++(?=[^\s\"'`;|&)]))+))(?(q)(?P=q))"
)

# A name that is one target of several (user, password := "bob", "x") is not given the
# first value: _AFTER_COMMA marks a name that follows a comma, or a comma and ``self.``
# or ``this.`` (self.user, self.password = ...); the mark is set at the name's first
# character, and exactly one branch matches, so backtracking cannot drop it;
# _NOT_ONE_OF_SEVERAL then refuses a value followed by another value (not by the next
# keyword argument, login(user, password="x", timeout=5)). The multiple-assignment rule
# takes the value at the name's place instead.
_AFTER_COMMA = (
    r"(?:(?P<multi>(?<=,.)|(?<=,[ \t].)|(?<=,self\..)|(?<=,[ \t]self\..)|(?<=,this\..)|(?<=,[ \t]this\..))"
    r"|(?<!,.)(?<!,[ \t].)(?<!,self\..)(?<!,[ \t]self\..)(?<!,this\..)(?<!,[ \t]this\..))"
)
_NOT_ONE_OF_SEVERAL = r"(?(multi)(?![ \t]*,[ \t]*(?:[\"'`@]|\[\]|[\w.+-]+[ \t]*(?![\w.+= \t-]))))"

# A bare value: one token without whitespace or quotes.
# It ends before the next field of a connection string (Password=walrus;Server=.), and
# before semicolons that end it (DB_PASS=; and DB_PASS=walrus; make keep their ';'): a run
# of them belongs to the value only when more of the value follows (Tr0ub;dor).
_NEXT_FIELD = r";(?=[A-Za-z][\w ]{0,40}=)"
_BARE = r"(?:[^\s\"'`;]|;+(?![A-Za-z][\w ]{0,40}=)(?=[^\s\"'`;]))+"
# End of a one-assignment line: an optional trailing comment, then the end, or the next
# field of a connection string.
_EOL = rf"(?=[ \t]*(?:#[^\r\n]*)?(?![^\r\n])|{_NEXT_FIELD})"
# The start of a one-assignment line: indentation, then ``export``, ``set``,
# Docker's ``ENV``/``ARG`` or a YAML list dash; and its separator.
_LINE_PREFIX = r"(?m:^)[ \t]*(?:(?:export|set|ENV|ARG|-)[ \t]+)?"
# A colon with no space counts too (password:kangaroo), but not ::, :/ or :=. A YAML tag
# after a colon (secret: !!str walrus99, password: !ENV ${DB_PASSWORD}) is not the value.
_LINE_SEPARATOR = r"[ \t]*(?:=(?![=~])|:(?![:/\\=])(?:[ \t]*!!?[A-Za-z][\w-]*(?=[ \t]+\S))?)[ \t]*"
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


def _rule(kind: str, pattern: str, group: int | str | None = None, *, repeat: bool = False) -> RedactionRule:
    return RedactionRule(kind, re.compile(pattern), group, repeat)


def _token(kind: str, first: str, rest: str) -> RedactionRule:
    """Build a rule for a token that starts with ``first`` then ``rest``."""
    return _rule(kind, first + _AFTER_FIRST + rest)

