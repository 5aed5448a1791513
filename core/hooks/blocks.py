"""The context blocks hooks inject, and the text hygiene every injected line gets.

- ``<bli-memory-recall>``: prompt hook, the top hits for the prompt.
- ``<bli-memory-context>``: session-start, User Profile and Recent Context.

Every line inside a block carries the store marker ``[bli]`` (so a person can tell
which store answered, BLI Memory spec "Live A/B"), memory lines start with the
memory's date so relative words in it ("yesterday") resolve, the text is valid
UTF-8 (lone surrogates become U+FFFD), and the block is bounded by a character
budget, cut on code-point boundaries. :func:`strip_injected` removes these blocks
(and the wrapper a host puts around injected context, named by its plugin's
``host_conventions``: :func:`host_wrappers`) from captured text so recalled memories are
never saved back; it and the tag names live in :mod:`bli_memory.core.memory.injected_tags`,
below the wings that capture text, and are re-exported here. Standard library only.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence

from bli_memory.core.memory.injected_tags import (
    CONTEXT_TAG,
    RECALL_TAG,
    host_wrappers,
    neutralise_tags,
    strip_injected,
)
from bli_memory.core.models import Memory, SearchHit

__all__ = [
    "CONTEXT_TAG",
    "MARKER",
    "RECALL_TAG",
    "clean_text",
    "context_block",
    "host_wrappers",
    "neutralise_tags",
    "recall_block",
    "recall_header",
    "strip_injected",
    "truncate",
]

MARKER = "[bli]"

_SURROGATES = re.compile("[\ud800-\udfff]")
_CONTROL = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f]")


def clean_text(text: str) -> str:
    """Valid, printable UTF-8: lone surrogates -> U+FFFD, control characters dropped."""
    return _CONTROL.sub("", _SURROGATES.sub("\ufffd", text))


def truncate(text: str, limit: int) -> str:
    """At most ``limit`` code points; an ellipsis marks a cut. Never splits a code point."""
    if limit <= 0:
        return ""
    if len(text) <= limit:
        return text
    return text[: max(limit - 1, 0)] + "…"


def _one_line(text: str, limit: int, wrappers: tuple[str, ...] = ()) -> str:
    return truncate(" ".join(neutralise_tags(clean_text(text), wrappers=wrappers).split()), limit)


def _memory_line(memory: Memory, limit: int, suffix: str = "",
                 wrappers: tuple[str, ...] = ()) -> tuple[str, str, str]:
    """``(head, text, tail)`` of one memory line; only ``text`` may be cut to fit a budget.

    The tail names the memory's id, so a line cut short still says which memory to
    fetch in full (``search_memory`` / ``memory get ID``).
    """
    date = memory.created_at[:10] if memory.created_at else "undated"
    note = f"{suffix}; id {memory.id}" if suffix else f"id {memory.id}"
    return f"{MARKER} [{date}] ", _one_line(memory.content, limit, wrappers), f" ({note})"


#: A memory line is cut to fit the block's budget only while this many characters of
#: its text still fit; below that the line says too little to be worth its id.
MIN_CUT_TEXT = 40

Line = str | tuple[str, str, str]


def _bounded(lines: Sequence[Line], tag: str, budget: int) -> str | None:
    """The block with as many lines as fit in ``budget`` characters.

    A memory line that does not fit whole is cut (its text only, so its date and id
    stay) when at least :data:`MIN_CUT_TEXT` characters of its text fit; the lines
    after it are left out. Plain lines are kept whole or not at all.
    """
    head, tail = f"<{tag}>", f"</{tag}>"
    used = len(head) + len(tail) + 2
    kept: list[str] = []
    memories = 0
    for line in lines:
        if isinstance(line, tuple):
            start, text, end = line
            room = budget - used - 1 - len(start) - len(end)
            if room < len(text):
                if room >= MIN_CUT_TEXT:
                    kept.append(start + truncate(text, room) + end)
                    memories += 1
                break
            whole = start + text + end
            memories += 1
        else:
            whole = line
            if used + len(whole) + 1 > budget:
                break
        kept.append(whole)
        used += len(whole) + 1
    if not kept or not memories:
        return None
    return "\n".join([head, *kept, tail])


def recall_header(space: str, *, session_known: bool) -> str:
    """First line of a recall block: what it holds and where it comes from.

    Memories of the current session are never in the block (the model has that turn
    already), so with a known session the header says they come from other sessions.
    """
    origin = "from other sessions" if session_known else "kept"
    return (f"{MARKER} Memories {origin} in {space} that may bear on this prompt "
            "(id: fetch the whole memory):")


def recall_block(
    hits: Sequence[SearchHit], *, space: str, budget: int, line_chars: int = 600, session_known: bool = False,
    wrappers: Iterable[str] = (),
) -> str | None:
    """The ``<bli-memory-recall>`` block for prompt hits, or None when there are none.

    Args:
        hits: Hits to show, best first.
        space: Container tag they came from.
        budget: Most characters in the whole block.
        line_chars: Most characters of one memory's text.
        session_known: The hits were chosen for a known host session (those of that
            session left out), which the header then says (:func:`recall_header`).
        wrappers: The host's context wrappers (:func:`host_wrappers`), made inert in
            memory text as our own tags are.
    """
    if not hits:
        return None
    tags = tuple(sorted(set(wrappers)))
    lines: list[Line] = [recall_header(space, session_known=session_known)]
    for h in hits:
        sim = f"similarity {h.similarity:.2f}" if h.similarity is not None else ""
        lines.append(_memory_line(h.memory, line_chars, sim, tags))
    return _bounded(lines, RECALL_TAG, budget)


#: When the agent should save on its own, in one line of the session-start block (the MCP
#: server's instructions say the same, core/mcp/server.py): what capture may miss is what
#: the agent knows it just settled.
SAVE_GUIDANCE = ("Call save_memory yourself when one is settled: a decision with its reason, a convention, "
                 "a setup fact, a correction (update_memory for a fact that changed).")


def context_block(
    facts: Sequence[Memory], recent: Sequence[Memory], *, space: str, budget: int, line_chars: int = 400,
    wrappers: Iterable[str] = (),
) -> str | None:
    """The ``<bli-memory-context>`` block for session-start, or None when the space is empty.

    ``wrappers`` are the host's context wrappers (:func:`host_wrappers`), made inert in
    memory text as our own tags are.
    """
    if not facts and not recent:
        return None
    tags = tuple(sorted(set(wrappers)))
    lines: list[Line] = [f"{MARKER} Memory for {space}, kept across sessions and agents."]
    lines.append(f"{MARKER} {SAVE_GUIDANCE}")
    lines.append(f"{MARKER} User Profile:")
    lines += [_memory_line(m, line_chars, "", tags) for m in facts] or [f"{MARKER} (nothing recorded yet)"]
    lines.append(f"{MARKER} Recent Context:")
    lines += [_memory_line(m, line_chars, "", tags) for m in recent] or [f"{MARKER} (nothing recorded yet)"]
    return _bounded(lines, CONTEXT_TAG, budget)
