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
from typing import TYPE_CHECKING, Protocol, runtime_checkable

if TYPE_CHECKING:
    import numpy as np

__all__ = ["Embedder"]


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
