"""Where a hook's receipt goes: stderr, or a log file for hosts that show stderr to the person.

Each run writes exactly one receipt (:mod:`bli_memory.core.hooks.receipts`). Most hosts
keep a successful hook's stderr out of the person's view, so there the receipt goes to
stderr as the spec says. A host that shows it (its plugin's ``host_conventions`` sets
``receipts_in_log``; :func:`to_log` reads it, so core names no host) gets the receipt
appended to :func:`log_path` instead, and stderr stays quiet on ``ok`` and
``skipped``; a ``failed`` receipt is also written to stderr, so the person learns a
turn's memory failed (a failed stop tells them on stdout in the host's own format as
well). Which hosts do, and the source, is in their adapters.

The log file is ``memory-hook-receipts.log`` in the state dir, mode 0600, at most
:data:`LOG_MAX_BYTES` before it is rotated to ``.1`` (one old file kept). Standard
library only: the hook entry point imports this on every run.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import TYPE_CHECKING

from bli_memory.core.private_files import make_private_dir

if TYPE_CHECKING:
    import pluggy

__all__ = ["LOG_MAX_BYTES", "emit", "log_path", "to_log"]

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


def to_log(pm: pluggy.PluginManager | None, host: str) -> bool:
    """True when ``host``'s plugin asks for its receipts in the log file
    (``HostConventions.receipts_in_log``); False without a plugin manager. Never raises."""
    if pm is None:
        return False
    try:
        return any(c.host == host and c.receipts_in_log for c in pm.hook.host_conventions())
    except Exception:  # a broken plugin: the receipt goes to stderr, as for most hosts
        return False


def emit(line: str, *, log: bool, outcome: str, state_dir: Path) -> None:
    """Write one receipt ``line`` where the host does not show it to the person (never raises).

    Args:
        line: A receipt from :func:`bli_memory.core.hooks.receipts.format_receipt`.
        log: The host wants receipts in the log file (:func:`to_log`).
        outcome: ``ok``, ``skipped`` or ``failed``.
        state_dir: The state folder (:func:`bli_memory.core.paths.state_dir`).
    """
    to_stderr = not log or outcome == "failed"
    if log:
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
