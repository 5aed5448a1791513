"""What each hook event does, once a payload is parsed: the one implementation.

The hook process runs :func:`handle` on its direct path, and the resident daemon runs
the very same function for the hooks it answers; there is no second implementation
of recall or capture.

- ``session-start``: the space's profile -> one ``<bli-memory-context>`` block.
- ``prompt``: search the space, keep the top hits at or above the similarity floor
  (an exact keyword hit passes), -> one ``<bli-memory-recall>`` block.
- ``stop``: the last exchange from the host's transcript, injected blocks stripped,
  secrets redacted, queued as a durable extract job -> ``queued: true``.

Failures raise :class:`~bli_memory.core.errors.BliMemoryError` (with a reason) and the
caller turns them into a receipt.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from bli_memory.core.blocks import context_block, recall_block, strip_injected
from bli_memory.core.errors import BliMemoryError, HostError, StoreError
from bli_memory.core.models import HookInput, HookResult

if TYPE_CHECKING:
    import pluggy

    from bli_memory.core.contracts import MemoryBackend
    from bli_memory.core.settings import Settings

__all__ = ["MAX_EXCHANGE_BYTES", "HookContext", "handle", "space_for"]

#: The stop hook reads at most this much of a transcript (BLI Memory spec: 12 KB,
#: tail-read, so a 40 MB transcript costs nothing).
MAX_EXCHANGE_BYTES = 12 * 1024


@dataclass
class HookContext:
    """Long-lived parts a hook needs: plugins, settings and the memory backend."""

    pm: pluggy.PluginManager
    settings: Settings
    backend: MemoryBackend

    @classmethod
    def build(cls, pm: pluggy.PluginManager) -> HookContext:
        """Load settings and the backend (this is where the engine gets imported)."""
        from bli_memory.core.settings import load_settings

        settings = load_settings()
        try:
            backend = pm.hook.memory_backend(settings=settings)
        except BliMemoryError:
            raise
        except Exception as exc:  # a plugin failed: the store is not usable
            raise StoreError(f"memory backend failed: {type(exc).__name__}",
                             reason="store_unavailable") from exc
        return cls(pm=pm, settings=settings, backend=backend)


def space_for(hook_input: HookInput) -> str:
    """Container tag of the session's folder (payload ``cwd``, else the process's)."""
    from bli_memory.core.spaces import derive_space

    return derive_space(hook_input.cwd or os.getcwd(), environ=os.environ).tag


def _session_start(ctx: HookContext, hook_input: HookInput) -> HookResult:
    space = space_for(hook_input)
    profile = ctx.backend.profile(space=space, limit=8)
    block = context_block(
        profile.facts, profile.recent, space=profile.space, budget=ctx.settings.recall_budget_chars
    )
    fields: dict[str, Any] = {"facts": len(profile.facts), "recent": len(profile.recent)}
    return HookResult(event="session-start", outcome="ok", block=block, fields=fields)


def _prompt(ctx: HookContext, hook_input: HookInput) -> HookResult:
    space = space_for(hook_input)
    prompt = strip_injected(hook_input.prompt or "").strip()
    limit = ctx.settings.recall_limit
    result = ctx.backend.search(prompt, space=space, limit=limit * 3)
    floor = ctx.settings.similarity_floor
    kept = [
        h for h in result.hits
        if h.exact_keyword or (h.similarity is not None and h.similarity >= floor)
    ][:limit]
    block = recall_block(kept, space=result.space, budget=ctx.settings.recall_budget_chars)
    return HookResult(event="prompt", outcome="ok", block=block, fields={"hits": len(kept)})


def _stop(ctx: HookContext, hook_input: HookInput) -> HookResult:
    from bli_memory.core.redaction import redact

    if hook_input.reentrant:
        return HookResult(event="stop", outcome="skipped", reason="reentrant")
    try:
        exchange = ctx.pm.hook.host_read_exchange(
            host=hook_input.host, hook_input=hook_input, max_bytes=MAX_EXCHANGE_BYTES
        )
    except HostError as exc:
        if exc.reason == "no_transcript":
            return HookResult(event="stop", outcome="skipped", reason="no_transcript")
        raise
    if exchange is None:
        return HookResult(event="stop", outcome="skipped", reason="no_transcript")
    user = strip_injected(exchange.user).strip()
    assistant = strip_injected(exchange.assistant).strip()
    if not user and not assistant:
        return HookResult(event="stop", outcome="skipped", reason="no_transcript")
    text = f"User: {user}\n\nAssistant: {assistant}"
    if len(text.encode("utf-8", "surrogatepass")) > MAX_EXCHANGE_BYTES:
        text = text.encode("utf-8", "surrogatepass")[-MAX_EXCHANGE_BYTES:].decode("utf-8", "ignore")
    try:
        redacted = redact(text)
    except Exception:  # redaction must never let raw text through
        return HookResult(event="stop", outcome="skipped", reason="redaction_failed")
    ctx.backend.enqueue_extract(
        redacted.text, space=space_for(hook_input), source=f"hook:{hook_input.host}",
        session_id=hook_input.session_id,
    )
    return HookResult(
        event="stop", outcome="ok",
        fields={"chars": len(redacted.text), "masked": redacted.masked, "queued": True},
    )


_HANDLERS = {"session-start": _session_start, "prompt": _prompt, "stop": _stop}


def handle(ctx: HookContext, hook_input: HookInput) -> HookResult:
    """Run one hook event against the memory backend.

    Raises:
        BliMemoryError: the backend failed (reason says why).
    """
    return _HANDLERS[hook_input.event](ctx, hook_input)
