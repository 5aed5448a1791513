"""The hook's deadlines, and the scale that stretches them on a slow machine.

Imports the standard library only: the hook's entry path and the daemon read these
on every run (:mod:`bli_memory.core.hooks.main`).
"""

from __future__ import annotations

import os
from collections.abc import Mapping

__all__ = [
    "DAEMON_ANSWER_MS",
    "DEADLINES_MS",
    "DEADLINE_SCALE_ENV",
    "MAX_DEADLINE_SCALE",
    "REGISTERED_TIMEOUTS_S",
    "STDIN_BUDGET_MS",
    "budgets_ms",
    "deadline_scale",
]

#: Per-event deadlines in ms, under the registered timeouts of 30 / 5 / 30 s
#: (BLI Memory spec; the prompt budget is sized to a person waiting, BLI-3730).
DEADLINES_MS = {"session-start": 8000, "prompt": 2000, "stop": 15000}
#: Share of each deadline that reading stdin may take.
STDIN_BUDGET_MS = {"session-start": 1000, "prompt": 500, "stop": 1000}
#: How long after the hook's start the daemon may take to answer: half the deadline.
#: A warm daemon answers a prompt in a few ms (docs/benchmarks-hooks.md), but on a
#: machine short of CPU it can take hundreds; the other half is left for the direct
#: path, which needs 0.5-1.5 s cold.
DAEMON_ANSWER_MS = {event: ms // 2 for event, ms in DEADLINES_MS.items()}
#: Timeouts in seconds the installer registers with every host for each hook
#: (``installers/contract.py`` ``HOOK_SUBCOMMANDS`` reads them from here).
REGISTERED_TIMEOUTS_S = {"session-start": 30, "prompt": 5, "stop": 30}
#: Environment variable that stretches the deadlines above on a slow machine, as a
#: factor from 1 to :data:`MAX_DEADLINE_SCALE` (anything else counts as 1).
DEADLINE_SCALE_ENV = "BLI_MEMORY_HOOK_DEADLINE_SCALE"
MAX_DEADLINE_SCALE = 4.0
#: A scaled deadline stays under this share of the registered timeout, so the host never
#: kills a hook that would still have answered (and never shows a timeout to the person).
_CEILING_SHARE = 0.9


def deadline_scale(environ: Mapping[str, str] | None = None) -> float:
    """The factor ``BLI_MEMORY_HOOK_DEADLINE_SCALE`` asks for: 1.0 unless it is a number
    from 1 to :data:`MAX_DEADLINE_SCALE` (a hook never fails on a setting: bad values are 1)."""
    raw = (os.environ if environ is None else environ).get(DEADLINE_SCALE_ENV, "")
    try:
        scale = float(raw) if raw.strip() else 1.0
    except ValueError:
        return 1.0
    return scale if 1.0 <= scale <= MAX_DEADLINE_SCALE else 1.0


def budgets_ms(event: str, environ: Mapping[str, str] | None = None) -> tuple[int, int, int]:
    """``(deadline, stdin budget, daemon answer)`` in ms for ``event`` under the scale.

    Each is the unscaled value times :func:`deadline_scale`, and the deadline is capped at
    90 % of the host's registered timeout (:data:`REGISTERED_TIMEOUTS_S`): 4.5 s for a
    prompt, 27 s for the others. Raises ``KeyError`` for an unknown event.
    """
    scale = deadline_scale(environ)
    ceiling = int(REGISTERED_TIMEOUTS_S[event] * 1000 * _CEILING_SHARE)
    deadline = min(ceiling, max(DEADLINES_MS[event], int(DEADLINES_MS[event] * scale)))
    stdin = min(deadline, int(STDIN_BUDGET_MS[event] * scale))
    return deadline, stdin, deadline // 2
