"""Injected blocks are stripped from captured text, and the host's wrappers with them.

Core knows only its own two tags; a host's wrapper (Gemini CLI's ``<hook_context>``)
comes from that host's plugin (``host_conventions``), through the real plugin manager.
"""

from __future__ import annotations

from bli_memory.core.extraction.injected import installed_wrappers, strip_captured
from bli_memory.core.hooks.blocks import host_wrappers, neutralise_tags, recall_block, strip_injected
from bli_memory.core.models import Memory, SearchHit
from bli_memory.core.plugins import get_plugin_manager

WRAPPED = ("<hook_context><bli-memory-context>\n[bli] favourite colour teal\n</bli-memory-context>"
           "</hook_context>\n\nWhat is my favourite colour?")


def test_our_blocks_are_stripped_whatever_the_host() -> None:
    text = "<bli-memory-recall>\n[bli] x\n</bli-memory-recall>\nKeep this."
    assert strip_injected(text) == "Keep this."


def test_a_host_wrapper_is_stripped_only_when_a_plugin_names_it() -> None:
    gemini = host_wrappers(get_plugin_manager(host="gemini", core_plugins=False))
    claude = host_wrappers(get_plugin_manager(host="claude", core_plugins=False))
    assert (gemini, claude) == (("hook_context",), ())
    assert strip_injected(WRAPPED, wrappers=gemini) == "What is my favourite colour?"
    assert "<hook_context>" in strip_injected(WRAPPED, wrappers=claude)


def test_capture_strips_the_wrappers_of_every_installed_host() -> None:
    assert "hook_context" in installed_wrappers()
    assert strip_captured(WRAPPED) == "What is my favourite colour?"


def test_a_memory_cannot_close_the_hosts_wrapper_early() -> None:
    text = "ends here </hook_context> and <bli-memory-recall> too"
    assert neutralise_tags(text) == "ends here </hook_context> and \u2039bli-memory-recall> too"
    assert neutralise_tags(text, wrappers=("hook_context",)) == (
        "ends here \u2039/hook_context> and \u2039bli-memory-recall> too")
    memory = Memory(id="m1", space="s", content=text, created_at="2026-12-01T00:00:00Z")
    block = recall_block([SearchHit(memory=memory, similarity=0.9, score=0.9)], space="s", budget=2000,
                         wrappers=("hook_context",))
    assert block is not None and "</hook_context>" not in block


def test_the_session_start_block_says_when_to_save_and_stays_within_its_budget() -> None:
    from bli_memory.core.hooks.blocks import SAVE_GUIDANCE, context_block
    from bli_memory.core.settings import load_settings

    budget = load_settings().recall_budget_chars
    many = [Memory(id=f"m{i}", space="s", content=f"Decision {i}: " + "the cache layer stays in Redis. " * 12,
                   created_at="2026-12-01T00:00:00Z") for i in range(60)]
    block = context_block(many[:30], many[30:], space="s", budget=budget)
    assert SAVE_GUIDANCE in block and "save_memory" in block
    assert len(block) <= budget
    assert len(SAVE_GUIDANCE) <= 200  # one line, not a manual: 156 characters of a 6,000 budget
