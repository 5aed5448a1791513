"""The ``Embedder`` protocol: what every store asks of an embedding model.

The shipped model (:class:`~bli_memory.core.memory.embeddings.OnnxEmbedder`, all-MiniLM-L6-v2
int8), the installable ones handed out lazily
(:class:`~bli_memory.core.memory.embedder_models.LazyEmbedder`) and any plugin's
(the ``register_embedders`` hook) implement it; the embedded engine and the Postgres store
take one. A test may pass any object of this shape (a model cannot be downloaded here).

Standard library only at run time: the hook imports the stores' modules.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

if TYPE_CHECKING:
    import numpy as np

__all__ = ["Embedder", "available_embedders", "load_embedder"]


@runtime_checkable
class Embedder(Protocol):
    """An embedding model.

    Attributes:
        name: The model id a store records next to every vector; a store refuses vectors
            of another (:mod:`bli_memory.core.memory.model_mismatch`).
        dimensions: Vector width (384 for the shipped model).
    """

    name: str
    dimensions: int

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        """Embeddings of ``texts``: float32, shape ``(len(texts), dimensions)``, each row of
        unit length (so a dot product is the cosine similarity).

        Raises:
            EmbedderError: the model cannot be loaded or run.
        """
        ...


def available_embedders(pm: Any | None = None) -> dict[str, Any]:
    """Every registered embedder factory by name (the ``register_embedders`` hook)."""
    if pm is None:
        from bli_memory.core.plugins import get_plugin_manager

        pm = get_plugin_manager()
    found: dict[str, Any] = {}
    pm.hook.register_embedders(register=lambda name, factory: found.setdefault(name, factory))
    return found


def load_embedder(name: str, pm: Any | None = None) -> Embedder:
    """Build the embedder registered as ``name``, or the one in the model folder ``name``.

    Raises:
        ConfigError: no plugin registers that name, or what it registers is not an
            :class:`~bli_memory.core.memory.embedder.Embedder`.
        EmbedderError: the model is not installed or its folder fails to load.
    """
    from bli_memory.core.errors import ConfigError
    from bli_memory.core.memory import embedder_models

    if embedder_models.is_model_path(name):
        return embedder_models.lazy_model_dir(name)
    factories = available_embedders(pm)
    if name not in factories:
        known = ", ".join(sorted(factories))
        raise ConfigError(f"BLI_MEMORY_EMBEDDER={name!r} is not a registered embedder; known: {known}")
    embedder = factories[name]()
    if not isinstance(embedder, Embedder):
        raise ConfigError(f"the embedder registered as {name!r} has no name, dimensions and embed(texts) "
                          "(bli_memory.core.memory.embedder.Embedder)")
    return embedder
