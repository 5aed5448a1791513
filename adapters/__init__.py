"""Host adapters: one pluggy plugin module per agent host (see ``bli_memory.core.contracts``)."""
