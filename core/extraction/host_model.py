"""The ``host`` extractor: the person's own agent host distils each exchange.

Opt-in only (``install --extractor host``, ``bli-memory-mcp extractor use host``, or
``BLI_MEMORY_EXTRACTOR=host``): with nothing set, no host CLI is ever started. For one job:

1. build the session digest (:mod:`~bli_memory.core.extraction.host_digest`), bounded in
   tokens; an empty digest makes no request;
2. take the machine's one request lock (:func:`~bli_memory.core.extraction.host_ledger.held_lock`)
   and check the day's budget: past it, no request is made (``budget_spent``);
3. ask the host's adapter for the command (``host_headless_command``: no tools, no MCP
   servers, no hooks, no session kept, JSON out), run it from an empty temporary folder
   (:func:`~bli_memory.core.extraction.host_run.run_headless`: own process group, timeout,
   ``BLI_MEMORY_HOOKS_OFF=1``) in the host's private run folder, emptied before and after
   (:func:`~bli_memory.core.extraction.host_ledger.run_folder`), and read the answer and its
   spend (``host_headless_answer``);
4. record the spend in the ledger and on the job.

Every failure falls back to the rules for that job, with a closed reason
(:data:`~bli_memory.core.headless.HEADLESS_FAILURES`), so an exchange is never lost and
the job is never retried against a host that cannot answer.
"""

from __future__ import annotations

import threading
import time
from typing import TYPE_CHECKING, Any

from bli_memory.core.extraction import host_ledger
from bli_memory.core.extraction.host_config import HostChoice
from bli_memory.core.extraction.host_digest import digest, estimate_tokens
from bli_memory.core.extraction.host_ledger import run_folder
from bli_memory.core.extraction.model_facts import FACTS_SCHEMA, INSTRUCTIONS, json_in, statements_from
from bli_memory.core.extraction.rule_extractor import RuleExtractor
from bli_memory.core.headless import HeadlessAnswer, HeadlessRequest, HeadlessRun

if TYPE_CHECKING:
    import pluggy

    from bli_memory.core.extraction.statements import Statement

__all__ = ["HostModelExtractor"]

_one_at_a_time = threading.Lock()  # threads of one process; the file lock covers processes


class HostModelExtractor:
    """Extraction by the person's own host CLI, falling back to the rules.

    Args:
        choice: Host, model and limits (:func:`~bli_memory.core.extraction.host_config.host_choice`),
            or None when they cannot be read: every job then falls back (``config_invalid``).
        pm: The plugin manager whose adapters answer the ``host_headless_*`` hooks.
        problem: A reason every job falls back for, found when the extractor was built.
    """

    name = "host"

    def __init__(self, choice: HostChoice | None, pm: pluggy.PluginManager, *,
                 problem: str | None = None) -> None:
        self.choice = choice
        self._pm = pm
        self._problem = problem if choice is not None else (problem or "config_invalid")
        self._rules = RuleExtractor()

    def extract(self, text: str) -> list[Statement]:
        """See :meth:`~bli_memory.core.extraction.statements.Extractor.extract`; never raises
        for the host's sake (the rules answer instead)."""
        return self.extract_reported(text)[0]

    def extract_reported(self, text: str) -> tuple[list[Statement], dict[str, Any]]:
        """The statements and what the job records about the request.

        Returns:
            ``(statements, report)``; ``report`` holds ``extractor`` (``host:<name>`` or,
            after a fallback, ``default``), ``host``, ``model``, ``fallback`` (a reason of
            :data:`~bli_memory.core.headless.HEADLESS_FAILURES`, or None),
            ``digest_tokens``, ``input_tokens``, ``output_tokens``, ``cost_usd`` and
            ``request_s`` (None where the host reports nothing or no request was made).
        """
        choice = self.choice
        host = choice.host if choice else None
        report: dict[str, Any] = {"extractor": f"host:{host or '?'}", "host": host,
                                  "model": choice.model if choice else None, "fallback": None,
                                  "digest_tokens": 0, "input_tokens": None,
                                  "output_tokens": None, "cost_usd": None, "request_s": None}
        if choice is None or self._problem:  # the saved choice cannot be used: the rules, and why
            return self._fall_back(text, report, self._problem or "config_invalid")
        brief = digest(text, max_tokens=choice.max_tokens)
        if not brief:
            return [], report
        report["digest_tokens"] = estimate_tokens(brief)
        with _one_at_a_time, host_ledger.held_lock(choice.timeout_s) as lock:
            if lock is None:
                return self._fall_back(text, report, "busy")
            if host_ledger.used_today() >= choice.daily_requests:
                return self._fall_back(text, report, "budget_spent")
            try:
                answer = self._ask(choice, brief, lock, report)
            except Exception:  # noqa: BLE001 - whatever the host did, this job keeps the rules' capture
                answer = HeadlessAnswer(None, "host_failed")
            if answer.error is None and answer.text is not None:
                try:
                    statements = statements_from(json_in(answer.text))
                except ValueError:
                    answer = HeadlessAnswer(None, "bad_json", answer.input_tokens, answer.output_tokens,
                                            answer.cost_usd)
            report.update(input_tokens=answer.input_tokens, output_tokens=answer.output_tokens,
                          cost_usd=answer.cost_usd)
            # Nothing left the machine when the CLI is missing or has no login: not a request.
            requested = answer.error not in ("host_missing", "not_logged_in")
            host_ledger.record(requested=requested, input_tokens=answer.input_tokens,
                               output_tokens=answer.output_tokens, cost_usd=answer.cost_usd,
                               fallback=answer.error)
        if answer.error is not None:
            return self._fall_back(text, report, answer.error, recorded=True)
        return statements, report

    def _ask(self, choice: HostChoice, brief: str, lock: Any, report: dict[str, Any]) -> HeadlessAnswer:
        from bli_memory.core.extraction.host_run import run_headless

        hook = self._pm.hook
        with run_folder(choice.host) as workdir:
            request = HeadlessRequest(prompt=f"{INSTRUCTIONS}\n\nSession digest:\n\n{brief}\n",
                                      schema=FACTS_SCHEMA, workdir=workdir, model=choice.model)
            command = hook.host_headless_command(host=choice.host, request=request)
            if command is None:
                return HeadlessAnswer(None, "host_missing")
            started = time.monotonic()
            run = run_headless(command, workdir=workdir, timeout_s=choice.timeout_s, lock=lock)
            report["request_s"] = round(time.monotonic() - started, 3)
            if isinstance(run, str):  # killed or never started: the plugin still tidies up after it
                hook.host_headless_answer(host=choice.host, run=HeadlessRun(-9, "", "", workdir))
                return HeadlessAnswer(None, run)
            answer = hook.host_headless_answer(host=choice.host, run=run)
        if answer is None:
            return HeadlessAnswer(None, "host_failed")
        if answer.error is None and not answer.text:
            return HeadlessAnswer(None, "bad_json", answer.input_tokens, answer.output_tokens,
                                  answer.cost_usd)
        return answer  # type: ignore[no-any-return]

    def _fall_back(self, text: str, report: dict[str, Any], reason: str, *,
                   recorded: bool = False) -> tuple[list[Statement], dict[str, Any]]:
        if not recorded:
            host_ledger.record(requested=False, fallback=reason)
        report.update(fallback=reason, extractor="default")
        return self._rules.extract(text), report
