"""The daemon's operational lines on stderr: ``[bli-memory] daemon <what> {json}``.

Standard library only; writing never raises (the prompt hook starts the daemon with
stdio on ``/dev/null``).
"""

from __future__ import annotations

import json
import sys
from typing import Any

__all__ = ["log"]


def log(what: str, **fields: Any) -> None:
    """Write one line ``[bli-memory] daemon <what> <fields as compact JSON>`` to stderr."""
    try:
        body = json.dumps(fields, separators=(",", ":"), sort_keys=False, default=str)
        sys.stderr.write(f"[bli-memory] daemon {what} {body}\n")
        sys.stderr.flush()
    except (OSError, ValueError, AttributeError):
        pass
