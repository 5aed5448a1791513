"""What crosses the seam when a host's own CLI runs one headless request for us.

The ``host`` extractor (:mod:`bli_memory.core.extraction.host_model`) asks the person's
own agent host (``claude``, ``codex``, ``gemini``) to distil a session digest into facts,
with the model and the login that host already has. Core never knows a host's flags: each
adapter answers three plugin hooks (:mod:`bli_memory.core.hookspecs`):

- ``host_headless_command(host, request)`` -> :class:`HeadlessCommand`: the argv, the
  variables and the files (written into the run's empty folder) of one request with no
  tools, no MCP servers, no hooks, no session kept, and JSON on stdout;
- ``host_headless_answer(host, run)`` -> :class:`HeadlessAnswer`: the answer text and
  the spend the host reports, or a closed failure reason;
- ``host_headless_info(host, home)`` -> :class:`HeadlessInfo`: the CLI, the default
  model and the account that will pay, for ``install --extractor host`` to name.

Standard library only; frozen dataclasses, like :mod:`bli_memory.core.models`.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

__all__ = [
    "HEADLESS_FAILURES",
    "HOOKS_OFF_ENV",
    "HeadlessAnswer",
    "HeadlessCommand",
    "HeadlessInfo",
    "HeadlessRequest",
    "HeadlessRun",
]

#: Set to ``1`` in the environment of every headless request: each of our hooks exits 0 at
#: once, before reading anything (:func:`bli_memory.core.hooks.main.main`), so a host that
#: ignores its own off switch for hooks still cannot recurse into capture.
HOOKS_OFF_ENV = "BLI_MEMORY_HOOKS_OFF"

#: The closed set of reasons a request can fail for; each makes the job fall back to the
#: rules and is recorded on the job (``docs/extraction.md``).
HEADLESS_FAILURES: tuple[str, ...] = (
    "not_logged_in",   # the host CLI has no usable login (or key) for its model
    "timeout",         # no answer within the timeout; the process group was killed
    "bad_json",        # an answer, but not the facts JSON asked for
    "budget_spent",    # the day's requests are used up; no request was made
    "host_missing",    # the host CLI is not on PATH
    "host_failed",     # the CLI exited with an error that is none of the above
    "busy",            # another request held the one-at-a-time lock past the timeout
    "config_invalid",  # the saved choice or a BLI_MEMORY_EXTRACT_* variable cannot be used
)


@dataclass(frozen=True)
class HeadlessRequest:
    """One request a host CLI is asked to run.

    Attributes:
        prompt: The whole prompt: instructions, then the session digest.
        schema: JSON Schema (draft 2020-12 object) the answer must follow.
        workdir: An empty temporary folder: the run's working directory, where
            :attr:`HeadlessCommand.files` are written and removed with it.
        model: The model to ask for; None means the host's small default
            (:attr:`HeadlessInfo.default_model`).
    """

    prompt: str
    schema: dict[str, Any]
    workdir: Path
    model: str | None = None


@dataclass(frozen=True)
class HeadlessCommand:
    """How to run one :class:`HeadlessRequest`.

    Attributes:
        argv: The command; ``argv[0]`` is the CLI's name or path.
        env: Variables added to the worker's environment (never its login: the host
            reads the person's own).
        files: ``{path relative to the workdir: text}`` written before the run (a
            settings file, a schema file).
        stdin: Text given on standard input, or None for an empty one.
        login_check: A command run first, in the same folder and environment, that exits
            0 only when the CLI has a login (``codex login status``), for a host whose
            request would not say so itself; None when the answer tells.
    """

    argv: tuple[str, ...]
    env: dict[str, str] = field(default_factory=dict)
    files: dict[str, str] = field(default_factory=dict)
    stdin: str | None = None
    login_check: tuple[str, ...] | None = None


@dataclass(frozen=True)
class HeadlessRun:
    """What a finished request left: exit status, output, and its folder."""

    returncode: int
    stdout: str
    stderr: str
    workdir: Path


@dataclass(frozen=True)
class HeadlessAnswer:
    """What the host said, read from a :class:`HeadlessRun`.

    Attributes:
        text: The model's answer (the facts JSON as text), or None on failure.
        error: None, or one of :data:`HEADLESS_FAILURES`.
        input_tokens: Tokens the host reports for the prompt (cached ones included), if any.
        output_tokens: Tokens the host reports for the answer, if any.
        cost_usd: The cost the host reports, in US dollars, if it reports one.
    """

    text: str | None
    error: str | None = None
    input_tokens: int | None = None
    output_tokens: int | None = None
    cost_usd: float | None = None


@dataclass(frozen=True)
class HeadlessInfo:
    """Who a host's headless requests go to, for the person to read before opting in.

    Attributes:
        host: The adapter name (``claude``).
        display: The host's name (``Claude Code``).
        cli: The executable run (``claude``).
        default_model: The model asked for when none is set (a small, cheap one).
        provider: Who receives the digest (``Anthropic``).
        account: The login the CLI will use, as the host's own files name it (an email
            address), or None when it cannot be told.
    """

    host: str
    display: str
    cli: str
    default_model: str
    provider: str
    account: str | None = None
