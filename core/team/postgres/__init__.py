"""The team store: Postgres + pgvector, one person's view of one database.

Like every wing, this ``__init__`` imports nothing.
"""
