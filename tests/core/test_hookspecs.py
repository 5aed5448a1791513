"""One test per plugin hook, through the real plugin manager and the built-in plugins."""

from __future__ import annotations

import json
from pathlib import Path

from bli_memory.core.contracts import get_plugin_manager
from bli_memory.core.models import HookInput, HookResult
from bli_memory.installers.contract import build_contract
from tests.conftest import FIXTURES


def test_hook_host_info() -> None:
    infos = {i["name"]: i for i in get_plugin_manager().hook.host_info()}
    assert infos["claude"]["events"] == {"session-start": "SessionStart", "prompt": "UserPromptSubmit",
                                         "stop": "Stop"}
    assert isinstance(infos["claude"]["present"], bool)


def test_hook_host_parse_payload() -> None:
    pm = get_plugin_manager()
    payload = json.loads((FIXTURES / "claude" / "stop_hook_active.json").read_text())
    parsed = pm.hook.host_parse_payload(host="claude", event="stop", payload=payload)
    assert parsed.reentrant is True and parsed.session_id == "31c00dff-78b0-4ed1-b97e-90d0cf1fb0ca"
    assert pm.hook.host_parse_payload(host="no-such-host", event="stop", payload=payload) is None


def test_hook_host_render() -> None:
    pm = get_plugin_manager()
    result = HookResult(event="prompt", outcome="ok", block="<b>x</b>")
    out = pm.hook.host_render(host="claude", result=result)
    assert json.loads(out.stdout)["hookSpecificOutput"]["additionalContext"] == "<b>x</b>"
    assert out.exit_code == 0


def test_hook_host_read_exchange(tmp_path: Path) -> None:
    transcript = tmp_path / "t.jsonl"
    transcript.write_bytes((FIXTURES / "claude" / "transcript.jsonl").read_bytes())
    hook_input = HookInput(host="claude", event="stop", transcript_path=str(transcript))
    pm = get_plugin_manager()
    ex = pm.hook.host_read_exchange(host="claude", hook_input=hook_input, max_bytes=12288)
    assert ex.assistant == "Hello from the fake model." and ex.user


def test_hook_host_plan_config(temp_home: Path) -> None:
    pm = get_plugin_manager()
    plan = pm.hook.host_plan_config(host="claude", contract=build_contract(), home=temp_home, uninstall=False)
    assert set(plan.files) == {str(temp_home / ".claude.json"), str(temp_home / ".claude" / "settings.json")}


def test_hook_host_status(temp_home: Path) -> None:
    status = get_plugin_manager().hook.host_status(host="claude", contract=build_contract(), home=temp_home)
    assert status.state in ("absent", "not_found")


def test_hook_host_print_config() -> None:
    text = get_plugin_manager().hook.host_print_config(host="claude", contract=build_contract())
    assert json.loads(text)["schema"] == "bli-memory-install-config.v1"


def test_hook_memory_backend(temp_home: Path) -> None:
    from bli_memory.core.settings import load_settings

    backend = get_plugin_manager().hook.memory_backend(settings=load_settings())
    try:
        assert type(backend).__name__ == "EmbeddedBackend"
        assert backend.search("", space="t").hits == ()
    finally:
        backend.close()
