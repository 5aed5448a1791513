"""Which prompts carry no subject to recall against (BLI Memory spec, BLI-3881).

A CLOSED LIST plus a length rule, decided from the text alone: ``ok``, ``continue``,
``y``, ``thanks`` and friends, anything under twelve characters, and any ``/slash``
command are skipped without searching. One override: a short prompt naming an
identifier (``BLI-3580``, ``search.ts``, ``v0.2.83``, ``snake_case``, ``camelCase``)
is always searched, because it is the best query the keyword channel can get.
Standard library only.
"""

from __future__ import annotations

import re

__all__ = ["MIN_PROMPT_CHARS", "TRIVIAL_PROMPTS", "is_trivial", "names_identifier"]

MIN_PROMPT_CHARS = 12

TRIVIAL_PROMPTS = frozenset(
    {
        "ok", "okay", "k", "kk", "continue", "go on", "go ahead", "go", "y", "yes", "yep", "yeah",
        "n", "no", "nope", "sure", "thanks", "thank you", "thanks!", "thx", "ty", "done", "next",
        "proceed", "retry", "try again", "again", "lgtm", "looks good", "cool", "nice", "great",
        "perfect", "good", "stop", "wait", "hi", "hello", "hey", "ack", "fine", "right", "correct",
        "do it", "yes please", "please continue", "keep going", "carry on", "sounds good",
    }
)

_IDENTIFIER = re.compile(
    r"""
    [A-Za-z][A-Za-z0-9]*-\d+             # ticket ids: BLI-3580
    | \b[vV]?\d+\.\d+(?:\.\d+)*\b        # versions: v0.2.83, 20.04
    | \b\w+\.[A-Za-z0-9]{1,8}\b          # file names and dotted paths: search.ts, core.store
    | \b[a-z0-9]+_[a-z0-9_]+\b           # snake_case
    | \b[a-z]+[A-Z][A-Za-z0-9]*\b        # camelCase
    | \b[A-Z][a-z0-9]+[A-Z][A-Za-z0-9]*\b  # PascalCase
    | [\w.-]*/[\w./-]+                   # paths
    """,
    re.VERBOSE,
)
_PUNCT = re.compile(r"[\s.!?,;:]+")


def names_identifier(text: str) -> bool:
    """True when ``text`` contains something that looks like a code identifier."""
    return bool(_IDENTIFIER.search(text))


def is_trivial(prompt: str) -> bool:
    """True when a prompt should be answered with ``skipped trivial_prompt``.

    Args:
        prompt: The person's prompt, as the host sent it.

    Returns:
        True for slash commands, closed-list words and short prompts without an
        identifier.
    """
    text = prompt.strip()
    if text.startswith("/"):
        return True
    normal = _PUNCT.sub(" ", text.lower()).strip()
    if normal in TRIVIAL_PROMPTS:
        return True
    if len(text) < MIN_PROMPT_CHARS:
        return not names_identifier(text)
    return False
