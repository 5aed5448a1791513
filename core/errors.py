"""The one exception tree of BLI Memory.

::

    BliMemoryError                 base; every error carries a ``reason``
     +-- ConfigError               bad settings or environment
     +-- InvalidInputError         an argument a caller gave cannot be used
     +-- StoreError                the store could not do what was asked
     |    +-- MigrationError       the schema could not be brought up to date
     |    +-- ModelMismatchError   the store's vectors come from another embedding model
     |    +-- NotFoundError        no memory matches the id / customId / text given
     +-- EmbedderError             the embedding model could not load or run
     +-- HostError                 a host adapter could not do its job
     |    +-- HookPayloadError     the host's hook payload is unusable
     |    +-- InstallConflict      a host config file cannot be merged safely
     +-- ServiceError              the memory service answered badly or not at all

``reason`` is a short literal from a closed set (for example ``timeout``,
``stdin_malformed``, ``not_found``); receipts and tool errors show the reason, never
a stack trace. Foreign exceptions (sqlite3, httpx, tomlkit, onnxruntime) are
converted to these classes, ``raise ... from exc``, in the one module that calls
that library. This module imports nothing beyond the standard library.
"""

from __future__ import annotations

__all__ = [
    "BliMemoryError",
    "ConfigError",
    "EmbedderError",
    "HookPayloadError",
    "HostError",
    "InstallConflict",
    "InvalidInputError",
    "MigrationError",
    "ModelMismatchError",
    "NotFoundError",
    "ServiceError",
    "StoreError",
]


class BliMemoryError(Exception):
    """Base of every error BLI Memory raises on purpose.

    Args:
        message: One sentence a person can act on. Never contains a secret, a memory
            body or a token.
        reason: A short literal from a closed set, safe to log and count.
    """

    default_reason = "internal"

    def __init__(self, message: str, *, reason: str | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.reason = reason or self.default_reason


class ConfigError(BliMemoryError):
    """A setting or environment variable has a value we cannot use."""

    default_reason = "config_invalid"


class InvalidInputError(BliMemoryError):
    """An argument cannot be used (empty content, bad container tag, two selectors, ...)."""

    default_reason = "invalid_input"


class StoreError(BliMemoryError):
    """The store (SQLite file or Postgres) failed or refused an operation."""

    default_reason = "store_failed"


class MigrationError(StoreError):
    """The store's schema could not be migrated to the version this code needs."""

    default_reason = "migration_failed"


class ModelMismatchError(StoreError):
    """The store's vectors were made by another embedding model than the one loaded."""

    default_reason = "model_mismatch"


class NotFoundError(StoreError):
    """No live memory matches the id, customId, text or query given."""

    default_reason = "not_found"


class EmbedderError(BliMemoryError):
    """The embedding model could not be loaded, verified or run."""

    default_reason = "embedder_failed"


class HostError(BliMemoryError):
    """A host adapter could not parse, render, read or install."""

    default_reason = "host_failed"


class HookPayloadError(HostError):
    """The JSON a host sent to a hook cannot be used."""

    default_reason = "stdin_malformed"


class InstallConflict(HostError):
    """A host's config file exists but cannot be merged without losing content."""

    default_reason = "install_conflict"


class ServiceError(BliMemoryError):
    """The memory service was unreachable or answered with something unusable."""

    default_reason = "dashboard_unreachable"
