"""Host adapters: one pluggy plugin module per agent host (see ``bli_memory.core.plugins``).

``BUILTIN_HOSTS`` repeats the ``bli_memory.hosts`` entry points of ``pyproject.toml``
so that the hook entry point, which runs on every prompt, can load its one adapter
without scanning every installed distribution's metadata (that scan costs tens of
milliseconds). A test keeps the two equal. Third-party hosts are found through the
entry points as usual.
"""

BUILTIN_HOSTS: dict[str, str] = {
    "claude": "bli_memory.adapters.claude_code",
    "codex": "bli_memory.adapters.codex",
    "copilot": "bli_memory.adapters.copilot",
    "gemini": "bli_memory.adapters.gemini",
    "hermes": "bli_memory.adapters.hermes",
}
