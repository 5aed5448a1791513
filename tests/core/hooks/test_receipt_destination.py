"""Where a receipt goes is the host plugin's to say: core names no host.

A host whose successful hook stderr the person sees (Gemini CLI) sets
``HostConventions.receipts_in_log``; core reads it from the plugin, so a new host with
the same habit is one attribute in its adapter, and no module of core names a host
(``core/defaults.py``, the one exception, names the default).
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from bli_memory.core.hookspecs import hookimpl
from bli_memory.core.models import HookInput, HostConventions
from bli_memory.core.plugins import ENTRY_POINT_GROUP, get_plugin_manager, own_entry_points
from tests.core.daemon.test_daemon import daemons  # noqa: F401  (the fixture)

CORE = Path(__file__).resolve().parents[3] / "core"


def test_no_module_of_core_names_a_host_in_its_code() -> None:
    hosts = set(own_entry_points(ENTRY_POINT_GROUP))
    assert {"claude", "gemini"} <= hosts
    named = []
    for path in sorted(CORE.rglob("*.py")):
        if path.name == "defaults.py" and path.parent == CORE:
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Constant) and node.value in hosts:
                named.append(f"{path.relative_to(CORE)}:{node.lineno} {node.value!r}")
    assert named == []


def test_the_gemini_plugin_asks_for_the_log_and_the_others_do_not() -> None:
    conventions = {c.host: c for c in get_plugin_manager().hook.host_conventions()}
    assert [h for h, c in sorted(conventions.items()) if c.receipts_in_log] == ["gemini"]


class _Loud:
    """A host that, like Gemini CLI, shows a successful hook's stderr to the person."""

    @hookimpl
    def host_conventions(self) -> HostConventions:
        return HostConventions(host="loud", agent="loud-cli", receipts_in_log=True)

    @hookimpl
    def host_parse_payload(self, host: str, event: str, payload: dict) -> HookInput | None:
        return HookInput(host=host, event="prompt", prompt=payload.get("prompt")) if host == "loud" else None


def test_a_new_host_gets_its_receipts_in_the_log_by_its_own_attribute() -> None:
    from bli_memory.core.hooks.events import answer_hook

    pm = get_plugin_manager(load_entrypoints=False, core_plugins=False)
    pm.register(_Loud(), name="loud")

    def no_backend():  # a trivial prompt is decided before the backend
        raise AssertionError("the backend was not needed")

    answer = answer_hook(pm, host="loud", event="prompt", payload={"prompt": "thanks"}, context=no_backend)
    assert answer.outcome == "skipped" and answer.receipt_log is True
    assert answer.to_wire()["receiptLog"] is True
    plain = answer_hook(get_plugin_manager(host="claude", core_plugins=False), host="claude", event="prompt",
                        payload={"prompt": "thanks", "session_id": "s"}, context=no_backend)
    assert plain.receipt_log is False and plain.to_wire()["receiptLog"] is False


@pytest.mark.e2e
@pytest.mark.e2e
def test_through_the_daemon_the_hook_learns_where_the_receipt_goes(daemons, project: Path) -> None:  # noqa: F811
    import json

    from tests.conftest import FIXTURES
    from tests.hooks_util import receipt_log_path, run_hook

    daemons.start()
    payload = json.loads((FIXTURES / "gemini" / "before_agent.json").read_text())
    payload.update(cwd=str(project), prompt="ok")
    r = run_hook("prompt", payload, args=("--host", "gemini"))
    assert r.returncode == 0 and r.stdout == "" and r.stderr == ""
    assert "[bli-memory] prompt skipped" in receipt_log_path().read_text()
    assert r.receipt == ("skipped", {"reason": "trivial_prompt"})  # the daemon answered: no "daemon" note
    claude = run_hook("prompt", {"session_id": "s", "cwd": str(project), "prompt": "ok",
                                 "hook_event_name": "UserPromptSubmit"})
    assert claude.log == "" and "[bli-memory] prompt skipped" in claude.stderr
