"""Rules for values assigned to a name that says it is secret: ``.env`` and shell
lines, YAML (block scalars too), INI, TOML, code, headers and JSON pairs, then
high-entropy values of weaker names."""

from __future__ import annotations

from bli_memory.core.memory.redaction.commands import _SECRET_FLAG_WORD
from bli_memory.core.memory.redaction.patterns import (
    _AFTER_COMMA,
    _ATTRIBUTE_CHAIN,
    _BARE,
    _CALL_OR_LITERAL,
    _DESCRIPTIVE_WORDS,
    _EOL,
    _HIGH_ENTROPY,
    _INLINE_CHAR,
    _INLINE_VALUE,
    _LINE_PREFIX,
    _LINE_SEPARATOR,
    _NOT_ONE_OF_SEVERAL,
    _SECRET_HEAD,
    _SECRET_NAME,
    _SECRET_VARIABLE,
    _SET_VALUE,
    _TOKEN_LIKE,
    _TYPE_NAME,
    _UPPER_SECRET_NAME,
    _WEAK_WORD,
    _name,
    _rule,
)
from bli_memory.core.memory.redaction.prose import _NOT_PROSE

__all__ = []

# What may stand before the quote of a value and keep it a literal: a bytes prefix
# (Python and Rust b"x"), C#'s verbatim @"x", or a conversion of the literal (Go
# []byte("x"), Python bytes("x", ...), Node Buffer.from("x")). Not f"...", whose braces
# are code, nor a raw r"..." or rb"...", nearly always a regular expression.
_WRAPPER = (
    r"(?:[bB@](?=[\"'])"
    r"|(?:\[\]byte|bytes|bytearray|Buffer\.from)\([ \t]*(?=[\"'`]))?"
)
# What follows a secret name in "any other assignment" (the last rules below): the
# separator (``=``, ``:``, ``:=``, ``=>``, a type annotation then ``=``), then a quoted
# value whole, or an unquoted one holding a digit or symbol.
_ASSIGNED_VALUE = (
    r"(?:[ \t]*(?::[ \t]*[A-Za-z_][\w.\[\], |]{0,60}?[ \t]*=(?![=>~])"
    r"|:=|=>|=(?![=~])|:(?![:/]))[ \t]*(?(in_quote)(?!))"
    + _WRAPPER +
    r"(?P<q>[\"'`])(?![ \t+,;.)])"
    r"|(?P<eq>=)(?![=~$])"
    r"|[ \t]+=[ \t]+(?P<sp>)(?![=~$])(?=[^\s\"'`]{8})"
    r"(?![A-Za-z_$][\w$]*(?:\.[A-Za-z_$]|[(\[{<]))"
    r"|:[ \t]*(?![$]|!!?[A-Za-z][\w-]*[ \t]+\S))"
    r"(?P<value>(?(q)(?:(?!(?P=q))[^\\\r\n]|\\[^\r\n])*"
    rf"|(?(eq)(?={_INLINE_CHAR}{{0,255}}[0-9+/=@!#%^*~$-])"
    rf"|(?={_INLINE_CHAR}{{0,255}}[0-9+/=@!#%^*~$&])){_INLINE_VALUE}(?(sp)&?)))"
    r"(?(q)(?P=q))"
    + _NOT_ONE_OF_SEVERAL
)
# Not, after a separator, the pass of an algorithm that runs in several (first_pass,
# second_pass, single_pass, two_pass): a count, not a password. Checked by the list rule
# below and by the short password word.
_NOT_AN_ORDINAL_PASS = "".join(
    rf"(?<!(?i:{word})[_.-])" for word in ("first", "second", "third", "last", "single", "multi",
                                          "double", "one", "two", "by")
)
# A multiple assignment, user, password := "bob", "x" (Go, Python, Ruby, Lua): the value
# at the secret name's place, counted over at most three targets before it, each value
# before it a string or a plain word. A value masked already is not taken again, so the
# rule, applied again at once (repeat), finds the next secret target of the same list
# (token, secret = "a", "b"); a list's plain words ([PAD], "quick" of first_pass) stay.
# The first target starts a word, follows no comma and is followed by one (checked
# without backtracking), so the count starts where the list does and a word that starts
# no list is scanned once.
_TARGET = r"[A-Za-z_$][\w$.]*[ \t]*,[ \t]*"
_LITERAL = (
    r"(?:" + _WRAPPER + r"(?:\"[^\"\r\n]*\"|'[^'\r\n]*'|`[^`\r\n]*`)\)?|[\w.+-]+)[ \t]*,[ \t]*"
)
_MULTIPLE_ASSIGNMENT = (
    r"(?<![\w$.,-])(?<!,[ \t])(?=[A-Za-z_$][\w$.]*+[ \t]*+,)"
    r"(?:(?P<t1>" + _TARGET + r")(?:(?P<t2>" + _TARGET + r")(?P<t3>" + _TARGET + r")?)?)?"
    rf"(?=[A-Za-z_$])(?:[\w$]+\.)*[\w$]*?(?:{_SECRET_HEAD}|(?<![A-Za-z0-9])(?:{_NOT_AN_ORDINAL_PASS}(?i:pass)|(?i:pwd|pw)))"
    r"(?![\w$.-])"
    r"(?(t1)(?:[ \t]*,[ \t]*[A-Za-z_$][\w$.]*){0,3}|(?:[ \t]*,[ \t]*[A-Za-z_$][\w$.]*){1,3})"
    r"[ \t]*(?::=|=(?![=>~]))[ \t]*"
    rf"(?(t1){_LITERAL})(?(t2){_LITERAL})(?(t3){_LITERAL})"
    + _WRAPPER
    + r"(?P<q>[\"'`])(?!\[REDACTED:)(?P<value>(?:(?!(?P=q))[^\\\r\n]|\\[^\r\n])+)(?P=q)"
)
# pw or pwd as a whole word of a name, and pass as its last word: after a separator, a
# camelCase hump or glued to a word (db_pwd, DB_PASS, smtpPass, PGPASS, ROOTPASS); not
# PASS_RATE, nor the English words ending in "pass" (BYPASS, COMPASS, LOWPASS, TWOPASS).
_NOT_AN_ENGLISH_PASS = "".join(
    rf"(?<!(?i:{word}))"
    for word in ("by", "com", "sur", "tres", "over", "under", "low", "high", "band", "all",
                 "multi", "one", "two", "single", "first", "second", "double")
)
# The word is tested first, so that the checks before it run only where it is.
_SHORT_PASSWORD_WORD = (
    r"(?=[Pp])(?:(?=(?i:pwd?)(?![A-Za-z0-9]))(?:(?<![A-Za-z0-9])|(?<=[a-z])(?=P))(?i:pwd?)(?![A-Za-z0-9])"
    r"|(?=(?i:pass)(?![\w.-]))"
    rf"(?:(?<![A-Za-z0-9]){_NOT_AN_ORDINAL_PASS}|(?<=[a-z])(?=P)|(?<=[A-Za-z]){_NOT_AN_ENGLISH_PASS})"
    r"(?i:pass)(?![\w.-]))"
)
# A value of PWD that is the shell's working directory, not a password: it starts like a
# path (/, ~, ., a drive C:\ or a share \\host), a variable ($HOME, %CD%) or a command.
_NOT_A_PATH = r"(?![\"'`]?(?:[/~.$%`]|[A-Za-z]:[\\/]|\\\\))"
_UPPER_SHORT_NAME = _name(words=_SHORT_PASSWORD_WORD, first="A-Z_", chars="A-Z0-9_",
                          not_after=r"\w.$=", descriptive=False)
_LOWER_SHORT_NAME = _name(words=_SHORT_PASSWORD_WORD, descriptive=False)
# fish's set (set -x NAME value, set -gx NAME 'value') and csh's setenv NAME value: a name,
# a space, then the value. Flags, setenv (always the builtin) or an upper-case name, so
# "set token expiry" stays; not a command substitution, (gh auth token) in fish.
#
# Where a command starts: a line, after a list marker (-, *, +, >, a bullet, 1.), a quote
# mark, a prompt ("$ ", "% ", fish's "user@host ~> ", "[user@host ~]$ ") or a label
# ("Run: ", then only for flags or setenv, where the word is surely the builtin); a code
# span; after ;, &, ||, "$(" or a "-c" and its quote (fish -c 'set -x ...'); and fish's
# "; and" / "; or". So "`set -x API_TOKEN v`" and "cd app && setenv DB_PASS v" count, and
# prose ("then set API_TOKEN in CI", "the options (set -x API_TOKEN before running)")
# does not, nor a Markdown table cell ("| setenv DB_PASSWORD prompt |"): a lone '|' is
# not taken for a pipe, since nothing is piped into set or setenv.
_LIST_MARKER = "(?:[-*+>\u2022][ \t]+|[0-9]{1,3}[.)][ \t]+)"
_PROMPT = (
    r"(?:[$%][ \t]+|(?:[\w.-]+@[\w.-]+[ \t:]+)?[~/][^\s>]*>[ \t]+"
    r"|\[[^\]\r\n]{1,80}\][$#%][ \t]+)"
)
_COMMAND_START = (
    rf"(?:(?m:^)[ \t]*{_LIST_MARKER}?(?:(?P<label>[A-Za-z]+:[ \t]+)|{_PROMPT})?[\"']?"
    r"|(?<=[`;&|(\"'])(?:(?<=[`;&])|(?<=\|\|)|(?<=\$\()|(?<=-c[ \t][\"']))[ \t]*(?:(?:and|or)[ \t]+)?)"
)
# Words that follow "set NAME" in prose, besides the small words of prose.
_NOT_AN_ADVERB = (
    r"(?!(?i:before|after|first|later|now|here|there|below|above|again|once|too|also)(?![\w-]))"
)
_SHELL_SET = (
    _COMMAND_START
    + r"(?<![\w.-])(?:set(?P<flags>(?:[ \t]+-[A-Za-z]+|[ \t]+--[a-z]+)+)?|(?P<setenv>setenv))[ \t]+"
    r"(?(flags)|(?(setenv)|(?(label)(?!)|(?=[A-Z0-9_]+[ \t]))))"
)
# Spaces around '=' in the middle of a line: the value is code unless it holds a digit or
# a symbol, and is not a call or an attribute chain.
_SPACED_EQUALS = (
    rf"(?P<spaced>[ \t]+=[ \t]+)(?![=~\"'`])(?!{_CALL_OR_LITERAL})(?!{_ATTRIBUTE_CHAIN})"
    rf"(?={_INLINE_CHAR}{{0,255}}[0-9+/=@!#%^*~$&])"
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
    # "password": "value", 'api_key' => 'value', \"token\": \"value\" inside an escaped
    # JSON string, and a subscript key: config['password'] = 'value'.
    _rule(
        "json_secret",
        rf"(?P<kq>\\?[\"']){_SECRET_NAME}(?P=kq)(?:\][ \t]*=(?!=)|[ \t]*(?::|=>|=))[ \t]*"
        r"(?P<vq>\\?[\"'])"
        r"(?P<value>(?:(?!(?P=vq))(?:[^\\\r\n]|\\[^\r\n]))*)(?P=vq)",
        "value",
    ),
    # HTTP-style headers: X-Api-Key: value, X-Auth-Token: value. The dash in
    # the name tells a header from prose.
    _rule(
        "header_secret",
        r"[A-Za-z](?<![\w-].)(?<=(?=[A-Za-z0-9]*-[A-Za-z0-9-]*[ \t]*:).)"
        rf"(?<=(?=[A-Za-z0-9-]*?{_SECRET_HEAD}(?![A-Za-z0-9-])).)[A-Za-z0-9-]*"
        rf"[ \t]*:[ \t]*(?P<value>{_TOKEN_LIKE})",
        "value",
    ),
    # Environment variables anywhere: API_KEY=value, -e DB_PASSWORD=value; with spaces
    # around '=' in the middle of a line ("I set DB_PASSWORD = s3cr3t in prod") the value
    # needs a digit or symbol, since prose follows such a name.
    _rule(
        "env_secret",
        rf"{_UPPER_SECRET_NAME}(?:=(?![=~]){_WRAPPER}[\"']?|{_SPACED_EQUALS})(?P<value>(?(spaced){_INLINE_VALUE}&?|{_BARE}))",
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
    # The same for pw, pwd and pass names (PGPASS=value, DB_PASS = value, PWD = value),
    # whose value is kept when it is a path; a lower-case one (db_pwd = value) needs a digit
    # or symbol in its value, since pwd = cwd is code.
    _rule(
        "env_secret",
        rf"{_UPPER_SHORT_NAME}(?:=(?![=~])|{_SPACED_EQUALS}){_NOT_A_PATH}"
        rf"(?!{_CALL_OR_LITERAL})(?!{_ATTRIBUTE_CHAIN})[\"']?(?P<value>(?(spaced){_INLINE_VALUE}&?|{_BARE}))",
        "value",
    ),
    _rule(
        "env_secret",
        rf"{_LINE_PREFIX}{_UPPER_SHORT_NAME}{_LINE_SEPARATOR}{_NOT_A_PATH}"
        rf"(?!{_CALL_OR_LITERAL})(?!{_ATTRIBUTE_CHAIN})[\"']?(?P<value>{_BARE}){_EOL}",
        "value",
    ),
    _rule(
        "env_secret",
        rf"{_LINE_PREFIX}(?=[\w.-]*?[a-z]){_LOWER_SHORT_NAME}{_LINE_SEPARATOR}{_NOT_A_PATH}"
        rf"(?!{_CALL_OR_LITERAL})(?!{_ATTRIBUTE_CHAIN})(?!{_TYPE_NAME})"
        rf"(?=[^\s\"'`]*[0-9+/=@!#%^*~$&-])[\"']?(?P<value>{_BARE}){_EOL}",
        "value",
    ),
    # Shell builtins that set a variable without '=': set -x NAME value, setenv NAME value.
    # A value that starts like a path or a variable (~/key.json, $HOME/.token) is not one,
    # nor an unquoted word of prose ("set API_TOKEN in CI", "Tip: setenv DB_PASS first").
    _rule(
        "env_secret",
        _SHELL_SET
        + rf"(?![\w.-]*?(?:[_.-]|[a-z0-9](?=[A-Z]))(?i:{_DESCRIPTIVE_WORDS})(?![\w.-]))"
        + rf"(?:(?=[\w.-]*?{_SECRET_HEAD}(?![\w.-]))|(?=[\w.-]*?{_SHORT_PASSWORD_WORD}[ \t]+{_NOT_A_PATH}))"
        + rf"[A-Za-z_][\w.-]*(?=[ \t]+{_NOT_A_PATH}(?![\"']){_NOT_PROSE}{_NOT_AN_ADVERB}|[ \t]+[\"'])"
        + _SET_VALUE,
        "value",
    ),
    _rule("env_secret", _MULTIPLE_ASSIGNMENT, "value", repeat=True),
    # Any other assignment, in code, logs, form bodies and flags:
    # password = "value", apiKey: 'value', export TOKEN="value",
    # api_key: str = "value", --password=value, "my password: hunter2!".
    # A quoted value counts whole, unless the name sits right after a quote
    # (``getpass("Password: ")``). An unquoted value needs a digit or symbol,
    # since a bare word there is usually a variable; after ':' a dash doesn't
    # count, so a hyphenated word in prose stays.
    _rule(
        "env_secret",
        _name(extra=r"(?:(?<=[\"'`].)(?P<in_quote>))?" + _AFTER_COMMA) + _ASSIGNED_VALUE,
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
              extra=r"(?:(?<=[\"'`].)(?P<in_quote>))?" + _AFTER_COMMA)
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
