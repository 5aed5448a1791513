"""The one reader of a memory's ``expiresAt``: the MCP tool, the embedded engine and the
Postgres store all parse it here, so a value is refused the same way everywhere.

An expiry is any ISO 8601 date or time (a date alone is its midnight UTC, a time
without a zone is UTC), stored in the stores' UTC form ``...T04:57:01.123456Z``
(:func:`bli_memory.core.memory.records.normalise_time`). A time that names no instant a
calendar of years 1 to 9999 holds in UTC, such as ``0001-01-01T00:00:00+14:00`` or
``9999-12-31T23:59:59-01:00``, is refused with :class:`InvalidInputError` (a 400 on
the service), never an ``OverflowError``.

A save refuses an expiry that is not in the future (``future=True``): such a memory
would be stored and never returned by any search, profile or recall, so the caller is
told ("expiresAt ... is in the past") instead of being answered ``created``.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from bli_memory.core.errors import InvalidInputError
from bli_memory.core.memory.storable_text import shown_value

__all__ = ["expiry_datetime", "is_expired", "now_text", "parse_expiry"]

#: Longest expiry string considered, in characters (the longest ISO 8601 time with
#: microseconds and a zone is 32); longer input is refused without being echoed.
_MAX_CHARS = 64


def parse_expiry(value: Any, *, future: bool = False, now: datetime | None = None) -> str | None:
    """``value`` in the stores' UTC form; ``None`` or blank text means "never expires".

    Args:
        value: What the caller gave.
        future: Refuse an instant that is not after now (a save; an update that keeps
            the stored expiry does not check it again).
        now: The current time, aware (default the clock's; tests fix it).

    Raises:
        InvalidInputError: not a string, not ISO 8601, outside years 1-9999 in UTC, or
            (with ``future``) not after the current time.
    """
    from bli_memory.core.memory.records import normalise_time

    if value is None:
        return None
    if not isinstance(value, str):
        raise InvalidInputError("expiresAt must be an ISO 8601 date or time string")
    if not value.strip():
        return None
    shown = shown_value(value)
    if len(value) > _MAX_CHARS:
        raise InvalidInputError(f"expiresAt {shown} is not a usable ISO 8601 date or time")
    try:
        text = normalise_time(value)
    except ValueError:
        raise InvalidInputError(
            f"expiresAt {shown} is not a usable ISO 8601 date or time (it must name an instant "
            "from year 1 to 9999 in UTC, e.g. 2026-12-31 or 2026-12-31T18:00:00+02:00)"
        ) from None
    if future:
        at = (now or datetime.now(UTC)).astimezone(UTC).replace(tzinfo=None)
        now_text = at.isoformat(timespec="microseconds") + "Z"
        if text <= now_text:  # one fixed-width UTC form: text order is time order
            raise InvalidInputError(
                f"expiresAt {shown} is in the past (now is {now_text}): a memory that has already "
                "expired is never returned, so nothing was saved; give a later time or no expiry"
            )
    return text


def expiry_datetime(value: Any, *, future: bool = False) -> datetime | None:
    """:func:`parse_expiry` as an aware UTC :class:`datetime` (for Postgres ``timestamptz``).

    Raises:
        InvalidInputError: as :func:`parse_expiry`.
    """
    text = parse_expiry(value, future=future)
    return None if text is None else datetime.fromisoformat(text.replace("Z", "+00:00"))


def now_text(moment: datetime | None = None) -> str:
    """``moment`` (default now) in the stores' fixed-width UTC form,
    ``YYYY-MM-DDTHH:MM:SS.ffffffZ``, whose text order is time order (years before 1000 padded)."""
    at = (moment or datetime.now(UTC)).astimezone(UTC).replace(tzinfo=None)
    return at.isoformat(timespec="microseconds") + "Z"


def is_expired(expires_at: str | None, at: str | None = None) -> bool:
    """True when a memory expiring at ``expires_at`` (the stores' form, None: never) has
    expired at ``at`` (the same form; default now)."""
    return expires_at is not None and expires_at <= (at or now_text())

