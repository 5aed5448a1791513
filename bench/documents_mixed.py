"""Memories and documents in one space: do the project's documents push the right memory out?

Run by ``python bench/documents.py`` (its last part; this module has no command of its own).

Protocol. LoCoMo's conversations become memories as :mod:`locomo` makes them (every turn one
memory, one space per conversation: :func:`locomo.build_store`), and one documents tree is
indexed into every conversation's space, in the documents index beside the store
(``documents.sqlite3``, where the engine looks): starlette's docs with their replayed history
and pluggy's docs (bench/documents.py builds it). Every question is then asked as the
``search_memory`` tool asks it with scope ``both``: the memory search
(``EmbeddedBackend.search``, limit 10, the default ranking) and, apart from it, the document
search (``EmbeddedBackend.search_documents``, documents and commits), of which the top
:data:`~bli_memory.core.mcp.document_results.DOCUMENT_HITS` are shown when their cosine
similarity reaches :data:`~bli_memory.core.mcp.document_results.DOCUMENT_FLOOR`.

Reported, on the LoCoMo questions (categories 1-4 with evidence, scored by :func:`locomo.score`):

(a) recall_any@5, recall_all@5 and MRR@10 of the memory list, the list the tool shows
    (the documents cannot change it, the two searches being apart; it is measured anyway);
(b) off-topic noise: the share of questions for which some document or commit is shown
    beside the memories, how many on average and of which kind, and percentiles of the best
    document match's similarity (the JSON keeps each such question and what it showed);
(c) a contrast design, one merged list: reciprocal-rank fusion (k = 60, equal weights, a tie
    going to the memory) of the memory ranking with the document ranking (its top 10, or only
    the matches that would be shown), top 5, scored on the memories it holds.

And on the documents' own labelled questions (bench/data/documents_questions.json,
bench/data/documents_commits.json) asked in every mixed space: recall@3 of the documents
section after the floor (what the tool shows), the same before the floor, and the share of
questions for which anything is shown.
"""

from __future__ import annotations

import tempfile
import time
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from common import cached_embeddings, log, markdown_table, percentile
from locomo import _one_by_one, _ranked_dia_ids, build_store, load, score

__all__ = ["MERGE_K", "Probe", "run", "tables"]

#: RRF constant of the merged-list contrast (the original paper's).
MERGE_K = 60.0
_DOC = 1_000  # document items' ids in the fusion start here; memories are 0..9


@dataclass(frozen=True)
class Probe:
    """A labelled documents question: its group in the report, its text, and the rule a
    shown chunk must meet to answer it."""

    group: str
    q: str
    match: Callable[[Any], bool]


def _merged(memory_ids: Sequence[str], documents: int) -> list[str]:
    """The top 10 of one list fusing the memory ranking with ``documents`` document matches;
    a document's place holds ``""`` (never evidence)."""
    from bli_memory.core.memory.ranking import RankingConfig, reciprocal_rank_fusion

    fused = reciprocal_rank_fusion({"memories": list(range(len(memory_ids))),
                                    "documents": [_DOC + j for j in range(documents)]},
                                   RankingConfig(weights={"memories": 1.0, "documents": 1.0}, rrf_k=MERGE_K))
    return [memory_ids[i] if i < _DOC else "" for i in sorted(fused, key=lambda i: (-fused[i], i))[:10]]


def run(locomo_path: Path, root: Path, probes: Sequence[Probe], *, embedder: Any,
        embed_many: Callable[[Sequence[str]], Any]) -> dict[str, Any]:
    """Build the mixed spaces from the LoCoMo file and the repository at ``root``, and
    measure (see the module docstring)."""
    from bli_memory.core.documents.indexer import index_space
    from bli_memory.core.mcp.document_results import DOCUMENT_FLOOR, DOCUMENT_HITS

    conversations = load(locomo_path)
    questions = [q for c in conversations for q in c.questions]
    out: dict[str, Any] = {"floor": DOCUMENT_FLOOR, "shown": DOCUMENT_HITS, "merge_k": MERGE_K,
                           "locomo": {"conversations": [c.sample_id for c in conversations],
                                      "turns": sum(len(c.turns) for c in conversations),
                                      "questions": len(questions)}}
    with tempfile.TemporaryDirectory() as tmp:
        backend = build_store(Path(tmp) / "store.sqlite", conversations, embedder)
        qvecs = cached_embeddings([q.text for q in questions], lambda ts: _one_by_one(embedder, ts),
                                  f"{embedder.name}/one-by-one")
        backend.embedder.known.update({q.text: v for q, v in zip(questions, qvecs, strict=True)})
        index = backend.documents_index(create=True)
        t0 = time.perf_counter()
        for c in conversations:
            report = index_space(index, root, space=c.sample_id, embed_many=embed_many)
        out["tree"] = {"documents": report.documents, "chunks": report.chunks, "commits": report.commits,
                       "index_s_all_spaces": round(time.perf_counter() - t0, 2)}
        log(f"documents mixed: {len(conversations)} spaces, each {report.documents} files, "
            f"{report.chunks} chunks, {report.commits} commits")

        memory: list[list[str]] = []
        merged_all: list[list[str]] = []
        merged_shown: list[list[str]] = []
        shown_counts: list[int] = []
        best: list[float] = []
        kinds: Counter[str] = Counter()
        examples: list[dict[str, Any]] = []
        memory_s = documents_s = 0.0
        for c in conversations:
            for q in c.questions:
                t0 = time.perf_counter()
                ids = _ranked_dia_ids(backend, c.sample_id, q.text, None)
                t1 = time.perf_counter()
                docs = backend.search_documents(q.text, space=c.sample_id, limit=10)
                documents_s += time.perf_counter() - t1
                memory_s += t1 - t0
                shown = [h for h in docs[:DOCUMENT_HITS] if h.similarity >= DOCUMENT_FLOOR]
                memory.append(ids)
                merged_all.append(_merged(ids, len(docs)))
                merged_shown.append(_merged(ids, len(shown)))
                shown_counts.append(len(shown))
                best.append(max((h.similarity for h in docs), default=0.0))
                kinds.update(h.chunk.kind for h in shown)
                if shown:
                    examples.append({"space": c.sample_id, "q": q.text, "shown": [
                        {"kind": h.chunk.kind, "where": h.chunk.path or h.chunk.text.split("\n")[0],
                         "heading": list(h.chunk.heading), "similarity": h.similarity} for h in shown]})
        out["memory"] = {"memory list (what search_memory shows)": score(memory, questions),
                         "one list: RRF of memories and top-10 documents": score(merged_all, questions),
                         "one list: RRF of memories and shown documents": score(merged_shown, questions)}
        n = len(questions)
        out["noise"] = {"questions_showing_documents": sum(1 for k in shown_counts if k) / n,
                        "mean_shown": sum(shown_counts) / n, "shown_by_kind": dict(kinds),
                        "best_similarity": {"p50": percentile(best, 50), "p90": percentile(best, 90),
                                            "max": max(best)},
                        "examples": examples}
        out["search_ms"] = {"memories": memory_s * 1000 / n, "documents": documents_s * 1000 / n}
        log(f"documents mixed: memory recall_any@5 "
            f"{out['memory']['memory list (what search_memory shows)']['overall']['recall_any@5']:.3f}, "
            f"documents shown for {out['noise']['questions_showing_documents']:.1%} of LoCoMo questions")

        per_space: dict[str, list[dict[str, Any]]] = {}
        for c in conversations:
            rows = []
            for p in probes:
                docs = backend.search_documents(p.q, space=c.sample_id, limit=DOCUMENT_HITS)
                shown = [h for h in docs if h.similarity >= DOCUMENT_FLOOR]
                rows.append({"group": p.group, "q": p.q,
                             "shown_rank": next((i for i, h in enumerate(shown, 1) if p.match(h.chunk)),
                                                None),
                             "top3_rank": next((i for i, h in enumerate(docs, 1) if p.match(h.chunk)), None),
                             "shown": len(shown),
                             "best_similarity": max((h.similarity for h in docs), default=0.0)})
            per_space[c.sample_id] = rows
        backend.close()
    rows = next(iter(per_space.values()))
    same = all(r == rows for r in per_space.values())
    out["probe_rows"] = rows
    out["probes"] = {}
    for group in dict.fromkeys(p.group for p in probes):
        sel = [r for r in rows if r["group"] == group]
        out["probes"][group] = {
            "n": len(sel), "same_in_every_space": same,
            "recall@3 shown": sum(1 for r in sel if r["shown_rank"]) / len(sel),
            "recall@3 before the floor": sum(1 for r in sel if r["top3_rank"]) / len(sel),
            "showing_any": sum(1 for r in sel if r["shown"]) / len(sel)}
    return out


def tables(mixed: dict[str, Any]) -> list[str]:
    """The markdown tables of :func:`run`'s result, with their captions."""
    loc, noise, best = mixed["locomo"], mixed["noise"], mixed["noise"]["best_similarity"]
    kinds = ", ".join(f"{k} {v}" for k, v in sorted(noise["shown_by_kind"].items())) or "none"
    lines = [f"Memories and documents mixed: LoCoMo ({loc['questions']} questions, "
             f"{len(loc['conversations'])} spaces), each space also holding {mixed['tree']['chunks']} "
             f"document chunks and {mixed['tree']['commits']} commits; memory recall:",
             markdown_table(["list", "recall_any@5", "recall_all@5", "mrr@10"],
                            [[name, *(s["overall"][k] for k in ("recall_any@5", "recall_all@5", "mrr@10"))]
                             for name, s in mixed["memory"].items()]),
             "",
             f"Documents shown beside the memories for LoCoMo questions (floor {mixed['floor']}, "
             f"top {mixed['shown']}):",
             markdown_table(["questions showing any", "mean shown", "shown by kind", "best similarity p50",
                             "p90", "max"],
                            [[noise["questions_showing_documents"], noise["mean_shown"], kinds,
                              best["p50"], best["p90"], best["max"]]]),
             "",
             "The documents' own questions asked in the mixed spaces (documents and commits, "
             "as search_memory shows them):",
             markdown_table(["questions", "n", "recall@3 shown (after floor)", "recall@3 before floor",
                             "showing any"],
                            [[g, *(s[k] for k in ("n", "recall@3 shown", "recall@3 before the floor",
                                                  "showing_any"))]
                             for g, s in mixed["probes"].items()])]
    return lines
