"""Who records an experience entry and where the log lives, from the host plugins.

Core names no host: the agent a command runs under is read from the variables each host
plugin says its host sets (``host_conventions``: ``env_markers``, ``client_names``), and
the log's folder is the one a host plugin declares (``experience_dir``; the Codex plugin's
``~/.codex``, where the BLI Memory spec put ``AGENT-EXPERIENCE.md``). The plugins are read
once per process.
"""

from __future__ import annotations

import contextlib
import getpass
import os
import re
from collections.abc import Mapping, Sequence
from functools import cache
from pathlib import Path
from typing import TYPE_CHECKING

from bli_memory.core.errors import BliMemoryError
from bli_memory.core.experience.entry import clean_name

if TYPE_CHECKING:
    from bli_memory.core.models import HostConventions

__all__ = [
    "LOG_NAME",
    "OUTBOX_NAME",
    "default_person",
    "derive_project",
    "detect_agent",
    "experience_log_path",
    "host_conventions",
    "outbox_dir",
    "project_from_space",
]

#: File name of the append-only log (BLI Memory spec).
LOG_NAME = "AGENT-EXPERIENCE.md"
#: Folder name of the per-entry sidecars, beside the log.
OUTBOX_NAME = "agent-experience-outbox"

_SPACE_TAG = re.compile(r"^(?:repo|dir)_(?P<name>.+)__[0-9a-f]{16}$")


@cache
def host_conventions() -> tuple[HostConventions, ...]:
    """Every installed host plugin's :class:`~bli_memory.core.models.HostConventions`, by host name.

    Read once per process from the ``bli_memory.hosts`` entry points.
    """
    from bli_memory.core.plugins import get_plugin_manager

    found = get_plugin_manager(core_plugins=False).hook.host_conventions()
    return tuple(sorted(found, key=lambda c: c.host))


def _log_dir(environ: Mapping[str, str] | None) -> Path:
    """The folder of the log: the one a host plugin declares, else the data folder."""
    from bli_memory.core import paths

    declared = next((c.experience_dir for c in host_conventions() if c.experience_dir), None)
    if declared is None:
        return paths.data_dir(environ)
    return paths.home_dir(environ) / declared


def experience_log_path(environ: Mapping[str, str] | None = None) -> Path:
    """The append-only log, ``~/.codex/AGENT-EXPERIENCE.md`` (the folder the Codex plugin declares)."""
    return _log_dir(environ) / LOG_NAME


def outbox_dir(environ: Mapping[str, str] | None = None) -> Path:
    """Folder of the per-entry sidecars, ``~/.codex/agent-experience-outbox/``."""
    return _log_dir(environ) / OUTBOX_NAME


def detect_agent(environ: Mapping[str, str] | None = None, *, client_name: str | None = None,
                 conventions: Sequence[HostConventions] | None = None) -> str:
    """Which agent is recording, from an MCP client name or the host's environment variables.

    Args:
        environ: Environment to read (default ``os.environ``).
        client_name: ``clientInfo.name`` from the MCP ``initialize`` request, if any.
        conventions: The hosts to recognise (default: every installed host plugin's,
            :func:`host_conventions`); checked in order of host name.

    Returns:
        The agent name a host plugin gives (``claude-code``, ``codex``, ``gemini-cli``,
        ``hermes``, ...), the cleaned client name, or ``cli`` when nothing names a host.
    """
    hosts = host_conventions() if conventions is None else conventions
    if client_name:
        lowered = client_name.lower()
        for conv in hosts:
            if any(needle in lowered for needle in conv.client_names):
                return conv.agent
    env = os.environ if environ is None else environ
    for conv in hosts:
        if any(env.get(var, "").strip() for var in conv.env_markers):
            return conv.agent
    if client_name:
        return clean_name(client_name, "mcp")
    return "cli"


def project_from_space(tag: str) -> str:
    """The project name in a container tag: ``repo_<name>__<sha16>`` -> ``<name>``.

    A forced tag (``BLI_MEMORY_CONTAINER_TAG``) is its own name.
    """
    match = _SPACE_TAG.match(tag)
    return clean_name(match.group("name") if match else tag, "unknown")


def derive_project(cwd: str | None, environ: Mapping[str, str] | None) -> str:
    """The name part of ``cwd``'s memory space (default the current folder), else its folder name."""
    from bli_memory.core.memory.spaces import derive_space

    where = cwd or os.getcwd()
    try:
        return clean_name(derive_space(where, environ=environ).name, "unknown")
    except ValueError:
        return clean_name(os.path.basename(os.path.abspath(where)), "unknown")


def default_person(environ: Mapping[str, str] | None) -> str:
    """The paired session's person when this machine is paired, else the OS user."""
    from bli_memory.core.team.client.pairing import read_session

    with contextlib.suppress(BliMemoryError):
        session = read_session(environ)
        if session is not None and session.person:
            return clean_name(session.person, "unknown")
    try:
        return clean_name(getpass.getuser(), "unknown")
    except (OSError, KeyError):
        return "unknown"

