"""One logging configuration for the long-lived processes, to stderr through structlog.

The MCP server, the daemon, the extract worker and the team service call
:func:`configure_logging` once at start. After that every log line, from a structlog
logger (:func:`get_logger`) or from any standard-library logger (ours such as
``bli_memory.store``, and the libraries': ``mcp``, ``uvicorn``, ``alembic``), is rendered by
the same structlog processors: ``console`` (one human line) or ``json`` (one JSON object a
line, with ``event``, ``level``, ``logger`` and an ISO-8601 UTC ``timestamp``). Standard-
library records pass through structlog's ``ProcessorFormatter``, so call sites keep using
``logging.getLogger(__name__)``. stdout is never touched: it belongs to JSON-RPC (MCP) and to
hook output. Hook receipts are not log lines and do not come here (docs/logging.md).
"""

from __future__ import annotations

import logging
import sys
from typing import IO, TYPE_CHECKING, Any

if TYPE_CHECKING:
    import structlog

__all__ = ["FORMATS", "LEVELS", "configure_logging", "get_logger"]

LEVELS = {"debug": logging.DEBUG, "info": logging.INFO, "warning": logging.WARNING, "error": logging.ERROR}
"""Level names accepted by ``BLI_MEMORY_LOG_LEVEL`` / ``--log-level``, to stdlib numbers."""

FORMATS = ("console", "json")
"""Renderers accepted by ``BLI_MEMORY_LOG_FORMAT``."""


def configure_logging(level: str = "warning", fmt: str = "console", *, stream: IO[str] | None = None) -> None:
    """Send every structlog and standard-library log line to ``stream`` at ``level`` or above.

    Replaces the root logger's handlers, so calling it again (a test, a re-exec) reconfigures
    rather than doubling lines.

    Args:
        level: ``debug``, ``info``, ``warning`` or ``error``; anything else means ``warning``.
        fmt: ``console`` (human, no colours) or ``json`` (one JSON object per line); anything
            else means ``console``.
        stream: where lines go; ``sys.stderr`` (looked up at each call) when None.
    """
    import structlog

    numeric = LEVELS.get(level, logging.WARNING)
    shared: list[structlog.typing.Processor] = [
        structlog.contextvars.merge_contextvars,
        structlog.stdlib.add_log_level,
        structlog.stdlib.add_logger_name,
        structlog.processors.TimeStamper(fmt="iso", utc=True),
    ]
    renderer: structlog.typing.Processor
    if fmt == "json":
        renderer = structlog.processors.JSONRenderer(default=str)
        finish: list[structlog.typing.Processor] = [structlog.processors.format_exc_info]
    else:
        renderer = structlog.dev.ConsoleRenderer(colors=False)
        finish = []
    structlog.configure(
        processors=[
            structlog.stdlib.filter_by_level,
            *shared,
            structlog.stdlib.PositionalArgumentsFormatter(),
            structlog.stdlib.ProcessorFormatter.wrap_for_formatter,
        ],
        wrapper_class=structlog.stdlib.BoundLogger,
        logger_factory=structlog.stdlib.LoggerFactory(),
        cache_logger_on_first_use=False,
    )
    formatter = structlog.stdlib.ProcessorFormatter(
        foreign_pre_chain=shared,
        processors=[structlog.stdlib.ProcessorFormatter.remove_processors_meta, *finish, renderer],
    )
    handler = logging.StreamHandler(stream if stream is not None else sys.stderr)
    handler.setFormatter(formatter)
    root = logging.getLogger()
    root.handlers[:] = [handler]
    root.setLevel(numeric)


def get_logger(name: str, **context: Any) -> structlog.stdlib.BoundLogger:
    """A structlog logger for the standard-library logger ``name``, bound to ``context``.

    Args:
        name: dotted logger name, ``bli_memory.<wing>`` by convention; it becomes ``logger``.
        **context: key-values added to every line (``space="..."``).

    Returns:
        A bound logger: ``log.info("event happened", key=value)``.
    """
    import structlog

    logger: structlog.stdlib.BoundLogger = structlog.stdlib.get_logger(name, **context)
    return logger
