"""BLI Memory core: contracts, memory engine, hooks, MCP server and CLI.

This package's ``__init__`` stays import-free on purpose: the hook entry point
imports ``bli_memory.core.*`` modules on every prompt, and anything imported here
would be paid for by every turn of every session.
"""
