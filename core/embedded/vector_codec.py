"""The embedded store's vector format: little-endian float32 blobs, and a set of them in memory.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import numpy as np

__all__ = [
    "VectorSet",
    "decode_vector",
    "encode_vector",
]


def encode_vector(vector: np.ndarray) -> bytes:
    """Little-endian float32 bytes of a 1-d vector."""
    import numpy as np

    return np.asarray(vector, dtype="<f4").tobytes()


def decode_vector(blob: bytes) -> np.ndarray:
    """Inverse of :func:`encode_vector`: a float32 array (read-only view of ``blob``)."""
    import numpy as np

    return np.frombuffer(blob, dtype="<f4")


@dataclass


class VectorSet:
    """The live vectors of a set of spaces, held in memory.

    Attributes:
        seqs: int64 array (n,) of row sequence numbers.
        matrix: float32 array (n, d), rows L2-normalised.
    """

    seqs: np.ndarray
    matrix: np.ndarray
    generation: tuple[tuple[int, int], ...]
    max_seq: int
