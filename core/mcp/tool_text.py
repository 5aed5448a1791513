"""Clean text for what an MCP client shows: tool descriptions from docstrings.

A tool's description is the function's docstring, and a docstring of a nested function
carries the source's indentation on every line after the first (``"...could not
run.\\n        "``). Clients show that text to the model and to the person as is, so
:func:`add_tool` registers every tool with :func:`inspect.cleandoc` applied (the
rules of PEP 257: first line stripped, common indentation removed, blank edges
dropped) and trailing spaces cut from each line.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable
from typing import Any

__all__ = ["add_tool", "clean_text"]


def clean_text(text: str | None) -> str:
    """``text`` dedented (PEP 257) with no trailing whitespace on any line; ``""`` for None."""
    if not text:
        return ""
    return "\n".join(line.rstrip() for line in inspect.cleandoc(text).splitlines()).strip()


def add_tool(server: Any, fn: Callable[..., Any], **kwargs: Any) -> None:
    """``server.add_tool(fn, **kwargs)`` with the description taken from ``fn``'s clean docstring.

    An explicit ``description=`` in ``kwargs`` is cleaned the same way.
    """
    kwargs["description"] = clean_text(kwargs.get("description") or fn.__doc__)
    server.add_tool(fn, **kwargs)
