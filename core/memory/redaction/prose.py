"""Rules for secrets told in prose: "the staging wifi password is kkcglHpqS&3".

A password has no shape of its own, so what marks it is the sentence: a password
word, optionally what it is for ("for the staging db"), then "is", "was" or ":" and
a value. The value must hold a digit or a symbol, so "the password is stored in the
vault" and "the password is reset daily" stay; numbers of at most six digits ("the
password is 12 characters long") are never masked anyway. Keys and tokens told in
prose must look like tokens (8+ characters with a digit, or 20+), so "the token is
valid for an hour" stays.

A passphrase is several words, and all of them are the secret:

- quoted, it is everything inside the quotes, whatever it holds
  (``passphrase is "correct horse battery staple"``), typographic quotes too
  (“...”, ‘...’);
- unquoted, a first word that holds a digit or a symbol runs on over the words that
  follow it up to the end of the clause, or to the first word sentences are built
  with ("the vpn password is Tr4mpoline cactus harbor, ask me if it fails");
- unquoted after a colon, the label form (``password: correct horse battery staple``),
  words without a digit count when they run to the end of the clause (a comma, a
  full stop, a semicolon, a bracket or the end of the line) and none of them is such
  a word. So a description ("password: The password to log in with.") or a pointer to
  where the secret lives ("password: see the vault", "password: in 1Password") stays:
  a pointer is not a secret, and prose cannot be told without its small words. After
  "is" an unquoted phrase of plain words stays, since English puts a description
  there as readily as a value ("the password is reset daily").
"""

from __future__ import annotations

from bli_memory.core.memory.redaction.patterns import (
    _AFTER_COMMA,
    _INLINE_VALUE,
    _NOT_ONE_OF_SEVERAL,
    _TOKEN_LIKE,
    _rule,
)

__all__ = []

# "for the staging db", "of the admin account", "on prod": at most three words.
_FOR_WHAT = r"(?:[ \t]+(?i:for|of|on|to)(?:[ \t]+[\w.@:/-]+){1,3}?)?"
_IS = r"(?:[ \t]+(?i:is|was)[ \t]*:?[ \t]+|[ \t]+=[ \t]+(?P<assign>)|[ \t]*:(?!=)[ \t]*|[ \t]+-[ \t]+)"
_OPEN_QUOTE = r"[\"'`]?"
_PASSWORD_WORD = r"(?i:ass(?:word|wd|phrase|code|[ -]word))"

# The small words prose is built with, and the words that point to where a secret lives
# rather than giving it: a phrase holding one is a sentence, not a passphrase.
_PROSE_WORDS = (
    r"a|an|the|and|or|but|nor|if|then|else|when|while|to|of|in|on|at|by|for|with|without"
    r"|from|into|via|as|is|are|was|were|be|been|being|not|no|it|its|this|that|these|those"
    r"|i|me|my|we|our|you|your|he|his|she|her|they|their|them|us|see|ask|check|use|using"
    r"|stored|kept|saved|lives|found|same|unchanged|unknown|required|optional|none|null"
    r"|works?|worked|fails?|failed|expired?|expires|changed|rotated"
    r"|1password|bitwarden|lastpass|keepass(?:xc)?|keychain|vault"
)
_NOT_PROSE = rf"(?!(?i:{_PROSE_WORDS})(?![\w-]))"
# One more word of a passphrase: a space, then a word that is not one of those.
_NEXT_WORD = rf"(?:[ \t]+{_NOT_PROSE}(?=[A-Za-z0-9]){_INLINE_VALUE}){{0,11}}"
# Where an unquoted phrase may end: a clause mark, the end of a code span, a comment or
# the end of the line.
_CLAUSE_END = r"(?=[ \t]*(?:[,;:!?)\]`]|\.(?!\S)|(?![^\r\n]))|[ \t]+(?:#|//))"
# A reference to a secret kept elsewhere is not one: ${DB_PASSWORD}, $VAR, %VAR%, {{ x }},
# a template field (%(db_password)s), or a YAML tag before the value (!ENV ${DB_PASSWORD}).
_NOT_A_REFERENCE = r"(?!\$\{|\$\(|\$[A-Za-z_]|%[A-Za-z_]\w*%|%\(|\{\{|!!?[A-Za-z][\w-]*[ \t]+\S)"
# A call is code: password = hashlib.sha256(raw).hexdigest().
_NOT_A_CALL = r"(?![A-Za-z_][\w.]*\()"
# A number of at most six digits is never a secret on its own ("is 12 characters long").
_NOT_A_NUMBER = r"(?![0-9]{1,6}(?![^\s\"'`]))"

# "Password" in German, French, Spanish, Portuguese, Italian, Dutch, Polish, Swedish,
# Danish and Norwegian, and those languages' "is".
# German compounds (WLAN-Passwort, Datenbankpasswort), the Nordic definite forms
# (lösenordet, passordet, adgangskoden) and Italian's borrowed "password" count too.
_FOREIGN_PASSWORD_WORD = (
    r"(?i:(?:[a-zäöüß]{2,24}-?)?(?:passwort|kennwort)|mot[ \t]+de[ \t]+passe|contrase(?:ñ|n)a"
    r"|senha|parola[ \t]+d'ordine|wachtwoord|has(?:ł|l)o|l(?:ö|o)senord(?:et)?"
    r"|adgangskoden?|passord(?:et)?|(?<=l[ao] )password)"
)
_FOREIGN_IS = (
    r"(?i:ist|lautet|lautete|hei(?:ß|ss)t|war|est|c'est|était|es|era|é|è|e|is|jest|to|är|var|er|lyder)"
)

# A value that looks made up rather than a word of prose: 8-64 characters, with a letter,
# a digit, and a symbol or both cases (Blue42!Falcon, Tr4mpolineX; not v2, sha256, 1.40.0).
_VALUE_CHAR = r"[^\s\"'`,;()\[\]{}<>|]"
_MADE_UP = (
    rf"(?={_VALUE_CHAR}{{8,64}}(?!{_VALUE_CHAR}))(?={_VALUE_CHAR}*?[A-Za-z])(?={_VALUE_CHAR}*?[0-9])"
    rf"(?={_VALUE_CHAR}*?[!@#$%^&*+=~?]|{_VALUE_CHAR}*?[a-z]{_VALUE_CHAR}*?[A-Z]"
    rf"|{_VALUE_CHAR}*?[A-Z]{_VALUE_CHAR}*?[a-z])"
)

_PROSE_RULES = (
    # A quoted password or passphrase: everything inside the quotes. Not a prompt
    # (input("Password: ")): the word right after a quote, or a "value" that opens with
    # a space or a bracket, is code; nor the first value of a multiple assignment.
    _rule(
        "prose_password",
        r"[Pp](?<![\w\"'`-].)" + _AFTER_COMMA + _PASSWORD_WORD + _FOR_WHAT + _IS
        + r"(?P<q>[\"'`])(?![ \t+,;.)])(?P<value>(?:(?!(?P=q))[^\r\n]){1,256}?)(?P=q)"
        + r"(?(assign)" + _NOT_ONE_OF_SEVERAL + ")",
        "value",
    ),
    # ...and in typographic quotes: the password is “correct horse battery staple”.
    _rule(
        "prose_password",
        r"[Pp](?<![\w\"'`-].)" + _PASSWORD_WORD + _FOR_WHAT + _IS
        + "\u201c(?![ \t])(?P<value>[^\u201d\r\n]{1,256}?)\u201d",
        "value",
    ),
    _rule(
        "prose_password",
        r"[Pp](?<![\w\"'`-].)" + _PASSWORD_WORD + _FOR_WHAT + _IS
        + "\u2018(?![ \t])(?P<value>[^\u2019\r\n]{1,256}?)\u2019",
        "value",
    ),
    _rule(
        "prose_password",
        r"[Pp](?<![\w-].)" + _PASSWORD_WORD + _FOR_WHAT + _IS + _OPEN_QUOTE + _NOT_A_REFERENCE + _NOT_PROSE
        + _NOT_A_NUMBER + _NOT_A_CALL
        + r"(?=[^\s\"'`]{0,255}[0-9!@#$%^&*+=/~?])(?P<value>" + _INLINE_VALUE + _NEXT_WORD + ")",
        "value",
    ),
    # No verb: "login reporter with password Blue42!Falcon", "changed the root password
    # to Blue42!Falcon", "its password Blue42!Falcon works", "my pw is Blue42!Falcon".
    # The word alone says little, so the value must look made up (:data:`_MADE_UP`), and
    # "password hashing", "password reset v2" and "password SHA256" stay.
    _rule(
        "prose_password",
        r"[Pp](?<![\w\"'`$%-].)(?:" + _PASSWORD_WORD + r"(?:[ \t]+(?i:to|as))?"
        + r"|(?i:w)(?![\w-])[ \t]+(?i:is|was))[ \t]+" + _OPEN_QUOTE
        + _NOT_A_REFERENCE + _NOT_A_CALL + _MADE_UP + r"(?P<value>" + _INLINE_VALUE + ")",
        "value",
    ),
    # Other languages: "Das Passwort für den Server ist Sonnenblume42!", "le mot de passe
    # du serveur est Tournesol!73", "la contraseña es ...". The word, up to 40 characters
    # of what it is for, then the language's "is" or a colon; the value must look made up.
    _rule(
        "prose_password",
        rf"(?<![\w-]){_FOREIGN_PASSWORD_WORD}(?![\w-])(?:[ \t]+[^\s.:;!?]+){{0,8}}?"
        rf"(?:[ \t]+{_FOREIGN_IS}[ \t]*:?[ \t]+|[ \t]*:[ \t]*)" + _OPEN_QUOTE
        + r"(?![~/])" + _NOT_A_REFERENCE + _MADE_UP + r"(?P<value>" + _INLINE_VALUE + ")",
        "value",
    ),
    # The label form, "db_password: correct horse battery staple": two or more words.
    _rule(
        "prose_password",
        r"[Pp](?<![A-Za-z0-9].)" + _PASSWORD_WORD + r"[ \t]*:[ \t]*" + _NOT_A_REFERENCE + _NOT_PROSE
        + rf"(?P<value>(?=[A-Za-z0-9]){_INLINE_VALUE}(?:[ \t]+{_NOT_PROSE}(?=[A-Za-z0-9])"
        + rf"{_INLINE_VALUE}){{1,11}}){_CLAUSE_END}",
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
