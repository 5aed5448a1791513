"""Host adapters: one pluggy plugin module per agent host (see ``bli_memory.core.plugins``).

Each adapter is registered by one ``bli_memory.hosts`` entry point in ``pyproject.toml``;
that entry point is the only list of hosts. The hook entry point, which runs on every
prompt, reads it from our distribution's ``entry_points.txt`` and imports only its
host's adapter (:func:`bli_memory.core.plugins.own_entry_points`).
"""
