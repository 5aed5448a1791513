"""Memory: what every store shares.

The backend contract's parts: retrieval, terms, embeddings, records, redaction, spaces.

Import-free on purpose: hooks import submodules on every prompt.
"""
