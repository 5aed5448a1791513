"""Run the LoCoMo retrieval job on basic-memory, offline. Its own virtualenv (CPython 3.12) only.

Usage: ``<peer python> bench/peer_basic_memory.py JOB_DIR STORE_DIR`` with
``BENCH_EMBEDDINGS_URL`` set (:mod:`peer_embeddings`). JOB_DIR holds ``job.json``;
STORE_DIR keeps the notes, the config and the index between runs (``done.json`` there
says the import finished). Writes ``JOB_DIR/result.json``.

Configuration (basic-memory 0.24.1, through its own CLI and MCP server):

- config and index under STORE_DIR (``BASIC_MEMORY_CONFIG_DIR``, ``BASIC_MEMORY_HOME``);
- SQLite: the interpreter's ``sqlite3`` when it can load extensions (sqlite-vec), else
  pysqlite3-binary's in its place (:mod:`peer_sqlite`), in every process it starts;
- embeddings: its ``openai`` provider (``semantic_embedding_provider``) with
  ``semantic_embedding_api_base`` at the local endpoint that serves our shipped
  all-MiniLM-L6-v2 int8 model, 384 dimensions. Its default provider, FastEmbed, would
  download bge-small-en-v1.5 from Hugging Face at first use, which cannot run here;
  every other setting is its default (hybrid search where vectors exist, vector
  similarity floor 0.55, 100 vector candidates, no reranker);
- one project per conversation (``basic-memory project add``, which indexes the
  folder, embeddings included); each turn is one markdown note titled by its dia_id
  (``D1-3``) holding the memory text, its file time set to the replayed timeline;
- search: the ``search_notes`` MCP tool over stdio (the official ``mcp`` client, from
  its dependencies), ``page_size=10``, ``output_format="json"``, in its default mode
  (``hybrid``: FTS5 and sqlite-vec, vector floor 0.55) and in the same mode with the
  vector floor at 0 (:data:`MODES`).

Standard library, basic-memory and its dependencies only; never imports the product.
"""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

__all__ = ["main"]

BENCH = str(Path(__file__).resolve().parent)
#: Label -> (search_type, settings of the MCP server). Its vector floor (cosine 0.55) was set
#: for its default model, bge-small-en-v1.5. With all-MiniLM-L6-v2 on LoCoMo dev, a median of
#: one turn per question reaches 0.55 and an evidence turn does for 0.316 of the questions,
#: so the vector half adds little at that floor; the hybrid is also measured with the floor
#: at 0, as our own vector channel runs.
MODES = {
    "hybrid (search_notes default)": ("hybrid", {}),
    "hybrid, vector floor 0 instead of 0.55": ("hybrid", {"BASIC_MEMORY_SEMANTIC_MIN_SIMILARITY": "0"}),
}
#: Starts basic-memory's CLI with an extension-capable sqlite3 in place.
LAUNCH = (f"import sys; sys.path.insert(0, {BENCH!r}); import peer_sqlite; peer_sqlite.use(); "
          "from basic_memory.cli.main import app; sys.argv[0] = 'basic-memory'; sys.exit(app())")


def main(argv: list[str]) -> int:
    job_dir, store_dir = Path(argv[0]), Path(argv[1])
    api_base = os.environ["BENCH_EMBEDDINGS_URL"].removesuffix("/embeddings")
    os.environ.update({
        "BASIC_MEMORY_CONFIG_DIR": str(store_dir / "config"),
        "BASIC_MEMORY_HOME": str(store_dir / "notes" / "main"),
        "BASIC_MEMORY_SEMANTIC_EMBEDDING_PROVIDER": "openai",
        "BASIC_MEMORY_SEMANTIC_EMBEDDING_MODEL": "all-MiniLM-L6-v2",
        "BASIC_MEMORY_SEMANTIC_EMBEDDING_API_BASE": api_base,
        "BASIC_MEMORY_SEMANTIC_EMBEDDING_API_KEY": "unused-offline",
        "BASIC_MEMORY_SEMANTIC_EMBEDDING_DIMENSIONS": "384",
        "HF_HUB_OFFLINE": "1",
        "NO_COLOR": "1",
    })
    job = json.loads((job_dir / "job.json").read_text())
    done = store_dir / "done.json"
    fill = not done.exists()
    if fill:
        _fill(job, store_dir)
    stats = json.loads(done.read_text())
    systems = asyncio.run(_search(job))
    turns = sum(len(s["turns"]) for s in job["spaces"])
    from importlib.metadata import version

    (job_dir / "result.json").write_text(json.dumps({
        "systems": systems, "import_s": stats["import_s"], "cached": not fill,
        "memories": turns, "turns": turns, "version": version("basic-memory"),
    }))
    return 0


def _bm(*args: str) -> None:
    proc = subprocess.run([sys.executable, "-c", LAUNCH, *args], capture_output=True, text=True, check=False)
    if proc.returncode != 0:
        raise SystemExit(f"basic-memory {' '.join(args)} failed:\n{proc.stdout[-2000:]}\n"
                         f"{proc.stderr[-3000:]}")


def _note_name(dia_id: str) -> str:
    return dia_id.replace(":", "-")


def _fill(job: dict, store_dir: Path) -> None:
    for sub in ("config", "notes"):
        shutil.rmtree(store_dir / sub, ignore_errors=True)
    (store_dir / "notes" / "main").mkdir(parents=True)
    now = time.time()
    for space in job["spaces"]:
        folder = store_dir / "notes" / space["space"]
        folder.mkdir(parents=True)
        for turn in space["turns"]:
            path = folder / f"{_note_name(turn['dia_id'])}.md"
            path.write_text(f"---\ntitle: {_note_name(turn['dia_id'])}\ntype: note\n---\n\n{turn['text']}\n")
            at = now - turn["age_s"]
            os.utime(path, (at, at))
    t0 = time.perf_counter()
    for space in job["spaces"]:
        _bm("project", "add", space["space"], str(store_dir / "notes" / space["space"]))
    (store_dir / "done.json").write_text(json.dumps({"import_s": time.perf_counter() - t0}))


async def _search(job: dict) -> dict:
    from mcp import ClientSession, StdioServerParameters
    from mcp.client.stdio import stdio_client

    systems = {}
    for label, (mode, settings) in MODES.items():
        params = StdioServerParameters(command=sys.executable, args=["-c", LAUNCH, "mcp"],
                                       env=dict(os.environ, **settings))
        async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
            await session.initialize()
            ranked, times = [], []
            for q in job["questions"]:
                t0 = time.perf_counter()
                res = await session.call_tool("search_notes", {
                    "query": q["text"], "project": q["space"], "page_size": 10,
                    "search_type": mode, "output_format": "json"})
                times.append(time.perf_counter() - t0)
                ranked.append(_dia_ids(res))
        systems[label] = {"ranked": ranked, "search_ms": 1000 * sum(times) / max(len(times), 1)}
    return systems


def _dia_ids(res: object) -> list[str]:
    """The dia_ids of a search_notes answer, in rank order (titles are ``D<s>-<n>``)."""
    payload = getattr(res, "structuredContent", None)
    if not payload:
        text = "".join(getattr(c, "text", "") for c in getattr(res, "content", []))
        try:
            payload = json.loads(text)
        except ValueError:
            if getattr(res, "isError", False):
                raise SystemExit(f"search_notes failed: {text[:500]}") from None
            return []
    if isinstance(payload, dict) and "result" in payload and not payload.get("results"):
        payload = payload["result"]
    if isinstance(payload, str):
        payload = json.loads(payload)
    rows = payload.get("results", []) if isinstance(payload, dict) else payload
    out = []
    for row in rows:
        title = str(row.get("title") or Path(str(row.get("file_path") or row.get("permalink") or "")).stem)
        if title.upper().startswith("D") and "-" in title:
            out.append(title.upper().replace("-", ":", 1))
    return out


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
