"""The plugin seams: specs, the manager, and host plugins found through entry points."""

from __future__ import annotations

import ast
from importlib.metadata import distribution
from pathlib import Path

import pluggy
import pytest

from bli_memory.core.cli.commands import plugin_commands
from bli_memory.core.hookspecs import hookimpl
from bli_memory.core.plugins import (
    DISTRIBUTION,
    ENTRY_POINT_GROUP,
    PLUGIN_ENTRY_POINT_GROUP,
    get_plugin_manager,
    host_names,
    own_entry_points,
    register_core_plugins,
)

CORE = Path(__file__).resolve().parents[2] / "core"


def test_the_fast_path_reads_the_same_entry_points_as_importlib_metadata() -> None:
    eps = distribution(DISTRIBUTION).entry_points
    for group in (ENTRY_POINT_GROUP, PLUGIN_ENTRY_POINT_GROUP):
        assert own_entry_points(group) == {ep.name: ep.value for ep in eps.select(group=group)}
    assert {"claude", "codex", "gemini", "hermes"} <= set(own_entry_points(ENTRY_POINT_GROUP))
    assert own_entry_points("no.such.group") == {}


def test_manager_loads_every_host_and_the_fast_path_loads_one() -> None:
    pm = get_plugin_manager()
    assert set(own_entry_points(ENTRY_POINT_GROUP)) <= set(host_names(pm))
    one = get_plugin_manager(host="claude", core_plugins=False)  # the hook's skip path
    assert host_names(one) == ["claude"]
    assert plugin_commands(one) == {}  # no bli_memory.plugins before the run needs the backend
    register_core_plugins(one)  # ... and with it, since a rule plugin must mask what it stores
    assert "install" in plugin_commands(one) and host_names(one) == ["claude"]


def test_the_installer_registers_its_commands_as_a_plugin() -> None:
    assert set(plugin_commands(get_plugin_manager())) == {"install", "uninstall", "status", "print-config"}


def test_core_imports_no_adapter_and_no_installer() -> None:
    found = []
    for path in sorted(CORE.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            names = [a.name for a in node.names] if isinstance(node, ast.Import) else (
                [node.module or ""] if isinstance(node, ast.ImportFrom) else [])
            found += [f"{path.relative_to(CORE)}: {n}" for n in names
                      if n.startswith(("bli_memory.adapters", "bli_memory.installers"))]
    assert found == []


def test_a_third_party_host_plugin_is_called_and_others_return_none() -> None:
    class FakeHost:
        @hookimpl
        def host_info(self):
            return {"name": "fake", "display_name": "Fake", "events": {}, "present": False}

        @hookimpl
        def host_print_config(self, host, contract):
            return "fake-config" if host == "fake" else None

    pm = get_plugin_manager()
    pm.register(FakeHost(), name="fake")
    try:
        assert pm.hook.host_print_config(host="fake", contract={}) == "fake-config"
        assert "fake" in {i["name"] for i in pm.hook.host_info()}
    finally:
        pm.unregister(name="fake")


def test_a_hookimpl_matching_no_spec_is_rejected() -> None:
    class Typo:
        @hookimpl
        def host_prase_payload(self, host):  # misspelt on purpose
            return None

    pm = get_plugin_manager(load_entrypoints=False)
    pm.register(Typo())
    try:
        pm.check_pending()
    except pluggy.PluginValidationError:
        pass
    else:  # pragma: no cover
        raise AssertionError("check_pending accepted an unknown hook")


def test_help_texts_list_the_installed_host_plugins(capsys: pytest.CaptureFixture[str]) -> None:
    from bli_memory.core.cli.commands import run_plugin_command

    class FifthHost:
        @hookimpl
        def host_info(self):
            return {"name": "fifth", "display_name": "Fifth", "events": {}, "present": False}

    pm = get_plugin_manager()
    pm.register(FifthHost(), name="fifth")
    with pytest.raises(SystemExit) as done:
        run_plugin_command("install", ["--help"], prog="bli-memory-mcp", pm=pm)
    assert done.value.code == 0
    shown = " ".join(capsys.readouterr().out.split())
    assert "claude, codex, copilot, fifth, gemini, hermes, several" in shown and "or all" in shown
