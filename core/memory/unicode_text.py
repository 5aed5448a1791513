"""Text that can be stored, embedded and sent: lone UTF-16 surrogates become U+FFFD.

JSON lets a lone surrogate through (``"\\ud800"``, half of an emoji that a UTF-16 host
cut in two), and Python's ``json`` decodes it to a one-character string that no UTF-8
encoder accepts: SQLite, the tokenizer, pydantic and stdout all refuse it. Every
input boundary (hook stdin, the MCP transport, transcripts) passes strings through
here, so what follows sees valid text. U+FFFD, the Unicode replacement character,
keeps the place of the lost character, where ``str.encode(..., "replace")`` would
leave a misleading ``?``. Standard library only: the hooks import it.
"""

from __future__ import annotations

import re
from typing import Any

__all__ = ["MAX_CLEAN_DEPTH", "clean_strings", "lone_surrogates_replaced"]

#: Deepest JSON nesting :func:`clean_strings` walks; deeper values are returned as they
#: are (the parsers downstream refuse them with a clear error).
MAX_CLEAN_DEPTH = 64

_SURROGATE = re.compile("[\ud800-\udfff]")


def lone_surrogates_replaced(text: str) -> str:
    """``text`` with every lone surrogate (U+D800 to U+DFFF) replaced by U+FFFD.

    A surrogate pair written as two JSON escapes (``"\\ud83d\\ude00"``) is decoded by
    ``json`` into one code point already, so only unpaired halves are left to replace.
    """
    if text.isascii():
        return text
    return _SURROGATE.sub("\ufffd", text)


def clean_strings(value: Any, depth: int = 0) -> Any:
    """A decoded JSON value with :func:`lone_surrogates_replaced` applied to every string, keys too."""
    if isinstance(value, str):
        return lone_surrogates_replaced(value)
    if depth >= MAX_CLEAN_DEPTH:
        return value
    if isinstance(value, list):
        return [clean_strings(v, depth + 1) for v in value]
    if isinstance(value, dict):
        return {lone_surrogates_replaced(k) if isinstance(k, str) else k: clean_strings(v, depth + 1)
                for k, v in value.items()}
    return value
