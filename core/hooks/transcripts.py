"""Tail-reading of host transcripts: the last N bytes, as whole lines.

A transcript can be tens of megabytes; the stop hook needs only the last exchange,
so it seeks to ``size - max_bytes`` and drops the first (partial) line. Cost is
bounded by ``max_bytes`` whatever the file size. Standard library only; used by host
adapters.
"""

from __future__ import annotations

import json
import os
import stat
from typing import Any

from bli_memory.core.errors import HostError

__all__ = ["tail_json_lines", "tail_lines"]


def tail_lines(path: str | os.PathLike[str], max_bytes: int) -> list[str]:
    """Complete lines from the last ``max_bytes`` of a file.

    Raises:
        HostError: reason ``no_transcript`` when the file is missing or unreadable.
    """
    try:
        # Only a regular file: opening a FIFO would block, /dev/zero never ends. The open
        # never waits (O_NONBLOCK), and the descriptor is checked again: the path may
        # have been swapped since the stat.
        if not stat.S_ISREG(os.stat(path).st_mode):
            raise HostError("transcript is not a regular file", reason="no_transcript")
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_NOCTTY", 0))
        with open(fd, "rb") as fh:
            if not stat.S_ISREG(os.fstat(fd).st_mode):
                raise HostError("transcript is not a regular file", reason="no_transcript")
            fh.seek(0, os.SEEK_END)
            size = fh.tell()
            start = max(0, size - max_bytes)
            fh.seek(start)
            data = fh.read(max_bytes)
    except OSError as exc:
        raise HostError("transcript is missing or unreadable", reason="no_transcript") from exc
    text = data.decode("utf-8", errors="replace")
    lines = text.split("\n")
    if start > 0:
        lines = lines[1:]  # the first line was cut by the seek
    return [ln for ln in lines if ln.strip()]


def tail_json_lines(path: str | os.PathLike[str], max_bytes: int) -> list[dict[str, Any]]:
    """JSON objects of the complete JSONL lines in the tail; unparsable lines are skipped.

    A line nested too deeply for the parser (a tool's input of thousands of levels raises
    ``RecursionError``) is unparsable too: that line is skipped, the rest of the turn kept.
    """
    out: list[dict[str, Any]] = []
    for line in tail_lines(path, max_bytes):
        try:
            obj = json.loads(line)
        except (ValueError, RecursionError):
            continue
        if isinstance(obj, dict):
            out.append(obj)
    return out
