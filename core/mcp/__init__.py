"""The MCP server ``bli-memory``: tools, controls and the stdio transport.

Import-free on purpose: hooks import submodules on every prompt.
"""
