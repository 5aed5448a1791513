"""What an uninstall of the last host takes away besides the hosts' entries, and what stays.

When no host keeps our entries, nothing will read the hook state any more: the
receipt and stats logs, the per-session injection logs, the daemon's lock, socket,
ready and stamp files, the passed-tag record and the install record
(``$XDG_STATE_HOME/bli-cockpit``), and the compiled secret rules
(``$XDG_CACHE_HOME/bli-memory``). They are removed, with the XDG parent folders they
leave empty (``~/.local/state``, ``~/.cache``), so ``install`` then ``uninstall --host
all`` leaves HOME as it was but for the memories.

What stays, and is named with the command that would erase it:

- the memories (the data dir: a reinstall, or an export, needs them);
- captures spooled for the team service and not sent yet (``<state>/spool``): they are
  memories on their way, sent by the next hook or ``bli-memory-mcp worker``.
"""

from __future__ import annotations

import shlex
import shutil
from collections.abc import Callable
from pathlib import Path

__all__ = ["remove_hook_state"]


def remove_hook_state(out: Callable[[str], object]) -> None:
    """Remove the hook state and rule cache (module docstring); say what stays, and where.

    Never raises: a file that cannot be removed is left, and the message still names the
    memories.
    """
    from bli_memory.core.paths import cache_dir, data_dir, home_dir, state_dir

    data, state, spool = data_dir(), state_dir(), state_dir() / "spool"
    kept = [("memories", data)] if data.is_dir() and any(data.iterdir()) else []
    kept_spool = spool.is_dir() and any(spool.iterdir())
    for folder in (state, cache_dir()):
        if _overlaps(folder, data):  # XDG folders pointed at one place: the memories win
            continue
        for entry in list(folder.iterdir()) if folder.is_dir() else []:
            if not (entry == spool and kept_spool):
                _remove(entry)
        _remove(folder, only_if_empty=True)
        _prune_empty_parents(folder.parent, home_dir())
    if kept_spool:
        kept.append(("captures not yet sent to the team service", spool))
    if kept:
        out("; ".join(f"{what} stay in {folder}" for what, folder in kept)
            + " (uninstall never deletes them); to erase them for good: rm -r "
            + " ".join(shlex.quote(str(folder)) for _, folder in kept) + "\n")


def _overlaps(folder: Path, data: Path) -> bool:
    """Whether ``folder`` is the data folder, holds it, or lies inside it: then nothing in
    it is removed (``XDG_CACHE_HOME`` and ``XDG_DATA_HOME`` set to one folder, or
    ``BLI_MEMORY_DATA_DIR`` inside the state folder, would otherwise lose the memories)."""
    a, b = folder.resolve(), data.resolve()
    return a == b or a in b.parents or b in a.parents


def _remove(path: Path, *, only_if_empty: bool = False) -> None:
    try:
        if path.is_dir() and not path.is_symlink():
            if only_if_empty:
                path.rmdir()
            else:
                shutil.rmtree(path)
        elif path.exists() or path.is_symlink():
            path.unlink()
    except OSError:
        pass


def _prune_empty_parents(folder: Path, home: Path) -> None:
    """Remove ``folder`` and its parents while they are empty, up to (not including) HOME."""
    try:
        folder.relative_to(home)
    except ValueError:
        return  # an XDG folder outside HOME is the person's own arrangement: left alone
    while folder != home and folder.is_dir():
        try:
            folder.rmdir()
        except OSError:
            return  # not empty
        folder = folder.parent
