"""Run the LoCoMo retrieval job on the mem0 library (``mem0ai``), offline. Peer venv only.

Usage: ``<peer python> bench/peer_mem0.py JOB_DIR STORE_DIR`` where JOB_DIR holds
``job.json`` (spaces, turns, questions) and ``turns.npy`` / ``questions.npy`` (the vectors
of the product's all-MiniLM-L6-v2 int8 model for exactly those texts); the store is
rebuilt in STORE_DIR on every run (seconds). Writes ``JOB_DIR/result.json``: the ten
dia_ids returned per question, and timings.

Configuration (mem0ai 2.x, its own Python API, ``Memory.from_config``):

- vector store: Qdrant in local on-disk mode (``path`` under STORE_DIR), 384 dims;
- embedder: the ``huggingface`` provider slot, served by a class that returns the
  product model's vectors for the texts it is given (mem0's own huggingface embedder
  needs sentence-transformers and torch and downloads weights at run time);
- LLM: configured (``openai``, dummy key) because ``Memory`` builds one, never called:
  every ``add`` passes ``infer=False``, so each turn is stored verbatim;
- one ``user_id`` per conversation; ``search(top_k=10, threshold=0.0)``.

Standard library, numpy and mem0 only; never imports the product.
"""

from __future__ import annotations

import json
import os
import shutil
import sys
import time
import types
from pathlib import Path

__all__ = ["main"]


def main(argv: list[str]) -> int:
    import numpy as np

    job_dir, store_dir = Path(argv[0]), Path(argv[1])
    shutil.rmtree(store_dir, ignore_errors=True)
    store_dir.mkdir(parents=True)
    job = json.loads((job_dir / "job.json").read_text())
    turn_vecs = np.load(job_dir / "turns.npy")
    q_vecs = np.load(job_dir / "questions.npy")
    vectors: dict[str, list[float]] = {}
    i = 0
    for space in job["spaces"]:
        for turn in space["turns"]:
            vectors[_key(turn["text"])] = turn_vecs[i].tolist()
            i += 1
    for q, v in zip(job["questions"], q_vecs, strict=True):
        vectors[_key(q["text"])] = v.tolist()

    os.environ.setdefault("OPENAI_API_KEY", "unused-offline")
    os.environ.setdefault("MEM0_TELEMETRY", "False")
    from mem0.embeddings.base import EmbeddingBase
    from mem0.utils.factory import EmbedderFactory

    class ProductVectors(EmbeddingBase):
        def embed(self, text, memory_action=None):  # noqa: ANN001, ANN201 - mem0's signature
            return vectors[_key(text)]

    module = types.ModuleType("bench_peer_vectors")
    module.ProductVectors = ProductVectors  # type: ignore[attr-defined]
    sys.modules["bench_peer_vectors"] = module
    EmbedderFactory.provider_to_class["huggingface"] = "bench_peer_vectors.ProductVectors"
    from mem0 import Memory

    memory = Memory.from_config({
        "vector_store": {"provider": "qdrant", "config": {
            "collection_name": "locomo", "path": str(store_dir / "qdrant"),
            "embedding_model_dims": 384, "on_disk": True}},
        "embedder": {"provider": "huggingface",
                     "config": {"model": "all-MiniLM-L6-v2", "embedding_dims": 384}},
        "llm": {"provider": "openai", "config": {"model": "unused"}},
        "history_db_path": str(store_dir / "history.db"),
    })
    t0 = time.perf_counter()
    n = 0
    for space in job["spaces"]:
        for turn in space["turns"]:
            memory.add([{"role": "user", "content": turn["text"]}], user_id=space["space"], infer=False,
                       metadata={"dia_id": turn["dia_id"]})
            n += 1
    import_s = time.perf_counter() - t0
    ranked = []
    t0 = time.perf_counter()
    for q in job["questions"]:
        res = memory.search(q["text"], filters={"user_id": q["space"]}, top_k=10, threshold=0.0)
        hits = res["results"] if isinstance(res, dict) else res
        ranked.append([(h.get("metadata") or {}).get("dia_id", "") for h in hits])
    search_ms = (time.perf_counter() - t0) * 1000 / max(len(job["questions"]), 1)
    (job_dir / "result.json").write_text(json.dumps({
        "systems": {"vector (its only search)": {"ranked": ranked, "search_ms": search_ms}},
        "import_s": import_s, "memories": n, "turns": n, "version": _version("mem0ai"),
    }))
    return 0


def _key(text: str) -> str:
    # mem0 strips and normalises whitespace of queries before embedding them.
    return " ".join(text.split())


def _version(name: str) -> str:
    from importlib.metadata import version

    return version(name)


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
