"""Today's host-model spend, as ``cockpit ops --memory`` and the Captures page show it."""

from __future__ import annotations

from typing import Any

from bli_memory.core.extraction import host_ledger

__all__ = ["spend_today"]


def spend_today() -> dict[str, Any] | None:
    """Today's line of the ledger with the budget beside it, or None when the host
    extractor is not chosen and nothing was spent today.

    Returns:
        ``{"host", "daily_requests", "requests", "input_tokens", "output_tokens",
        "cost_usd", "fallbacks"}`` (``host`` None when the choice is gone but spend remains).
    """
    from bli_memory.core.errors import BliMemoryError
    from bli_memory.core.extraction.host_config import host_choice, load_choice
    from bli_memory.core.settings import load_settings

    line = host_ledger.read_days().get(host_ledger.today())
    host, budget = None, None
    try:
        settings = load_settings()
        if (settings.extractor or load_choice().get("extractor")) == "host":
            choice = host_choice(settings)
            host, budget = choice.host, choice.daily_requests
    except BliMemoryError:
        pass
    if host is None and not line:
        return None
    line = line or {}
    return {"host": host, "daily_requests": budget, "requests": int(line.get("requests", 0) or 0),
            "input_tokens": int(line.get("input_tokens", 0) or 0),
            "output_tokens": int(line.get("output_tokens", 0) or 0),
            "cost_usd": float(line.get("cost_usd", 0.0) or 0.0),
            "fallbacks": dict(line.get("fallbacks") or {})}
