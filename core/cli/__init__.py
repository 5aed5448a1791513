"""The ``bli-memory-mcp`` and ``cockpit`` commands.

Import-free on purpose: hooks import submodules on every prompt.
"""
