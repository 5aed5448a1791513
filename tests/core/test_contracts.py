"""The plugin seams: specs, the manager, and host plugins found through entry points."""

from __future__ import annotations

from importlib.metadata import entry_points

import pluggy

from bli_memory.adapters import BUILTIN_HOSTS
from bli_memory.core.hookspecs import hookimpl
from bli_memory.core.plugins import ENTRY_POINT_GROUP, get_plugin_manager


def test_builtin_table_matches_the_entry_points() -> None:
    eps = {ep.name: ep.value for ep in entry_points(group=ENTRY_POINT_GROUP)}
    assert {k: eps[k] for k in BUILTIN_HOSTS} == BUILTIN_HOSTS
    assert set(BUILTIN_HOSTS) <= set(eps)


def test_manager_loads_every_host_and_the_fast_path_loads_one() -> None:
    pm = get_plugin_manager()
    names = {info["name"] for info in pm.hook.host_info()}
    assert set(BUILTIN_HOSTS) <= names
    one = get_plugin_manager(host="claude")
    assert [info["name"] for info in one.hook.host_info()] == ["claude"]


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
