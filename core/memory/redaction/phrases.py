"""Rules for secret values the assignment rules of :mod:`~bli_memory.core.memory.redaction.named`
would cut short or miss: a passphrase of several words after a name, a value told with
"is" after an upper-case name, an all-letter password under a short name, and a password
in a connection string.

- A passphrase after ``=`` (``password = correct horse battery staple``,
  ``DB_PASSWORD=correct horse battery staple``, fish's ``set -x DB_PASSWORD correct
  horse battery staple``) on a line of its own, or in a code span that opens with the
  command (``run `export DB_PASSWORD=correct horse battery staple` ``), is masked
  whole, where a passphrase ends (:mod:`~bli_memory.core.memory.redaction.prose`): at
  the end of the clause or of the code span, with no small word of prose or pointer in
  it, and two words at least. Its first word is not a
  keyword of code (``await``, ``yield``, ``lambda``, ``new``, ...).
- The label form or a spaced ``=`` with a first word holding a digit (``password:
  Tr4mpoline cactus harbor``), up to the first small word of prose, as after "is"; and a label after
  another field of the line (``user: admin, password: kangaroo``).
- ``the DB_PASS is s3cr3tvalue``: an upper-case secret name, ``is`` or ``was``, then a
  value with a digit or a symbol, as prose tells a password.
- ``db_pass=kangaroo``, ``smtpPass=kangaroo``, ``user_pw=kangaroo``: pw, pwd or pass as
  the last word of a longer lower-case or camelCase name takes an all-letter value too
  (a bare ``pwd = cwd`` is code and stays).
- ``Server=.;Password=walrus``: a password of a connection string, up to its ``;``.
"""

from __future__ import annotations

from bli_memory.core.memory.redaction.named import (
    _NOT_A_PATH,
    _NOT_AN_ADVERB,
    _SHELL_SET,
    _SHORT_PASSWORD_WORD,
)
from bli_memory.core.memory.redaction.patterns import (
    _DESCRIPTIVE_WORDS,
    _INLINE_VALUE,
    _LINE_PREFIX,
    _SECRET_HEAD,
    _name,
    _rule,
)
from bli_memory.core.memory.redaction.prose import (
    _CLAUSE_END,
    _NEXT_WORD,
    _NOT_A_CALL,
    _NOT_A_REFERENCE,
    _NOT_PROSE,
    _PASSWORD_WORD,
    _PROSE_WORDS,
)

__all__ = []

# Words that open code, not a passphrase: ``token = await fetch_token``.
_NOT_CODE = r"(?!(?:await|yield|lambda|new|typeof|function|async|def|return|import|not|sizeof)(?![\w-]))"
# A word of a passphrase, then one to eleven more: each not a word of prose.
_WORD = rf"{_NOT_PROSE}(?=[A-Za-z0-9]){_INLINE_VALUE}"
_WORDS = rf"{_NOT_CODE}{_WORD}(?:[ \t]+{_WORD}){{1,11}}"
_PHRASE = rf"(?P<value>{_WORDS}){_CLAUSE_END}"
# After a glued '=' the words after a value are more often a command (API_KEY=x python
# app.py): a passphrase there is plain words only.
_PLAIN = rf"{_NOT_PROSE}[A-Za-z]+(?![^\s,;:!?)\].`])"
_PLAIN_WORDS = rf"{_NOT_CODE}{_PLAIN}(?:[ \t]+{_PLAIN}){{1,11}}"
# A name holding a secret word, or pw, pwd or pass as its last word; not one that ends
# in a word describing the secret (TOKEN_TTL).
_NOT_DESCRIPTIVE = rf"(?![\w.-]*?(?:[_.-]|[a-z0-9](?=[A-Z]))(?i:{_DESCRIPTIVE_WORDS})(?![\w.-]))"
# Each check is a look-behind over the first character, so the scan skips to candidates.
_ANY_SECRET_NAME = (
    rf"[A-Za-z_](?<![\w.$-].)(?<={_NOT_DESCRIPTIVE}.)"
    rf"(?<=(?=[\w.-]*?(?:{_SECRET_HEAD}(?![\w.-])|{_SHORT_PASSWORD_WORD})).)[\w.-]*"
)
_UPPER_NAME = (
    r"[A-Z_](?<![\w.$-].)(?<=(?=[A-Z0-9_]*[ \t]+(?:is|was)[ \t]).)"
    rf"(?<={_NOT_DESCRIPTIVE}.)"
    rf"(?<=(?=[A-Z0-9_]*?(?:{_SECRET_HEAD}(?![\w.-])|{_SHORT_PASSWORD_WORD})).)[A-Z0-9_]*(?![\w.-])"
)
# The same before '=', its cheap test first (see _name).
_ASSIGNED_NAME = _name(words=rf"(?:{_SECRET_HEAD}(?![\w.-])|{_SHORT_PASSWORD_WORD})", first="A-Za-z_",
                       not_after=r"\w.$-", head=False)
# pw, pwd or pass as the last word of a longer name: db_pass, smtpPass, user_pw.
_COMPOUND_SHORT_NAME = _name(words=rf"[\w.-]{_SHORT_PASSWORD_WORD}", not_after=r"\w.$=-")
# The same name seen from the '=' after it, so that the scan skips to an '=' (a rule that
# opens on a name's first letter is tried at every letter of the text).
_ENGLISH_PASS = ("first", "second", "multi", "single", "double", "one", "two", "by", "com")
_AFTER_COMPOUND_SHORT_NAME = (
    "(?:" + "|".join(
        [rf"(?<=[A-Za-z0-9][_.-](?i:{word})=)" for word in ("pw", "pwd", "pass")]
        + [rf"(?<=[a-z]P(?i:{rest})=)" for rest in ("w", "wd", "ass")]
    ) + ")" + "".join(rf"(?<!(?i:{word})[_.-](?i:pass)=)" for word in _ENGLISH_PASS)
)
_LETTERS = r"(?P<value>[A-Za-z]{2,64})(?![\w.(\[{$@/:-])"

# A passphrase after '=' on a line of its own, or in a code span that opens with export:
# one rule for each start, so that each opens on its own cheap test.
_AFTER_EQUALS = (
    rf"{_ASSIGNED_NAME}(?:[ \t]+=[ \t]+(?P<spaced>)|=(?![=~]))[ \t]*{_NOT_A_PATH}"
    rf"(?P<value>(?(spaced){_WORDS}|{_PLAIN_WORDS})){_CLAUSE_END}"
)

_PHRASE_RULES = (
    *(_rule("env_secret", start + _AFTER_EQUALS, "value") for start in (_LINE_PREFIX, r"`export[ \t]+")),
    _rule(
        "env_secret",
        rf"{_SHELL_SET}{_ANY_SECRET_NAME}[ \t]+{_NOT_A_PATH}{_NOT_AN_ADVERB}{_PHRASE}",
        "value",
    ),
    # The label form (or a spaced '=') with a first word holding a digit or symbol, up to a
    # word of prose.
    _rule(
        "env_secret",
        r"[Pp](?<![A-Za-z0-9].)" + _PASSWORD_WORD + r"(?:[ \t]*:(?!=)|[ \t]+=(?![=~]))[ \t]*"
        + _NOT_A_REFERENCE
        + _NOT_PROSE + _NOT_A_CALL + r"(?=[^\s\"'`]{0,255}[0-9!@#$%^&*+=/~?])"
        + rf"(?P<value>{_INLINE_VALUE}{_NEXT_WORD})",
        "value",
    ),
    # A label after another field of the line: "user: admin, password: kangaroo".
    _rule(
        "prose_password",
        r"[Pp](?<=[,;][ \t][Pp])" + _PASSWORD_WORD + r"[ \t]*:[ \t]*" + _NOT_A_REFERENCE
        + rf"(?!(?i:{_PROSE_WORDS})(?![\w-]))(?P<value>(?=[A-Za-z0-9]){_INLINE_VALUE}){_CLAUSE_END}",
        "value",
    ),
    # "the DB_PASS is s3cr3tvalue".
    _rule(
        "env_secret",
        rf"{_UPPER_NAME}[ \t]+(?:is|was)[ \t]+[\"'`]?{_NOT_A_REFERENCE}(?![0-9]{{1,6}}(?![^\s\"'`]))"
        rf"(?=[^\s\"'`]{{0,255}}[0-9!@#$%^&*+=/~?])(?P<value>{_INLINE_VALUE})",
        "value",
    ),
    # db_pass=kangaroo anywhere; db_pwd = kangaroo on a line of its own.
    _rule("env_secret", rf"={_AFTER_COMPOUND_SHORT_NAME}(?![=~])[\"']?{_LETTERS}", "value"),
    _rule(
        "env_secret",
        rf"{_LINE_PREFIX}{_COMPOUND_SHORT_NAME}[ \t]*(?:=(?![=~])|:)[ \t]*[\"']?{_LETTERS}"
        r"[\"']?(?=[ \t]*(?:#[^\r\n]*)?(?![^\r\n]))",
        "value",
    ),
    # pass=kangaroo alone at the start of a line, as PASS=kangaroo is (first_pass=... is
    # another name, and pass=true or pass=1 a stand-in or a short number).
    _rule(
        "env_secret",
        r"pass(?<![^\r\n]pass)=(?![=~])[\"']?" + _LETTERS + r"[\"']?(?=[ \t]*(?:#[^\r\n]*)?(?![^\r\n]))",
        "value",
    ),
    # A connection string's password: Server=.;Password=walrus;Database=app.
    _rule(
        "env_secret",
        r"[Pp](?:(?<=;.)|(?<=; .))(?i:assword|wd)[ \t]*=[ \t]*(?P<value>[^;\s\"'`]+)",
        "value",
    ),
)
