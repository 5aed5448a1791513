"""The daemon's wire: one JSON line in, one out (:mod:`bli_memory.core.hooks.daemon_client`).

:func:`read_request` reads one request line within the limits the client keeps
(``MAX_LINE_BYTES``); :func:`reply_line` encodes one answer with the daemon's version
and pid; :func:`rss_bytes` is the memory the daemon holds, which its ``ping`` answer
carries (``memory_info`` and ``cockpit doctor`` show it).
"""

from __future__ import annotations

import json
import os
import resource
import socket
from typing import Any

from bli_memory.core._version import VERSION
from bli_memory.core.hooks import daemon_client

__all__ = ["is_newer", "read_request", "reply_line", "rss_bytes"]


def reply_line(reply: dict[str, Any], *, pid: int) -> bytes:
    """``reply`` (with ``version`` and ``pid`` added if absent) as one ASCII JSON line."""
    reply.setdefault("version", VERSION)
    reply.setdefault("pid", pid)
    return json.dumps(reply, ensure_ascii=True, separators=(",", ":")).encode("ascii") + b"\n"


def read_request(conn: socket.socket) -> tuple[bytes, str | None]:
    """One request line from ``conn``: ``(line, None)``, or ``(b"", error)``.

    ``error`` is ``malformed`` (nothing, or not within the socket's timeout) or
    ``too_large`` (longer than ``MAX_LINE_BYTES``).
    """
    buf = bytearray()
    while True:
        try:
            chunk = conn.recv(65536)
        except TimeoutError:
            return b"", "malformed"
        if not chunk:
            if len(buf) > daemon_client.MAX_LINE_BYTES:
                return b"", "too_large"
            return bytes(buf), (None if buf.strip() else "malformed")
        buf += chunk
        end = buf.find(b"\n", len(buf) - len(chunk))
        if end > daemon_client.MAX_LINE_BYTES or (end < 0 and len(buf) > daemon_client.MAX_LINE_BYTES):
            return b"", "too_large"
        if end >= 0:
            return bytes(buf[:end]), None


def rss_bytes() -> int:
    """Resident set size of this process in bytes, now.

    Read from ``/proc/self/statm`` (resident pages times the page size) on Linux;
    elsewhere the peak (``getrusage``'s ``ru_maxrss``, KiB on Linux and BSDs, bytes on
    macOS), the nearest figure the platform offers.
    """
    try:
        with open("/proc/self/statm", encoding="ascii") as fh:
            return int(fh.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")
    except (OSError, ValueError, IndexError):
        peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
        return int(peak) if os.uname().sysname == "Darwin" else int(peak) * 1024


def _release(version: str) -> tuple[int, ...] | None:
    """The leading numbers of a version (``0.1.0.dev1`` and ``0.1.0rc1`` are ``(0, 1, 0)``)."""
    parts: list[int] = []
    for piece in version.strip().split("."):
        digits = ""
        for ch in piece:
            if not ch.isdigit():
                break
            digits += ch
        if not digits:
            break  # "dev1", "post2": a suffix of the release before it
        parts.append(int(digits))
        if len(digits) < len(piece):
            break  # "1rc2", "0+local": the release is what came before
    return tuple(parts) if parts else None


def is_newer(caller: object, daemon: str) -> bool:
    """Whether a caller's ``version`` is a later release than the daemon's (``VERSION``).

    Releases compare by their leading numbers (``0.10.0`` after ``0.9.1``; a pre-release
    or dev build counts as its release). A version that does not parse is not newer: such
    a caller answers itself and never stops the daemon.
    """
    if not isinstance(caller, str):
        return False
    theirs, ours = _release(caller), _release(daemon)
    if theirs is None or ours is None:
        return False
    return theirs > ours
