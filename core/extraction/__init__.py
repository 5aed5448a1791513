"""Capture: extractors, the durability gate, reconcile and the extract worker.

Import-free on purpose: hooks import submodules on every prompt.
"""
