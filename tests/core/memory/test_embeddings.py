"""Tests of the run-time embedder against the real packaged int8 model (no mocks)."""

from __future__ import annotations

import subprocess
import sys
import threading
from importlib import resources
from pathlib import Path

import numpy as np
import pytest

from bli_memory.core.errors import EmbedderError
from bli_memory.core.memory.embeddings import (
    DIMENSIONS,
    MAX_TOKENS,
    MODEL_NAME,
    OnnxEmbedder,
    get_embedder,
    read_verified_model_files,
)

MODEL_FILES = ("model.onnx", "tokenizer.json", "SHA256SUMS")


@pytest.fixture(scope="module")
def embedder() -> OnnxEmbedder:
    return get_embedder()


@pytest.fixture()
def model_copy(tmp_path: Path) -> Path:
    """A writable copy of the packaged model directory."""
    source = resources.files("bli_memory.core.model")
    for name in MODEL_FILES:
        (tmp_path / name).write_bytes((source / name).read_bytes())
    return tmp_path


def _cos(a: np.ndarray, b: np.ndarray) -> float:
    return float(np.dot(a, b) / (np.linalg.norm(a) * np.linalg.norm(b)))


def test_constants_and_attributes(embedder: OnnxEmbedder) -> None:
    assert MODEL_NAME == "all-MiniLM-L6-v2-int8"
    assert DIMENSIONS == 384
    assert MAX_TOKENS == 256
    assert embedder.name == MODEL_NAME
    assert embedder.dimensions == DIMENSIONS


def test_shape_dtype_and_unit_norm(embedder: OnnxEmbedder) -> None:
    texts = ["The cat sat on the mat.", "def add(a, b): return a + b", "", "東京は日本の首都です。", "🚀"]
    vectors = embedder.embed(texts)
    assert vectors.shape == (len(texts), DIMENSIONS)
    assert vectors.dtype == np.float32
    assert np.all(np.isfinite(vectors))
    np.testing.assert_allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-5)


def test_empty_input_gives_zero_rows(embedder: OnnxEmbedder) -> None:
    for empty in ([], ()):
        vectors = embedder.embed(empty)
        assert vectors.shape == (0, DIMENSIONS)
        assert vectors.dtype == np.float32


def test_paraphrase_scores_higher_than_unrelated(embedder: OnnxEmbedder) -> None:
    query, paraphrase, unrelated = embedder.embed(
        [
            "How do I reset my password?",
            "I forgot my login credentials, how can I recover them?",
            "Bake the bread at 180 degrees for 25 minutes.",
        ]
    )
    assert _cos(query, paraphrase) > _cos(query, unrelated) + 0.2
    assert _cos(query, paraphrase) > 0.5


def test_long_input_is_truncated_at_256_tokens(embedder: OnnxEmbedder) -> None:
    head = " ".join(["memory"] * 300)  # 300 word pieces, far past 256 with [CLS]/[SEP]
    long_a = head + " alpha beta gamma"
    long_b = head + " something entirely different at the end"
    vectors = embedder.embed([long_a, long_b, "short text"])
    assert vectors.shape == (3, DIMENSIONS)
    np.testing.assert_allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-5)
    # Everything after token 256 is cut, so both long texts embed the same.
    np.testing.assert_allclose(vectors[0], vectors[1], atol=1e-6)


def test_rows_come_back_in_input_order(embedder: OnnxEmbedder) -> None:
    texts = ["a much longer sentence about databases and indexes", "hi", "medium length text here"]
    forward = embedder.embed(texts)
    backward = embedder.embed(texts[::-1])[::-1]
    np.testing.assert_allclose(forward, backward, atol=1e-5)


def test_many_batches_match_one_by_one() -> None:
    batched = OnnxEmbedder(batch_size=8)
    single = OnnxEmbedder(batch_size=1, num_threads=1)
    texts = [f"note {i}: the build on branch feature-{i % 7} failed at step {i % 5}" for i in range(30)]
    texts += ["", "x", "a long one " * 80]
    a = batched.embed(texts)
    b = single.embed(texts)
    assert a.shape == b.shape == (len(texts), DIMENSIONS)
    cosines = np.sum(a * b, axis=1)
    # Dynamic int8 quantisation scales activations per batch, so rows differ a little.
    assert cosines.min() > 0.93
    assert cosines.mean() > 0.98


def test_bare_string_and_non_string_items_are_refused(embedder: OnnxEmbedder) -> None:
    with pytest.raises(TypeError):
        embedder.embed("not a list")
    with pytest.raises(TypeError):
        embedder.embed(["fine", 42])  # type: ignore[list-item]


def test_bad_settings_are_refused() -> None:
    with pytest.raises(ValueError):
        OnnxEmbedder(batch_size=0)
    with pytest.raises(ValueError):
        OnnxEmbedder(num_threads=0)
    with pytest.raises(ValueError):
        OnnxEmbedder(max_batch_tokens=0)


def test_batches_respect_row_and_token_limits(embedder: OnnxEmbedder) -> None:
    assert embedder.batch_size == 64
    assert embedder.max_batch_tokens == 4096
    short = embedder._batches(list(range(100)), [10] * 100)
    assert [len(b) for b in short] == [64, 36]
    long = embedder._batches(list(range(20)), [256] * 20)
    assert [len(b) for b in long] == [16, 4]
    mixed = embedder._batches([5, 3, 9, 0], [4, 100, 2000, 5000])
    assert mixed == [[5, 3], [9], [0]]  # a text past the budget still runs, alone
    assert sorted(i for b in mixed for i in b) == [0, 3, 5, 9]


def test_token_budget_of_one_embeds_each_text_alone() -> None:
    tiny = OnnxEmbedder(max_batch_tokens=1, num_threads=1)
    single = OnnxEmbedder(batch_size=1, num_threads=1)
    texts = ["first text", "a second, somewhat longer text", ""]
    np.testing.assert_allclose(tiny.embed(texts), single.embed(texts), atol=1e-6)


def test_get_embedder_is_one_instance_across_threads() -> None:
    seen: list[OnnxEmbedder] = []
    lock = threading.Lock()

    def grab() -> None:
        instance = get_embedder()
        with lock:
            seen.append(instance)

    threads = [threading.Thread(target=grab) for _ in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert len(seen) == 8
    assert all(instance is seen[0] for instance in seen)


def test_concurrent_embeds_agree(embedder: OnnxEmbedder) -> None:
    texts = ["shared memory for agents", "the store uses WAL mode"]
    expected = embedder.embed(texts)
    results: list[np.ndarray] = []
    lock = threading.Lock()

    def work() -> None:
        out = embedder.embed(texts)
        with lock:
            results.append(out)

    threads = [threading.Thread(target=work) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert len(results) == 4
    for out in results:
        np.testing.assert_allclose(out, expected, atol=1e-6)


def test_packaged_checksums_cover_both_files() -> None:
    source = resources.files("bli_memory.core.model")
    files = read_verified_model_files(source)
    assert set(files) == {"model.onnx", "tokenizer.json"}
    assert len(files["model.onnx"]) > 10_000_000


def test_copied_model_dir_loads(model_copy: Path) -> None:
    vectors = OnnxEmbedder(model_dir=model_copy, num_threads=1).embed(["hello"])
    assert vectors.shape == (1, DIMENSIONS)


@pytest.mark.parametrize("name", ["model.onnx", "tokenizer.json"])
def test_corrupted_file_is_refused(model_copy: Path, name: str) -> None:
    path = model_copy / name
    data = bytearray(path.read_bytes())
    data[len(data) // 2] ^= 0xFF
    path.write_bytes(bytes(data))
    with pytest.raises(EmbedderError, match="checksum") as info:
        read_verified_model_files(model_copy)
    assert info.value.reason == "embedder_failed"
    with pytest.raises(EmbedderError):
        OnnxEmbedder(model_dir=model_copy)


@pytest.mark.parametrize("name", MODEL_FILES)
def test_missing_file_is_refused(model_copy: Path, name: str) -> None:
    (model_copy / name).unlink()
    with pytest.raises(EmbedderError):
        OnnxEmbedder(model_dir=model_copy)


def test_sums_without_an_entry_are_refused(model_copy: Path) -> None:
    sums = model_copy / "SHA256SUMS"
    kept = [line for line in sums.read_text().splitlines() if not line.endswith("tokenizer.json")]
    sums.write_text("\n".join(kept) + "\n")
    with pytest.raises(EmbedderError, match="no entry"):
        read_verified_model_files(model_copy)


@pytest.mark.e2e
@pytest.mark.e2e
def test_import_is_cheap_and_torch_free() -> None:
    code = (
        "import sys\n"
        "import bli_memory.core.memory.embeddings as e\n"
        "heavy = {'numpy', 'onnxruntime', 'tokenizers', 'torch'} & set(sys.modules)\n"
        "assert not heavy, heavy\n"
        "e.get_embedder().embed(['x'])\n"
        "assert 'torch' not in sys.modules\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout == ""
    assert done.stderr == ""
