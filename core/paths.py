"""Where BLI Memory keeps its files, derived from ``HOME`` and the XDG variables.

Standard library only: the hook entry point imports this on every prompt.

Layout (XDG Base Directory Specification, with the spec's defaults):

- data:   ``$XDG_DATA_HOME/bli-memory/`` (default ``~/.local/share/bli-memory/``), holding
  the embedded store ``memory.sqlite3``; ``BLI_MEMORY_DATA_DIR`` overrides the folder.
- state:  ``$XDG_STATE_HOME/bli-cockpit/`` (default ``~/.local/state/bli-cockpit/``),
  holding the daemon socket ``memory-daemon.sock``, the hook stats file and stamps.
  The folder name is the one the BLI Memory spec gives for the daemon socket.
- config: ``$XDG_CONFIG_HOME/bli-cockpit/`` (default ``~/.config/bli-cockpit/``), holding
  the paired ``session.json`` written by ``cockpit login``.
- cache:  ``$XDG_CACHE_HOME/bli-memory/`` (default ``~/.cache/bli-memory/``), holding
  what can be rebuilt: the compiled vendor secret rules (``secret-rules/``).

Every function reads the environment when called, so tests that point ``HOME`` at a
temporary folder get temporary paths.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path

__all__ = [
    "cache_dir",
    "config_dir",
    "daemon_socket_path",
    "data_dir",
    "home_dir",
    "hook_stats_path",
    "is_model_path",
    "session_file_path",
    "state_dir",
    "store_path",
]


def _env(environ: Mapping[str, str] | None) -> Mapping[str, str]:
    return os.environ if environ is None else environ


def home_dir(environ: Mapping[str, str] | None = None) -> Path:
    """The user's home folder: ``$HOME``, else what the OS reports."""
    home = _env(environ).get("HOME")
    return Path(home) if home else Path.home()


def is_model_path(spec: str) -> bool:
    """True when a ``BLI_MEMORY_EMBEDDER`` value is the path of a model folder rather than
    a registered name: it contains ``/`` or ``\\``, or starts with ``~`` or ``.``."""
    return "/" in spec or "\\" in spec or spec.startswith(("~", "."))


def _xdg(name: str, default: str, environ: Mapping[str, str] | None) -> Path:
    value = _env(environ).get(name, "")
    # The XDG spec says relative values are invalid and must be ignored.
    if value and os.path.isabs(value):
        return Path(value)
    return home_dir(environ) / default


def data_dir(environ: Mapping[str, str] | None = None) -> Path:
    """Folder of the embedded store (``BLI_MEMORY_DATA_DIR`` or XDG data + ``bli-memory``)."""
    override = Path(_env(environ).get("BLI_MEMORY_DATA_DIR", "").strip() or ".").expanduser()
    if override.is_absolute():  # blank or relative is refused by settings; never a cwd store
        return override
    return _xdg("XDG_DATA_HOME", ".local/share", environ) / "bli-memory"


def store_path(environ: Mapping[str, str] | None = None) -> Path:
    """Path of the embedded SQLite store file."""
    return data_dir(environ) / "memory.sqlite3"


def state_dir(environ: Mapping[str, str] | None = None) -> Path:
    """Folder for runtime state: daemon socket, hook stats, stamps."""
    return _xdg("XDG_STATE_HOME", ".local/state", environ) / "bli-cockpit"


def config_dir(environ: Mapping[str, str] | None = None) -> Path:
    """Folder for the paired session file."""
    return _xdg("XDG_CONFIG_HOME", ".config", environ) / "bli-cockpit"


def daemon_socket_path(environ: Mapping[str, str] | None = None) -> Path:
    """Unix socket of the resident daemon (``memory-daemon.sock``, mode 0600)."""
    return state_dir(environ) / "memory-daemon.sock"


def hook_stats_path(environ: Mapping[str, str] | None = None) -> Path:
    """JSON file with hourly hook counts per event and outcome."""
    return state_dir(environ) / "memory-hook-stats.json"


def cache_dir(environ: Mapping[str, str] | None = None) -> Path:
    """Folder of files that can be rebuilt, such as the compiled secret rules
    (``$XDG_CACHE_HOME/bli-memory``, default ``~/.cache/bli-memory``)."""
    return _xdg("XDG_CACHE_HOME", ".cache", environ) / "bli-memory"


def session_file_path(environ: Mapping[str, str] | None = None) -> Path:
    """The paired session written by ``cockpit login`` (device token, service URL)."""
    return config_dir(environ) / "session.json"
