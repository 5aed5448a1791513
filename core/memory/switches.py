"""Memory on/off switches and session recording, per space and global.

Stored in ``$XDG_CONFIG_HOME/bli-cockpit/memory-switches.json`` so the hook process
can read them with the standard library before loading anything::

    {"global": {"enabled": true},
     "spaces": {"repo_app__0123456789abcdef": {"enabled": false}},
     "recording": {"repo_app__0123456789abcdef": {"since": "2026-11-30T05:00:00Z"}}}

- ``enabled: false`` (global or for a space) switches recall AND capture off: hooks
  neither inject nor capture and say ``skipped {"reason":"disabled"}``; the memory
  tools say memory is off instead of pretending the record is empty.
- ``recording`` marks spaces whose sessions are recorded capture-only: each turn's
  exchange (bounded, redacted) is written to the recording table, never injected.
  Off by default; independent of ``enabled``.

Writes are atomic (temp file + rename). A missing or unreadable file means the
defaults: enabled, not recording.
"""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

from bli_memory.core import paths
from bli_memory.core.private_files import FILE_MODE, atomic_write, make_private_dir

__all__ = ["is_enabled", "is_recording", "load", "set_enabled", "set_recording", "status", "switches_path"]


def switches_path() -> Path:
    """Path of the switches file."""
    return paths.config_dir() / "memory-switches.json"


def load() -> dict[str, Any]:
    """The switches; defaults when the file is missing or unreadable.

    Only the known shape is kept (``global``: an object; ``spaces`` and ``recording``:
    objects of objects); anything else in a hand-edited file counts as absent.
    """
    try:
        data = json.loads(switches_path().read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    if not isinstance(data, dict):
        return {}
    shaped: dict[str, Any] = {}
    if isinstance(data.get("global"), dict):
        shaped["global"] = data["global"]
    for key in ("spaces", "recording"):
        if isinstance(data.get(key), dict):
            shaped[key] = {k: v for k, v in data[key].items() if isinstance(v, dict)}
    return shaped


def _save(data: dict[str, Any]) -> None:
    path = switches_path()
    make_private_dir(path.parent)
    atomic_write(path, json.dumps(data, indent=2, sort_keys=True), mode=FILE_MODE)


def is_enabled(space: str | None = None, data: dict[str, Any] | None = None) -> bool:
    """True unless memory is switched off globally or for ``space``."""
    data = load() if data is None else data
    if (data.get("global") or {}).get("enabled") is False:
        return False
    if space is not None and ((data.get("spaces") or {}).get(space) or {}).get("enabled") is False:
        return False
    return True


def is_recording(space: str, data: dict[str, Any] | None = None) -> bool:
    """True when sessions in ``space`` are being recorded (capture-only)."""
    data = load() if data is None else data
    return space in (data.get("recording") or {})


def set_enabled(enabled: bool, space: str | None = None) -> None:
    """Switch memory on or off for one space, or globally when ``space`` is None."""
    data = load()
    if space is None:
        data.setdefault("global", {})["enabled"] = enabled
    else:
        spaces = data.setdefault("spaces", {})
        if enabled:
            spaces.pop(space, None)
        else:
            spaces[space] = {"enabled": False}
    _save(data)


def set_recording(on: bool, space: str) -> None:
    """Start or stop recording sessions in ``space``."""
    data = load()
    rec = data.setdefault("recording", {})
    if on:
        rec.setdefault(space, {"since": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())})
    else:
        rec.pop(space, None)
    _save(data)


def status(space: str) -> dict[str, Any]:
    """Independent memory and recording state for ``space``."""
    data = load()
    global_on = is_enabled(None, data)
    return {
        "space": space,
        "enabled": is_enabled(space, data),
        "globalEnabled": global_on,
        "spaceEnabled": ((data.get("spaces") or {}).get(space) or {}).get("enabled", True) is not False,
        "recording": is_recording(space, data),
        "recordingSince": ((data.get("recording") or {}).get(space) or {}).get("since"),
    }
