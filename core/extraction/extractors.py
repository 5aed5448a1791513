"""Extractors: raw conversation text -> atomic statements worth keeping.

This module registers the two built-in extractors and makes the choice between them; it
re-exports the names a plugin needs (:class:`Statement`, :class:`Extractor`, ...) from the
modules that own them:

- ``default`` (:class:`RuleExtractor`, :mod:`~bli_memory.core.extraction.rule_extractor`):
  offline, no model service. It splits an exchange into candidate statements (turns,
  paragraphs, bullets, sentences; inline code kept whole) and keeps the durable ones:
  decisions and their reasons, preferences, conventions, facts about the project,
  commands that worked and fixes to errors. Questions, chit-chat, acknowledgements, promises ("I'll ...") and
  transient status ("Running the tests...", "All 214 tests passed") are dropped.
- ``openai`` (:class:`ChatCompletionsExtractor`, :mod:`~bli_memory.core.extraction.chat_extractor`):
  asks any OpenAI-compatible ``/chat/completions`` endpoint (httpx) for the same list.
  Used only when the person sets ``BLI_MEMORY_EXTRACT_URL`` (and ``BLI_MEMORY_EXTRACT_MODEL``, optionally
  ``BLI_MEMORY_EXTRACT_API_KEY``); the default never needs it. Text reaching it has
  already been redacted (:func:`bli_memory.core.extraction.reconcile.distil` redacts first).

Extractors are plugins: each is registered through the ``register_extractors``
hook (:mod:`bli_memory.core.plugins`) as ``register(name, factory)``, where
``factory()`` returns an object with ``name`` and ``extract(text) -> list[Statement]``.
This module registers the two built-ins the same way. :func:`get_extractor` picks
``BLI_MEMORY_EXTRACTOR`` when set, else ``openai`` when an endpoint is configured,
else ``default``.

Debugging hook: ``BLI_MEMORY_EXTRACT_PLUGINS=module[,module...]`` names importable
modules that are registered as plugins before the choice is made, so an extractor can
be plugged in without installing a package (an entry point): for example a slow or
failing extractor to watch the worker's leases and retries. Combine it with
``BLI_MEMORY_EXTRACTOR=<name>`` to select it.

Text inside ``<bli-memory-recall>`` and ``<bli-memory-context>`` blocks, and inside the
wrappers hosts put around injected context (``<hook_context>`` for Gemini CLI, named by its
plugin), is removed before anything is extracted
(:func:`bli_memory.core.extraction.injected.strip_captured`).

The protocol and the statement live in :mod:`~bli_memory.core.extraction.statements`; the
rules in :mod:`~bli_memory.core.extraction.patterns`, :mod:`~bli_memory.core.extraction.sentences`
and :mod:`~bli_memory.core.extraction.classify`; the words a statement names in
:mod:`~bli_memory.core.extraction.statement_terms`.

Importing this module costs the standard library only (it is a default plugin, loaded
by every plugin manager, the hook's included); the rules compile on first use and
httpx is imported only by the ``openai`` extractor.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from bli_memory.core.errors import ConfigError
from bli_memory.core.extraction.chat_extractor import ChatCompletionsExtractor
from bli_memory.core.extraction.rule_extractor import RuleExtractor
from bli_memory.core.extraction.statement_terms import content_terms, negated, specific_terms
from bli_memory.core.extraction.statements import KINDS, Extractor, Statement, StatementKind
from bli_memory.core.hookspecs import hookimpl

if TYPE_CHECKING:
    import pluggy

    from bli_memory.core.settings import Settings

__all__ = [
    "KINDS",
    "ChatCompletionsExtractor",
    "Extractor",
    "RuleExtractor",
    "Statement",
    "StatementKind",
    "available_extractors",
    "content_terms",
    "get_extractor",
    "negated",
    "register_extractors",
    "specific_terms",
]


def _openai_from_env() -> ChatCompletionsExtractor:
    from bli_memory.core.settings import load_settings

    return ChatCompletionsExtractor.from_settings(load_settings())


def _host_from_env() -> Any:
    return get_extractor(name="host")


@hookimpl
def register_extractors(register: Callable[[str, Callable[[], Any]], None]) -> None:
    """Register the built-in extractors: ``default`` (rules), ``openai`` (an endpoint) and
    ``host`` (the person's own host CLI)."""
    register("default", RuleExtractor)
    register("openai", _openai_from_env)
    register("host", _host_from_env)


def _plugin_modules(settings: Settings) -> list[str]:
    raw = settings.extract_plugins or ""
    return [m.strip() for m in raw.split(",") if m.strip()]


def available_extractors(
    pm: pluggy.PluginManager | None = None, *, settings: Settings | None = None
) -> dict[str, Callable[[], Any]]:
    """Every registered extractor factory by name.

    Args:
        pm: A plugin manager (default: :func:`~bli_memory.core.plugins.get_plugin_manager`).
        settings: Settings naming extra plugin modules (``BLI_MEMORY_EXTRACT_PLUGINS``).

    Raises:
        ConfigError: a module named in ``BLI_MEMORY_EXTRACT_PLUGINS`` cannot be imported.
    """
    if settings is None:
        from bli_memory.core.settings import load_settings

        settings = load_settings()
    if pm is None:
        from bli_memory.core.plugins import get_plugin_manager

        pm = get_plugin_manager()
    for module_name in _plugin_modules(settings):
        if pm.has_plugin(module_name):
            continue
        try:
            module = importlib.import_module(module_name)
        except ImportError as exc:
            raise ConfigError(
                f"BLI_MEMORY_EXTRACT_PLUGINS names {module_name!r}, which cannot be imported",
                reason="config_invalid",
            ) from exc
        pm.register(module, name=module_name)
    factories: dict[str, Callable[[], Any]] = {}

    def register(name: str, factory: Callable[[], Any]) -> None:
        factories[name] = factory

    pm.hook.register_extractors(register=register)
    return factories


def get_extractor(
    pm: pluggy.PluginManager | None = None, *, settings: Settings | None = None, name: str | None = None
) -> Extractor:
    """The extractor to use: ``name``, else ``BLI_MEMORY_EXTRACTOR``, else the choice
    ``install --extractor`` saved (:mod:`~bli_memory.core.extraction.host_config`), else
    ``openai`` when ``BLI_MEMORY_EXTRACT_URL`` is set, else ``default``. ``host`` is the
    person's own host CLI (:mod:`~bli_memory.core.extraction.host_model`).

    Raises:
        ConfigError: the chosen name is not registered, or its configuration is incomplete.
    """
    if settings is None:
        from bli_memory.core.settings import load_settings

        settings = load_settings()
    if not (name or settings.extractor):
        from bli_memory.core.extraction.host_config import load_choice

        saved = load_choice().get("extractor")  # `install --extractor host` saved it
        name = saved if saved in ("host", "default") else None
    chosen = name or settings.extractor or ("openai" if settings.extract_url else "default")
    if chosen == "default" and not _plugin_modules(settings) and pm is None:
        return RuleExtractor()  # the common case needs no plugin manager
    if chosen == "host":
        from bli_memory.core.extraction.host_config import host_choice
        from bli_memory.core.extraction.host_model import HostModelExtractor

        if pm is None:
            from bli_memory.core.plugins import get_plugin_manager

            pm = get_plugin_manager()
        try:
            return HostModelExtractor(host_choice(settings), pm)
        except ConfigError:  # a hand-edited choice: each job falls back to the rules and says why
            return HostModelExtractor(None, pm, problem="config_invalid")
    factories = available_extractors(pm, settings=settings)
    if chosen not in factories:
        raise ConfigError(
            f"no extractor named {chosen!r}; registered: {', '.join(sorted(factories))}",
            reason="config_invalid",
        )
    if factories[chosen] is _openai_from_env:
        extractor: Any = ChatCompletionsExtractor.from_settings(settings)  # the settings given
    else:
        extractor = factories[chosen]()
    if not hasattr(extractor, "name"):
        extractor.name = chosen
    return extractor  # type: ignore[no-any-return]
