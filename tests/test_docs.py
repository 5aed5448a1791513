"""Documentation kept honest by rule: hooks, settings and the CLI reference."""

from __future__ import annotations

import inspect
import re
import subprocess
from pathlib import Path

import pytest

from bli_memory.core.plugins import get_plugin_manager
from tests.conftest import REPO_ROOT, bin_path

DOCS = REPO_ROOT / "docs"


def _hookspecs() -> dict[str, list[str]]:
    pm = get_plugin_manager()
    out = {}
    for name in dir(pm.hook):
        if name.startswith("_"):
            continue
        caller = getattr(pm.hook, name)
        spec = caller.spec
        out[name] = list(inspect.signature(spec.function).parameters)
    return out


def test_every_plugin_hook_is_documented_with_its_signature() -> None:
    text = (DOCS / "plugin-hooks.md").read_text()
    for name, args in _hookspecs().items():
        assert f"### `{name}({', '.join(args)})`" in text, name


def test_every_plugin_hook_has_a_test() -> None:
    tests = "\n".join(p.read_text() for p in (REPO_ROOT / "tests").rglob("test_*.py"))
    for name in _hookspecs():
        assert re.search(rf"def test_hook_{name}\b", tests), f"no test_hook_{name}"


def test_every_setting_is_documented() -> None:
    from bli_memory.core.settings import Settings

    text = (DOCS / "configuration.md").read_text()
    for field in Settings.model_fields:
        assert f"`BLI_MEMORY_{field.upper()}`" in text, field


def _help_text() -> str:
    import os

    env = {**os.environ, "COLUMNS": "100"}  # argparse wraps to the terminal width

    def run(*args: str) -> str:
        return subprocess.run([bin_path(), *args], capture_output=True, text=True, check=True,
                              env=env).stdout

    parts = ["# Command-line reference", "", "Generated from `--help` by `python scripts/gen_cli_docs.py`; "
             "a test fails when it is out of date.", ""]
    for title, args in (("bli-memory-mcp", ("--help",)), ("bli-memory-mcp memory", ("memory", "--help")),
                        ("bli-memory-mcp install", ("install", "--help")),
                        ("bli-memory-mcp status", ("status", "--help")),
                        ("bli-memory-mcp daemon", ("daemon", "--help")),
                        ("bli-memory-mcp worker", ("worker", "--help")),
                        ("bli-memory-mcp extractor", ("extractor", "--help")),
                        ("bli-memory-mcp extractor use", ("extractor", "use", "--help")),
                        ("bli-memory-mcp service", ("service", "--help")),
                        ("bli-memory-mcp ui", ("ui", "--help"))):
        parts += [f"## {title}", "", "```", run(*args).rstrip(), "```", ""]
    cockpit = str(Path(bin_path()).parent / "cockpit")
    out = subprocess.run([cockpit, "--help"], capture_output=True, text=True, env=env).stdout
    parts += ["## cockpit", "", "```", out.rstrip(), "```", ""]
    return "\n".join(parts)


@pytest.mark.e2e
@pytest.mark.e2e
def test_cli_reference_is_up_to_date() -> None:
    assert (DOCS / "cli.md").read_text() == _help_text(), "run: python scripts/gen_cli_docs.py"


def test_readme_test_section_says_how_to_get_every_host_cli() -> None:
    """The integration tests skip without the host CLIs; README's "Test" says how to get them."""
    readme = (REPO_ROOT / "README.md").read_text()
    section = readme.split("## Test", 1)[1].split("\n## ", 1)[0]
    coverage = [p for p in section.split("\n\n") if "full coverage" in p]
    assert coverage and ".ci/run" in coverage[0], section
    ci = (REPO_ROOT / ".ci" / "run").read_text()
    for package in ("@anthropic-ai/claude-code", "@openai/codex", "@google/gemini-cli", "@github/copilot",
                    "hermes-agent[mcp]"):
        assert package in ci, package
    assert "BLI_MEMORY_REQUIRE_INTEGRATION=1" in ci
