"""Secrets inside JSON string literals: unescape, redact, escape again.

Tool output reaches a transcript as JSON, so a config a tool printed arrives as one
string literal with its line breaks and quotes escaped:
``{"stdout": "[mysql]\\nuser = backup\\npassword = In0texquI6xSls"}``. The rules read
lines and quotes, and the escapes hide both; and a rule that reads a command from the
start of its line cannot see one behind ``{"command": ``. So before the rules run on a
text, each double-quoted literal that holds a backslash escape, or that is a JSON value
reading like a line (8+ characters with a space, ``=`` or ``:``), is decoded as JSON
(RFC 8259, section 7), the decoded text is redacted on its own (which handles a literal nested in
a literal, to :data:`MAX_DEPTH` levels), and when anything was masked the literal is
written back escaped the same way (``\\uXXXX`` for non-ASCII when the original used
it). A literal that is not valid JSON, or that holds nothing to mask, stays byte for
byte. The rules then run over the whole text as before.

The literal pattern cannot backtrack: a literal is a run of non-quote characters and
escape pairs between two quotes on one line, and a quote with no closing quote on its
line is read to the line's end once, so each character is read once.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable

__all__ = ["MAX_DEPTH", "redact_json_strings"]

MAX_DEPTH = 4
"""Literals inside literals decoded at most (a JSON text quoted in a JSON log line in a
transcript is three, a tool's JSON output quoted once more four); deeper text is left to
the rules as it is."""

# From a quote to its closing quote, or to the line's end when it has none (then not a
# literal): each match ends where the next search starts, so no quote is scanned from
# twice and a line of escaped quotes that never closes costs one pass.
_LITERAL = re.compile(r'"((?:[^"\\\r\n]|\\.)*)("?)')
_NON_ASCII_ESCAPE = re.compile(
    r"\\u(?:00[89a-fA-F][0-9a-fA-F]|0[1-9a-fA-F][0-9a-fA-F]{2}|[1-9a-fA-F][0-9a-fA-F]{3})"
)
# A JSON value (after a key's colon, or in an array, pretty-printed or not) that reads like a command or an
# assignment: redacted on its own, as the line it was, since rules that read a line
# from its start cannot see it behind '{"command": '.
_VALUE_START = re.compile(r"[:\[,]\s*$")
# How far back a value's colon, bracket or comma is looked for: the indentation of a
# pretty-printed array or a wide column of aligned values.
_VALUE_START_REACH = 64
_LINE_LIKE = re.compile(r".{8,}", re.DOTALL)
_LINE_MARK = re.compile(r"[ =:]")


def _own_line(text: str, match: re.Match[str]) -> bool:
    body = match.group(1)
    before = max(0, match.start() - _VALUE_START_REACH)
    return (_LINE_MARK.search(body) is not None and _LINE_LIKE.fullmatch(body) is not None
            and _VALUE_START.search(text, before, match.start()) is not None)


def redact_json_strings(
    text: str, redact: Callable[[str], tuple[str, int]], depth: int = 0
) -> tuple[str, int]:
    """Redact the decoded content of every escaped JSON string literal in ``text``.

    Args:
        text: Any string.
        redact: ``redact(decoded) -> (redacted text, secrets masked)``, the caller's
            rules (it is called again on what it gets, for literals in literals).
        depth: How many literals deep ``text`` already is (callers pass nothing).

    Returns:
        The text with each changed literal re-escaped, and the secrets masked in all.
        Never raises on a ``str``.
    """
    if depth >= MAX_DEPTH or '"' not in text:
        return text, 0
    found: list[tuple[re.Match[str], str, int]] = []  # (literal, decoded, masked inside it)
    for match in _LITERAL.finditer(text):
        if not match.group(2):
            continue  # no closing quote on its line
        if "\\" not in match.group(1) and not _own_line(text, match):
            continue
        try:
            # strict=False: a raw tab or control character, as a terminal pastes it.
            decoded = json.loads(match.group(0), strict=False)
        except (ValueError, RecursionError):
            continue
        inner, inner_masked = redact_json_strings(decoded, redact, depth + 1)
        found.append((match, inner, inner_masked))
    if not found:
        return text, 0
    redacted, masked = _redact_together([inner for _, inner, _ in found], redact)
    pieces, at = [], 0
    for (match, inner, inner_masked), out in zip(found, redacted, strict=True):
        if out == inner and not inner_masked:
            continue
        masked += inner_masked
        ascii_only = _NON_ASCII_ESCAPE.search(match.group(1)) is not None
        pieces += [text[at:match.start()], json.dumps(out, ensure_ascii=ascii_only)]
        at = match.end()
    return "".join(pieces) + text[at:], masked


# Between literals redacted in one call: blank lines around an invisible separator, which
# no rule reads across (rules stop at a line's end, a block at a blank line).
_SEPARATOR = "\n\n\u2063\n\n"


def _redact_together(texts: list[str], redact: Callable[[str], tuple[str, int]]) -> tuple[list[str], int]:
    """Redact ``texts`` in one call (the rules' cost is per call, and a transcript line
    holds many literals); one by one when a rule did read across a separator."""
    if not any(_SEPARATOR in t for t in texts):
        joined, masked = redact(_SEPARATOR.join(texts))
        parts = joined.split(_SEPARATOR)
        if len(parts) == len(texts):
            return parts, masked
    results = [redact(t) for t in texts]
    return [r for r, _ in results], sum(n for _, n in results)
