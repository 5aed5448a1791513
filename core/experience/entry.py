"""One experience entry: its fields, its log line and the rules its reason must keep.

The format is the BLI Memory spec's ("Live A/B: agent experience"); see
:mod:`bli_memory.core.experience.log` for where entries go. Standard library only (the
redaction rules are imported when a reason is checked).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta, tzinfo

from bli_memory.core.errors import InvalidInputError

__all__ = [
    "MARKERS",
    "MAX_REASON_CHARS",
    "SIDECAR_SCHEMA",
    "STORES",
    "VERDICTS",
    "Entry",
    "check_choice",
    "clean_name",
    "format_line",
    "format_time",
    "now_iso",
    "parse_iso",
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
#: ``schema`` value of every sidecar.
SIDECAR_SCHEMA = "bli-memory-experience.v1"

_LINE_BREAKS = re.compile("[\n\r\x0b\x0c\x1c\x1d\x1e\x85\u2028\u2029]")
_CONTROL = re.compile("[\x00-\x08\x0e-\x1b\x1f\x7f]")
_NAME_CHARS = re.compile(r"[^A-Za-z0-9._@+-]+")


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


def now_iso(moment: datetime) -> str:
    """A moment as UTC ISO 8601 with microseconds and ``Z`` (``2026-11-30T07:05:01.123456Z``)."""
    return moment.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def parse_iso(value: str) -> datetime:
    """An ISO 8601 time as an aware datetime; a naive one is taken as UTC.

    Raises:
        ValueError: not an ISO 8601 time.
    """
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


def clean_name(value: str, default: str) -> str:
    """A field of the line: no separators, no spaces, at most 64 characters; ``default`` if empty."""
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
        f"- {format_time(parse_iso(created_at), zone, label)} \u00b7 {agent} \u00b7 "
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


def check_choice(value: str, allowed: tuple[str, ...], what: str) -> str:
    """``value`` when it is one of ``allowed``.

    Raises:
        InvalidInputError: it is not; the message names ``what`` and the choices.
    """
    if value not in allowed:
        raise InvalidInputError(f"{what} must be one of {', '.join(allowed)}, not {value!r}")
    return value

