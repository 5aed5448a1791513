"""The client side of the team service: the remote backend, its HTTP client, pairing and the spool.

Like every wing, this ``__init__`` imports nothing.
"""
