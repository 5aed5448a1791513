"""Retrieval quality of the documents index on public projects' own documentation.

    python bench/documents.py [--json bench/results/documents.json]

For each source of ``bench/data/documents_questions.json``: the project's sdist is fetched
from PyPI once (``pip download``, kept under ``bench/results/cache/sdists``), its docs
folder is committed to a scratch git repository (the index reads what git tracks), indexed
(:func:`bli_memory.core.documents.indexer.index_space`, the shipped model), and each
labelled question is searched. A question is answered when one of the top 5 chunks is in
the labelled file and its heading trail holds the labelled heading.

Reported: recall@1, recall@5 and MRR@5 of the hybrid search, beside a keyword-only baseline
(FTS5 over the same chunks, any query term, bm25 order), and the index's size and time.
"""

from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import sys
import tarfile
import tempfile
import time
from pathlib import Path
from typing import Any

from common import CACHE_DIR, RESULTS_DIR, bench_embedder, log, markdown_table, write_json

QUESTIONS = Path(__file__).resolve().parent / "data" / "documents_questions.json"
SDISTS = CACHE_DIR / "sdists"


def _sdist(spec: str) -> Path:
    """The sdist of ``name==version``, downloaded once."""
    name, version = spec.split("==")
    SDISTS.mkdir(parents=True, exist_ok=True)
    found = [p for p in SDISTS.glob("*.tar.gz") if p.name.lower().startswith(f"{name.lower()}-{version}")]
    if not found:
        subprocess.run([sys.executable, "-m", "pip", "download", "-q", "--no-deps", "--no-binary", ":all:",
                        "-d", str(SDISTS), spec], check=True)
        found = [p for p in SDISTS.glob("*.tar.gz") if p.name.lower().startswith(f"{name.lower()}-{version}")]
    return found[0]


def _repo(spec: str, folder: str, into: Path) -> Path:
    """A scratch git repository holding the sdist's ``folder``, committed."""
    root = into / spec.replace("==", "-")
    with tarfile.open(_sdist(spec)) as tar, tempfile.TemporaryDirectory() as tmp:
        tar.extractall(tmp, filter="data")
        top = next(Path(tmp).iterdir())
        shutil.copytree(top / folder, root / folder)
    env = {"GIT_AUTHOR_NAME": "bench", "GIT_AUTHOR_EMAIL": "b@x", "GIT_COMMITTER_NAME": "bench",
           "GIT_COMMITTER_EMAIL": "b@x", "PATH": "/usr/bin:/bin", "HOME": str(into)}
    for args in (["init", "-q"], ["add", "-A"], ["commit", "-q", "-m", f"{spec} docs"]):
        subprocess.run(["git", "-C", str(root), *args], check=True, capture_output=True, env=env)
    return root


def _hit(chunk: Any, want: dict[str, str]) -> bool:
    return chunk.path == want["path"] and want["heading"] in chunk.heading


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--json", type=Path, default=RESULTS_DIR / "documents.json")
    args = parser.parse_args()

    from bli_memory.core.documents.index_store import DocumentIndex
    from bli_memory.core.documents.indexer import index_space
    from bli_memory.core.documents.search import search_documents
    from bli_memory.core.memory.terms import fts_any_query, query_terms

    data = json.loads(QUESTIONS.read_text())
    embedder = bench_embedder()
    results: dict[str, Any] = {"sources": {}, "rows": []}
    with tempfile.TemporaryDirectory() as tmp:
        index = DocumentIndex(Path(tmp) / "documents.sqlite3")
        for repo, source in data["sources"].items():
            root = _repo(source["sdist"], source["folder"], Path(tmp))
            t0 = time.perf_counter()
            report = index_space(index, root, space=repo, embed_many=embedder.embed)
            results["sources"][repo] = {"documents": report.documents, "chunks": report.chunks,
                                        "index_s": round(time.perf_counter() - t0, 2)}
            log(f"documents: {repo}: {report.documents} files, {report.chunks} chunks")
        for q in data["questions"]:
            hits = search_documents(index, q["q"], space=q["repo"], embed=lambda t: embedder.embed([t])[0],
                                    limit=5, kinds=("document",))
            hybrid = next((i for i, h in enumerate(hits, 1) if _hit(h.chunk, q)), None)
            expr = fts_any_query(query_terms(q["q"]))
            seqs = index.keyword(q["repo"], ("document",), expr, limit=5) if expr else []
            chunks = index.chunks(seqs)
            keyword = next((i for i, s in enumerate(seqs, 1) if s in chunks and _hit(chunks[s], q)), None)
            results["rows"].append({"repo": q["repo"], "q": q["q"], "hybrid_rank": hybrid,
                                    "keyword_rank": keyword})
        index.close()
    rows = results["rows"]

    def score(key: str) -> dict[str, float]:
        ranks = [r[key] for r in rows]
        return {"recall@1": sum(1 for r in ranks if r == 1) / len(ranks),
                "recall@5": sum(1 for r in ranks if r is not None) / len(ranks),
                "mrr@5": sum(1 / r for r in ranks if r is not None) / len(ranks)}

    results["hybrid"], results["keyword"] = score("hybrid_rank"), score("keyword_rank")
    write_json(args.json, results)
    print(markdown_table(["search", "recall@1", "recall@5", "mrr@5"],
                         [[name, f"{s['recall@1']:.2f}", f"{s['recall@5']:.2f}", f"{s['mrr@5']:.3f}"]
                          for name, s in (("hybrid (cosine + FTS5, RRF)", results["hybrid"]),
                                          ("keyword only (FTS5 any, bm25)", results["keyword"]))]))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
