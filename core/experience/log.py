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
  from the variables each host sets for the commands it runs (``CLAUDECODE`` ->
  ``claude-code``; ``CODEX_*`` -> ``codex``; ``GEMINI_CLI`` / ``GEMINI_SESSION_ID`` ->
  ``gemini-cli``; ``HERMES_SESSION_ID`` -> ``hermes``), else ``cli``. The MCP tool
  uses the name the MCP client gave in ``initialize``.
- ``project``: an explicit value, else the name part of the memory space of the
  working directory (the repository name, or the folder name outside a repository).
- ``person``: the person named by the paired session (``cockpit login``), else the OS
  user name; the memory service derives person and device from the device token.

This module imports only the standard library at the top; settings, the store and the
space rules are imported inside the functions that need them.
"""

from __future__ import annotations

import contextlib
import fcntl
import getpass
import json
import os
import re
import socket
import tempfile
import uuid
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta, tzinfo
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from bli_memory.core.errors import (
    BliMemoryError,
    InvalidInputError,
    ServiceError,
    StoreError,
)
from bli_memory.core.private_files import make_private_dir

if TYPE_CHECKING:
    from bli_memory.core.settings import Settings

from bli_memory.core.timezones import DEFAULT_TZ, resolve_timezone

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

#: Verdicts a person or agent can give (BLI Memory spec, "Live A/B").
VERDICTS = ("win", "loss", "noise")
#: Stores an opinion can be about; ``both`` is one joint opinion.
STORES = ("bli", "supermemory", "both")
#: The marker each store prints on its recall lines, copied into the entry.
MARKERS = {"bli": "[bli]", "supermemory": "\u25ea", "both": "[bli]+\u25ea"}
#: Longest reason, in characters (code points), before and after redaction.
MAX_REASON_CHARS = 500
#: Most entries one sync tick ships (BLI Memory spec).
SYNC_BATCH = 20
#: The memory service's experience door.
DOOR_PATH = "/api/memory/experience"
#: ``schema`` value of every sidecar.
SIDECAR_SCHEMA = "bli-memory-experience.v1"

#: Abbreviations accepted for ``BLI_MEMORY_EXPERIENCE_TZ`` and the zone each names.
#: tzdata writes Asia/Bangkok as "+07", so the label people use is kept here.

#: Environment variables hosts set for the commands they run, and the agent each names
#: (docs/hosts.md; Codex and Gemini set theirs for shell commands).
_AGENT_ENV = (
    ("CLAUDECODE", "claude-code"),
    ("CLAUDE_CODE_ENTRYPOINT", "claude-code"),
    ("CODEX_THREAD_ID", "codex"),
    ("CODEX_SANDBOX", "codex"),
    ("CODEX_SANDBOX_NETWORK_DISABLED", "codex"),
    ("CODEX_MANAGED_BY_NPM", "codex"),
    ("GEMINI_CLI", "gemini-cli"),
    ("GEMINI_SESSION_ID", "gemini-cli"),
    ("HERMES_SESSION_ID", "hermes"),
)
_CLIENT_NAMES = (("claude", "claude-code"), ("codex", "codex"), ("gemini", "gemini-cli"),
                 ("hermes", "hermes"))

_LINE_BREAKS = re.compile("[\n\r\x0b\x0c\x1c\x1d\x1e\x85\u2028\u2029]")
_CONTROL = re.compile("[\x00-\x08\x0e-\x1b\x1f\x7f]")
_NAME_CHARS = re.compile(r"[^A-Za-z0-9._@+-]+")
_SPACE_TAG = re.compile(r"^(?:repo|dir)_(?P<name>.+)__[0-9a-f]{16}$")
_HTTP_TIMEOUT_S = 5.0


# --- where -----------------------------------------------------------------------


def _codex_dir(environ: Mapping[str, str] | None = None) -> Path:
    from bli_memory.core.paths import home_dir

    return home_dir(environ) / ".codex"


def experience_log_path(environ: Mapping[str, str] | None = None) -> Path:
    """The append-only log ``~/.codex/AGENT-EXPERIENCE.md`` (path fixed by the BLI Memory spec)."""
    return _codex_dir(environ) / "AGENT-EXPERIENCE.md"


def outbox_dir(environ: Mapping[str, str] | None = None) -> Path:
    """Folder of the per-entry sidecars, ``~/.codex/agent-experience-outbox/``."""
    return _codex_dir(environ) / "agent-experience-outbox"


# --- the entry -------------------------------------------------------------------


@dataclass(frozen=True)
class Entry:
    """One experience entry, as written to the log and its sidecar.

    Attributes:
        id: UUID (version 4), also the sidecar's file name and the idempotency key
            the service sees.
        created_at: When it was recorded, UTC ISO 8601 with microseconds and ``Z``;
            shipped as is, so an offline opinion keeps its time.
        store: ``bli`` | ``supermemory`` | ``both``.
        verdict: ``win`` | ``loss`` | ``noise``.
        reason: The redacted reason, one line.
        agent: Which agent (or ``cli``) recorded it.
        project: Project (space name or folder) it is about.
        person: OS user that recorded it.
        device: Host name of the machine.
        line: The exact line appended to the log, without the newline.
        masked: How many secrets redaction replaced in the reason.
    """

    id: str
    created_at: str
    store: str
    verdict: str
    reason: str
    agent: str
    project: str
    person: str
    device: str
    line: str
    masked: int = 0

    @property
    def marker(self) -> str:
        """The store's marker: ``[bli]``, ``◪`` or ``[bli]+◪``."""
        return MARKERS[self.store]

    def payload(self) -> dict[str, str]:
        """The body the service door takes: ``{id, store, verdict, reason, created_at}``."""
        return {"id": self.id, "store": self.store, "verdict": self.verdict, "reason": self.reason,
                "created_at": self.created_at}


def _now_iso(moment: datetime) -> str:
    return moment.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def _parse_iso(value: str) -> datetime:
    moment = datetime.fromisoformat(value)
    return moment if moment.tzinfo else moment.replace(tzinfo=UTC)


def _tz_label(moment: datetime, label: str | None) -> str:
    if label:
        return label
    name = moment.tzname() or ""
    if name.isalpha():
        return name
    offset = moment.utcoffset() or timedelta(0)
    minutes = int(offset.total_seconds() // 60)
    sign = "+" if minutes >= 0 else "-"
    return f"UTC{sign}{abs(minutes) // 60:02d}:{abs(minutes) % 60:02d}"


def format_time(moment: datetime, zone: tzinfo, label: str | None) -> str:
    """``YYYY-MM-DD HH:MM <tz>`` of a moment in a zone from :func:`resolve_timezone`."""
    local = moment.astimezone(zone)
    return f"{local.strftime('%Y-%m-%d %H:%M')} {_tz_label(local, label)}"


def _clean_name(value: str, default: str) -> str:
    """A field of the line: no separators, no spaces, at most 64 characters."""
    cleaned = _NAME_CHARS.sub("-", value.strip()).strip("-")[:64]
    return cleaned or default


def format_line(
    *, created_at: str, agent: str, project: str, store: str, verdict: str, reason: str,
    zone: tzinfo, label: str | None,
) -> str:
    """The log line of one entry (BLI Memory spec format), without the newline.

    ``- YYYY-MM-DD HH:MM <tz> · <agent> · <project> · <store> <marker> · <verdict>: <reason>``

    Args:
        created_at: UTC ISO 8601 time of the entry.
        zone: Zone the time is shown in; ``label`` as returned by :func:`resolve_timezone`.
    """
    return (
        f"- {format_time(_parse_iso(created_at), zone, label)} \u00b7 {agent} \u00b7 "
        f"{project} \u00b7 {store} {MARKERS[store]} \u00b7 {verdict}: {reason}"
    )


def validate_reason(reason: str) -> tuple[str, int]:
    """Check a reason and redact it.

    Rules (BLI Memory spec, "Live A/B"): one line (no line break of any kind), not
    blank, at most :data:`MAX_REASON_CHARS` characters as written and after secrets
    were masked. Surrounding whitespace is dropped; control characters other than tab
    are refused.

    Args:
        reason: The reason as the person or agent gave it.

    Returns:
        ``(redacted_reason, masked_count)``.

    Raises:
        InvalidInputError: the reason breaks a rule; the message says which.
    """
    from bli_memory.core.memory.redaction import redact

    if not isinstance(reason, str):
        raise InvalidInputError("the reason must be text")
    if _LINE_BREAKS.search(reason.strip()):
        raise InvalidInputError(
            "the reason must be one line: it contains a line break; write it on one line"
        )
    text = reason.strip().replace("\t", " ")
    if not text:
        raise InvalidInputError("the reason is empty: say in one line why memory helped or not")
    if _CONTROL.search(text):
        raise InvalidInputError("the reason contains a control character; write plain text")
    if len(text) > MAX_REASON_CHARS:
        raise InvalidInputError(
            f"the reason is {len(text)} characters; at most {MAX_REASON_CHARS} are accepted"
        )
    text = text.encode("utf-8", "replace").decode("utf-8")  # lone surrogates -> "?"
    redacted = redact(text)
    if len(redacted.text) > MAX_REASON_CHARS:
        raise InvalidInputError(
            f"after masking {redacted.masked} secret(s) the reason is {len(redacted.text)} "
            f"characters; at most {MAX_REASON_CHARS} are accepted (and leave secrets out)"
        )
    return redacted.text, redacted.masked


def _check_choice(value: str, allowed: tuple[str, ...], what: str) -> str:
    if value not in allowed:
        raise InvalidInputError(f"{what} must be one of {', '.join(allowed)}, not {value!r}")
    return value


def detect_agent(environ: Mapping[str, str] | None = None, *, client_name: str | None = None) -> str:
    """Which agent is recording, from an MCP client name or the host's environment variables.

    Args:
        environ: Environment to read (default ``os.environ``).
        client_name: ``clientInfo.name`` from the MCP ``initialize`` request, if any.

    Returns:
        ``claude-code``, ``codex``, ``gemini-cli``, ``hermes``, the cleaned client name,
        or ``cli`` when nothing names a host.
    """
    if client_name:
        lowered = client_name.lower()
        for needle, agent in _CLIENT_NAMES:
            if needle in lowered:
                return agent
    env = os.environ if environ is None else environ
    for var, agent in _AGENT_ENV:
        if env.get(var, "").strip():
            return agent
    if client_name:
        return _clean_name(client_name, "mcp")
    return "cli"


def project_from_space(tag: str) -> str:
    """The project name in a container tag: ``repo_<name>__<sha16>`` -> ``<name>``.

    A forced tag (``BLI_MEMORY_CONTAINER_TAG``) is its own name.
    """
    match = _SPACE_TAG.match(tag)
    return _clean_name(match.group("name") if match else tag, "unknown")


def _derive_project(cwd: str | None, environ: Mapping[str, str] | None) -> str:
    from bli_memory.core.memory.spaces import derive_space

    where = cwd or os.getcwd()
    try:
        return _clean_name(derive_space(where, environ=environ).name, "unknown")
    except ValueError:
        return _clean_name(os.path.basename(os.path.abspath(where)), "unknown")


def _person(environ: Mapping[str, str] | None) -> str:
    """The paired session's person when this machine is paired, else the OS user."""
    from bli_memory.core.team.pairing import read_session

    with contextlib.suppress(BliMemoryError):
        session = read_session(environ)
        if session is not None and session.person:
            return _clean_name(session.person, "unknown")
    try:
        return _clean_name(getpass.getuser(), "unknown")
    except (OSError, KeyError):
        return "unknown"


# --- atomic files ----------------------------------------------------------------


def _write_json(path: Path, data: Mapping[str, Any]) -> None:
    """Replace ``path`` with ``data`` as JSON: temporary file, fsync, rename."""
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=".tmp-", suffix=".json")
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            json.dump(data, fh, ensure_ascii=False, indent=2, sort_keys=True)
            fh.write("\n")
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise


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


def _mkdir(path: Path) -> None:
    make_private_dir(path)


# --- recording -------------------------------------------------------------------


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
    _check_choice(verdict, VERDICTS, "the verdict")
    _check_choice(store, STORES, "the store")
    text, masked = validate_reason(reason)
    settings = settings or _settings()
    zone, label = resolve_timezone(settings.experience_tz)
    moment = now or datetime.now(UTC)
    if moment.tzinfo is None:
        raise InvalidInputError("the entry's time must carry a time zone")
    created_at = _now_iso(moment)
    agent_name = _clean_name(agent, "cli") if agent else detect_agent(environ)
    project_name = _clean_name(project, "unknown") if project else _derive_project(cwd, environ)
    entry_id = str(uuid.uuid4())
    line = format_line(created_at=created_at, agent=agent_name, project=project_name, store=store,
                       verdict=verdict, reason=text, zone=zone, label=label)
    entry = Entry(
        id=entry_id, created_at=created_at, store=store, verdict=verdict, reason=text,
        agent=agent_name, project=project_name, person=_clean_name(person, "unknown") if person
        else _person(environ), device=_clean_name(socket.gethostname(), "unknown"), line=line, masked=masked,
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
        _mkdir(box)
        _write_json(sidecar_path, sidecar)
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


# --- the outbox ------------------------------------------------------------------


@dataclass(frozen=True)
class OutboxItem:
    """One sidecar as read from the outbox."""

    path: Path
    data: dict[str, Any]

    @property
    def id(self) -> str:
        """The entry's UUID."""
        return str(self.data.get("id", ""))

    @property
    def created_at(self) -> str:
        """When the entry was recorded (UTC ISO 8601)."""
        return str(self.data.get("created_at", ""))

    @property
    def queued(self) -> bool:
        """Not yet acknowledged, and not held back by a conflict or rejection."""
        return not self.data.get("shipped") and not self.data.get("conflict") and not self.data.get(
            "rejected"
        )


@dataclass(frozen=True)
class OutboxScan:
    """Every readable sidecar, oldest first, and the names of unreadable ones."""

    items: tuple[OutboxItem, ...]
    unreadable: tuple[str, ...]


def _valid_sidecar(data: Any) -> bool:
    return (
        isinstance(data, dict)
        and isinstance(data.get("id"), str)
        and isinstance(data.get("created_at"), str)
        and data.get("store") in STORES
        and data.get("verdict") in VERDICTS
        and isinstance(data.get("reason"), str)
    )


def read_outbox(environ: Mapping[str, str] | None = None) -> OutboxScan:
    """Read every sidecar of the outbox, sorted by ``(created_at, id)``.

    A file that cannot be read or parsed is listed in ``unreadable`` (and never
    shipped) rather than stopping the scan. A missing outbox is an empty one.
    """
    box = outbox_dir(environ)
    items: list[OutboxItem] = []
    bad: list[str] = []
    try:
        names = sorted(p for p in box.iterdir() if p.suffix == ".json" and not p.name.startswith("."))
    except FileNotFoundError:
        return OutboxScan((), ())
    except OSError:
        return OutboxScan((), (str(box),))
    for path in names:
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            bad.append(path.name)
            continue
        if not _valid_sidecar(data):
            bad.append(path.name)
            continue
        items.append(OutboxItem(path, data))
    items.sort(key=lambda it: (it.created_at, it.id))
    return OutboxScan(tuple(items), tuple(bad))


# --- where entries are shipped ---------------------------------------------------


class _Sink(Protocol):
    target: str

    def put(self, payload: dict[str, str], extra: Mapping[str, Any]) -> int:
        """Deliver one entry; return 201, 200, 409 or 400, or raise a BliMemoryError."""
        ...


class _HttpSink:
    """The service door, over the standard library's HTTP client."""

    def __init__(self, base_url: str, token: str, *, timeout: float = _HTTP_TIMEOUT_S) -> None:
        self.url = base_url.rstrip("/") + DOOR_PATH
        self.target = "service"
        self._token = token
        self._timeout = timeout

    def put(self, payload: dict[str, str], extra: Mapping[str, Any]) -> int:
        import http.client
        import urllib.error
        import urllib.request

        from bli_memory.core._version import VERSION

        body = json.dumps(payload, ensure_ascii=False).encode("utf-8")
        request = urllib.request.Request(
            self.url, data=body, method="POST",
            headers={"Content-Type": "application/json", "Accept": "application/json",
                     "Authorization": f"Bearer {self._token}",
                     "User-Agent": f"bli-memory-mcp/{VERSION}"},
        )
        try:
            with urllib.request.urlopen(request, timeout=self._timeout) as response:
                status = int(response.status)
                response.read()
        except urllib.error.HTTPError as exc:
            status = int(exc.code)
            with contextlib.suppress(Exception):
                exc.read()
            exc.close()
        except TimeoutError as exc:
            raise ServiceError("the memory service did not answer in time", reason="timeout") from exc
        except urllib.error.URLError as exc:
            if isinstance(exc.reason, TimeoutError):
                raise ServiceError("the memory service did not answer in time", reason="timeout") from exc
            raise ServiceError("the memory service is unreachable", reason="dashboard_unreachable") from exc
        except (http.client.HTTPException, OSError) as exc:
            raise ServiceError(
                "the connection to the memory service broke before it answered",
                reason="dashboard_unreachable",
            ) from exc
        if status in (200, 201, 400, 409):
            return status
        raise ServiceError(f"the memory service answered HTTP {status}", reason=f"http_{status}")


class _LocalSink:
    """The ``memory_experience`` table of the embedded store (no service configured)."""

    def __init__(self, store_path: Path) -> None:
        self.path = store_path
        self.target = "local"
        self._store: Any = None

    def put(self, payload: dict[str, str], extra: Mapping[str, Any]) -> int:
        if self._store is None:
            from bli_memory.core.embedded.store import SQLiteStore
            from bli_memory.core.memory import embeddings

            self._store = SQLiteStore(self.path, model_name=embeddings.MODEL_NAME,
                                      dimensions=embeddings.DIMENSIONS)
        status = self._store.add_experience({**payload, **{k: extra.get(k) for k in
                                                            ("person", "device", "agent", "project")}})
        return {"created": 201, "identical": 200, "conflict": 409}[status]

    def close(self) -> None:
        if self._store is not None:
            self._store.close()


def _sink(settings: Settings) -> _Sink:
    """The service when one is configured, else the embedded store.

    The service's URL and device token come from ``BLI_MEMORY_DASHBOARD_URL`` /
    ``BLI_MEMORY_DEVICE_TOKEN``, else from the paired session
    (:func:`bli_memory.core.team.pairing.read_session`).

    Raises:
        ServiceError: a service is configured but no device token is known (``unpaired``).
        ConfigError: the session file exists but cannot be read.
    """
    if not settings.remote:
        return _LocalSink(settings.store_path)
    from bli_memory.core.team.pairing import read_session

    session = read_session()
    url = settings.dashboard_url or (session.dashboard_url if session else None)
    token = (settings.device_token.get_secret_value() if settings.device_token else None) or (
        session.device_token if session else None
    )
    if not url or not token:
        raise ServiceError(
            "this machine is not paired with the memory service (run `cockpit login`)",
            reason="unpaired",
        )
    return _HttpSink(url, token)


@dataclass(frozen=True)
class SyncReport:
    """What one sync tick did.

    Attributes:
        target: ``service``, ``local`` or None when nothing was attempted.
        attempted: Entries sent this tick (at most :data:`SYNC_BATCH`).
        shipped: Ids acknowledged this tick (201 or 200), in the order sent.
        conflicts: Ids the store answered 409 for (recorded, never resent).
        rejected: Ids the store answered 400 for (recorded, never resent).
        failed: Id whose delivery failed and stopped the tick, if any.
        reason: Closed-set reason of the failure (``timeout``, ``http_503``,
            ``dashboard_unreachable``, ``unpaired``, ``store_busy``, ...), if any.
        queued: Entries still waiting after this tick.
        busy: Another sync held the outbox lock, so this tick did nothing.
    """

    target: str | None = None
    attempted: int = 0
    shipped: tuple[str, ...] = ()
    conflicts: tuple[str, ...] = ()
    rejected: tuple[str, ...] = ()
    failed: str | None = None
    reason: str | None = None
    queued: int = 0
    busy: bool = False

    def as_dict(self) -> dict[str, Any]:
        """JSON-ready form."""
        return {"target": self.target, "attempted": self.attempted, "shipped": list(self.shipped),
                "conflicts": list(self.conflicts), "rejected": list(self.rejected),
                "failed": self.failed, "reason": self.reason, "queued": self.queued,
                "busy": self.busy}


@contextlib.contextmanager
def _sync_lock(box: Path) -> Iterator[bool]:
    _mkdir(box)
    fd = os.open(box / ".sync.lock", os.O_WRONLY | os.O_CREAT, 0o600)
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            yield False
            return
        yield True
    finally:
        os.close(fd)


def _update(item: OutboxItem, **changes: Any) -> None:
    data = {**item.data, **changes}
    _write_json(item.path, data)


def sync(
    *,
    settings: Settings | None = None,
    limit: int = SYNC_BATCH,
    environ: Mapping[str, str] | None = None,
    sink: _Sink | None = None,
) -> SyncReport:
    """Ship queued entries, oldest first; never raises.

    At most ``limit`` entries (:data:`SYNC_BATCH`, the spec's 20) per tick, in
    ``(created_at, id)`` order. 201 and 200 mark the sidecar ``shipped: true``; 409
    records ``conflict`` and 400 records ``rejected`` on the sidecar (neither is sent
    again, and the tick goes on); any other answer or a transport failure records
    ``last_error`` and ends the tick, leaving that entry and the rest queued. An entry
    whose answer was lost is resent under the same UUID next tick, and the door
    answers 200 for the identical retry. Only one tick runs at a time per outbox.

    Args:
        settings: Settings (default read from the environment).
        limit: Most entries to send, 1-20.
        sink: Where to ship (tests); default the service if configured, else the
            embedded store.

    Returns:
        A :class:`SyncReport`.
    """
    limit = max(1, min(int(limit), SYNC_BATCH))
    box = outbox_dir(environ)
    try:
        with _sync_lock(box) as held:
            if not held:
                return SyncReport(busy=True, queued=sum(i.queued for i in read_outbox(environ).items))
            return _tick(settings, limit, environ, sink)
    except Exception as exc:  # a sync must never fail its caller
        reason = exc.reason if isinstance(exc, BliMemoryError) else f"unknown_internal:{type(exc).__name__}"
        return SyncReport(reason=reason)


def _tick(settings: Settings | None, limit: int, environ: Mapping[str, str] | None,
          sink: _Sink | None) -> SyncReport:
    queued = [i for i in read_outbox(environ).items if i.queued]
    if not queued:
        return SyncReport()
    try:
        chosen = sink or _sink(settings or _settings())
    except BliMemoryError as exc:
        return SyncReport(reason=exc.reason, queued=len(queued))
    shipped: list[str] = []
    conflicts: list[str] = []
    rejected: list[str] = []
    failed: str | None = None
    reason: str | None = None
    attempted = 0
    try:
        for item in queued[:limit]:
            attempted += 1
            at = _now_iso(datetime.now(UTC))
            attempts = int(item.data.get("attempts") or 0) + 1
            payload = {k: str(item.data[k]) for k in ("id", "store", "verdict", "reason", "created_at")}
            try:
                status = chosen.put(payload, item.data)
            except BliMemoryError as exc:
                failed, reason = item.id, exc.reason
                _update(item, attempts=attempts, last_attempt_at=at, last_error=exc.reason)
                break
            if status in (200, 201):
                _update(item, shipped=True, shipped_at=at, shipped_to=chosen.target,
                        attempts=attempts, last_attempt_at=at, last_error=None)
                shipped.append(item.id)
            elif status == 409:
                _update(item, attempts=attempts, last_attempt_at=at, last_error="conflict",
                        conflict={"status": 409, "at": at, "target": chosen.target})
                conflicts.append(item.id)
            else:
                _update(item, attempts=attempts, last_attempt_at=at, last_error="invalid_input",
                        rejected={"status": status, "at": at, "target": chosen.target})
                rejected.append(item.id)
    finally:
        close = getattr(chosen, "close", None)
        if close is not None and sink is None:
            close()
    remaining = len(queued) - len(shipped) - len(conflicts) - len(rejected)
    return SyncReport(target=chosen.target, attempted=attempted, shipped=tuple(shipped),
                      conflicts=tuple(conflicts), rejected=tuple(rejected), failed=failed,
                      reason=reason, queued=remaining)


# --- record and ship -------------------------------------------------------------


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
