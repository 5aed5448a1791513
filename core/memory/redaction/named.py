"""Rules for values assigned to a name that says it is secret: ``.env`` and shell
lines, YAML (block scalars too), INI, TOML, code, headers and JSON pairs, then
high-entropy values of weaker names."""

from __future__ import annotations

from bli_memory.core.memory.redaction.commands import _SECRET_FLAG_WORD
from bli_memory.core.memory.redaction.patterns import (
    _ATTRIBUTE_CHAIN,
    _BARE,
    _CALL_OR_LITERAL,
    _EOL,
    _HIGH_ENTROPY,
    _INLINE_CHAR,
    _INLINE_VALUE,
    _LINE_PREFIX,
    _LINE_SEPARATOR,
    _SECRET_NAME,
    _SECRET_VARIABLE,
    _SECRET_WORD,
    _TOKEN_LIKE,
    _TYPE_NAME,
    _UPPER_SECRET_NAME,
    _WEAK_WORD,
    _name,
    _rule,
)

__all__ = []

# What follows a secret name in "any other assignment" (the last rules below): the
# separator (``=``, ``:``, ``:=``, ``=>``, a type annotation then ``=``), then a quoted
# value whole, or an unquoted one holding a digit or symbol.
_ASSIGNED_VALUE = (
    r"(?:[ \t]*(?::[ \t]*[A-Za-z_][\w.\[\], |]{0,60}?[ \t]*=(?![=>~])"
    r"|:=|=>|=(?![=~])|:(?![:/]))[ \t]*(?(in_quote)(?!))"
    r"(?P<q>[\"'`])(?![ \t+,;.)])"
    r"|(?P<eq>=)(?![=~$])"
    r"|:[ \t]*(?![$]))"
    r"(?P<value>(?(q)(?:(?!(?P=q))[^\\\r\n]|\\[^\r\n])*"
    rf"|(?(eq)(?={_INLINE_CHAR}{{0,255}}[0-9+/=@!#%^*~$-])"
    rf"|(?={_INLINE_CHAR}{{0,255}}[0-9+/=@!#%^*~$])){_INLINE_VALUE}))"
    r"(?(q)(?P=q))"
)
# pw or pwd as a whole word of a name, and pass as its last word: after a separator or a
# camelCase hump (db_pwd, DB_PASS, smtpPass; not BYPASS, COMPASS or PASS_RATE).
_SHORT_PASSWORD_WORD = (
    r"(?:(?<![A-Za-z0-9])|(?<=[a-z])(?=P))(?:(?i:pwd?)(?![A-Za-z0-9])|(?i:pass)(?![\w.-]))"
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
        rf"{_UPPER_SECRET_NAME}=(?![=~])[\"']?(?P<value>{_BARE})",
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
        _name(extra=r"(?:(?<=[\"'`].)(?P<in_quote>))?") + _ASSIGNED_VALUE,
        "value",
    ),
    # pw and pwd, short for password, as a name or its last part, in any case: pw=VALUE,
    # db_pwd: 'VALUE', adminPwd = "VALUE", PWD=VALUE, with values as above. The shell's
    # working directory is also PWD (and OLDPWD), but its value is always a path (POSIX
    # requires an absolute one): so a value that starts like a path (/, ~, ., a drive
    # C:\ or a share \\host), a variable ($HOME, %CD%) or a command (`pwd`) stays, and
    # any other value of PWD is a password.
    _rule(
        "env_secret",
        _name(words=_SHORT_PASSWORD_WORD, descriptive=False,
              extra=r"(?:(?<=[\"'`].)(?P<in_quote>))?")
        + r"(?=[ \t]*(?::=|=>|=|:)[ \t]*(?![ \t`])[\"']?(?![/~.$%]|[A-Za-z]:[\\/]|\\\\))"
        + _ASSIGNED_VALUE,
        "value",
    ),
)

# A UUID names a thing (a session, a request, a job): it is a secret only when the
# name says key, auth, pass, signature, salt, cookie or credential, not "session" alone.
# So "Exporting session: <uuid>" and "session_id=<uuid>" stay, "sessionKey: <uuid>" goes.
_KEYISH_WORD = r"(?i:key|auth|pass|pwd|sig|salt|cookie|cred)"
_UUID_VALUE = (
    r"[0-9A-Fa-f]{8}-[0-9A-Fa-f]{4}-[0-9A-Fa-f]{4}-[0-9A-Fa-f]{4}-[0-9A-Fa-f]{12}"
    r"(?![A-Za-z0-9+/_=.-])"
)
_UNLESS_ID = rf"(?(keyish)|(?![\"'`]?{_UUID_VALUE}))"

_GENERIC_RULES = (
    _rule(
        "generic_secret",
        _name(
            words=_WEAK_WORD, not_after=r"\w.$\"'=-", descriptive=False,
            extra=rf"(?:(?<=(?=[\w.-]*?{_KEYISH_WORD}).)(?P<keyish>))?",
        )
        + r"[ \t]*(?::=|=>|=(?![=~])|:)[ \t]*" + _UNLESS_ID + r"[\"'`]?"
        + _HIGH_ENTROPY,
        "value",
    ),
    _rule(
        "generic_secret",
        rf"(?P<nq>[\"'])(?=[\w.-]*?{_WEAK_WORD})(?:(?=[\w.-]*?{_KEYISH_WORD})(?P<keyish>))?"
        r"[A-Za-z_][\w.-]*(?P=nq)"
        r"[ \t]*(?::|=>|=)[ \t]*" + _UNLESS_ID + r"[\"'`]?" + _HIGH_ENTROPY,
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
