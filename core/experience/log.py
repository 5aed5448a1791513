"""The experience log: one-line verdicts on whether memory helped, and their shipping.

Whether memory helps is decided by the people and agents using it (BLI Memory spec,
"Live A/B: agent experience"). Each verdict is one entry:

- ``verdict``: ``win``, ``loss`` or ``noise``;
- ``store``: ``bli``, ``supermemory`` or ``both``, printed with the marker the person
  saw on the recall lines: ``[bli]``, ``◪``, or ``[bli]+◪`` for a joint opinion (it is
  not a win credited to each store);
- ``reason``: one line, at most :data:`MAX_REASON_CHARS` characters, an opinion about
  the tools, passed through :func:`bli_memory.core.memory.redaction.redact` before it is
  written anywhere. Anything else is refused with
  :class:`~bli_memory.core.errors.InvalidInputError` and nothing is written.

Where an entry goes:

1. One line appended to ``~/.codex/AGENT-EXPERIENCE.md`` (append-only, one
   ``write`` under an exclusive lock)::

       - 2026-11-30 14:05 ICT · claude-code · bli-memory · bli [bli] · win: <reason>

   The time zone is the setting ``BLI_MEMORY_EXPERIENCE_TZ`` (an IANA name such as
   ``Europe/Berlin``, or ``ICT`` / ``UTC``); the default is ICT (``Asia/Bangkok``,
   UTC+7), the zone the seed's team used.
2. One sidecar ``~/.codex/agent-experience-outbox/<uuid>.json`` (written to a temporary
   file and renamed into place) with ``"shipped": false`` until the store acknowledges
   it.
3. :func:`sync` ships queued sidecars: to the memory service's door
   ``POST /api/memory/experience`` when a service is configured
   (``BLI_MEMORY_DASHBOARD_URL`` or the paired session file), otherwise to the
   ``memory_experience`` table of the embedded store. At most :data:`SYNC_BATCH`
   entries per tick, oldest first; the tick stops at the first failure, never raises,
   and resends an entry whose answer was lost under the same UUID (the door answers
   200 to an identical retry). A 409 (same UUID, other content) is recorded on the
   sidecar as a conflict and a 400 as a rejection; neither is sent again.

Who and where:

- ``agent``: an explicit value (``--agent``), else the host the command runs under,
  from the variables each host plugin says its host sets for the commands it runs
  (``host_conventions``: ``CLAUDECODE`` -> ``claude-code``; ``CODEX_*`` -> ``codex``;
  ``GEMINI_CLI`` / ``GEMINI_SESSION_ID`` -> ``gemini-cli``; ``HERMES_SESSION_ID`` ->
  ``hermes``), else ``cli``. The MCP tool uses the name the MCP client gave in
  ``initialize``, matched against the plugins' ``client_names``.
- ``project``: an explicit value, else the name part of the memory space of the
  working directory (the repository name, or the folder name outside a repository).
- ``person``: the person named by the paired session (``cockpit login``), else the OS
  user name; the memory service derives person and device from the device token.

The parts: :mod:`~bli_memory.core.experience.entry` (the entry, its line, the reason's
rules), :mod:`~bli_memory.core.experience.origin` (agent, project, person, where the log
lives, from the host plugins), :mod:`~bli_memory.core.experience.outbox` (sidecars and the
sync tick) and :mod:`~bli_memory.core.experience.sinks` (service door or embedded store).
This module records and ships, and re-exports their public names. Settings, the store
and the space rules are imported inside the functions that need them.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import socket
import uuid
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from bli_memory.core.errors import InvalidInputError, StoreError
from bli_memory.core.experience.entry import (
    MARKERS,
    MAX_REASON_CHARS,
    SIDECAR_SCHEMA,
    STORES,
    VERDICTS,
    Entry,
    check_choice,
    clean_name,
    format_line,
    format_time,
    now_iso,
    validate_reason,
)
from bli_memory.core.experience.origin import (
    default_person,
    derive_project,
    detect_agent,
    experience_log_path,
    outbox_dir,
    project_from_space,
)
from bli_memory.core.experience.outbox import (
    SYNC_BATCH,
    OutboxItem,
    OutboxScan,
    SyncReport,
    read_outbox,
    sync,
    write_json,
)
from bli_memory.core.experience.sinks import DOOR_PATH
from bli_memory.core.private_files import make_private_dir
from bli_memory.core.timezones import DEFAULT_TZ, resolve_timezone

if TYPE_CHECKING:
    from bli_memory.core.settings import Settings

__all__ = [
    "DEFAULT_TZ",
    "DOOR_PATH",
    "MARKERS",
    "MAX_REASON_CHARS",
    "SIDECAR_SCHEMA",
    "STORES",
    "SYNC_BATCH",
    "VERDICTS",
    "Entry",
    "LogReceipt",
    "OutboxItem",
    "OutboxScan",
    "SyncReport",
    "detect_agent",
    "experience_log_path",
    "format_line",
    "format_time",
    "log_experience",
    "outbox_dir",
    "project_from_space",
    "read_outbox",
    "record",
    "resolve_timezone",
    "sync",
    "validate_reason",
]


def _append_line(path: Path, line: str) -> None:
    """Append one line with a single ``write`` under an exclusive lock (never a torn line)."""
    data = (line + "\n").encode("utf-8")
    fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        written = os.write(fd, data)
        if written != len(data):  # pragma: no cover - regular files write whole
            raise OSError("short write to the experience log")
        os.fsync(fd)
    finally:
        os.close(fd)


def _settings() -> Settings:
    from bli_memory.core.settings import load_settings

    return load_settings()



def record(
    verdict: str,
    store: str,
    reason: str,
    *,
    agent: str | None = None,
    project: str | None = None,
    person: str | None = None,
    cwd: str | None = None,
    now: datetime | None = None,
    settings: Settings | None = None,
    environ: Mapping[str, str] | None = None,
) -> Entry:
    """Record one entry: its sidecar (``shipped: false``) and its line in the log.

    Nothing is shipped here; see :func:`sync` and :func:`log_experience`.

    Args:
        verdict: ``win`` | ``loss`` | ``noise``.
        store: ``bli`` | ``supermemory`` | ``both``.
        reason: One line, at most 500 characters; redacted before it is written.
        agent: Who records it; default :func:`detect_agent`.
        project: What it is about; default the space name of ``cwd``.
        person: Default the OS user.
        cwd: Folder the project is derived from (default the current one).
        now: Moment of the entry (default now); must be timezone-aware.
        settings: Settings (default read from the environment).

    Returns:
        The :class:`Entry` written.

    Raises:
        InvalidInputError: bad verdict, store or reason; nothing was written.
        ConfigError: ``BLI_MEMORY_EXPERIENCE_TZ`` names no time zone.
        StoreError: the log or the outbox cannot be written (reason ``experience_write_failed``).
    """
    check_choice(verdict, VERDICTS, "the verdict")
    check_choice(store, STORES, "the store")
    text, masked = validate_reason(reason)
    settings = settings or _settings()
    zone, label = resolve_timezone(settings.experience_tz)
    moment = now or datetime.now(UTC)
    if moment.tzinfo is None:
        raise InvalidInputError("the entry's time must carry a time zone")
    created_at = now_iso(moment)
    agent_name = clean_name(agent, "cli") if agent else detect_agent(environ)
    project_name = clean_name(project, "unknown") if project else derive_project(cwd, environ)
    entry_id = str(uuid.uuid4())
    line = format_line(created_at=created_at, agent=agent_name, project=project_name, store=store,
                       verdict=verdict, reason=text, zone=zone, label=label)
    entry = Entry(
        id=entry_id, created_at=created_at, store=store, verdict=verdict, reason=text,
        agent=agent_name, project=project_name,
        person=clean_name(person, "unknown") if person else default_person(environ),
        device=clean_name(socket.gethostname(), "unknown"), line=line, masked=masked,
    )
    sidecar = {
        "schema": SIDECAR_SCHEMA, "id": entry.id, "created_at": entry.created_at,
        "store": entry.store, "marker": entry.marker, "verdict": entry.verdict,
        "reason": entry.reason, "agent": entry.agent, "project": entry.project,
        "person": entry.person, "device": entry.device, "line": entry.line, "masked": masked,
        "shipped": False, "shipped_at": None, "shipped_to": None, "attempts": 0,
        "last_attempt_at": None, "last_error": None, "conflict": None, "rejected": None,
    }
    box = outbox_dir(environ)
    log = experience_log_path(environ)
    sidecar_path = box / f"{entry.id}.json"
    try:
        make_private_dir(box)
        write_json(sidecar_path, sidecar)
        try:
            _append_line(log, line)
        except BaseException:
            with contextlib.suppress(OSError):
                sidecar_path.unlink()
            raise
    except OSError as exc:
        raise StoreError(
            f"cannot write the experience log under {box.parent}: {exc.strerror or exc}",
            reason="experience_write_failed",
        ) from exc
    return entry


@dataclass(frozen=True)
class LogReceipt:
    """What :func:`log_experience` did: the entry, where it was written, whether it shipped."""

    entry: Entry
    log_path: Path
    sidecar_path: Path
    shipped: bool
    shipped_to: str | None
    sync: SyncReport = field(default_factory=SyncReport)

    def as_dict(self) -> dict[str, Any]:
        """JSON-ready form (what ``cockpit memory log --json`` prints)."""
        e = self.entry
        return {
            "id": e.id,
            "receipt": {"line": e.line, "log": str(self.log_path), "sidecar": str(self.sidecar_path)},
            "shipped": self.shipped,
            "shipped_to": self.shipped_to,
            "entry": {"created_at": e.created_at, "store": e.store, "marker": e.marker,
                      "verdict": e.verdict, "reason": e.reason, "agent": e.agent,
                      "project": e.project, "person": e.person, "masked": e.masked},
            "sync": self.sync.as_dict(),
        }


def log_experience(
    verdict: str,
    store: str,
    reason: str,
    *,
    ship: bool = True,
    settings: Settings | None = None,
    environ: Mapping[str, str] | None = None,
    **who: Any,
) -> LogReceipt:
    """Record one entry (see :func:`record`), then run one sync tick unless ``ship`` is false.

    The tick never fails the call: a failed delivery leaves the entry queued and the
    receipt says so.

    Args:
        **who: ``agent``, ``project``, ``person``, ``cwd``, ``now`` for :func:`record`.

    Raises:
        InvalidInputError, ConfigError, StoreError: as :func:`record`.
    """
    settings = settings or _settings()
    entry = record(verdict, store, reason, settings=settings, environ=environ, **who)
    report = sync(settings=settings, environ=environ) if ship else SyncReport()
    sidecar_path = outbox_dir(environ) / f"{entry.id}.json"
    shipped, shipped_to = False, None
    with contextlib.suppress(OSError, ValueError):
        data = json.loads(sidecar_path.read_text(encoding="utf-8"))
        shipped, shipped_to = bool(data.get("shipped")), data.get("shipped_to")
    return LogReceipt(entry=entry, log_path=experience_log_path(environ), sidecar_path=sidecar_path,
                      shipped=shipped, shipped_to=shipped_to, sync=report)

