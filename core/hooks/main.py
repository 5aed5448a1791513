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
   override; :mod:`bli_memory.core.hooks.trivial`).

Plus one receipt per run on every branch (:mod:`bli_memory.core.hooks.receipts`), on stderr
or, for hosts that show stderr to the person, in a log file (:mod:`bli_memory.core.hooks.receipt_log`),
hourly counts in the stats file (not for ``--probe`` runs), and a ``systemMessage``
when a stop fails, because a failed save means the turn was not kept.

Two routes answer a run, and both run the same function,
:func:`bli_memory.core.hooks.events.answer_hook`:

- **daemon** (unless ``BLI_MEMORY_DAEMON=0``): the payload goes to the resident
  daemon (:mod:`bli_memory.core.daemon.server`) over its Unix socket, with a 50 ms connect
  budget and :data:`~bli_memory.core.hooks.deadlines.DAEMON_ANSWER_MS` for the answer
  (half the deadline: 1 s for a prompt);
- **direct**: on any daemon failure the hook answers itself, in a worker thread the
  deadline can abandon; the receipt then names why in its ``daemon`` field
  (``"daemon":"no_socket"``, see :data:`bli_memory.core.hooks.daemon_client.REASONS`), and
  the stats count it as ``daemon:<reason>``.

Runs that reached the memory backend record the route that answered, ``via`` on the
receipt and ``via:daemon`` / ``via:direct`` in the stats. The prompt hook starts the
daemon, detached, when it found none or a stale socket (at once after a daemon that
ran, with backoff after failed starts: :mod:`bli_memory.core.hooks.daemon_start`), and any
hook does when the daemon stood down for another version.

The entry path imports the standard library and pluggy only; the daemon route needs
nothing more, and the engine (numpy, onnxruntime, the store) is imported on the
direct path only.
"""

from __future__ import annotations

import os
import sys
import time
from typing import TYPE_CHECKING, Any

from bli_memory.core import paths
from bli_memory.core.defaults import DEFAULT_HOST
from bli_memory.core.hooks import receipt_log
from bli_memory.core.hooks import stats as hook_stats
from bli_memory.core.hooks.deadlines import DEADLINES_MS, budgets_ms
from bli_memory.core.hooks.receipts import format_receipt, to_log_reason
from bli_memory.core.hooks.stdin import StdinFailure, read_payload

if TYPE_CHECKING:
    from bli_memory.core.hooks.answers import Injected

__all__ = ["main"]

_EVENTS = tuple(DEADLINES_MS)


class _Run:
    """One hook run: its clock, its receipt and its stats."""

    def __init__(self, event: str, host: str, probe: bool) -> None:
        self.event = event
        self.host = host
        self.probe = probe
        self.started = time.monotonic()
        self.deadline_ms, self.stdin_ms, self.daemon_answer_ms = budgets_ms(event)
        self.deadline = self.started + self.deadline_ms / 1000
        self.via: str | None = None
        self.daemon_note: str | None = None
        self.spawn: str | None = None  # "normal" / "forced" when the daemon should be started
        self.pm: Any = None

    def elapsed_ms(self) -> int:
        return int((time.monotonic() - self.started) * 1000)

    # --- output ------------------------------------------------------------------

    def finish(self, outcome: str, *, reason: str | None = None, fields: dict[str, Any] | None = None,
               stdout: str = "", log: bool | None = None, injected: Injected | None = None) -> None:
        written = False
        if stdout:
            data = stdout if stdout.endswith("\n") else stdout + "\n"
            try:
                sys.stdout.buffer.write(data.encode("utf-8", "replace"))
                sys.stdout.buffer.flush()
                written = True
            except (OSError, ValueError, AttributeError):
                pass  # stdout closed: the host never reads this block
        if injected is not None:
            from bli_memory.core.hooks.answers import settle_injected

            # Given to the session only once written; a block the host never got is given again.
            settle_injected(injected, delivered=written)
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
        if self.daemon_note:
            body["daemon"] = self.daemon_note
        if self.probe:
            body["probe"] = "stats_excluded"
        if log is None:  # decided here, not by an answer: ask the host's plugin when loaded
            log = receipt_log.to_log(self.pm, self.host)
        receipt_log.emit(format_receipt(self.event, outcome, body), log=log, outcome=outcome,
                         state_dir=paths.state_dir())
        if not self.probe:
            keys = [hook_stats.outcome_key(outcome, body.get("reason"))]
            if self.via:
                keys.append(f"via:{self.via}")
            if self.daemon_note:
                keys.append(f"daemon:{self.daemon_note}")
            hook_stats.record(paths.hook_stats_path(), self.event, keys,
                              latency_ms=body.get("elapsed_ms", self.elapsed_ms()), route=self.via)

    def fail(self, reason: str) -> None:
        """A failed run decided by the hook itself (stdin, timeout); a failed stop also
        tells the person, rendered exactly as the shared answer does."""
        stdout = ""
        if self.event == "stop" and self.pm is not None:
            from bli_memory.core.hooks.events import failed_answer

            stdout = failed_answer(self.pm, self.host, self.event, reason).stdout
        self.finish("failed", reason=reason, stdout=stdout)

    # --- the run -----------------------------------------------------------------

    def go(self) -> bool:
        """Run the hook; returns True when a worker thread may still be running."""
        stdin_deadline = min(self.deadline, self.started + self.stdin_ms / 1000)
        try:
            payload = read_payload(stdin_deadline)
        except StdinFailure as exc:
            self._load_plugins_quietly()
            self.fail(exc.reason)
            return False

        from bli_memory.core.hooks import daemon_client

        if daemon_client.enabled() and self._via_daemon(payload):
            return False
        return self._direct(payload)

    def _via_daemon(self, payload: dict[str, Any]) -> bool:
        """Ask the daemon; True when it answered (output written), False to go direct."""
        from bli_memory.core.hooks import daemon_client

        answer_by = self.started + self.daemon_answer_ms / 1000
        try:
            reply = daemon_client.request(self.event, self.host, payload, deadline=answer_by, cwd=_cwd())
        except daemon_client.DaemonUnavailable as exc:
            self.daemon_note = exc.reason
            if exc.reason == "stand_down":
                self.spawn = "forced"
            elif self.event == "prompt" and exc.reason == "stale_socket":
                self.spawn = "forced"
            elif self.event == "prompt" and exc.reason == "no_socket":
                self.spawn = "normal"
            return False
        except Exception:  # the daemon route must never cost the person their answer
            self.daemon_note = "unreachable"
            return False
        self.via = "daemon" if reply["backend"] else None
        self.finish(reply["outcome"], reason=reply["reason"], fields=reply["fields"], stdout=reply["stdout"],
                    log=reply["receipt_log"], injected=reply["injected"])
        return True

    def start_daemon_if_needed(self) -> None:
        """Start the daemon detached when this run found it missing (never raises)."""
        if self.spawn is None:
            return
        try:
            from bli_memory.core.hooks import daemon_client

            daemon_client.spawn(force=self.spawn == "forced")
        except Exception:
            pass

    def _load_plugins_quietly(self) -> None:
        if self.event != "stop":
            return
        try:
            from bli_memory.core.plugins import get_plugin_manager

            # Only the adapter is needed, to render the failed stop's message.
            self.pm = get_plugin_manager(host=self.host, core_plugins=False)
        except Exception:
            self.pm = None

    def _direct(self, payload: dict[str, Any]) -> bool:
        from bli_memory.core.errors import BliMemoryError
        from bli_memory.core.plugins import get_plugin_manager, register_core_plugins

        try:
            # The adapter alone decides a skip (trivial prompt, re-entrant stop); the
            # engine's plugins are imported only when the run reaches the backend.
            self.pm = get_plugin_manager(host=self.host, core_plugins=False)
        except BliMemoryError as exc:
            self.fail(exc.reason)
            return False
        pm = self.pm
        box: dict[str, Any] = {}
        # One BLAS thread for one matrix-vector product (see bli_memory.core.daemon.server.main).
        os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

        def work() -> None:
            from bli_memory.core.hooks.events import HookContext, answer_hook

            try:
                box["answer"] = answer_hook(
                    pm, host=self.host, event=self.event, payload=payload,
                    context=lambda: HookContext.build(register_core_plugins(pm)),
                )
            except BaseException as exc:  # reported through the receipt, never raised
                box["error"] = exc

        import threading  # only the direct path needs a worker thread

        worker = threading.Thread(target=work, name="hook-direct", daemon=True)
        worker.start()
        worker.join(max(0.0, self.deadline - time.monotonic()))
        if worker.is_alive():
            self.via = "direct"
            self.fail("timeout")
            return True
        error = box.get("error")
        if error is not None:
            from bli_memory.core.hooks.events import reason_of

            self.via = "direct"
            self.fail(reason_of(error))
            return False
        answer = box["answer"]
        self.via = "direct" if answer.backend else None
        self.finish(answer.outcome, reason=answer.reason, fields=answer.fields, stdout=answer.stdout,
                    log=answer.receipt_log, injected=answer.injected)
        return False


def _cwd() -> str | None:
    try:
        return os.getcwd()
    except OSError:  # the folder was removed under us
        return None


def _parse_args(argv: list[str]) -> tuple[str | None, str, bool]:
    event: str | None = None
    host = DEFAULT_HOST
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
    """Run one hook; always returns 0 (hooks fail open). ``-h``/``--help`` prints the usage.

    With ``BLI_MEMORY_HOOKS_OFF=1`` (:data:`bli_memory.core.headless.HOOKS_OFF_ENV`, set on
    every headless request the ``host`` extractor makes) it returns at once: no stdin read,
    no output, no receipt, no daemon started.
    """
    if os.environ.get("BLI_MEMORY_HOOKS_OFF") == "1":
        return 0
    if argv[:1] in (["-h"], ["--help"]):
        sys.stdout.write(
            f"usage: bli-memory-mcp hook {{{'|'.join(_EVENTS)}}} [--host H] [--probe]\n\n"
            "One lifecycle hook run, as a host starts it: the host's JSON payload on stdin,\n"
            "the host's answer on stdout, one receipt on stderr (docs/hooks.md).\n"
        )
        return 0
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
    # After the answer is out: starting the daemon never delays this turn.
    run.start_daemon_if_needed()
    if abandoned:
        # A worker missed the deadline: leave without waiting for it.
        os._exit(0)
    return 0
