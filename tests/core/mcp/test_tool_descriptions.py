"""Every tool and argument description in ``tools/list`` is clean text (official MCP client)."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest

from bli_memory.core.mcp.tool_text import clean_text
from tests.mcp_client import run_session

pytestmark = [pytest.mark.e2e, pytest.mark.e2e]  # starts processes or servers (tests/tiers.py)

_INDENTED_LINE = re.compile(r"\n[ \t]+\S")


def _descriptions(schema: Any, where: str) -> list[tuple[str, str]]:
    """Every ``description`` string in a JSON Schema, with where it sits."""
    found: list[tuple[str, str]] = []
    if isinstance(schema, dict):
        for key, value in schema.items():
            if key == "description" and isinstance(value, str):
                found.append((where, value))
            else:
                found.extend(_descriptions(value, f"{where}.{key}"))
    elif isinstance(schema, list):
        for i, value in enumerate(schema):
            found.extend(_descriptions(value, f"{where}[{i}]"))
    return found


def _problem(text: str) -> str | None:
    if not text.strip():
        return "empty"
    if text != text.strip():
        return "leading or trailing whitespace"
    if any(line != line.rstrip() for line in text.splitlines()):
        return "trailing whitespace on a line"
    if _INDENTED_LINE.search(text):
        return "an indented line (docstring indentation)"
    return None


def test_clean_text_dedents_a_nested_docstring() -> None:
    def tool() -> None:
        """Say hello.

        Returns nothing; raises nothing.
        """

    doc = (tool.__doc__ or "") + "   \n"
    assert _problem(doc) is not None
    assert clean_text(doc) == "Say hello.\n\nReturns nothing; raises nothing."
    assert clean_text(None) == ""


def test_every_tool_and_argument_description_is_clean_text(tmp_path: Path) -> None:
    async def body(client: Any) -> Any:
        return (await client.list_tools()).tools

    tools = run_session(tmp_path, body)
    assert len(tools) >= 13
    bad = []
    for tool in tools:
        problem = _problem(tool.description or "")
        if problem:
            bad.append(f"{tool.name}: {problem}: {tool.description!r}")
        for where, text in _descriptions(tool.input_schema, f"{tool.name}.inputSchema"):
            problem = _problem(text)
            if problem:
                bad.append(f"{where}: {problem}: {text!r}")
    assert not bad, "\n".join(bad)
