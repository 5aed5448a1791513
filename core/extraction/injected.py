"""Captured text without the blocks injected earlier, by us or by any installed host.

Capture (the default extractor's candidates, reconcile, the ``openai`` extractor) may run
on text from any host, so it strips the context wrappers of every installed host plugin
(each plugin's ``host_conventions``), read once per process from the plugin manager's
``bli_memory.hosts`` entry points. Not for the hook path: a hook knows its own host.
"""

from __future__ import annotations

from functools import cache

from bli_memory.core.memory.injected_tags import host_wrappers, strip_injected

__all__ = ["installed_wrappers", "strip_captured"]


@cache
def installed_wrappers() -> tuple[str, ...]:
    """The context wrappers (tag names) of every installed host plugin, sorted; read once."""
    from bli_memory.core.plugins import get_plugin_manager

    return host_wrappers(get_plugin_manager(core_plugins=False))


def strip_captured(text: str) -> str:
    """``text`` without our blocks and any installed host's context wrappers.

    See :func:`~bli_memory.core.memory.injected_tags.strip_injected`; linear in ``len(text)``.
    """
    return strip_injected(text, wrappers=installed_wrappers())
