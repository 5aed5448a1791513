"""Cutting a turn's text to a byte budget without leaving part of a secret behind."""

from __future__ import annotations

import re

__all__ = ["cut_text"]

_CUT_LINE_REACH = 2048
"""How far from a cut a line's end is looked for (characters); past it, only the word
the cut went through is dropped."""
_PARTIAL_LAST_WORD = re.compile(r"\S+\Z")
_PARTIAL_FIRST_WORD = re.compile(r"\A\S+")


def cut_text(text: str, limit: int, *, keep: str) -> str:
    """``text`` in at most ``limit`` UTF-8 bytes, keeping its ``"head"`` or ``"tail"``.

    The cut falls between lines: the line the cut goes through is dropped whole (or,
    when no line ends within :data:`_CUT_LINE_REACH` characters, the word), since half
    a token is a fragment no redaction rule recognises, and a value cut from its label
    ("the vpn password is") is one no rule sees as a secret; masking what is kept can
    shrink it enough that a later cut keeps what this one left.
    """
    data = text.encode("utf-8", "surrogatepass")
    if len(data) <= limit:
        return text
    mark = " [...] "
    room = max(limit - len(mark), 0)
    if keep == "head":
        kept = data[:room].decode("utf-8", "ignore")
        if data[room:room + 1] != b"\n":
            line_end = kept.rfind("\n", max(0, len(kept) - _CUT_LINE_REACH))
            kept = kept[:line_end] if line_end >= 0 else _PARTIAL_LAST_WORD.sub("", kept)
        return kept.rstrip() + mark.rstrip()
    kept = data[len(data) - room:].decode("utf-8", "ignore")
    if data[len(data) - room - 1:len(data) - room] != b"\n":
        line_start = kept.find("\n", 0, _CUT_LINE_REACH)
        kept = kept[line_start + 1:] if line_start >= 0 else _PARTIAL_FIRST_WORD.sub("", kept)
    return mark.lstrip() + kept.lstrip()
