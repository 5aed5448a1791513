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
    """The vectors of a set of spaces, held in memory (a snapshot; see
    :class:`~bli_memory.core.embedded.vector_cache.VectorCache`).

    Rows are appended as they are saved and tombstoned in place as they leave the live
    set (update, forget, purge), so a write never reloads the matrix; a tombstoned row
    keeps its position until the cache is compacted.

    Attributes:
        seqs: int64 array (n,) of row sequence numbers, ascending, tombstoned rows included.
        matrix: float32 array (n, d), rows L2-normalised.
        write_seq: The store's write sequence this snapshot is level with
            (:func:`bli_memory.core.embedded.migrations.m008_write_sequence`).
        max_seq: Highest seq cached (0 when empty).
        alive: bool array (n,) with False at tombstoned rows, or None when every row is live.
        epoch: The store's ``side_index_epoch`` (moves when derived data is rebuilt).
        size: Live rows.
    """

    seqs: np.ndarray
    matrix: np.ndarray
    write_seq: int
    max_seq: int
    alive: np.ndarray | None = None
    epoch: int = 0
    size: int = -1

    def __post_init__(self) -> None:
        if self.size < 0:
            self.size = len(self.seqs) if self.alive is None else int(self.alive.sum())

    def live_seqs(self) -> np.ndarray:
        """The live seqs, ascending (a copy when rows are tombstoned)."""
        return self.seqs if self.alive is None else self.seqs[self.alive]

    def position(self, seq: int) -> int | None:
        """Row of ``seq`` in :attr:`matrix` when it is cached and live, else None."""
        import numpy as np

        pos = int(np.searchsorted(self.seqs, seq))
        if pos < len(self.seqs) and int(self.seqs[pos]) == seq and (self.alive is None or self.alive[pos]):
            return pos
        return None

    def similarities(self, vector: np.ndarray) -> np.ndarray:
        """Cosine of ``vector`` with every row (float32 (n,)); tombstoned rows get -inf."""
        import numpy as np

        sims: np.ndarray = self.matrix @ vector
        if self.alive is not None:
            sims[~self.alive] = -np.inf
        return sims
