"""The hook runtime: one hook run from the host's payload to its stdout. Standard library first.

Import-free on purpose: hooks import submodules on every prompt.
"""
