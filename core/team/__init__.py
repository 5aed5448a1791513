"""The team memory service: Postgres store, HTTP app, remote client and pairing.

Import-free on purpose: hooks import submodules on every prompt.
"""
