"""What install created, so uninstall can take it away again.

Install records every file and folder it creates in ``installed-files.json`` under
the state dir (:func:`bli_memory.core.paths.state_dir`), mode 0600::

    {"files": ["/home/me/.codex/hooks.json", ...], "dirs": ["/home/me/.codex", ...],
     "gemini_trusted_folders": ["/home/me/project"]}

(the last: folders ``--trust-folder`` trusted, :mod:`bli_memory.adapters.gemini_trust`).

Uninstall then removes a recorded file when what is left of it holds nothing of
anyone else's (:func:`hollow`: empty text, or JSON made only of empty objects and
lists, such as ``{}`` or ``{"approvals": []}``), with its backups (they hold only
versions of a file we made), and removes a recorded folder once it is empty. A file
or folder install did not create is never removed: the person's empty ``{}`` stays.
A file that something else has since filled (``claude`` writes ``~/.claude.json``) is
kept, without a backup, and leaves the record (it is theirs now). Entries leave the
record when they are removed; an empty record is deleted, with the state folder when
nothing else is kept there.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from bli_memory.core.private_files import FILE_MODE, atomic_write, make_private_dir

__all__ = ["Record", "hollow", "missing_dirs", "record_path"]


def record_path() -> Path:
    """``$XDG_STATE_HOME/bli-cockpit/installed-files.json``."""
    from bli_memory.core.paths import state_dir

    return state_dir() / "installed-files.json"


def _hollow_value(value: Any) -> bool:
    if isinstance(value, dict):
        return all(_hollow_value(v) for v in value.values())
    if isinstance(value, list):
        return all(_hollow_value(v) for v in value)
    return False


def hollow(text: str | None) -> bool:
    """True when ``text`` holds nothing: blank, or JSON of only empty objects/lists.

    ``{}`` (JSON, and YAML's empty mapping), ``{"approvals": []}`` and an empty TOML file
    are hollow; any string, number or boolean anywhere makes it not hollow.
    """
    if text is None or not text.strip():
        return True
    try:
        data = json.loads(text)
    except ValueError:
        return False
    return isinstance(data, dict | list) and _hollow_value(data)


def missing_dirs(path: Path) -> list[Path]:
    """Folders above ``path`` that do not exist yet (the ones writing it creates), outermost first."""
    out: list[Path] = []
    parent = path.parent
    while not parent.exists() and parent != parent.parent:
        out.append(parent)
        parent = parent.parent
    return list(reversed(out))


class Record:
    """The record of created files and folders (read once, saved by :meth:`save`)."""

    def __init__(self, path: Path | None = None) -> None:
        self.path = path or record_path()
        try:
            data = json.loads(self.path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            data = {}
        files = data.get("files") if isinstance(data, dict) else None
        dirs = data.get("dirs") if isinstance(data, dict) else None
        self.files = {str(f) for f in files or [] if isinstance(f, str)}
        self.dirs = {str(d) for d in dirs or [] if isinstance(d, str)}
        trusted = data.get("gemini_trusted_folders") if isinstance(data, dict) else None
        self.trusted = {str(t) for t in trusted or [] if isinstance(t, str)}

    def created(self, path: str | Path) -> bool:
        """Whether install created this file."""
        return str(path) in self.files

    def remove_empty_dirs(self) -> list[str]:
        """Remove recorded folders that are now empty, deepest first; returns those removed."""
        removed = []
        for d in sorted(self.dirs, key=lambda p: p.count(os.sep), reverse=True):
            try:
                os.rmdir(d)
            except FileNotFoundError:
                pass
            except OSError:
                continue  # not empty: something else lives there now
            removed.append(d)
            self.dirs.discard(d)
        return removed

    def save(self) -> None:
        """Write the record atomically (0600), or delete it when it is empty."""
        if not self.files and not self.dirs and not self.trusted:
            self.path.unlink(missing_ok=True)
            try:
                self.path.parent.rmdir()  # our state folder, when nothing else is kept there
            except OSError:
                pass
            return
        make_private_dir(self.path.parent)
        atomic_write(self.path, json.dumps({"files": sorted(self.files), "dirs": sorted(self.dirs),
                                            "gemini_trusted_folders": sorted(self.trusted)}, indent=2) + "\n",
                     mode=FILE_MODE)
