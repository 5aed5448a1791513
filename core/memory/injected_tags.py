"""The tags of the blocks we inject, and how captured text is rid of them.

``<bli-memory-recall>`` (prompt hook) and ``<bli-memory-context>`` (session-start) are
rendered by :mod:`bli_memory.core.hooks.blocks`; this module holds the tag names and
the rules every wing that reads captured text shares (the hooks, capture, the embedded
engine, the host adapters): :func:`strip_injected` removes the blocks (and the wrappers
hosts put around injected context, :func:`host_wrappers`) so recalled memories are never
saved back, and :func:`neutralise_tags` makes the tag names inert inside memory text.
Standard library only.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from functools import cache
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import pluggy

__all__ = ["CONTEXT_TAG", "RECALL_TAG", "host_wrappers", "neutralise_tags", "strip_injected"]

RECALL_TAG = "bli-memory-recall"
CONTEXT_TAG = "bli-memory-context"


def host_wrappers(pm: pluggy.PluginManager) -> tuple[str, ...]:
    """The tag names the hosts known to ``pm`` wrap around injected context, sorted.

    From each host plugin's ``host_conventions`` (``context_wrappers``); a plugin
    manager without host plugins gives ``()``.
    """
    tags = {tag for conv in pm.hook.host_conventions() for tag in conv.context_wrappers}
    return tuple(sorted(tags))


@cache
def _patterns(wrappers: tuple[str, ...]) -> tuple[re.Pattern[str], re.Pattern[str]]:
    """``(opening tag, tag name)`` patterns for our blocks and the hosts' ``wrappers``.

    The opening tag's ``[^>]`` is bounded so a text full of unclosed
    ``<bli-memory-recall`` fragments costs linear time, not quadratic. The tag names
    inside memory text are neutralised when injected, so a memory can never close a
    block early or pass for one.
    """
    names = "|".join(re.escape(t) for t in (RECALL_TAG, CONTEXT_TAG, *wrappers))
    return re.compile(rf"<({names})\b[^>]{{0,200}}>"), re.compile(rf"<(/?)({names})", re.IGNORECASE)


def strip_injected(text: str, *, wrappers: Iterable[str] = ()) -> str:
    """Remove every block we (or a host on our behalf) injected earlier.

    A block runs from its opening tag to the matching closing tag; an unclosed block
    runs to the end of the text. One left-to-right pass: linear in ``len(text)``.

    Args:
        text: Captured text (a prompt, a reply, an exchange).
        wrappers: Tag names hosts wrap injected context in (:func:`host_wrappers`),
            removed as our own ``<bli-memory-recall>`` and ``<bli-memory-context>`` are.
    """
    opening = _patterns(tuple(sorted(set(wrappers))))[0]
    out: list[str] = []
    pos = 0
    while True:
        m = opening.search(text, pos)
        if m is None:
            out.append(text[pos:])
            break
        out.append(text[pos : m.start()])
        close = text.find(f"</{m.group(1)}>", m.end())
        if close < 0:
            break
        pos = close + len(m.group(1)) + 3
        while pos < len(text) and text[pos].isspace():
            pos += 1
    return "".join(out)


def neutralise_tags(text: str, *, wrappers: Iterable[str] = ()) -> str:
    """Make our block tag names, and the hosts' ``wrappers``, inert in memory text (``<`` -> ``‹``)."""
    names = _patterns(tuple(sorted(set(wrappers))))[1]
    return names.sub(lambda m: "\u2039" + m.group(1) + m.group(2), text)
