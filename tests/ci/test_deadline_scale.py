"""BLI_MEMORY_HOOK_DEADLINE_SCALE: what it stretches, and where it stops."""

from __future__ import annotations

import pytest

from bli_memory.core.hooks.deadlines import DEADLINES_MS, budgets_ms, deadline_scale


@pytest.mark.parametrize(("raw", "scale"), [("", 1.0), ("2", 2.0), ("4", 4.0), ("1.5", 1.5), ("0.5", 1.0),
                                            ("9", 1.0), ("nan", 1.0), ("inf", 1.0), ("fast", 1.0)])
def test_the_scale_is_a_factor_from_one_to_four_and_anything_else_is_one(raw: str, scale: float) -> None:
    assert deadline_scale({"BLI_MEMORY_HOOK_DEADLINE_SCALE": raw}) == scale


def test_unscaled_budgets_are_the_documented_deadlines() -> None:
    assert {e: budgets_ms(e, {})[0] for e in DEADLINES_MS} == {"session-start": 8000, "prompt": 2000,
                                                               "stop": 15000}
    assert budgets_ms("prompt", {}) == (2000, 500, 1000)


def test_a_scaled_deadline_stays_under_the_hosts_timeout() -> None:
    env = {"BLI_MEMORY_HOOK_DEADLINE_SCALE": "4"}
    assert budgets_ms("prompt", env) == (4500, 2000, 2250)  # 90 % of the 5 s the host gives
    assert budgets_ms("session-start", env)[0] == 27000
    assert budgets_ms("stop", env)[0] == 27000
    assert budgets_ms("prompt", {"BLI_MEMORY_HOOK_DEADLINE_SCALE": "1.5"}) == (3000, 750, 1500)
