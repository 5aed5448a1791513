"""Take the JSON-RPC wire off fd 0, so nothing else in the process can read from it.

The MCP server (:mod:`bli_memory.core.mcp.stdio`) and the relay
(:mod:`bli_memory.core.mcp.relay`) both read the host's requests from stdin; a child
process or a library that reads fd 0 would steal bytes of the stream. Standard library
only: the relay imports no SDK.
"""

from __future__ import annotations

import os
import sys

__all__ = ["claim_stdin"]


def claim_stdin() -> int | None:
    """Move the wire off fd 0 to a private descriptor and point fd 0 at the null device.

    Returns:
        The private descriptor holding the wire, or None when the process started
        without stdin: fd 0 may then be anything opened since (an event loop's
        selector), and is left alone.
    """
    try:
        if sys.stdin is None or sys.stdin.fileno() != 0:
            return None
        private = os.dup(0)
    except (OSError, ValueError, AttributeError):
        return None
    try:
        null = os.open(os.devnull, os.O_RDONLY)
        try:
            os.dup2(null, 0)
        finally:
            os.close(null)
    except OSError:
        return private
    return private
