"""Sections of a reply that state no standing fact: change reports and options offered.

At the end of a task a coding agent sums up what it did: "## Summary of Changes",
"📝 Updated Files:", "Here's what was implemented:", "Fixed Issues:", "I've updated the
README to make it clear that the export includes:". Each item of such a list reports the
work of that turn ("`~/.claude/commands/export.md` - Slash command is up to date",
"Session ID fix (uses actual session ID from metadata, not filename)"), and a sentence cut
from it reads like a fact about the project once the heading is gone. The default
extractor drops them unless they carry a standing rule of their own (a switch, an ignore
entry, a reason); :func:`report_items` says which sentences of a turn are such items.

The cue is the heading, and it names no project: a line that ends in a colon and says
that files were changed or work was done ("updated", "files modified", "changes made",
"what was implemented", "now includes").

The same holds for the options an assistant lays out before anything is decided: what
follows "### Option 1: Upgrade Pillow version", "**Pros:**", "## Proposed Solution" or
"## My Recommendation" up to the next heading is a proposal ("Update Pillow to a newer
version that supports Python 3.13"), and the person's answer, not the proposal, decides.
:func:`proposal_lines` says which lines those are. Pure functions; the standard library only.
"""

from __future__ import annotations

import re
from functools import cache

__all__ = ["in_report", "proposal_lines", "report_items"]

_DONE = (r"(?:updated|modified|changed|created|edited|touched|removed|deleted|moved|verified|fixed|added|"
         r"installed|implemented|completed|cleaned|renamed|refactored|resolved)")
_HEADING_SOURCE = (
    "^\\W*(?:" + "|".join((
        rf"{_DONE}\b.{{0,60}}",  # "Updated Files", "Fixed Issues", "Moved to backup"
        rf".{{0,40}}\bfiles? {_DONE}\b.{{0,40}}",  # "Files verified in the working directory"
        r".{0,40}\bchanges? (?:made|applied)\b.{0,40}",
        r".{0,20}\bsummary of (?:the )?changes\b.{0,20}",
        rf".{{0,30}}\bwhat (?:was|were|i|we|has been|have been|i've|we've) "
        rf"(?:\w+ )?(?:{_DONE}|done|did|built)\b.{{0,30}}",  # "Here's what was implemented"
        r".{0,40}\b(?:features|fixes) included\b.{0,30}",
        r".{0,40}\bnow includes?\b.{0,30}",  # "The README now includes"
        rf"(?:i've|i have|we've|we have) (?:\w+ly )?{_DONE}\b.{{0,120}}",
        rf".{{0,60}}\b(?:has|have) been (?:\w+ly )?{_DONE}\b.{{0,40}}",  # "All files have been updated"
    )) + ")\\s*:\\s*$")
_BULLET_SOURCE = r"^\s*(?:[-*+\u2022]|\d+[.)])\s+"
_FENCE_SOURCE = r"^\s*(?:```|~~~)"


def _key(text: str) -> str:
    return " ".join(re.findall(r"[a-z0-9]+", text.lower()))


def report_items(body: str) -> tuple[str, ...]:
    """The list items under change-report headings in one turn, as comparison keys.

    Args:
        body: One turn's text, as :func:`~bli_memory.core.extraction.sentences.turns`
            returns it.

    Returns:
        Each item's words, lower case, space-joined (for :func:`in_report`); empty when
        the turn has no change report. A report's list runs from its heading to the next
        line that is neither a list item nor blank.
    """
    items: list[str] = []
    inside = fenced = False
    for line in body.splitlines():
        if _rx()["fence"].match(line):
            fenced = not fenced
            continue
        stripped = line.strip()
        if fenced or not stripped:
            continue
        plain = re.sub(r"^#{1,6}\s+", "", stripped).replace("**", "").replace("__", "")
        if _rx()["bullet"].match(plain):
            if inside:
                items.append(_key(_rx()["bullet"].sub("", plain)))
            continue
        inside = bool(_rx()["heading"].match(plain))
    return tuple(k for k in items if k)


def in_report(sentence: str, items: tuple[str, ...]) -> bool:
    """True when ``sentence`` (a unit of the turn) is, or is part of, one of ``items``."""
    if not items:
        return False
    key = _key(sentence)
    return bool(key) and any(key in item for item in items)


_PROPOSAL_SOURCE = (
    r"^\W*(?:(?:option|approach|alternative|solution)\s*(?:\d+|[a-d]|one|two|three)\b|"
    r"(?:proposed|suggested|possible|recommended) (?:solutions?|fix(?:es)?|approach(?:es)?|changes?)\b|"
    r"(?:my )?recommendations?\b|pros?\b|cons?\b|advantages\b|disadvantages\b|trade-?offs?\b|how it works\b)")
#: The assistant turns from proposing to doing: what follows is narration of the work.
_WORK_STARTS_SOURCE = r"^(?:let me|let's|now (?:let|i)|i'll|i will|i've|perfect|great|excellent|done)\b"
_HEADING_LINE_SOURCE = r"^(?:#{1,6}\s+\S|\*\*[^*]+\*\*:?\s*$|[^.!?]{1,60}:\s*$)"


@cache
def _rx() -> dict[str, re.Pattern[str]]:
    """The patterns, compiled on first use (the hooks import this module and never call it)."""
    i = re.IGNORECASE
    return {"heading": re.compile(_HEADING_SOURCE, i), "bullet": re.compile(_BULLET_SOURCE),
            "fence": re.compile(_FENCE_SOURCE), "proposal": re.compile(_PROPOSAL_SOURCE, i),
            "work_starts": re.compile(_WORK_STARTS_SOURCE, i),
            "heading_line": re.compile(_HEADING_LINE_SOURCE)}


def proposal_lines(body: str) -> tuple[str, ...]:
    """The lines under option, pros-and-cons and recommendation headings, as keys.

    Args:
        body: One turn's text.

    Returns:
        Each line's words, lower case, space-joined (for :func:`in_report`); a
        proposal runs from its heading to the next heading of the same or a higher
        level ("## Analysis" after "## Proposed Changes") that is not one itself.
    """
    lines: list[str] = []
    level = 0  # the heading level of the open proposal; 0 when none is open
    fenced = False
    for line in body.splitlines():
        if _rx()["fence"].match(line):
            fenced = not fenced
            continue
        stripped = line.strip()
        if fenced or not stripped:
            continue
        plain = _rx()["bullet"].sub("", re.sub(r"^#{1,6}\s+", "", stripped))
        plain = plain.replace("**", "").replace("__", "")
        hashes = len(stripped) - len(stripped.lstrip("#"))
        heading = (1 <= hashes <= 6) or (
            _rx()["heading_line"].match(stripped) is not None and not _rx()["bullet"].match(stripped))
        this_level = hashes if 1 <= hashes <= 6 else 7  # a bold or colon line ranks below every "#"
        if _rx()["proposal"].match(plain):
            if not level or this_level <= level:
                level = this_level
            lines.append(_key(plain))  # "Option 2: Downgrade Python to 3.12", "Con: ..."
            continue
        if (heading and level and this_level <= level) or _rx()["work_starts"].match(plain):
            level = 0  # "## Analysis" after "## Option 2" ends it, as does "Let me implement these changes:"
        elif level:
            lines.append(_key(plain))
    return tuple(k for k in lines if k)
