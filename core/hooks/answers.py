"""What one hook run answers, as both routes hand it over: :class:`HookAnswer`.

:func:`bli_memory.core.hooks.events.answer_hook` returns it, in the hook process on its
direct path and in the daemon, which sends it back as one JSON line
(:meth:`HookAnswer.to_wire`). An answer that gives memories carries them as
:class:`Injected`: the ids are held for the session until the hook process has written
the block to its stdout, then :func:`settle_injected` records them as given, or, when
the write failed, lets them go (:mod:`bli_memory.core.hooks.injection_log`). Standard
library only.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, NamedTuple

__all__ = ["HookAnswer", "Injected", "injected_of", "settle_injected"]


class Injected(NamedTuple):
    """Memories a block gives a session, held until the block is written (or not)."""

    host: str
    session: str
    ids: tuple[str, ...]


@dataclass(frozen=True)
class HookAnswer:
    """Everything a hook run prints and records, decided before any timing is added.

    Attributes:
        outcome: ``ok``, ``skipped`` or ``failed``.
        stdout: What the host reads on stdout: one rendered block, a stop's
            ``systemMessage``, or ``""``.
        reason: Reason for ``skipped``/``failed``, already in the closed set of
            :mod:`bli_memory.core.hooks.receipts` (or ``unknown_internal:<name>``).
        fields: Receipt fields of an ``ok`` run (``hits``, ``chars``, ``queued``, ...).
        backend: True when the run reached the memory backend; the receipt and the
            stats then name the route that answered (``via``). Runs decided from the
            payload alone (trivial prompt, re-entrant stop, bad payload) do not.
        receipt_log: The host's plugin wants the receipt in the log file, not on
            stderr (:func:`bli_memory.core.hooks.receipt_log.to_log`); the daemon sends
            it back, so the hook process need not load the plugin to know.
        injected: The session and the ids of the memories in ``stdout``, held for the
            session (:func:`~bli_memory.core.hooks.injection_log.reserve_injected`): the
            hook process confirms them once ``stdout`` is written, or releases them.
    """

    outcome: str
    stdout: str = ""
    reason: str | None = None
    fields: dict[str, Any] = field(default_factory=dict)
    backend: bool = False
    receipt_log: bool = False
    injected: Injected | None = None

    def to_wire(self) -> dict[str, Any]:
        """The JSON object the daemon sends back for this answer."""
        wire = {"stdout": self.stdout, "outcome": self.outcome, "reason": self.reason,
                "fields": dict(self.fields), "backend": self.backend, "receiptLog": self.receipt_log}
        if self.injected is not None:
            wire["injected"] = {"host": self.injected.host, "session": self.injected.session,
                                "ids": list(self.injected.ids)}
        return wire


def injected_of(wire: object) -> Injected | None:
    """The :class:`Injected` of a daemon's answer (its ``injected`` object); None when it
    has none or it is not of that shape."""
    if not isinstance(wire, dict):
        return None
    host, session, ids = wire.get("host"), wire.get("session"), wire.get("ids")
    if not (isinstance(host, str) and isinstance(session, str) and isinstance(ids, list)
            and all(isinstance(i, str) for i in ids)):
        return None
    return Injected(host, session, tuple(ids))


def settle_injected(injected: Injected | None, *, delivered: bool) -> None:
    """Record ``injected`` as given to its session when its block was ``delivered`` (written
    to the hook's stdout), else release the hold on it. Never raises."""
    if injected is None or not injected.ids:
        return
    from bli_memory.core.hooks import injection_log

    try:
        if delivered:
            injection_log.confirm_injected(injected.host, injected.session, injected.ids)
        else:
            injection_log.release_injected(injected.host, injected.session, injected.ids)
    except Exception:  # the record is best effort: a hook never fails because of it
        pass
