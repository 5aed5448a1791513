"""What a hook run answers, from the host's payload to the host's stdout: the one implementation.

:func:`answer_hook` is the whole of a hook run after stdin was read: parse the payload
with the host's adapter, skip what needs no memory work (no prompt, a trivial
prompt, a re-entrant stop), run the event against the memory backend
(:func:`handle`), and render the host's stdout. The hook process calls it on its
direct path, and the resident daemon (:mod:`bli_memory.core.daemon.server`) calls the very
same function for the hooks it answers; there is no second implementation of
recall or capture.

- ``session-start``: the space's profile, less what this session already holds or was
  given -> one ``<bli-memory-context>`` block.
- ``prompt``: search the space; the injection gate (:mod:`bli_memory.core.memory.relevance`)
  decides whether the space holds anything on the prompt's subject and which hits to
  inject, leaving out memories of this session and those already injected in it
  (:mod:`bli_memory.core.hooks.injection_log`) -> one ``<bli-memory-recall>`` block, or nothing.
- ``stop``: the last exchange from the host's transcript, injected blocks stripped,
  secrets redacted, queued as a durable extract job -> ``queued: true``; in a space
  whose sessions are being recorded, kept as a recording instead -> ``recorded: true``.

Memory switched off for the space (:mod:`bli_memory.core.memory.switches`) skips every event
with ``disabled``, before the backend is touched.

:func:`handle` raises :class:`~bli_memory.core.errors.BliMemoryError` (with a reason);
:func:`answer_hook` never raises and turns every failure into a :class:`HookAnswer`
the caller writes as the receipt.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, NamedTuple

from bli_memory.core.errors import BliMemoryError, HostError, StoreError
from bli_memory.core.hooks.answers import HookAnswer, Injected
from bli_memory.core.hooks.blocks import context_block, host_wrappers, recall_block, strip_injected
from bli_memory.core.hooks.cuts import cut_text
from bli_memory.core.hooks.receipts import to_log_reason
from bli_memory.core.models import HookInput, HookResult

if TYPE_CHECKING:
    import pluggy

    from bli_memory.core.memory.backend import MemoryBackend
    from bli_memory.core.settings import Settings

__all__ = [
    "MAX_EXCHANGE_BYTES",
    "MAX_PROMPT_BYTES",
    "MAX_TRANSCRIPT_READ_BYTES",
    "HookAnswer",
    "HookContext",
    "Injected",
    "answer_hook",
    "bounded_exchange",
    "failed_answer",
    "handle",
    "reason_of",
    "render",
    "space_for",
]

#: The stop hook keeps at most this much of the last exchange (BLI Memory spec: 12 KB,
#: tail-read, so a 40 MB transcript costs nothing).
MAX_EXCHANGE_BYTES = 12 * 1024
#: ... of which the user's prompt takes at most this much (its beginning); the reply
#: gets the rest (its end, where the conclusion is).
MAX_PROMPT_BYTES = 4 * 1024
#: How much of a transcript's end is read to find that exchange: one tool result after
#: the prompt can be far larger than 12 KB, and reading 256 KB still costs ~1 ms.
MAX_TRANSCRIPT_READ_BYTES = 256 * 1024


@dataclass
class HookContext:
    """Long-lived parts a hook needs: plugins, settings and the memory backend."""

    pm: pluggy.PluginManager
    settings: Settings
    backend: MemoryBackend

    @classmethod
    def build(cls, pm: pluggy.PluginManager, *, settings: Settings | None = None) -> HookContext:
        """Load settings and the backend (this is where the engine gets imported).

        Args:
            pm: Plugin manager holding the host adapter and the backend plugins.
            settings: Settings to use (default: read from the environment now).

        Raises:
            ConfigError: a ``BLI_MEMORY_*`` variable is invalid.
            StoreError: the backend plugin failed (``store_unavailable``).
        """
        from bli_memory.core.settings import load_settings

        if settings is None:
            settings = load_settings()
        try:
            from bli_memory.core.plugins import build_backend

            backend = build_backend(pm, settings)
        except BliMemoryError:
            raise
        except Exception as exc:  # a plugin failed: the store is not usable
            raise StoreError(f"memory backend failed: {type(exc).__name__}",
                             reason="store_unavailable") from exc
        return cls(pm=pm, settings=settings, backend=backend)


def space_for(
    hook_input: HookInput, *, cwd: str | None = None, environ: Mapping[str, str] | None = None
) -> str:
    """Container tag of the session's folder.

    Args:
        hook_input: The parsed payload; its ``cwd`` wins.
        cwd: Folder of the hook process, used when the payload names none (default:
            this process's working folder; the daemon passes the caller's).
        environ: Environment that may force or isolate the space
            (``BLI_MEMORY_CONTAINER_TAG``, ``BLI_MEMORY_ISOLATE_WORKTREES``; default
            ``os.environ``; the daemon passes the caller's).

    Raises:
        ConfigError: ``BLI_MEMORY_CONTAINER_TAG`` is invalid (``config_invalid``, as the
            direct route's settings say) or looks like a secret (``invalid_container_tag``,
            :func:`~bli_memory.core.hooks.container_tag.checked_space`); never repeating it.
    """
    from bli_memory.core.errors import ConfigError
    from bli_memory.core.hooks.container_tag import checked_space

    base = cwd or os.getcwd()
    # A relative payload cwd is relative to the hook process, on every route.
    folder = os.path.join(base, hook_input.cwd) if hook_input.cwd else base
    try:
        return checked_space(folder, environ=os.environ if environ is None else environ).tag
    except ValueError as exc:  # derive_space's message names the variable, not its value
        raise ConfigError(str(exc), reason="config_invalid") from None


SpaceOf = Callable[[HookInput], str]


def _injected_ids(block: str | None, memories: Any) -> list[str]:
    """Ids of ``memories`` whose line made it into ``block`` (the budget may cut the rest)."""
    return [m.id for m in memories if block and f"id {m.id})" in block]


def _session_start(ctx: HookContext, hook_input: HookInput, space_of: SpaceOf,
                   environ: Mapping[str, str] | None = None) -> HookResult:
    from bli_memory.core.hooks.injection_log import already_injected, reserve_injected

    space = space_of(hook_input)
    profile = ctx.backend.profile(space=space, limit=8)
    # A resumed session already has its own memories and what it was given.
    seen = already_injected(hook_input.host, hook_input.session_id)
    session = hook_input.session_id

    def fresh(memories: Any) -> list[Any]:
        return [m for m in memories if m.id not in seen and not (session and m.session_id == session)]

    facts = fresh(profile.facts)
    listed = {m.id for m in facts}
    recent = [m for m in fresh(profile.recent) if m.id not in listed]  # a fact is shown once
    block = context_block(facts, recent, space=profile.space, budget=ctx.settings.recall_budget_chars,
                          wrappers=host_wrappers(ctx.pm))
    shown = _injected_ids(block, [*facts, *recent])
    held = reserve_injected(hook_input.host, session, shown)  # given once written (main.py)
    claimed = set(held)
    if len(claimed) < len(shown):  # a hook of this session running at the same moment showed some
        facts = [m for m in facts if m.id in claimed]
        recent = [m for m in recent if m.id in claimed]
        block = context_block(facts, recent, space=profile.space, budget=ctx.settings.recall_budget_chars,
                              wrappers=host_wrappers(ctx.pm))
    fields: dict[str, Any] = {"facts": len(facts), "recent": len(recent)}
    try:  # the index run is a process of its own; a failure to start one never fails the hook
        folder = hook_input.cwd  # the host's absolute folder; the space came from it
        if folder and os.path.isabs(folder) and ctx.backend.refresh_documents(space, folder):
            fields["documents"] = "refreshing"
    except Exception:  # noqa: BLE001 - fail open: the documents index is an extra
        pass
    return HookResult(event="session-start", outcome="ok", block=block, fields=fields, injected=tuple(held))


def _prompt(ctx: HookContext, hook_input: HookInput, space_of: SpaceOf,
            environ: Mapping[str, str] | None = None) -> HookResult:
    from bli_memory.core.hooks.injection_log import already_injected, reserve_injected
    from bli_memory.core.hooks.prompt_recall import prompt_decision

    space = space_of(hook_input)
    prompt = strip_injected(hook_input.prompt or "", wrappers=host_wrappers(ctx.pm)).strip()
    session = hook_input.session_id
    result, decision = prompt_decision(
        ctx.backend, prompt, space=space, limit=ctx.settings.recall_limit,
        floor=ctx.settings.similarity_floor,
        skip_ids=already_injected(hook_input.host, session), skip_session=session,
    )
    block = recall_block(decision.inject, space=result.space, budget=ctx.settings.recall_budget_chars,
                         session_known=bool(session), wrappers=host_wrappers(ctx.pm))
    shown = _injected_ids(block, [h.memory for h in decision.inject])
    claimed = reserve_injected(hook_input.host, session, shown)  # given once written (main.py)
    if len(claimed) < len(shown):  # a prompt of this session at the same moment was given some
        keep = set(claimed)
        block = recall_block([h for h in decision.inject if h.memory.id in keep], space=result.space,
                             budget=ctx.settings.recall_budget_chars, session_known=bool(session),
                             wrappers=host_wrappers(ctx.pm))
        shown = claimed
    fields: dict[str, Any] = {"hits": len(shown), "gate": decision.reason}
    if decision.given:
        fields["given"] = decision.given  # left out: this session already has them
    return HookResult(event="prompt", outcome="ok", block=block, fields=fields, injected=tuple(shown))


class _Kept(NamedTuple):
    """The exchange as kept: redacted text and how many secrets were masked."""

    text: str
    masked: int


def _unicode(text: str) -> str:
    """``text`` with lone surrogates replaced by U+FFFD, so it encodes as UTF-8."""
    from bli_memory.core.memory.unicode_text import lone_surrogates_replaced

    return lone_surrogates_replaced(text)


def bounded_exchange(user: str, assistant: str) -> str:
    """``"User: ...\n\nAssistant: ..."`` in at most :data:`MAX_EXCHANGE_BYTES` UTF-8 bytes.

    The prompt keeps its beginning (up to :data:`MAX_PROMPT_BYTES`) and the reply its
    end, so a long reply never pushes the question out of what is kept.
    """
    frame = "User: \n\nAssistant: "
    head = cut_text(user, MAX_PROMPT_BYTES, keep="head")
    room = MAX_EXCHANGE_BYTES - len(frame.encode()) - len(head.encode("utf-8", "surrogatepass"))
    return f"User: {head}\n\nAssistant: {cut_text(assistant, room, keep='tail')}"


def _stop(ctx: HookContext, hook_input: HookInput, space_of: SpaceOf,
          environ: Mapping[str, str] | None = None) -> HookResult:
    from bli_memory.core.memory.redaction import redact, rules_with_plugins

    if hook_input.reentrant:
        return HookResult(event="stop", outcome="skipped", reason="reentrant")
    try:
        exchange = ctx.pm.hook.host_read_exchange(
            host=hook_input.host, hook_input=hook_input, max_bytes=MAX_TRANSCRIPT_READ_BYTES
        )
    except HostError as exc:
        if exc.reason == "no_transcript":
            return HookResult(event="stop", outcome="skipped", reason="no_transcript")
        raise
    if exchange is None:
        return HookResult(event="stop", outcome="skipped", reason="no_transcript")
    # Lone surrogates (an emoji a UTF-16 host cut in half) cannot be stored: replaced.
    wrappers = host_wrappers(ctx.pm)
    user = _unicode(strip_injected(exchange.user, wrappers=wrappers).strip())
    assistant = _unicode(strip_injected(exchange.assistant, wrappers=wrappers).strip())
    if not user and not assistant:
        return HookResult(event="stop", outcome="skipped", reason="no_transcript")
    # Redact before the 12 KB cut: a cut through a secret leaves a fragment no rule
    # recognises. Each part is first cut to twice its final budget, on the side the
    # final cut keeps, so a secret across that first cut falls away in the second.
    try:
        rules = rules_with_plugins(ctx.pm)
        asked = redact(cut_text(user, 2 * MAX_PROMPT_BYTES, keep="head"), rules=rules)
        said = redact(cut_text(assistant, 2 * MAX_EXCHANGE_BYTES, keep="tail"), rules=rules)
    except Exception:  # redaction must never let raw text through
        return HookResult(event="stop", outcome="skipped", reason="redaction_failed")
    redacted = _Kept(bounded_exchange(asked.text, said.text), asked.masked + said.masked)
    space = space_of(hook_input)
    from bli_memory.core.memory.switches import is_recording

    # A recorded space keeps the turn capture-only: never extracted into memories, never
    # injected (core/memory/switches.py).
    recording, source = is_recording(space), f"hook:{hook_input.host}"
    fields: dict[str, Any] = {"chars": len(redacted.text), "masked": redacted.masked}
    # On the team service the exchange is spooled first, so a service away never costs the
    # turn; a store in this process keeps it at once (MemoryBackend.capture).
    fields.update(ctx.backend.capture(redacted.text, space=space, source=source,
                                      session_id=hook_input.session_id, record=recording))
    return HookResult(event="stop", outcome="ok", fields=fields)


_HANDLERS = {"session-start": _session_start, "prompt": _prompt, "stop": _stop}

#: Backend reasons that all mean "the local store cannot be used" in a receipt. A model
#: that cannot be loaded (``embedder_failed``: a model folder that is missing or broken)
#: leaves the store as unusable as one of another model's vectors, and doctor says which.
_STORE_REASONS = frozenset(
    {"store_failed", "store_unavailable", "store_busy", "migration_failed", "model_mismatch",
     "embedder_failed"}
)


def handle(
    ctx: HookContext,
    hook_input: HookInput,
    *,
    cwd: str | None = None,
    environ: Mapping[str, str] | None = None,
) -> HookResult:
    """Run one hook event against the memory backend.

    Args:
        ctx: Plugins, settings and backend.
        hook_input: The parsed payload.
        cwd: Folder of the hook process (see :func:`space_for`).
        environ: The hook process's environment (see :func:`space_for`).

    Raises:
        BliMemoryError: the backend failed (reason says why).
    """

    def space_of(parsed: HookInput) -> str:
        return space_for(parsed, cwd=cwd, environ=environ)

    return _HANDLERS[hook_input.event](ctx, hook_input, space_of, environ)


def reason_of(error: BaseException) -> str:
    """Receipt reason for an exception: its ``reason`` (store reasons folded into
    ``store_unavailable``), else its class name (which the receipt turns into
    ``unknown_internal:<name>``)."""
    reason = getattr(error, "reason", None)
    if isinstance(reason, str):
        return "store_unavailable" if reason in _STORE_REASONS else reason
    return type(error).__name__


def render(pm: pluggy.PluginManager | None, host: str, result: HookResult) -> str:
    """The host's stdout for ``result`` through its adapter; ``""`` when it renders nothing.

    Never raises: an adapter failure prints nothing (a hook prints one whole block or
    nothing).
    """
    if pm is None:
        return ""
    try:
        rendered = pm.hook.host_render(host=host, result=result)
    except Exception:
        return ""
    return rendered.stdout if rendered is not None else ""


def failed_answer(pm: pluggy.PluginManager | None, host: str, event: str, reason: str,
                  *, backend: bool = False) -> HookAnswer:
    """A failed run; a failed stop also tells the person, through the host's adapter
    (the spec's one-line ``systemMessage``: a failed save means the turn was not kept)."""
    log_reason = to_log_reason(reason)
    stdout = ""
    if event == "stop":
        stdout = render(pm, host, HookResult(event="stop", outcome="failed", reason=log_reason))
    return HookAnswer(outcome="failed", stdout=stdout, reason=log_reason, backend=backend)


def _enabled(hook_input: HookInput, *, cwd: str | None, environ: Mapping[str, str] | None) -> bool:
    from bli_memory.core.memory.switches import is_enabled, load

    data = load()
    if not data:  # no switches file: on (the common case costs one failed open)
        return True
    return is_enabled(space_for(hook_input, cwd=cwd, environ=environ), data)


def answer_hook(
    pm: pluggy.PluginManager,
    *,
    host: str,
    event: str,
    payload: dict[str, Any],
    context: Callable[[], HookContext],
    cwd: str | None = None,
    environ: Mapping[str, str] | None = None,
) -> HookAnswer:
    """Answer one hook run: parse, skip or handle, render. Never raises.

    This is the function both routes run: the hook process on its direct path (in a
    worker thread its deadline can abandon) and the resident daemon for each request.

    Args:
        pm: Plugin manager with the host's adapter.
        host: Adapter name (``claude``, ...).
        event: ``session-start``, ``prompt`` or ``stop``.
        payload: The host's JSON payload, already read and decoded.
        context: Returns the :class:`HookContext`; called only once the run needs the
            backend, so skipped runs never open the store or load the model.
        cwd: The hook process's working folder (default: this process's); a relative
            payload ``cwd`` or ``transcript_path`` is taken relative to it.
        environ: The hook process's environment for space derivation (default:
            ``os.environ``).

    Returns:
        The :class:`HookAnswer`: ``skipped`` with ``no_prompt`` / ``trivial_prompt`` /
        ``reentrant`` / ``disabled`` (memory switched off for the space, see
        :mod:`bli_memory.core.memory.switches`) without touching the backend; ``failed`` with
        ``unknown_host``, a payload reason (``stdin_malformed``) or the backend's
        reason; otherwise the handler's outcome with the rendered stdout.
    """
    from dataclasses import replace

    from bli_memory.core.hooks.receipt_log import to_log

    return replace(_answer(pm, host, event, payload, context, cwd, environ), receipt_log=to_log(pm, host))


def _answer(pm: pluggy.PluginManager, host: str, event: str, payload: dict[str, Any],
            context: Callable[[], HookContext], cwd: str | None,
            environ: Mapping[str, str] | None) -> HookAnswer:
    """:func:`answer_hook` before the receipt's destination is added."""
    try:
        hook_input = pm.hook.host_parse_payload(host=host, event=event, payload=payload)
    except Exception as exc:  # an adapter refusing the payload, or an adapter bug
        return failed_answer(pm, host, event, reason_of(exc))
    if hook_input is None:
        return failed_answer(pm, host, event, "unknown_host")
    if hook_input.transcript_path and not os.path.isabs(hook_input.transcript_path):
        # Relative to the hook process, as the payload's cwd is (the daemon runs elsewhere).
        from dataclasses import replace

        hook_input = replace(hook_input, transcript_path=os.path.join(cwd or os.getcwd(),
                                                                      hook_input.transcript_path))

    if event == "prompt":
        from bli_memory.core.hooks.trivial import is_trivial

        if not (hook_input.prompt or "").strip():
            return HookAnswer(outcome="skipped", reason="no_prompt")
        if is_trivial(hook_input.prompt or ""):
            return HookAnswer(outcome="skipped", reason="trivial_prompt")
    if event == "stop" and hook_input.reentrant:
        return HookAnswer(outcome="skipped", reason="reentrant")
    try:
        if not _enabled(hook_input, cwd=cwd, environ=environ):
            # Memory switched off (globally or for this space): neither inject nor capture.
            return HookAnswer(outcome="skipped", reason="disabled")
    except Exception as exc:  # an invalid forced space fails as it would in the handler
        return failed_answer(pm, host, event, reason_of(exc), backend=True)

    try:
        result = handle(context(), hook_input, cwd=cwd, environ=environ)
    except Exception as exc:  # reported through the receipt, never raised
        return failed_answer(pm, host, event, reason_of(exc), backend=True)
    if result.outcome == "ok":
        stdout = render(pm, host, result) if result.block else ""
        held = None
        if result.injected and hook_input.session_id:
            held = Injected(hook_input.host, hook_input.session_id, tuple(result.injected))
            if not stdout:  # the adapter rendered nothing: nothing reaches the session
                from bli_memory.core.hooks.injection_log import release_injected

                release_injected(held.host, held.session, held.ids)
                held = None
        return HookAnswer(outcome="ok", stdout=stdout, fields=dict(result.fields), backend=True,
                          injected=held)
    if result.outcome == "skipped":
        return HookAnswer(outcome="skipped", reason=to_log_reason(result.reason), backend=True)
    return failed_answer(pm, host, event, result.reason or "unknown", backend=True)
