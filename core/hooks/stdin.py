"""Read a hook's stdin with a hard deadline and a size cap. Standard library only.

A host writes its JSON payload and closes stdin at once; a hook must never hang on
a stdin that stays open, nor swallow an unbounded stream. Failures map to the six
stdin reasons of the BLI Memory spec: ``no_stdin``, ``stdin_empty``,
``stdin_timeout``, ``stdin_too_large``, ``stdin_unreadable``, ``stdin_malformed``.
"""

from __future__ import annotations

import json
import os
import select
import sys
import time
from typing import Any, BinaryIO

from bli_memory.core.memory.unicode_text import clean_strings

__all__ = ["MAX_STDIN_BYTES", "StdinFailure", "read_payload"]

#: Largest payload accepted. Hook payloads are small JSON objects; the prompt inside
#: may hold a pasted file, so leave generous room, but never read without bound.
MAX_STDIN_BYTES = 4 * 1024 * 1024


class StdinFailure(Exception):
    """The payload could not be read; ``reason`` is one of the six stdin reasons."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


def _read_bytes(stream: BinaryIO | None, deadline: float, limit: int) -> bytes:
    if stream is None:
        raise StdinFailure("no_stdin")
    try:
        fd = stream.fileno()
    except (OSError, ValueError) as exc:
        raise StdinFailure("no_stdin") from exc
    try:
        if os.isatty(fd):
            raise StdinFailure("no_stdin")
    except OSError as exc:
        raise StdinFailure("no_stdin") from exc
    chunks: list[bytes] = []
    size = 0
    while True:
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            raise StdinFailure("stdin_timeout")
        try:
            ready, _, _ = select.select([fd], [], [], remaining)
        except (OSError, ValueError) as exc:
            raise StdinFailure("stdin_unreadable") from exc
        if not ready:
            raise StdinFailure("stdin_timeout")
        try:
            chunk = os.read(fd, 65536)
        except OSError as exc:
            raise StdinFailure("stdin_unreadable") from exc
        if not chunk:
            return b"".join(chunks)
        size += len(chunk)
        if size > limit:
            raise StdinFailure("stdin_too_large")
        chunks.append(chunk)


def read_payload(
    deadline: float, *, stream: BinaryIO | None = None, limit: int = MAX_STDIN_BYTES
) -> dict[str, Any]:
    """Read and decode the JSON object a host sent on stdin.

    Args:
        deadline: ``time.monotonic()`` value after which reading gives up.
        stream: Binary stream to read (default: the process's stdin).
        limit: Maximum bytes.

    Returns:
        The decoded JSON object, lone surrogates in its strings replaced by U+FFFD.

    Raises:
        StdinFailure: with one of the six stdin reasons.
    """
    if stream is None:
        stream = getattr(sys.stdin, "buffer", None) if sys.stdin is not None else None
    raw = _read_bytes(stream, deadline, limit)
    if not raw.strip():
        raise StdinFailure("stdin_empty")
    try:
        text = raw.decode("utf-8")
        payload = json.loads(text)
    except (UnicodeDecodeError, ValueError, RecursionError) as exc:
        raise StdinFailure("stdin_malformed") from exc
    if not isinstance(payload, dict):
        raise StdinFailure("stdin_malformed")
    # A lone surrogate in the prompt would fail the embedder and the store: U+FFFD.
    cleaned: dict[str, Any] = clean_strings(payload)
    return cleaned
