"""The two value types of redaction: a rule, and the result of applying rules."""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass

__all__ = ["Redacted", "RedactionRule"]


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
        repeat: Apply the rule again, up to 4 times in all, while it masks
            something: for a rule whose one match finds one of several values
            (the targets of ``token, secret = "a", "b"``), so that each of them
            goes in one pass instead of one more pass of every rule each.
        accept: A last check of the captured value, for what a pattern cannot say
            (a word list's statistics); the value is masked only when it returns True.
            None: every match that is not obviously benign is masked.
    """

    kind: str
    pattern: re.Pattern[str]
    group: int | str | None = None
    repeat: bool = False
    accept: Callable[[str], bool] | None = None
