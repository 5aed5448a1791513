"""The daemon's memory-contract calls: how MCP servers answer through the warm backend.

An MCP server on the daemon route (:mod:`bli_memory.core.mcp.daemon_route`) sends
``{"call": <method>, "args": {...}, "version", "config"}``; the daemon calls that
:class:`~bli_memory.core.memory.backend.MemoryBackend` method on the very backend its
hooks use and answers ``{"result": ...}`` or ``{"raised": {...}}``
(:mod:`bli_memory.core.memory.backend_wire`). The hook requests (``event``), ``ping``
and ``stop`` are unchanged.

Unlike a hook, which has a 2 s deadline and goes direct at once, an MCP call waits for
a daemon still warming up, up to :data:`CALL_READY_WAIT_S`: the model is loading in
the daemon, and loading it a second time in the MCP server would cost the memory the
route exists to save. A daemon whose backend is not a local store (a machine paired
with the team service) answers ``not_local``, and the server talks to the service
itself.
"""

from __future__ import annotations

import inspect
import threading
from collections.abc import Callable
from typing import Any

from bli_memory.core.memory import backend_wire

__all__ = ["CALL_READY_WAIT_S", "WRITE_CALLS", "answer_call", "check_call"]

#: Seconds an MCP call waits for the daemon to finish warming up before it is refused
#: (``warming_up``; the server then answers in process). The model loads in about 1-2 s
#: here (docs/benchmarks-hooks.md); a slow disk or a busy machine gets ten times that.
CALL_READY_WAIT_S = 20.0

#: Calls that queue an extract job: the drain is woken after them.
WRITE_CALLS = frozenset({"enqueue_extract"})


def check_call(message: dict[str, Any]) -> tuple[str, dict[str, Any]] | None:
    """``(method, kwargs)`` of a well-formed call message, else None (``malformed``)."""
    name = message.get("call")
    args = message.get("args")
    if (
        not isinstance(name, str) or name not in backend_wire.CALLS
        or not isinstance(args, dict) or not all(isinstance(k, str) for k in args)
        or not isinstance(message.get("version"), str)
        or not isinstance(message.get("config"), dict)
    ):
        return None
    return name, args


def answer_call(
    name: str, args: dict[str, Any], *, ready: threading.Event, backend: Callable[[], Any],
) -> dict[str, Any]:
    """Run one call on the warm backend and encode its answer.

    Args:
        name: A method of :data:`bli_memory.core.memory.backend_wire.CALLS`.
        args: Its keyword arguments, as the MCP server's tool passed them.
        ready: Set once the daemon's warm-up finished.
        backend: Returns the warm backend (may raise :class:`BliMemoryError`, sent back
            as ``raised`` like any error of the call itself).

    Returns:
        ``{"result": ...}``, ``{"raised": {...}}``, or ``{"error": code}`` with code
        ``warming_up`` (not ready in time), ``not_local`` (the backend keeps no local
        store) or ``malformed`` (arguments the method does not take).
    """
    if not ready.wait(CALL_READY_WAIT_S):
        return {"error": "warming_up"}
    try:
        warm = backend()
        if warm.store_path is None:
            return {"error": "not_local"}
        method = getattr(warm, name)
        try:
            inspect.signature(method).bind(**args)
        except TypeError:
            return {"error": "malformed"}
        return {"result": backend_wire.encode_result(name, method(**args))}
    except Exception as exc:  # the caller raises it again, as it would in process
        return {"raised": backend_wire.encode_error(exc)}

