"""The embedded store: SQLite engine, store, migrations and side indexes.

Import-free on purpose: hooks import submodules on every prompt.
"""
