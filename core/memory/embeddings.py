"""Run-time text embedder: an int8 ONNX model on onnxruntime's CPU provider.

The model files ship inside the package (``bli_memory.core.model``): ``model.onnx``
(made by ``scripts/export_model.py``; BERT + attention-mask-weighted mean pooling + L2
normalisation in one graph, weights int8 per channel) and ``tokenizer.json`` (the
model's WordPiece tokenizer). ``SHA256SUMS`` beside them is checked on every load.
Nothing is ever downloaded.

A model is a directory: ``model.onnx``, ``tokenizer.json``, ``SHA256SUMS`` and, for any
model but the shipped one, ``model.json``, the manifest that names it (the model id the
store records next to every vector), its dimensions, its token limit and its padding id.
``model.json`` must then be listed in ``SHA256SUMS`` too. A directory without a manifest
is the shipped all-MiniLM-L6-v2 (``core/memory/embedder_models.py`` loads installed ones).

Numbers from the model card of sentence-transformers/all-MiniLM-L6-v2: vectors have
384 dimensions; input is truncated to 256 word-piece tokens (``max_seq_length``).

Importing this module is cheap: numpy, onnxruntime and tokenizers are imported only
when an :class:`OnnxEmbedder` is created or used.

Note on determinism: dynamic int8 quantisation picks one activation scale per
tensor, that is per batch, so a text's vector can differ very slightly (cosine
typically > 0.99, worst seen 0.95 for a two-letter text) depending on the texts
batched with it. Pass ``batch_size=1`` for batch-independent vectors.
"""

from __future__ import annotations

import hashlib
import os
import threading
from collections.abc import Sequence
from importlib import resources
from pathlib import Path
from typing import TYPE_CHECKING, Any

from bli_memory.core.errors import EmbedderError

if TYPE_CHECKING:
    from importlib.resources.abc import Traversable

    import numpy as np

__all__ = [
    "DIMENSIONS",
    "MANIFEST_FILE",
    "MAX_TOKENS",
    "MODEL_NAME",
    "ModelManifest",
    "OnnxEmbedder",
    "get_embedder",
    "import_numpy_here",
    "parse_sums",
    "read_verified_model_files",
]

MODEL_NAME = "all-MiniLM-L6-v2-int8"
"""Name recorded in the store next to every vector this embedder makes."""

DIMENSIONS = 384
"""Length of every vector (model card: 384-dimensional dense vector space)."""

MAX_TOKENS = 256
"""Inputs are truncated to this many word-piece tokens, [CLS] and [SEP] included
(model card: "input text longer than 256 word pieces is truncated")."""

MODEL_PACKAGE = "bli_memory.core.model"
MODEL_FILE = "model.onnx"
TOKENIZER_FILE = "tokenizer.json"
SUMS_FILE = "SHA256SUMS"
MANIFEST_FILE = "model.json"
"""The manifest of a model directory other than the shipped one."""
DEFAULT_BATCH_SIZE = 64
DEFAULT_MAX_BATCH_TOKENS = 4096  # 16 texts of 256 tokens: peak RSS ~0.4 GB instead of ~1.2 GB at 64
OUTPUT_NAME = "embedding"


def parse_sums(text: str) -> dict[str, str]:
    """Parse ``sha256sum`` output (``<hex>  <name>`` or ``<hex> *<name>``) into name -> hex.

    Raises:
        EmbedderError: a line is not ``<64 hex> <name>``.
    """
    sums: dict[str, str] = {}
    for line in text.splitlines():
        line = line.strip()
        if not line:
            continue
        digest, _, name = line.partition(" ")
        name = name.strip().removeprefix("*")
        if len(digest) != 64 or not name:
            raise EmbedderError(f"{SUMS_FILE} has a malformed line: {line[:80]!r}")
        sums[name] = digest.lower()
    return sums


class ModelManifest:
    """What ``model.json`` says of a model: its id, vector width, token limit, padding id.

    Args:
        name: The model id the store records next to every vector (1 to 100 characters).
        dimensions: Width of the output vectors (1 to 8192).
        max_tokens: Inputs are truncated to this many tokens, special tokens included.
        pad_id: Token id used to pad a batch (the attention mask hides it either way).

    Raises:
        EmbedderError: A field is missing, of the wrong type or out of range.
    """

    __slots__ = ("dimensions", "max_tokens", "name", "pad_id")

    def __init__(self, name: str, dimensions: int, max_tokens: int, pad_id: int = 0) -> None:
        checks = (
            (isinstance(name, str) and 0 < len(name.strip()) <= 100, "name"),
            (type(dimensions) is int and 0 < dimensions <= 8192, "dimensions"),
            (type(max_tokens) is int and 2 <= max_tokens <= 8192, "max_tokens"),
            (type(pad_id) is int and pad_id >= 0, "pad_id"),
        )
        for ok, field in checks:
            if not ok:
                raise EmbedderError(f"{MANIFEST_FILE}: {field} is missing or out of range")
        self.name = name.strip()
        self.dimensions = dimensions
        self.max_tokens = max_tokens
        self.pad_id = pad_id

    @classmethod
    def parse(cls, data: bytes) -> ModelManifest:
        """Read a ``model.json`` (a JSON object with the fields above; others ignored).

        Raises:
            EmbedderError: Not JSON, not an object, or a field is invalid.
        """
        import json

        try:
            doc = json.loads(data.decode("utf-8"))
        except (UnicodeDecodeError, ValueError) as exc:
            raise EmbedderError(f"{MANIFEST_FILE} is not valid JSON: {exc}") from exc
        if not isinstance(doc, dict):
            raise EmbedderError(f"{MANIFEST_FILE} must hold a JSON object")
        return cls(doc.get("name", ""), doc.get("dimensions", 0), doc.get("max_tokens", 0),
                   doc.get("pad_id", 0))


SHIPPED_MANIFEST = ModelManifest(MODEL_NAME, DIMENSIONS, MAX_TOKENS)


def read_verified_model_files(model_dir: Traversable | Path) -> dict[str, bytes]:
    """Read ``model.onnx``, ``tokenizer.json`` (and ``model.json``) and check ``SHA256SUMS``.

    The bytes returned are the bytes that were hashed, so what is loaded is exactly
    what was verified. ``model.json`` is read when ``SHA256SUMS`` lists it or the file
    exists; a manifest that is not listed is refused, so it cannot be swapped unseen.

    Args:
        model_dir: Directory (a ``Path`` or an ``importlib.resources`` Traversable)
            holding ``model.onnx``, ``tokenizer.json`` and ``SHA256SUMS``.

    Returns:
        ``{"model.onnx": bytes, "tokenizer.json": bytes}``, plus ``"model.json"`` when
        the directory has a manifest.

    Raises:
        EmbedderError: A file is missing or unreadable, ``SHA256SUMS`` lacks an entry
            for one of the files, or a file's sha256 differs from its entry.
    """
    try:
        sums = parse_sums((model_dir / SUMS_FILE).read_text(encoding="utf-8"))
    except OSError as exc:
        raise EmbedderError(f"cannot read {SUMS_FILE} in the model directory: {exc}") from exc
    files: dict[str, bytes] = {}
    names = [MODEL_FILE, TOKENIZER_FILE]
    if MANIFEST_FILE in sums or (model_dir / MANIFEST_FILE).is_file():
        names.append(MANIFEST_FILE)
    for name in names:
        expected = sums.get(name)
        if expected is None:
            raise EmbedderError(f"{SUMS_FILE} has no entry for {name}")
        try:
            data = (model_dir / name).read_bytes()
        except OSError as exc:
            raise EmbedderError(f"cannot read model file {name}: {exc}") from exc
        actual = hashlib.sha256(data).hexdigest()
        if actual != expected:
            raise EmbedderError(
                f"model file {name} fails its checksum (sha256 {actual[:12]}..., expected "
                f"{expected[:12]}...); reinstall bli-memory-mcp, or for an installed model run "
                "bli-memory-mcp model install NAME --force"
            )
        files[name] = data
    return files


def _default_threads() -> int:
    return max(1, min(4, os.cpu_count() or 1))


class OnnxEmbedder:
    """Embeds texts with an int8 ONNX model: the packaged all-MiniLM-L6-v2 by default.

    Loading verifies both model files' sha256, then builds one onnxruntime session
    (CPUExecutionProvider, graph optimisation ORT_ENABLE_ALL, log severity 3 so it
    prints no warnings). Takes about 0.3 s and about 100 MB of RSS on a 2-core x86-64.
    An instance is safe to share between threads.

    Args:
        model_dir: Directory holding ``model.onnx``, ``tokenizer.json`` and
            ``SHA256SUMS`` (and ``model.json`` for a model other than the shipped one);
            default the packaged ``bli_memory.core.model``.
        num_threads: onnxruntime intra-op threads; default ``min(4, os.cpu_count())``.
        batch_size: Most texts per inference call; each batch is padded to its own
            longest sequence. Default 64.
        max_batch_tokens: Most padded tokens (rows x longest sequence) per inference
            call, which bounds the activation memory of batches of long texts. Default
            4096; a single text is always allowed its ``max_tokens``.

    Attributes:
        name: The model id, recorded next to every stored vector (``MODEL_NAME`` for the
            shipped model, else the manifest's ``name``).
        dimensions: Vector width (``DIMENSIONS``, 384, for the shipped model).
        max_tokens: Token limit (``MAX_TOKENS``, 256, for the shipped model).

    Raises:
        EmbedderError: The files are missing or fail their checksum, the manifest is
            invalid, onnxruntime or tokenizers cannot load them, or the model's output is
            not ``dimensions`` wide.
        ValueError: ``num_threads``, ``batch_size`` or ``max_batch_tokens`` is smaller
            than 1.
    """

    def __init__(
        self,
        model_dir: Path | None = None,
        *,
        num_threads: int | None = None,
        batch_size: int = DEFAULT_BATCH_SIZE,
        max_batch_tokens: int = DEFAULT_MAX_BATCH_TOKENS,
    ) -> None:
        threads = _default_threads() if num_threads is None else num_threads
        if threads < 1:
            raise ValueError(f"num_threads must be >= 1, got {threads}")
        if batch_size < 1:
            raise ValueError(f"batch_size must be >= 1, got {batch_size}")
        if max_batch_tokens < 1:
            raise ValueError(f"max_batch_tokens must be >= 1, got {max_batch_tokens}")
        self.batch_size = batch_size
        self.max_batch_tokens = max_batch_tokens
        self.num_threads = threads

        directory: Traversable | Path
        if model_dir is None:
            try:
                directory = resources.files(MODEL_PACKAGE)
            except ModuleNotFoundError as exc:
                raise EmbedderError(f"the packaged model ({MODEL_PACKAGE}) is not installed") from exc
        else:
            directory = model_dir
        files = read_verified_model_files(directory)
        manifest = (ModelManifest.parse(files[MANIFEST_FILE]) if MANIFEST_FILE in files
                    else SHIPPED_MANIFEST)
        self.name: str = manifest.name
        self.dimensions: int = manifest.dimensions
        self.max_tokens: int = manifest.max_tokens
        self._pad_id = manifest.pad_id

        try:
            from tokenizers import Tokenizer

            from bli_memory.core.memory.onnx_runtime import import_onnxruntime

            ort = import_onnxruntime()
        except ImportError as exc:
            raise EmbedderError(f"an embedder dependency is not installed: {exc}") from exc

        try:
            tokenizer = Tokenizer.from_str(files[TOKENIZER_FILE].decode("utf-8"))
            tokenizer.enable_truncation(max_length=self.max_tokens)
            tokenizer.no_padding()
        except Exception as exc:  # tokenizers raises plain Exception subclasses
            raise EmbedderError(f"cannot load the tokenizer: {exc}") from exc

        try:
            ort.set_default_logger_severity(3)
            options = ort.SessionOptions()
            options.intra_op_num_threads = threads
            options.inter_op_num_threads = 1
            options.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
            options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
            options.log_severity_level = 3
            # Idle worker threads must not spin: a resident process would burn a core
            # between queries, and on two cores spinning also slows the query itself.
            options.add_session_config_entry("session.intra_op.allow_spinning", "0")
            session = ort.InferenceSession(
                files[MODEL_FILE], sess_options=options, providers=["CPUExecutionProvider"]
            )
        except Exception as exc:  # onnxruntime raises its own Exception subclasses
            raise EmbedderError(f"onnxruntime cannot load the model: {exc}") from exc
        del files

        outputs = {o.name: o.shape for o in session.get_outputs()}
        shape = outputs.get(OUTPUT_NAME)
        if shape is None or len(shape) != 2 or shape[1] != self.dimensions:
            raise EmbedderError(
                f"model output {OUTPUT_NAME!r} is {shape}, expected [batch, {self.dimensions}]"
            )
        self._input_names = frozenset(i.name for i in session.get_inputs())
        if not {"input_ids", "attention_mask"} <= self._input_names:
            raise EmbedderError(
                f"model inputs are {sorted(self._input_names)}, need input_ids and attention_mask"
            )
        self._tokenizer: Any = tokenizer
        self._session: Any = session

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        """Embed texts into unit vectors.

        Texts are tokenised (the model's tokenizer), truncated to ``max_tokens`` tokens,
        sorted by length and run in batches of at most ``batch_size`` texts and
        ``max_batch_tokens`` padded tokens, each padded to its longest member; rows come
        back in the input order.

        Args:
            texts: The texts; a bare ``str`` is refused (it would embed each character).

        Returns:
            float32 array of shape ``(len(texts), dimensions)``; each row has L2 norm 1
            (within 1e-5), so a dot product is the cosine similarity. ``(0, dimensions)``
            for no texts.

        Raises:
            TypeError: ``texts`` is a ``str``, or an item is not a ``str``.
            EmbedderError: tokenizers or onnxruntime failed, or the output is not finite.
        """
        import numpy as np

        if isinstance(texts, str):
            raise TypeError("embed() takes a sequence of texts, not a single str")
        items = list(texts)
        for item in items:
            if not isinstance(item, str):
                raise TypeError(f"embed() texts must be str, got {type(item).__name__}")
        result = np.zeros((len(items), self.dimensions), dtype=np.float32)
        if not items:
            return result

        try:
            encodings = self._tokenizer.encode_batch(items, add_special_tokens=True)
        except Exception as exc:
            raise EmbedderError(f"tokenizer failed: {exc}") from exc
        id_lists = [enc.ids for enc in encodings]
        order = sorted(range(len(items)), key=lambda i: len(id_lists[i]))
        use_types = "token_type_ids" in self._input_names

        for rows in self._batches(order, [len(id_lists[i]) for i in order]):
            width = len(id_lists[rows[-1]])
            input_ids = np.full((len(rows), width), self._pad_id, dtype=np.int64)
            attention_mask = np.zeros((len(rows), width), dtype=np.int64)
            for row, index in enumerate(rows):
                ids = id_lists[index]
                input_ids[row, : len(ids)] = ids
                attention_mask[row, : len(ids)] = 1
            feeds = {"input_ids": input_ids, "attention_mask": attention_mask}
            if use_types:
                feeds["token_type_ids"] = np.zeros((len(rows), width), dtype=np.int64)
            try:
                (vectors,) = self._session.run([OUTPUT_NAME], feeds)
            except Exception as exc:
                raise EmbedderError(f"onnxruntime failed to run the model: {exc}") from exc
            result[rows] = vectors

        if not np.isfinite(result).all():
            raise EmbedderError("the model produced non-finite values")
        return result

    def _batches(self, order: list[int], lengths: list[int]) -> list[list[int]]:
        """Cut ``order`` (sorted by ascending ``lengths``) into batches within both limits."""
        batches: list[list[int]] = []
        current: list[int] = []
        for index, length in zip(order, lengths, strict=True):
            # Sorted ascending, so the newest item sets the batch's padded width.
            if current and (
                len(current) >= self.batch_size or (len(current) + 1) * length > self.max_batch_tokens
            ):
                batches.append(current)
                current = []
            current.append(index)
        if current:
            batches.append(current)
        return batches


_instance: OnnxEmbedder | None = None
_instance_lock = threading.Lock()


def import_numpy_here() -> None:
    """Import numpy in the calling thread, before a long-lived process starts its warm-up
    thread: two threads importing it at once can be handed a half-initialised module by
    importlib (a page of the memory browser failed so). The MCP server, the daemon, the
    memory browser and the service call this first."""
    import numpy  # noqa: F401


def get_embedder() -> OnnxEmbedder:
    """Return the process-wide embedder, loading it on first call (thread-safe).

    Returns:
        The shared :class:`OnnxEmbedder` over the packaged model, default settings.

    Raises:
        EmbedderError: The model could not be loaded (a later call retries).
    """
    global _instance
    embedder = _instance
    if embedder is None:
        with _instance_lock:
            embedder = _instance
            if embedder is None:
                embedder = _instance = OnnxEmbedder()
    return embedder
