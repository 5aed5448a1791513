"""One test per plugin hook, through the real plugin manager and the built-in plugins."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from bli_memory.core.models import HookInput, HookResult
from bli_memory.core.plugins import build_backend, get_plugin_manager
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


def test_hook_host_install_options() -> None:
    options = [o for batch in get_plugin_manager().hook.host_install_options() for o in batch]
    # plugin order is the help's order: Gemini's flag, then Copilot's (as install --help always listed)
    assert [(o.host, o.flag, o.metavar) for o in options] == [
        ("gemini", "--trust-folder", "PATH"), ("copilot", "--copilot-instructions", None)]
    assert all(o.help and o.flag in o.misuse for o in options)


def test_hook_host_adjust_plan(temp_home: Path) -> None:
    pm = get_plugin_manager()
    contract = build_contract()
    options = {"--trust-folder": None, "--copilot-instructions": True}
    plan = pm.hook.host_plan_config(host="copilot", contract=contract, home=temp_home, uninstall=False)
    adjusted = pm.hook.host_adjust_plan(host="copilot", plan=plan, options=options, home=temp_home,
                                        uninstall=False)
    added = set(adjusted.plan.files) - set(plan.files)
    assert [Path(p).name for p in added] == ["bli-memory.instructions.md"] and adjusted.after_apply is None
    # a flag not given, or a host without options, leaves the plan as it is
    unasked = {**options, "--copilot-instructions": False}
    assert pm.hook.host_adjust_plan(host="copilot", plan=plan, options=unasked, home=temp_home,
                                    uninstall=False) is None
    claude = pm.hook.host_plan_config(host="claude", contract=contract, home=temp_home, uninstall=False)
    assert pm.hook.host_adjust_plan(host="claude", plan=claude, options=options, home=temp_home,
                                    uninstall=False) is None
    # Gemini's uninstall forgets the folders install trusted, once the plans are written
    gemini = pm.hook.host_plan_config(host="gemini", contract=contract, home=temp_home, uninstall=True)
    undone = pm.hook.host_adjust_plan(host="gemini", plan=gemini, options={}, home=temp_home, uninstall=True)
    assert undone.plan == gemini and callable(undone.after_apply)


def test_hook_host_status(temp_home: Path) -> None:
    status = get_plugin_manager().hook.host_status(host="claude", contract=build_contract(), home=temp_home)
    assert status.state in ("absent", "not_found")


def test_hook_host_print_config() -> None:
    text = get_plugin_manager().hook.host_print_config(host="claude", contract=build_contract())
    assert json.loads(text)["schema"] == "bli-memory-install-config.v1"


def test_hook_memory_backend(temp_home: Path) -> None:
    from bli_memory.core.settings import load_settings

    backend = build_backend(get_plugin_manager(), load_settings())
    try:
        assert type(backend).__name__ == "EmbeddedBackend"
        assert backend.search("", space="t").hits == ()
    finally:
        backend.close()


class _ToyEmbedder:
    """A deterministic 16-d embedder (character-trigram hashing), for the seam only."""

    name = "toy-trigram-16"
    dimensions = 16

    def embed(self, texts):
        import hashlib

        import numpy as np

        out = np.zeros((len(texts), 16), dtype=np.float32)
        for i, t in enumerate(texts):
            for j in range(max(len(t) - 2, 1)):
                out[i, hashlib.sha1(t[j:j + 3].encode()).digest()[0] % 16] += 1.0
            out[i] /= np.linalg.norm(out[i]) or 1.0
        return out


def test_hook_register_embedders(temp_home: Path) -> None:
    import pytest

    from bli_memory.core.embedded.engine import EmbeddedBackend
    from bli_memory.core.errors import ConfigError, ModelMismatchError
    from bli_memory.core.hookspecs import hookimpl
    from bli_memory.core.memory.embedder import available_embedders, load_embedder
    from bli_memory.core.paths import store_path

    class ToyPlugin:
        @hookimpl
        def register_embedders(self, register):
            register("toy-trigram-16", _ToyEmbedder)

    pm = get_plugin_manager()
    pm.register(ToyPlugin())
    assert {"all-MiniLM-L6-v2-int8", "toy-trigram-16"} <= set(available_embedders(pm))
    backend = EmbeddedBackend(store_path(), embedder=load_embedder("toy-trigram-16", pm))
    backend.save("the toy model embeds this", space="s")
    assert backend.store.meta()["embedding_model"] == "toy-trigram-16"
    assert backend.search("toy model", space="s").hits
    backend.close()
    shipped = EmbeddedBackend(store_path())
    with pytest.raises(ModelMismatchError, match="toy-trigram-16"):
        shipped.save("the shipped model must not mix its vectors in", space="s")
    shipped.close()
    with pytest.raises(ConfigError, match="not a registered embedder"):
        load_embedder("no-such-model", pm)


def test_hook_register_redaction_rules(tmp_path: Path) -> None:
    import re

    from bli_memory.core.hookspecs import hookimpl
    from bli_memory.core.memory.redaction import DEFAULT_RULES, RedactionRule, redact, rules_with_plugins

    class Internal:
        @hookimpl
        def register_redaction_rules(self, register):
            register(RedactionRule(kind="acme_ticket_secret", pattern=re.compile(r"ACME-SECRET-[0-9]{8}")))

    pm = get_plugin_manager()
    pm.register(Internal())
    rules = rules_with_plugins(pm)
    assert rules[: len(DEFAULT_RULES)] == DEFAULT_RULES and len(rules) == len(DEFAULT_RULES) + 1
    out = redact("the vault code is ACME-SECRET-12345678 today", rules=rules)
    assert "ACME-SECRET-12345678" not in out.text and out.masked == 1
    # The default rules are the process's: this manager is the active one, so its plugin applies.
    assert redact("the vault code is ACME-SECRET-12345678 today").masked == 1
    assert "ACME-SECRET-12345678" in redact("the vault code is ACME-SECRET-12345678 today",
                                            rules=DEFAULT_RULES).text


def test_hook_register_commands(capsys: pytest.CaptureFixture[str]) -> None:
    from bli_memory.core.cli.commands import plugin_commands, run_plugin_command
    from bli_memory.core.hookspecs import hookimpl

    seen: list[tuple[list[str], str, object]] = []

    class Hello:
        @hookimpl
        def register_commands(self, register):
            def run(argv, *, prog, pm):
                seen.append((argv, prog, pm))
                return 7
            register("hello", run)

    pm = get_plugin_manager()
    pm.register(Hello())
    assert {"install", "uninstall", "status", "print-config", "hello"} <= set(plugin_commands(pm))
    assert run_plugin_command("hello", ["x"], prog="tool", pm=pm) == 7
    assert seen == [(["x"], "tool", pm)]
    assert run_plugin_command("no-such-command", [], prog="tool", pm=pm) is None
    assert run_plugin_command("print-config", ["claude"], prog="tool", pm=pm) == 0
    assert "bli-memory" in capsys.readouterr().out


def test_hook_doctor_checks(temp_home: Path) -> None:
    pm = get_plugin_manager()
    rows = [row for found in pm.hook.doctor_checks(home=temp_home, plugin_manager=pm) for row in found]
    checks = {check: (mark, detail) for mark, check, detail in rows}
    for host in ("claude", "codex", "gemini", "hermes"):
        mark, detail = checks[f"memory ({host})"]
        assert mark in ("info", "ok", "warn") and detail.split(" ")[0] in ("absent", "not_found", "installed")


def test_hook_host_conventions() -> None:
    conventions = {c.host: c for c in get_plugin_manager().hook.host_conventions()}
    assert {"claude", "codex", "copilot", "gemini", "hermes"} <= set(conventions)
    assert conventions["gemini"].context_wrappers == ("hook_context",)
    assert conventions["claude"].agent == "claude-code" and "CLAUDECODE" in conventions["claude"].env_markers
    assert [c.host for c in conventions.values() if c.experience_dir] == ["codex"]


def test_hook_host_headless_command(tmp_path: Path) -> None:
    from bli_memory.core.extraction.model_facts import FACTS_SCHEMA
    from bli_memory.core.headless import HeadlessRequest

    pm = get_plugin_manager()
    request = HeadlessRequest(prompt="Session digest: ...", schema=FACTS_SCHEMA, workdir=tmp_path)
    claude = pm.hook.host_headless_command(host="claude", request=request)
    assert claude.argv[:2] == ("claude", "-p") and claude.stdin == request.prompt
    assert json.loads(claude.argv[claude.argv.index("--settings") + 1])["disableAllHooks"] is True
    assert claude.argv[claude.argv.index("--tools") + 1] == ""
    codex = pm.hook.host_headless_command(host="codex", request=request)
    assert "--ephemeral" in codex.argv and codex.login_check == ("codex", "login", "status")
    assert json.loads(codex.files["schema.json"]) == FACTS_SCHEMA
    gemini = pm.hook.host_headless_command(host="gemini", request=request)
    assert json.loads(gemini.files[".gemini/settings.json"])["hooksConfig"]["enabled"] is False
    assert pm.hook.host_headless_command(host="hermes", request=request) is None


def test_hook_host_headless_answer(tmp_path: Path) -> None:
    from bli_memory.core.headless import HeadlessRun

    pm = get_plugin_manager()
    said = {"type": "result", "is_error": False, "result": '{"facts": []}', "total_cost_usd": 0.000127,
            "usage": {"input_tokens": 42, "cache_read_input_tokens": 8, "output_tokens": 17}}
    ok = pm.hook.host_headless_answer(host="claude", run=HeadlessRun(0, json.dumps(said), "", tmp_path))
    assert (ok.text, ok.error, ok.input_tokens, ok.output_tokens) == ('{"facts": []}', None, 50, 17)
    assert ok.cost_usd == 0.000127
    # Claude Code 2.1.197 without a login: exit 1, this result, nothing on stderr.
    out = {"type": "result", "is_error": True, "result": "Not logged in \u00b7 Please run /login"}
    refused = pm.hook.host_headless_answer(host="claude", run=HeadlessRun(1, json.dumps(out), "", tmp_path))
    assert refused.error == "not_logged_in"
    lines = "\n".join(json.dumps(e) for e in (
        {"type": "thread.started"},
        {"type": "item.completed", "item": {"type": "agent_message", "text": "{}"}},
        {"type": "turn.completed", "usage": {"input_tokens": 123, "output_tokens": 45}}))
    codex = pm.hook.host_headless_answer(host="codex", run=HeadlessRun(0, lines, "", tmp_path))
    assert (codex.text, codex.input_tokens, codex.output_tokens) == ("{}", 123, 45)
    no_auth = HeadlessRun(41, "", "Please set an Auth method", tmp_path)  # Gemini CLI 0.61.0, no login
    gemini = pm.hook.host_headless_answer(host="gemini", run=no_auth)
    assert gemini.error == "not_logged_in"


def test_hook_host_headless_info(tmp_path: Path) -> None:
    pm = get_plugin_manager()
    (tmp_path / ".claude.json").write_text(json.dumps({"oauthAccount": {"emailAddress": "ann@example.com"}}))
    info = pm.hook.host_headless_info(host="claude", home=tmp_path)
    assert (info.cli, info.provider) == ("claude", "Anthropic")
    assert info.account == "ann@example.com (Claude subscription login)"
    assert pm.hook.host_headless_info(host="gemini", home=tmp_path).account is None
    assert pm.hook.host_headless_info(host="copilot", home=tmp_path) is None
