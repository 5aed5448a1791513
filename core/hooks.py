"""``bli-memory-mcp hook <event>``: the lifecycle hook process.

Runs on every turn of every session, so it keeps the four rules of the BLI Memory
spec for every event and every host:

1. **Never block.** A deadline under the timeout the installer registers (8 s / 2 s /
   15 s for session-start / prompt / stop, against 30 / 5 / 30), including a hard
   deadline on reading stdin; on any deadline it prints nothing and exits.
2. **Always exit 0.** Exit 2 blocks the prompt in Claude Code and Codex (and forces a
   retry in Gemini); anything else non-zero is shown to the person.
3. **Print nothing, or one whole block.** Zero hits prints nothing.
4. **Skip trivial prompts** without searching (closed list + length, identifier
   override; :mod:`bli_memory.core.trivial`).

Plus one stderr receipt per run on every branch (:mod:`bli_memory.core.receipts`),
hourly counts in the stats file (not for ``--probe`` runs), and a ``systemMessage``
when a stop fails, because a failed save means the turn was not kept.

The entry path imports the standard library and pluggy only; the engine (numpy,
onnxruntime, the store) is imported on the direct path, inside a worker thread that
the deadline can abandon.
"""

from __future__ import annotations

import os
import sys
import threading
import time
from typing import Any

from bli_memory.core import hook_stats, paths
from bli_memory.core.hook_stdin import StdinFailure, read_payload
from bli_memory.core.receipts import format_receipt, to_log_reason

__all__ = ["DEADLINES_MS", "STDIN_BUDGET_MS", "main"]

#: Per-event deadlines in ms, under the registered timeouts of 30 / 5 / 30 s
#: (BLI Memory spec; the prompt budget is sized to a person waiting, BLI-3730).
DEADLINES_MS = {"session-start": 8000, "prompt": 2000, "stop": 15000}
#: Share of each deadline that reading stdin may take.
STDIN_BUDGET_MS = {"session-start": 1000, "prompt": 500, "stop": 1000}

_EVENTS = tuple(DEADLINES_MS)
_STORE_REASONS = {"store_failed", "store_unavailable", "store_busy", "migration_failed", "model_mismatch"}


class _Run:
    """One hook run: its clock, its receipt and its stats."""

    def __init__(self, event: str, host: str, probe: bool) -> None:
        self.event = event
        self.host = host
        self.probe = probe
        self.started = time.monotonic()
        self.deadline_ms = DEADLINES_MS[event]
        self.deadline = self.started + self.deadline_ms / 1000
        self.via: str | None = None
        self.pm: Any = None

    def elapsed_ms(self) -> int:
        return int((time.monotonic() - self.started) * 1000)

    # --- output ------------------------------------------------------------------

    def finish(self, outcome: str, *, reason: str | None = None, fields: dict[str, Any] | None = None,
               stdout: str = "") -> None:
        if stdout:
            data = stdout if stdout.endswith("\n") else stdout + "\n"
            try:
                sys.stdout.buffer.write(data.encode("utf-8", "replace"))
                sys.stdout.buffer.flush()
            except (OSError, ValueError, AttributeError):
                pass
        body: dict[str, Any] = {}
        if outcome == "ok":
            body.update(fields or {})
            body.update({"elapsed_ms": self.elapsed_ms(), "deadline_ms": self.deadline_ms})
        else:
            body["reason"] = to_log_reason(reason)
            if outcome == "failed":
                body.update({"elapsed_ms": self.elapsed_ms(), "deadline_ms": self.deadline_ms})
        if self.via:
            body["via"] = self.via
        if self.probe:
            body["probe"] = "stats_excluded"
        try:
            sys.stderr.write(format_receipt(self.event, outcome, body))
            sys.stderr.flush()
        except (OSError, ValueError, AttributeError):
            pass
        if not self.probe:
            keys = [hook_stats.outcome_key(outcome, body.get("reason"))]
            if self.via:
                keys.append(f"via:{self.via}")
            hook_stats.record(paths.hook_stats_path(), self.event, keys)

    def render(self, result: Any) -> str:
        """The host's stdout for a result ('' when the adapter renders nothing)."""
        if self.pm is None:
            return ""
        try:
            rendered = self.pm.hook.host_render(host=self.host, result=result)
        except Exception:
            return ""
        return rendered.stdout if rendered is not None else ""

    def fail(self, reason: str, *, fields: dict[str, Any] | None = None) -> None:
        """A failed run; a failed stop also tells the person, through the host."""
        stdout = ""
        if self.event == "stop":
            from bli_memory.core.models import HookResult

            stdout = self.render(HookResult(event="stop", outcome="failed", reason=to_log_reason(reason)))
        self.finish("failed", reason=reason, fields=fields, stdout=stdout)

    # --- the run -----------------------------------------------------------------

    def go(self) -> bool:
        """Run the hook; returns True when a worker thread may still be running."""
        stdin_deadline = min(self.deadline, self.started + STDIN_BUDGET_MS[self.event] / 1000)
        try:
            payload = read_payload(stdin_deadline)
        except StdinFailure as exc:
            self._load_plugins_quietly()
            self.fail(exc.reason)
            return False

        from bli_memory.core.contracts import get_plugin_manager
        from bli_memory.core.errors import BliMemoryError

        try:
            self.pm = get_plugin_manager(host=self.host)
            hook_input = self.pm.hook.host_parse_payload(host=self.host, event=self.event, payload=payload)
        except BliMemoryError as exc:
            self.fail(exc.reason)
            return False
        if hook_input is None:
            self.fail("unknown_host")
            return False

        if self.event == "prompt":
            from bli_memory.core.trivial import is_trivial

            if not (hook_input.prompt or "").strip():
                self.finish("skipped", reason="no_prompt")
                return False
            if is_trivial(hook_input.prompt or ""):
                self.finish("skipped", reason="trivial_prompt")
                return False
        if self.event == "stop" and hook_input.reentrant:
            self.finish("skipped", reason="reentrant")
            return False
        return self._direct(hook_input)

    def _load_plugins_quietly(self) -> None:
        if self.event != "stop":
            return
        try:
            from bli_memory.core.contracts import get_plugin_manager

            self.pm = get_plugin_manager(host=self.host)
        except Exception:
            self.pm = None

    def _direct(self, hook_input: Any) -> bool:
        self.via = "direct"
        box: dict[str, Any] = {}

        def work() -> None:
            from bli_memory.core.hook_events import HookContext, handle

            try:
                box["result"] = handle(HookContext.build(self.pm), hook_input)
            except BaseException as exc:  # reported through the receipt, never raised
                box["error"] = exc

        worker = threading.Thread(target=work, name="hook-direct", daemon=True)
        worker.start()
        worker.join(max(0.0, self.deadline - time.monotonic()))
        if worker.is_alive():
            self.fail("timeout")
            return True
        error = box.get("error")
        if error is not None:
            self.fail(_reason_of(error))
            return False
        result = box["result"]
        if result.outcome == "ok":
            self.finish("ok", fields=result.fields, stdout=self.render(result) if result.block else "")
        elif result.outcome == "skipped":
            self.finish("skipped", reason=result.reason)
        else:
            self.fail(result.reason or "unknown")
        return False


def _reason_of(error: BaseException) -> str:
    reason = getattr(error, "reason", None)
    if isinstance(reason, str):
        return "store_unavailable" if reason in _STORE_REASONS else reason
    return type(error).__name__


def _parse_args(argv: list[str]) -> tuple[str | None, str, bool]:
    event: str | None = None
    host = "claude"
    probe = False
    it = iter(argv)
    for arg in it:
        if arg == "--probe":
            probe = True
        elif arg == "--host":
            host = next(it, host)
        elif arg.startswith("--host="):
            host = arg.split("=", 1)[1]
        elif event is None and not arg.startswith("-"):
            event = arg
    return event, host, probe


def main(argv: list[str]) -> int:
    """Run one hook; always returns 0 (hooks fail open)."""
    event, host, probe = _parse_args(argv)
    if event not in _EVENTS:
        sys.stderr.write(
            "[bli-memory] hook failed {\"reason\":\"unknown_internal:usage\"} "
            f"(usage: bli-memory-mcp hook {{{'|'.join(_EVENTS)}}} [--host H] [--probe])\n"
        )
        return 0
    run = _Run(event, host, probe)
    abandoned = False
    try:
        abandoned = run.go()
    except BaseException as exc:  # the last net: a hook never crashes the host's turn
        try:
            run.fail(type(exc).__name__)
        except BaseException:
            pass
    if abandoned:
        # A worker missed the deadline: leave without waiting for it.
        os._exit(0)
    return 0
