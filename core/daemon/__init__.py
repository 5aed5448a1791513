"""The resident daemon that keeps recall warm.

Its client and start rule are the hook's side of it: core/hooks/daemon_client.py and
core/hooks/daemon_start.py.

Import-free on purpose: hooks import submodules on every prompt.
"""
