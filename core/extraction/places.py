"""Where things are: the person's pointers to the files and folders that hold the rules.

People paste the same lines into prompt after prompt: "Read CLAUDE.md and AI*.md files
for rules and instructions", "All documentation regarding project can be found under
root and docs/directory", "Previous conversations can be found under docs/chats/
directory". Each is worded as a request for the task at hand, yet what it says (where the
rules, the documentation, the history are) holds for every later session, so the
default extractor keeps it even inside a request, as it keeps a named folder
(:func:`~bli_memory.core.extraction.durability.names_place`).

The cue is a file or folder name with a verb of place ("can be found under", "is kept
in", "lives in") or a pointer verb with what the file is for ("read X for rules", "use X
as reference"); it names no project. Pure functions; the standard library only.
"""

from __future__ import annotations

import re
from functools import cache

__all__ = ["points_to_file"]

_FILE = (r"(?:[\w*.-]+/[\w*./-]*|(?<![\w/])/[\w*.-]+|"
         r"[\w*-]+\.(?:md|txt|json|ya?ml|toml|py|js|ts|pdf|sh|cfg|ini|env|csv|html)\b)")
_PLACE_VERB_SOURCE = (
    r"\b(?:can be found|are found|is found|are kept|is kept|are stored|is stored|lives?|are located|"
    r"is located|are saved|is saved)\s+(?:in|under|at|inside)\b")
_POINTER_SOURCE = (
    rf"^(?:please\s+)?(?:read|see|check|use|consult|follow|refer to)\b.*{_FILE}.*\b(?:for|as|with)\s+"
    r"(?:all\s+)?(?:[\w-]+\s+){0,3}(?:rules?|instructions?|guidelines?|conventions?|standards?|reference|referal|"
    r"referral|context|tasks|design|documentation|details|specs?|requirements)\b")


@cache
def _rx() -> tuple[re.Pattern[str], re.Pattern[str]]:
    """The place and pointer patterns, compiled on first use (the hooks import this module)."""
    return re.compile(_PLACE_VERB_SOURCE, re.IGNORECASE), re.compile(_POINTER_SOURCE, re.IGNORECASE)


def points_to_file(sentence: str) -> bool:
    """True when the person's sentence says which file or folder holds something.

    Args:
        sentence: One cleaned sentence of the person's turn.

    Returns:
        True for "Previous conversations can be found under docs/chats/ directory" or
        "Read CLAUDE.md and AI*.md files for rules and instructions"; False for "Read
        config.py" (a request with no purpose) and for questions.
    """
    s = sentence.strip()
    if "?" in s or not re.search(_FILE, s):
        return False
    place_verb, pointer = _rx()
    return bool(place_verb.search(s) or pointer.match(s))
