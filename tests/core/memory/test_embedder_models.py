"""A second real model: a model folder with a manifest, by path or by installed name.

The second model is a real ONNX graph run by onnxruntime (``tiny_model.py``), so these
tests need no download; the real mpnet folder has its own slow test
(``tests/integration/test_mpnet_model.py``).
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from bli_memory.core.errors import EmbedderError
from bli_memory.core.memory import embedder_models
from bli_memory.core.memory.embedder import available_embedders, load_embedder
from bli_memory.core.memory.embeddings import ModelManifest, OnnxEmbedder
from bli_memory.core.paths import data_dir
from tests.core.memory.tiny_model import write_tiny_model


def test_a_model_folder_names_its_model_and_width(tmp_path: Path) -> None:
    embedder = OnnxEmbedder(write_tiny_model(tmp_path / "m"), num_threads=1)
    assert (embedder.name, embedder.dimensions, embedder.max_tokens) == ("tiny-bag-16", 16, 128)
    vectors = embedder.embed(["the cat sat on the mat", "a cat sat on a mat", "quarterly revenue grew"])
    assert vectors.shape == (3, 16) and vectors.dtype == np.float32
    assert np.allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-5)
    assert vectors[0] @ vectors[1] > vectors[0] @ vectors[2]
    assert embedder.embed([]).shape == (0, 16)
    long = embedder.embed(["word " * 1000])  # truncated at the manifest's 128 tokens
    assert np.allclose(long, embedder.embed(["word " * 126]), atol=1e-6)


def test_a_manifest_left_out_of_the_sums_is_refused(tmp_path: Path) -> None:
    folder = write_tiny_model(tmp_path / "m")
    sums = [line for line in (folder / "SHA256SUMS").read_text().splitlines() if "model.json" not in line]
    (folder / "SHA256SUMS").write_text("\n".join(sums) + "\n")
    with pytest.raises(EmbedderError, match="no entry for model.json"):
        OnnxEmbedder(folder)


def test_an_edited_manifest_fails_its_checksum(tmp_path: Path) -> None:
    folder = write_tiny_model(tmp_path / "m")
    (folder / "model.json").write_text(json.dumps({"name": "all-MiniLM-L6-v2-int8", "dimensions": 16,
                                                   "max_tokens": 128}))
    with pytest.raises(EmbedderError, match="model.json fails its checksum"):
        OnnxEmbedder(folder)


def test_a_manifest_whose_width_differs_from_the_graph_is_refused(tmp_path: Path) -> None:
    folder = write_tiny_model(tmp_path / "m", dims=16)
    write_tiny_model(tmp_path / "wide", dims=24)
    (folder / "model.onnx").write_bytes((tmp_path / "wide" / "model.onnx").read_bytes())
    import hashlib

    sums = "".join(f"{hashlib.sha256((folder / n).read_bytes()).hexdigest()}  {n}\n"
                   for n in ("model.onnx", "tokenizer.json", "model.json"))
    (folder / "SHA256SUMS").write_text(sums)
    with pytest.raises(EmbedderError, match=r"expected \[batch, 16\]"):
        OnnxEmbedder(folder)


@pytest.mark.parametrize("doc", [b"[1]", b"{", b'{"name": "x", "dimensions": 0, "max_tokens": 8}',
                                 b'{"dimensions": 8, "max_tokens": 8}',
                                 b'{"name": "x", "dimensions": 8, "max_tokens": "8"}'])
def test_bad_manifests_are_refused(doc: bytes) -> None:
    with pytest.raises(EmbedderError, match="model.json"):
        ModelManifest.parse(doc)


def test_a_model_path_loads_once_and_a_folder_without_manifest_is_refused(tmp_path: Path) -> None:
    folder = write_tiny_model(tmp_path / "by-path")
    first = load_embedder(str(folder))
    assert (first.name, first.dimensions) == ("tiny-bag-16", 16)
    assert first.embed(["a cat"]).shape == (1, 16)
    assert load_embedder(str(folder)).loaded is first.loaded  # one model per folder and process
    bare = tmp_path / "bare"
    bare.mkdir()
    for name in ("model.onnx", "tokenizer.json"):
        (bare / name).write_bytes((folder / name).read_bytes())
    with pytest.raises(EmbedderError, match="has no model.json"):
        load_embedder(str(bare))
    with pytest.raises(EmbedderError, match="does not exist"):
        load_embedder(str(tmp_path / "missing"))


def test_mpnet_is_registered_and_says_how_to_install_it() -> None:
    assert {"all-MiniLM-L6-v2-int8", "mpnet"} <= set(available_embedders())
    # Not installed: the process still starts (id and width are known without the folder);
    # the first embedding says how to install it.
    missing = load_embedder("mpnet")
    assert (missing.name, missing.dimensions) == ("all-mpnet-base-v2-int8", 768)
    with pytest.raises(EmbedderError, match="bli-memory-mcp model install mpnet"):
        missing.embed(["a question"])


def test_an_installed_folder_must_hold_the_model_it_is_named_for() -> None:
    folder = embedder_models.installed_model_dir("mpnet", data_dir())
    write_tiny_model(folder, name="something-else")
    with pytest.raises(EmbedderError, match="not 'all-mpnet-base-v2-int8'"):
        load_embedder("mpnet").embed(["a question"])


def test_an_installed_folder_loads_by_its_short_name(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("BLI_MEMORY_DATA_DIR", str(tmp_path / "data"))
    folder = embedder_models.installed_model_dir("mpnet", data_dir())
    assert folder == tmp_path / "data" / "models" / "all-mpnet-base-v2-int8"
    write_tiny_model(folder, name="all-mpnet-base-v2-int8")
    embedder = load_embedder("mpnet")
    assert (embedder.name, embedder.dimensions) == ("all-mpnet-base-v2-int8", 16)
    assert embedder.embed(["a cat"]).shape == (1, 16)


@pytest.mark.parametrize(("spec", "is_path"), [("mpnet", False), ("all-MiniLM-L6-v2-int8", False),
                                               ("/opt/models/x", True), ("~/m", True), ("./m", True),
                                               ("models/x", True)])
def test_paths_and_names_are_told_apart(spec: str, is_path: bool) -> None:
    assert embedder_models.is_model_path(spec) is is_path


@pytest.mark.parametrize("claimed", ["all-MiniLM-L6-v2-int8", "all-mpnet-base-v2-int8"])
def test_a_folder_claiming_a_known_models_id_with_other_files_is_refused(tmp_path: Path,
                                                                        claimed: str) -> None:
    # The store trusts the id: another model under the shipped id would be compared with it.
    impostor = write_tiny_model(tmp_path / "custom", name=claimed)
    for load in (embedder_models.lazy_model_dir, embedder_models.load_model_dir):
        with pytest.raises(EmbedderError, match="names its model .* but its files are not that model's"):
            load(impostor)
    with pytest.raises(EmbedderError, match="not that model's"):
        load_embedder(str(impostor))


def test_a_folder_with_the_known_models_own_files_keeps_its_id(tmp_path: Path) -> None:
    import shutil
    from importlib import resources

    copy = tmp_path / "minilm-copy"
    copy.mkdir()
    for name in ("model.onnx", "tokenizer.json", "SHA256SUMS"):
        shutil.copyfile(str(resources.files("bli_memory.core.model") / name), copy / name)
    manifest = json.dumps({"name": "all-MiniLM-L6-v2-int8", "dimensions": 384, "max_tokens": 256}).encode()
    (copy / "model.json").write_bytes(manifest)
    import hashlib

    with (copy / "SHA256SUMS").open("a") as fh:
        fh.write(f"{hashlib.sha256(manifest).hexdigest()}  model.json\n")
    assert embedder_models.lazy_model_dir(copy).name == "all-MiniLM-L6-v2-int8"
    installed = write_tiny_model(embedder_models.installed_model_dir("mpnet", data_dir()),
                                 name="all-mpnet-base-v2-int8")
    assert embedder_models.load_model_dir(installed).name == "all-mpnet-base-v2-int8"  # its own folder
    twin = tmp_path / "mpnet-twin"
    shutil.copytree(installed, twin)
    assert embedder_models.lazy_model_dir(twin).name == "all-mpnet-base-v2-int8"  # the same files
