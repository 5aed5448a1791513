"""Rules for secrets told in prose: "the staging wifi password is kkcglHpqS&3".

A password has no shape of its own, so what marks it is the sentence: a password
word, optionally what it is for ("for the staging db"), then "is", "was" or ":" and
a value. The value must hold a digit or a symbol, so "the password is stored in the
vault" and "the password is reset daily" stay; numbers of at most six digits ("the
password is 12 characters long") are never masked anyway. Keys and tokens told in
prose must look like tokens (8+ characters with a digit, or 20+), so "the token is
valid for an hour" stays.
"""

from __future__ import annotations

from bli_memory.core.memory.redaction.patterns import _INLINE_VALUE, _TOKEN_LIKE, _rule

__all__ = []

# "for the staging db", "of the admin account", "on prod": at most three words.
_FOR_WHAT = r"(?:[ \t]+(?i:for|of|on|to)(?:[ \t]+[\w.@:/-]+){1,3}?)?"
_IS = r"(?:[ \t]+(?i:is|was)[ \t]*:?[ \t]+|[ \t]+=[ \t]+|[ \t]*:[ \t]*|[ \t]+-[ \t]+)"
_OPEN_QUOTE = r"[\"'`]?"

_PROSE_RULES = (
    _rule(
        "prose_password",
        r"[Pp](?<![\w-].)(?i:ass(?:word|wd|phrase|code|[ -]word))"
        + _FOR_WHAT + _IS + _OPEN_QUOTE
        + r"(?=[^\s\"'`]{0,255}[0-9!@#$%^&*+=/~?])(?P<value>" + _INLINE_VALUE + ")",
        "value",
    ),
    # One rule per first letter, so that the scan can skip to candidates.
    *(
        _rule(
            "prose_secret",
            rf"[{first}](?<![\w-].)(?i:{rest})"
            + _FOR_WHAT + r"(?:[ \t]+(?i:is|was)[ \t]+)" + _OPEN_QUOTE
            + r"(?P<value>" + _TOKEN_LIKE + r")(?![^\s\"'`.,;)])",
            "value",
        )
        for first, rest in (
            ("Ss", r"ecret(?:[ _-]key)?"), ("Tt", "oken"), ("Aa", r"pi[ _-]?key|ccess[ _-]key"),
        )
    ),
)
