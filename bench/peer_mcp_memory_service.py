"""Run the LoCoMo retrieval job on mcp-memory-service, offline. Its own virtualenv only.

Usage: ``<peer python> bench/peer_mcp_memory_service.py JOB_DIR STORE_DIR`` with
``BENCH_EMBEDDINGS_URL`` set (:mod:`peer_embeddings`). JOB_DIR holds ``job.json``
(spaces, turns, questions; see :mod:`peers`); STORE_DIR keeps the filled stores between
runs (a ``done.json`` there says the import finished). Writes ``JOB_DIR/result.json``.

Configuration (mcp-memory-service 12.4.0, its storage API, the one the MCP tools call):

- SQLite: the interpreter's ``sqlite3`` when it can load extensions, else
  pysqlite3-binary's in its place (:mod:`peer_sqlite`);
- storage: the default ``sqlite_vec`` backend (``SqliteVecMemoryStorage``), one database
  file per conversation, so neither half of its hybrid search can see another space;
- embeddings: its external OpenAI-compatible API adapter (``MCP_EXTERNAL_EMBEDDING_URL``,
  model name ``all-MiniLM-L6-v2``) pointed at the local endpoint that serves our shipped
  all-MiniLM-L6-v2 int8 model. Its own ONNX path downloads Chroma's archive of the same
  model at first use, and its sentence-transformers path downloads from Hugging Face;
  neither can run here. ``MCP_MEMORY_ONNX_ALLOW_DOWNLOAD=0`` and ``HF_HUB_OFFLINE=1``
  guard against any fetch, and the run fails if the storage did not take the adapter;
- each turn is one ``store(Memory)``, with the store's defaults (exact and semantic
  de-duplication on, cosine 0.85 within 24 hours); ``created_at`` replays the
  conversation so that its last session is now, as our import does;
- search: ``search_memories(question, mode=..., limit=10)``, the call behind its
  ``memory_search`` MCP tool, in the tool's default mode ``semantic`` (vector only) and
  in ``hybrid`` (FTS5 BM25 and vector, weighted 0.3 / 0.7, its defaults).

Standard library and mcp-memory-service only; never imports the product.
"""

from __future__ import annotations

import asyncio
import json
import os
import sys
import time
from pathlib import Path

__all__ = ["main"]

MODES = {"semantic": "semantic (memory_search default)", "hybrid": "hybrid"}


def main(argv: list[str]) -> int:
    job_dir, store_dir = Path(argv[0]), Path(argv[1])
    os.environ.update({
        "MCP_EXTERNAL_EMBEDDING_URL": os.environ["BENCH_EMBEDDINGS_URL"],
        "MCP_EXTERNAL_EMBEDDING_MODEL": "all-MiniLM-L6-v2",
        "MCP_MEMORY_STORAGE_BACKEND": "sqlite_vec",
        "MCP_MEMORY_ONNX_ALLOW_DOWNLOAD": "0",
        "HF_HUB_OFFLINE": "1",
        "MCP_MEMORY_BASE_DIR": str(store_dir / "base"),
    })
    import peer_sqlite

    sqlite_module = peer_sqlite.use()
    job = json.loads((job_dir / "job.json").read_text())
    result = asyncio.run(_run(job, store_dir))
    result["sqlite"] = sqlite_module
    result["version"] = _version("mcp-memory-service")
    (job_dir / "result.json").write_text(json.dumps(result))
    return 0


async def _run(job: dict, store_dir: Path) -> dict:
    from mcp_memory_service.embeddings.external_api import ExternalEmbeddingModel
    from mcp_memory_service.models.memory import Memory
    from mcp_memory_service.storage.sqlite_vec import SqliteVecMemoryStorage
    from mcp_memory_service.utils.hashing import generate_content_hash

    done = store_dir / "done.json"
    fill = not done.exists()
    if fill:
        for old in store_dir.glob("*.db*"):
            old.unlink()
    stores = {}
    for space in job["spaces"]:
        storage = SqliteVecMemoryStorage(str(store_dir / f"{space['space']}.db"))
        await storage.initialize()
        if not isinstance(storage.embedding_model, ExternalEmbeddingModel):
            raise SystemExit(f"the storage did not take the external embeddings: "
                             f"{type(storage.embedding_model)}")
        stores[space["space"]] = storage
    if fill:
        t0 = time.perf_counter()
        kept = 0
        now = time.time()
        for space in job["spaces"]:
            storage = stores[space["space"]]
            for turn in space["turns"]:
                at = now - turn["age_s"]
                memory = Memory(content=turn["text"], content_hash=generate_content_hash(turn["text"]),
                                metadata={"dia_id": turn["dia_id"]}, created_at=at, updated_at=at)
                ok, _ = await storage.store(memory)
                kept += bool(ok)
        done.write_text(json.dumps({"import_s": time.perf_counter() - t0, "kept": kept}))
    stats = json.loads(done.read_text())
    systems = {}
    for mode, label in MODES.items():
        ranked, times = [], []
        for q in job["questions"]:
            t0 = time.perf_counter()
            res = await stores[q["space"]].search_memories(query=q["text"], mode=mode, limit=10)
            times.append(time.perf_counter() - t0)
            if "error" in res:
                raise SystemExit(f"search failed: {res['error']}")
            # Memory.to_dict() spreads the metadata into the answer's top level.
            ranked.append([m.get("dia_id", "") for m in res["memories"]])
        systems[label] = {"ranked": ranked, "search_ms": 1000 * sum(times) / max(len(times), 1)}
    for storage in stores.values():
        await storage.close()
    turns = sum(len(s["turns"]) for s in job["spaces"])
    return {"systems": systems, "import_s": stats["import_s"], "cached": not fill,
            "memories": stats["kept"], "turns": turns}


def _version(name: str) -> str:
    from importlib.metadata import version

    return version(name)


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
