"""The resident daemon that keeps recall warm, and the hook's client of it.

Import-free on purpose: hooks import submodules on every prompt.
"""
