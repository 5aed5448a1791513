"""Time zones of ``BLI_MEMORY_EXPERIENCE_TZ``: IANA names plus the team's abbreviations.

A shared root module (standard library only), beside settings and below every wing, so
that settings can check the value without importing the experience wing.
"""

from __future__ import annotations

from datetime import tzinfo

from bli_memory.core.errors import ConfigError

__all__ = ["DEFAULT_TZ", "resolve_timezone"]

#: Default of ``BLI_MEMORY_EXPERIENCE_TZ``: the seed's team wrote ICT.
DEFAULT_TZ = "ICT"

_TZ_ALIASES = {"ICT": "Asia/Bangkok", "UTC": "UTC", "GMT": "UTC"}
_TZ_LABELS = {"Asia/Bangkok": "ICT", "Asia/Ho_Chi_Minh": "ICT", "Asia/Vientiane": "ICT",
              "Asia/Phnom_Penh": "ICT", "UTC": "UTC", "Etc/UTC": "UTC"}


def resolve_timezone(name: str | None) -> tuple[tzinfo, str | None]:
    """The zone a ``BLI_MEMORY_EXPERIENCE_TZ`` value names, and its fixed label if it has one.

    Args:
        name: An IANA zone name (``Asia/Bangkok``, ``Europe/Berlin``), or one of the
            abbreviations ``ICT`` (Asia/Bangkok, UTC+7), ``UTC``, ``GMT``; empty or None
            means :data:`DEFAULT_TZ`.

    Returns:
        ``(zone, label)``; ``label`` is None when the zone's own abbreviation at the
        entry's moment should be used (``CET`` / ``CEST``).

    Raises:
        ConfigError: the value names no zone this machine knows.
    """
    from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

    raw = (name or "").strip() or DEFAULT_TZ
    key = _TZ_ALIASES.get(raw.upper(), raw)
    try:
        zone = ZoneInfo(key)
    except (ZoneInfoNotFoundError, ValueError, OSError) as exc:  # OSError: a folder, a long name
        raise ConfigError(
            f"BLI_MEMORY_EXPERIENCE_TZ is invalid: {raw!r} is not a time zone name "
            "(use an IANA name such as Asia/Bangkok, or ICT or UTC)",
            reason="config_invalid",
        ) from exc
    label = raw.upper() if raw.upper() in _TZ_ALIASES else _TZ_LABELS.get(key)
    return zone, label
