"""Where a hook's receipt goes: stderr, or a log file for hosts that show stderr to the person.

Each run writes exactly one receipt (:mod:`bli_memory.core.hooks.receipts`). Claude Code,
Codex CLI and Hermes Agent keep a successful hook's stderr out of the person's view
(Claude Code shows a hook's stderr only for non-zero exits; ``codex exec`` prints only
``hook: <Event> Completed``, docs/hosts.md; Hermes logs it at debug level,
``agent/shell_hooks.py`` of hermes-agent 0.19.0), so there the receipt goes to stderr
as the spec says. Gemini CLI 0.61 does not: when a hook prints nothing on
stdout it takes stderr as the hook's output and prints it as ``Hook system message:
...`` on every turn (``stdout.trim() || stderr.trim()``, then
``convertPlainTextToHookOutput`` in the shipped bundle). For such hosts
(:data:`LOG_HOSTS`) the receipt is appended to :func:`log_path` instead, and stderr
stays quiet on ``ok`` and ``skipped``; a ``failed`` receipt is also written to stderr,
so the person learns a turn's memory failed (a failed stop tells them on stdout in the
host's own format as well, and Gemini then ignores stderr).

The log file is ``memory-hook-receipts.log`` in the state dir, mode 0600, at most
:data:`LOG_MAX_BYTES` before it is rotated to ``.1`` (one old file kept). Standard
library only: the hook entry point imports this on every run.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

from bli_memory.core.private_files import make_private_dir

__all__ = ["LOG_HOSTS", "LOG_MAX_BYTES", "emit", "log_path"]

#: Hosts that show a successful hook's stderr to the person (see the module docstring).
LOG_HOSTS = frozenset({"gemini"})
#: Size at which the log is rotated: about 2,500 receipts of ~100 bytes.
LOG_MAX_BYTES = 256 * 1024


def log_path(state_dir: Path) -> Path:
    """The receipt log inside ``state_dir``."""
    return state_dir / "memory-hook-receipts.log"


def _append(path: Path, line: str) -> None:
    data = line.encode("utf-8", "replace")
    make_private_dir(path.parent)
    try:
        if path.stat().st_size + len(data) > LOG_MAX_BYTES:
            os.replace(path, path.with_name(path.name + ".1"))
    except FileNotFoundError:
        pass
    fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
    try:
        os.write(fd, data)  # one write of one short line: whole under O_APPEND
    finally:
        os.close(fd)


def emit(line: str, *, host: str, outcome: str, state_dir: Path) -> None:
    """Write one receipt ``line`` where ``host`` does not show it to the person (never raises).

    Args:
        line: A receipt from :func:`bli_memory.core.hooks.receipts.format_receipt`.
        host: The host adapter name (``gemini``, ``claude``, ...).
        outcome: ``ok``, ``skipped`` or ``failed``.
        state_dir: The state folder (:func:`bli_memory.core.paths.state_dir`).
    """
    to_stderr = host not in LOG_HOSTS or outcome == "failed"
    if host in LOG_HOSTS:
        try:
            _append(log_path(state_dir), line)
        except OSError:
            to_stderr = True  # the state dir is not writable: keep the receipt where it can go
    if not to_stderr:
        return
    try:
        sys.stderr.write(line)
        sys.stderr.flush()
    except (OSError, ValueError, AttributeError):
        pass
