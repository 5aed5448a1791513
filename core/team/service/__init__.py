"""The team memory service: the HTTP doors (Starlette) over the Postgres store.

Like every wing, this ``__init__`` imports nothing.
"""
