"""The install contract: emitted, resolved, validated against its schema."""

from __future__ import annotations

import copy
import json
import subprocess

import pytest

from bli_memory.installers.contract import (
    ContractError,
    build_contract,
    load_schema,
    validate_contract,
)
from tests.conftest import bin_path


def test_emitted_contract_validates_and_is_resolved() -> None:
    contract = build_contract()
    validate_contract(contract)
    assert contract["schema"] == "bli-memory-install-config.v1"
    assert contract["server_id"] == "bli-memory"
    assert contract["mcp_server"]["command"] == bin_path()
    assert [h["event"] for h in contract["hooks"]] == ["SessionStart", "UserPromptSubmit", "Stop"]
    assert [h["timeout_seconds"] for h in contract["hooks"]] == [30, 5, 30]
    for hook in contract["hooks"]:
        assert hook["command"].startswith(bin_path() + " hook ")
    assert contract["permissions_allow"] == ["mcp__bli-memory__search_memory"]


def test_schema_is_draft_2020_12_and_closed() -> None:
    from jsonschema import Draft202012Validator

    schema = load_schema()
    Draft202012Validator.check_schema(schema)
    assert schema["$schema"] == "https://json-schema.org/draft/2020-12/schema"
    assert schema["additionalProperties"] is False
    assert schema["properties"]["mcp_server"]["additionalProperties"] is False
    assert schema["properties"]["hooks"]["items"]["additionalProperties"] is False


def _mutations():
    def drop(key):
        return lambda c: c.pop(key)

    def extra(c):
        c["surprise"] = True

    def wrong_event(c):
        c["hooks"][0]["event"] = "PreToolUse"

    def relative_server(c):
        c["mcp_server"]["command"] = "bli-memory-mcp"

    def relative_hook(c):
        c["hooks"][1]["command"] = "bli-memory-mcp hook prompt"

    def npx(c):
        c["mcp_server"]["command"] = "npx"

    def float_timeout(c):
        c["hooks"][2]["timeout_seconds"] = 30.5

    def string_timeout(c):
        c["hooks"][2]["timeout_seconds"] = "30"

    def extra_hook_key(c):
        c["hooks"][0]["matcher"] = "startup"

    def wrong_schema(c):
        c["schema"] = "bli-memory-install-config.v2"

    return {
        "missing schema": drop("schema"), "missing hooks": drop("hooks"),
        "missing permissions_allow": drop("permissions_allow"), "extra key": extra,
        "wrong event": wrong_event, "relative server command": relative_server,
        "relative hook command": relative_hook, "npx": npx, "float timeout": float_timeout,
        "string timeout": string_timeout, "extra hook key": extra_hook_key, "wrong schema id": wrong_schema,
    }


@pytest.mark.parametrize("name", list(_mutations()))
def test_mutated_contract_fails_validation(name: str) -> None:
    contract = copy.deepcopy(build_contract())
    _mutations()[name](contract)
    with pytest.raises(ContractError):
        validate_contract(contract)


def test_paths_with_spaces_are_quoted_for_the_shell(tmp_path) -> None:
    import shlex

    weird = str(tmp_path / "my tools" / "bin" / "bli-memory-mcp")
    contract = build_contract(weird)
    assert contract["mcp_server"]["command"] == weird
    for hook in contract["hooks"]:
        assert shlex.split(hook["command"])[:2] == [weird, "hook"]


@pytest.mark.e2e
@pytest.mark.e2e
def test_print_config_outputs(tmp_path) -> None:
    run = lambda *a: subprocess.run([bin_path(), *a], capture_output=True, text=True, timeout=60)  # noqa: E731
    claude = run("--print-config=claude")
    assert claude.returncode == 0 and claude.stderr == ""
    validate_contract(json.loads(claude.stdout))
    codex = run("--print-config=codex")
    assert codex.returncode == 0
    import tomllib

    toml = tomllib.loads(codex.stdout)
    assert toml["mcp_servers"]["bli-memory"]["command"] == bin_path()
    both = run("--print-config")
    assert "# Claude Code (claude)" in both.stdout and "# Codex CLI (codex)" in both.stdout
    assert run("--print-config=all").stdout == both.stdout  # as install --host all
    assert json.loads(run("--print-config", "--claude").stdout) == json.loads(claude.stdout)
    unknown = run("--print-config=nope")
    assert unknown.returncode != 0 and "unknown host" in unknown.stderr
    assert run("--print-config", "codex").stdout == codex.stdout  # a space works like "="
    extra = run("--print-config", "codex", "gemini")
    assert extra.returncode == 2 and "unexpected arguments" in extra.stderr and not extra.stdout
