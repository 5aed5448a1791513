"""Defaults core falls back to when nothing names a value. No imports at all.

The hook entry imports this on every prompt, so it stays a bare module: importing
:mod:`bli_memory.core.models` instead (frozen dataclasses) cost the daemon route of a
prompt hook about 25 ms (``python -X importtime``, docs/benchmarks.md, "The wings side by
side").
"""

__all__ = ["DEFAULT_HOST"]

#: The host a hook run or MCP session assumes when nothing names one (``hook prompt``
#: without ``--host``): the first host served, whose installed hook commands carry no
#: ``--host``. The one place core names a host; every other host name comes from its plugin.
DEFAULT_HOST = "claude"
