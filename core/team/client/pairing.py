"""The paired session: which memory service this machine talks to, and its device token.

``cockpit login`` (:func:`login`) proves a device token against the service and
writes ``~/.config/bli-cockpit/session.json`` (path from
:func:`bli_memory.core.paths.session_file_path`; folder 0700, file 0600, written
atomically). The MCP server, the hooks and the daemon read it
(:func:`read_session`) to reach the service; ``BLI_MEMORY_DASHBOARD_URL`` and
``BLI_MEMORY_DEVICE_TOKEN`` override its two values (BLI Memory spec, "Auth").

File format (version 1)::

    {"version": 1, "dashboard_url": "https://memory.example.com", "device_token": "blim_...",
     "person": "alice", "device": "laptop", "paired_at": "2026-11-30T05:00:00.000000Z"}

:func:`remote_target` answers which service and token a process should use (the
environment first, then the session).

Standard library only at import time: the hook entry path reads this file; httpx is
imported by :func:`login` alone (through :mod:`bli_memory.core.team.client.service_client`).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import asdict, dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from bli_memory.core import paths
from bli_memory.core.errors import ConfigError, ServiceError
from bli_memory.core.private_files import FILE_MODE, atomic_write, make_private_dir

__all__ = [
    "SESSION_VERSION",
    "UNPAIRED_MESSAGE",
    "Session",
    "check_paired",
    "clear_session",
    "login",
    "read_session",
    "remote_target",
    "write_session",
]

SESSION_VERSION = 1
#: The one sentence a process prints when a service is configured but no token is.
UNPAIRED_MESSAGE = (
    "This machine is not paired with the BLI memory service: run `cockpit login` "
    "or set BLI_MEMORY_DEVICE_TOKEN."
)


@dataclass(frozen=True)
class Session:
    """A paired machine's link to the memory service.

    Attributes:
        dashboard_url: Base URL of the service (no trailing slash).
        device_token: The device token (secret; never logged).
        person: Who the token proves, as the service named them at login.
        device: The device label of the token.
        paired_at: When ``login`` wrote the file (UTC ISO 8601).
    """

    dashboard_url: str
    device_token: str
    person: str | None = None
    device: str | None = None
    paired_at: str = ""

    def __repr__(self) -> str:  # the token must not reach a log line by accident
        return (f"Session(dashboard_url={self.dashboard_url!r}, person={self.person!r}, "
                f"device={self.device!r})")


def read_session(environ: Mapping[str, str] | None = None) -> Session | None:
    """The paired session, or None when this machine is not paired.

    Raises:
        ConfigError: the file exists but cannot be read or is not a session file.
    """
    path = paths.session_file_path(environ)
    try:
        raw = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return None
    except OSError as exc:
        raise ConfigError(f"cannot read the paired session {path}: {exc.strerror}") from exc
    try:
        data = json.loads(raw)
        url, token = data["dashboard_url"], data["device_token"]
        if not isinstance(url, str) or not isinstance(token, str) or not url or not token:
            raise TypeError("empty")
    except (ValueError, KeyError, TypeError) as exc:
        raise ConfigError(f"the paired session {path} is not readable; run `cockpit login` again") from exc
    return Session(dashboard_url=url.rstrip("/"), device_token=token, person=data.get("person"),
                   device=data.get("device"), paired_at=str(data.get("paired_at", "")))


def write_session(session: Session, environ: Mapping[str, str] | None = None) -> Path:
    """Write the session file atomically with mode 0600; returns its path."""
    path = paths.session_file_path(environ)
    make_private_dir(path.parent)
    body = {"version": SESSION_VERSION, **asdict(session)}
    atomic_write(path, json.dumps(body, indent=2) + "\n", mode=FILE_MODE)
    return path


def clear_session(environ: Mapping[str, str] | None = None) -> bool:
    """Unpair this machine; returns False when it was not paired."""
    try:
        paths.session_file_path(environ).unlink()
    except FileNotFoundError:
        return False
    return True


def login(url: str, token: str, *, timeout: float = 10.0, transport: Any | None = None,
          environ: Mapping[str, str] | None = None) -> Session:
    """Pair this machine: prove ``token`` against the service at ``url``, then write the session.

    Args:
        url: Base URL of the memory service (``http(s)://host[:port]``).
        token: A device token from ``bli-memory-mcp service token create``.
        timeout: Seconds for the check.
        transport: An httpx transport (tests).
        environ: Environment for the session path (default: the process's).

    Returns:
        The session written.

    Raises:
        ConfigError: the URL is not http(s).
        ServiceError: the service refused the token (``http_401``) or could not be
            reached (``timeout``, ``dashboard_unreachable``, ``bad_response``); nothing
            is written then.
    """
    from bli_memory.core.team.client.service_client import ServiceClient

    url = (url or "").strip().rstrip("/")
    if not url.startswith(("http://", "https://")):
        raise ConfigError("the service URL must start with http:// or https://")
    token = (token or "").strip()
    if not token:
        raise ConfigError("give the device token to pair with")
    client = ServiceClient(url, token=token, timeout=timeout, transport=transport)
    try:
        who = client.call("GET", "/api/memory/whoami")
    finally:
        client.close()
    session = Session(dashboard_url=url, device_token=token, person=who.get("person"),
                      device=who.get("device"), paired_at=datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ"))
    write_session(session, environ)
    return session


def remote_target(settings: Any) -> tuple[str, str] | None:
    """``(url, token)`` of the memory service this process should use, or None for embedded.

    The URL is ``BLI_MEMORY_DASHBOARD_URL``, else the paired session's; the token is
    ``BLI_MEMORY_DEVICE_TOKEN``, else the session's (BLI Memory spec, "Auth"). The
    session's token is only ever sent to the session's own URL.

    Raises:
        ServiceError: reason ``unpaired``: a service is configured but no token is, or
            the URL in the environment is not the one the paired token belongs to.
        ConfigError: the session file exists but cannot be read.
    """
    url = getattr(settings, "dashboard_url", None)
    secret: Any = getattr(settings, "device_token", None)
    token = secret.get_secret_value() if hasattr(secret, "get_secret_value") else secret
    session = read_session()
    if url is None and session is None:
        return None
    token = (token or "").strip() or None
    if token is None and session is not None:
        if url is not None and url.rstrip("/") != session.dashboard_url.rstrip("/"):
            # The paired token belongs to the paired service: never send it elsewhere.
            raise ServiceError(
                f"BLI_MEMORY_DASHBOARD_URL names {url} but this machine is paired with "
                f"{session.dashboard_url}; set BLI_MEMORY_DEVICE_TOKEN for {url}, or unset "
                "BLI_MEMORY_DASHBOARD_URL", reason="unpaired",
            )
        token = session.device_token
    url = url or (session.dashboard_url if session else None)
    if not url or not token:
        raise ServiceError(UNPAIRED_MESSAGE, reason="unpaired")
    return url.rstrip("/"), token


def check_paired(settings: Any) -> None:
    """Raise ``ServiceError(reason="unpaired")`` when a service is configured without a token.

    The MCP server calls this before opening its transport, so an unpaired machine
    gets :data:`UNPAIRED_MESSAGE` on stderr and exit status 1 (:func:`remote_target`).
    """
    remote_target(settings)
