"""Defaults core falls back to when nothing names a value. No imports at all.

The hook entry imports this on every prompt, so it stays a bare module: importing
:mod:`bli_memory.core.models` instead (frozen dataclasses) cost the daemon route of a
prompt hook about 25 ms (``python -X importtime``, docs/benchmarks.md, "The wings side by
side").
"""

__all__ = ["DEFAULT_HOST", "SHIPPED_EMBEDDER"]

#: The host a hook run or MCP session assumes when nothing names one (``hook prompt``
#: without ``--host``): the first host served, whose installed hook commands carry no
#: ``--host``. The one place core names a host; every other host name comes from its plugin.
DEFAULT_HOST = "claude"

#: The embedding model every store uses unless ``BLI_MEMORY_EMBEDDER`` names another: the
#: one shipped in the wheel (all-MiniLM-L6-v2, int8). Here so the hooks' daemon client can
#: tell "set to the default" from "another model" without importing the settings.
SHIPPED_EMBEDDER = "all-MiniLM-L6-v2-int8"
