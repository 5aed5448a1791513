"""Structured logging to stderr (structlog); stdout belongs to JSON-RPC and hook output."""

from __future__ import annotations

import logging
import sys

__all__ = ["configure_logging", "get_logger"]

_LEVELS = {"debug": logging.DEBUG, "info": logging.INFO, "warning": logging.WARNING, "error": logging.ERROR}


def configure_logging(level: str = "warning", fmt: str = "console") -> None:
    """Send every structlog and stdlib log line to stderr at ``level``.

    Args:
        level: ``debug``, ``info``, ``warning`` or ``error``.
        fmt: ``console`` (human) or ``json`` (one JSON object per line).
    """
    import structlog

    numeric = _LEVELS.get(level, logging.WARNING)
    renderer = (
        structlog.processors.JSONRenderer()
        if fmt == "json"
        else structlog.dev.ConsoleRenderer(colors=False)
    )
    structlog.configure(
        processors=[
            structlog.contextvars.merge_contextvars,
            structlog.processors.add_log_level,
            structlog.processors.TimeStamper(fmt="iso", utc=True),
            renderer,
        ],
        wrapper_class=structlog.make_filtering_bound_logger(numeric),
        logger_factory=structlog.PrintLoggerFactory(file=sys.stderr),
        cache_logger_on_first_use=False,
    )
    root = logging.getLogger()
    root.handlers[:] = [logging.StreamHandler(sys.stderr)]
    root.setLevel(numeric)


def get_logger(name: str) -> object:
    """A structlog logger bound to ``component=name``."""
    import structlog

    return structlog.get_logger(component=name)
