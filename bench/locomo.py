"""Retrieval quality on LoCoMo through the real engine, with ablations and a reference BM25.

Protocol (issue 9, and the README beside the data): every dialogue turn becomes one
memory, ``[<session date>] <speaker>: <text>``, one space per conversation; for every
question of categories 1-4 with evidence, ``EmbeddedBackend.search`` (the code path of
the ``search_memory`` tool) is asked the question as written with ``limit=10`` and the
evidence turns are looked up in the ranked hits.

Metrics per question: recall_any@k (some evidence turn in the top k), recall_all@k
(every evidence turn in the top k), k = 5 and 10, and reciprocal rank of the first
evidence turn within the ten hits (MRR@10). Averaged per category and overall.

Each turn's ``session_id`` names its LoCoMo session, as a host session id would.
Import uses the store directly (vectors computed once by the product's embedder, one
text at a time as ``save`` does, cached under ``bench/results/cache``); search always
goes through the engine. The conversation is replayed in time: each turn's
``created_at`` is set so that the last session happened just now and earlier sessions
lie as far back as the data says, so the recency prior sees a realistic age spread.

The data is CC BY-NC 4.0 and is read from its shared folder, never copied.
"""

from __future__ import annotations

import json
import math
import re
import sqlite3
import time
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from common import CACHE_DIR, CachingEmbedder, bench_embedder, cached_embeddings, log

__all__ = [
    "CATEGORIES",
    "IMPORT_TIMES",
    "Conversation",
    "Question",
    "Turn",
    "build_store",
    "load",
    "reference_bm25",
    "run",
    "score",
    "search_configs",
]

#: LoCoMo category numbers (README of the data): 5 (adversarial) has no evidence.
CATEGORIES = {1: "multi-hop", 2: "temporal", 3: "open-domain", 4: "single-hop"}
KS = (5, 10)
_DIA = re.compile(r"D\d+:\d+")
#: Rows per second of the last build_store import (the store's save, vectors precomputed).
IMPORT_TIMES: dict[str, float] = {}


@dataclass(frozen=True)
class Turn:
    dia_id: str
    speaker: str
    text: str
    session_date: datetime

    @property
    def memory(self) -> str:
        """The memory text: session date prefix, speaker, what was said."""
        when = self.session_date.strftime("%-d %B %Y, %-I:%M %p")
        return f"[{when}] {self.speaker}: {self.text}"


@dataclass(frozen=True)
class Question:
    text: str
    evidence: frozenset[str]
    category: int


@dataclass
class Conversation:
    sample_id: str
    turns: list[Turn] = field(default_factory=list)
    questions: list[Question] = field(default_factory=list)


def _parse_date(value: str) -> datetime:
    return datetime.strptime(value.strip(), "%I:%M %p on %d %B, %Y").replace(tzinfo=UTC)


def load(path: Path, *, limit: int | None = None) -> list[Conversation]:
    """Read the LoCoMo JSON file.

    Args:
        path: ``locomo-dev.json`` (or ``locomo10.json``).
        limit: Keep only the first ``limit`` conversations (quick mode).

    Returns:
        Conversations with their turns in order and their questions of categories 1-4
        that name at least one evidence turn of the conversation.
    """
    data = json.loads(Path(path).read_text(encoding="utf-8"))
    out: list[Conversation] = []
    for item in data[:limit]:
        conv = item["conversation"]
        c = Conversation(sample_id=item["sample_id"])
        n = 1
        while f"session_{n}" in conv:
            date = _parse_date(conv[f"session_{n}_date_time"])
            for turn in conv[f"session_{n}"]:
                c.turns.append(Turn(turn["dia_id"], turn["speaker"], turn["text"], date))
            n += 1
        known = {t.dia_id for t in c.turns}
        for qa in item["qa"]:
            # Evidence ids that name no turn of the conversation (the data has a few,
            # e.g. D4:36) are dropped; a question left with none is not scored.
            ev = frozenset(_DIA.findall(" ".join(str(e) for e in qa.get("evidence", [])))) & known
            if qa["category"] in CATEGORIES and ev:
                c.questions.append(Question(qa["question"], ev, int(qa["category"])))
        out.append(c)
    return out



def _import_row(store: Any, text: str, vector: Any, *, space: str, metadata: dict[str, Any],
                session_id: str) -> Any:
    """One turn as an import writes it: one transaction, identical live text kept once
    (the engine's dedup), the precomputed vector stored as given."""
    from bli_memory.core.memory.retrieval_writes import content_hash, first_version

    with store.writing(space) as w:
        row = w.find_live(sha=content_hash(text))
        if row is not None:
            return row.memory
        memory = first_version(space=w.canonical, content=text, custom_id=None, metadata=metadata,
                               source="import", session_id=session_id, at=w.at, expires_at=None)
        w.insert(memory, vector)
        return memory


def build_store(store_path: Path, conversations: Sequence[Conversation], embedder: Any) -> Any:
    """Import every turn as a memory (space = sample id) and return the engine over it.

    The store's own ``save`` writes each row (row, keyword index and vector in one
    transaction); the vectors come from the product embedder, one text per call.
    """
    from bli_memory.core.embedded.engine import EmbeddedBackend

    for suffix in ("", "-wal", "-shm"):
        Path(str(store_path) + suffix).unlink(missing_ok=True)
    texts = [t.memory for c in conversations for t in c.turns]
    t0 = time.perf_counter()
    vectors = cached_embeddings(texts, lambda ts: _one_by_one(embedder, ts), f"{embedder.name}/one-by-one")
    log(f"locomo: {len(texts)} turn vectors ready in {time.perf_counter() - t0:.1f}s")
    backend = EmbeddedBackend(store_path, embedder=CachingEmbedder(embedder))
    store = backend.store
    i = 0
    now = datetime.now(UTC)
    timeline: list[tuple[str, int]] = []
    t0 = time.perf_counter()
    for c in conversations:
        last = max(t.session_date for t in c.turns)
        for n, turn in enumerate(c.turns):
            memory = _import_row(store, turn.memory, vectors[i], space=c.sample_id,
                                 metadata={"dia_id": turn.dia_id},
                                 session_id=f"{c.sample_id}/{turn.dia_id.split(':')[0]}")
            at = now - (last - turn.session_date) - timedelta(seconds=len(c.turns) - n)
            timeline.append((at.strftime("%Y-%m-%dT%H:%M:%S.%fZ"), memory.id))
            i += 1
    import_s = time.perf_counter() - t0
    log(f"locomo: imported {i} memories in {import_s:.1f}s")
    IMPORT_TIMES["rows_per_s"] = i / max(import_s, 1e-9)
    conn = sqlite3.connect(str(store_path))
    with conn:
        conn.executemany("UPDATE memories SET created_at = ?, updated_at = ? WHERE id = ?",
                         [(at, at, id_) for at, id_ in timeline])
    conn.close()
    return backend


def _one_by_one(embedder: Any, texts: Sequence[str]) -> Any:
    import numpy as np

    return np.stack([embedder.embed([t])[0] for t in texts])


def search_configs() -> dict[str, Any]:
    """The configurations measured side by side: our default and its ablations."""
    from dataclasses import replace

    from bli_memory.core.memory.ranking import RankingConfig

    base = RankingConfig()
    keyword_weights = {c: w for c, w in base.weights.items() if c != "vector"}
    return {
        "hybrid (default)": base,
        "keyword (FTS5) only": replace(base, weights=keyword_weights, recency_weight=0.0, context_weight=0.0),
        "vector only": replace(base, weights={"vector": 1.0}, recency_weight=0.0, min_similarity=-1.0,
                               context_weight=0.0),
        "hybrid without recency": replace(base, recency_weight=0.0),
        "hybrid without context channel": replace(base, context_weight=0.0),
        "hybrid without newer-first near-duplicates": replace(base, near_duplicate_newer_first=False),
    }


def score(ranked: Sequence[Sequence[str]], questions: Sequence[Question]) -> dict[str, Any]:
    """Metrics of ranked dia_id lists against the questions' evidence.

    Returns:
        ``{"overall": {metric: value, "n": count}, "by_category": {name: {...}}}``.
    """
    rows: list[tuple[int, dict[str, float]]] = []
    for ids, q in zip(ranked, questions, strict=True):
        m: dict[str, float] = {}
        for k in KS:
            top = set(ids[:k])
            m[f"recall_any@{k}"] = float(bool(top & q.evidence))
            m[f"recall_all@{k}"] = float(q.evidence <= top)
        rr = 0.0
        for rank, d in enumerate(ids[:10], start=1):
            if d in q.evidence:
                rr = 1.0 / rank
                break
        m["mrr@10"] = rr
        rows.append((q.category, m))

    def mean(sel: list[dict[str, float]]) -> dict[str, float]:
        if not sel:
            return {"n": 0}
        out = {key: sum(r[key] for r in sel) / len(sel) for key in sel[0]}
        out["n"] = len(sel)
        return out

    return {
        "overall": mean([m for _, m in rows]),
        "by_category": {name: mean([m for c, m in rows if c == cat]) for cat, name in CATEGORIES.items()},
    }


def _ranked_dia_ids(backend: Any, space: str, question: str, ranking: Any) -> list[str]:
    res = backend.search(question, space=space, limit=10, ranking=ranking)
    return [h.memory.metadata.get("dia_id", "") for h in res.hits]


# --- reference BM25 (the README's recipe, pure Python, not the product) ----------

_WORD = re.compile(r"\w+")


def reference_bm25(conversations: Sequence[Conversation], k1: float = 1.5, b: float = 0.75) -> dict[str, Any]:
    """Okapi BM25 over ``"<speaker>: <text>"`` per turn, English stopwords dropped.

    The retriever of the README's reference table, re-implemented so every run shows
    the anchor next to our numbers (stopword list: ``bli_memory.core.memory.terms.STOPWORDS``).
    """
    from bli_memory.core.memory.terms import STOPWORDS

    def toks(s: str) -> list[str]:
        return [w for w in _WORD.findall(s.lower()) if w not in STOPWORDS]

    ranked: list[list[str]] = []
    questions: list[Question] = []
    for c in conversations:
        docs = [Counter(toks(f"{t.speaker}: {t.text}")) for t in c.turns]
        lens = [sum(d.values()) for d in docs]
        avg = sum(lens) / max(len(lens), 1)
        df: Counter[str] = Counter()
        for d in docs:
            df.update(d.keys())
        n = len(docs)
        idf = {w: math.log((n - f + 0.5) / (f + 0.5) + 1) for w, f in df.items()}
        for q in c.questions:
            qt = set(toks(q.text))
            scores = []
            for i, d in enumerate(docs):
                s = 0.0
                for w in qt:
                    tf = d.get(w)
                    if tf:
                        s += idf[w] * tf * (k1 + 1) / (tf + k1 * (1 - b + b * lens[i] / avg))
                scores.append((s, -i))
            top = sorted(range(n), key=lambda i: (-scores[i][0], i))[:10]
            ranked.append([c.turns[i].dia_id for i in top])
            questions.append(q)
    return score(ranked, questions)


def run(
    data_path: Path,
    *,
    quick: bool = False,
    configs: dict[str, Any] | None = None,
    progress: Callable[[str], None] = log,
) -> dict[str, Any]:
    """Build the LoCoMo store and score every configuration on it.

    Args:
        data_path: The LoCoMo JSON file.
        quick: Use only the first two conversations.
        configs: Name -> RankingConfig; default :func:`search_configs`.

    Returns:
        ``{"systems": {name: metrics}, "questions": n, "turns": n, "conversations": [...],
        "search_ms": {name: mean ms}}``.
    """
    conversations = load(data_path, limit=2 if quick else None)
    embedder = bench_embedder()
    store_path = CACHE_DIR / ("locomo-quick" if quick else "locomo") / "store.sqlite"
    backend = build_store(store_path, conversations, embedder)
    questions = [q for c in conversations for q in c.questions]
    # Embed every question once so the configurations are timed on ranking alone.
    qvecs = cached_embeddings([q.text for q in questions], lambda ts: _one_by_one(embedder, ts),
                              f"{embedder.name}/one-by-one")
    backend.embedder.known.update({q.text: v for q, v in zip(questions, qvecs, strict=True)})
    systems: dict[str, Any] = {}
    timings: dict[str, float] = {}
    for name, cfg in (configs or search_configs()).items():
        t0 = time.perf_counter()
        ranked = [
            _ranked_dia_ids(backend, c.sample_id, q.text, cfg) for c in conversations for q in c.questions
        ]
        timings[name] = (time.perf_counter() - t0) * 1000 / max(len(questions), 1)
        systems[name] = score(ranked, questions)
        progress(f"locomo: {name}: recall_any@5 {systems[name]['overall']['recall_any@5']:.3f}")
    systems["reference BM25 (README recipe, not the product)"] = reference_bm25(conversations)
    backend.close()
    return {
        "systems": systems,
        "search_ms": timings,
        "questions": len(questions),
        "turns": sum(len(c.turns) for c in conversations),
        "conversations": [c.sample_id for c in conversations],
        "model": embedder.name,
        "import_rows_per_s": IMPORT_TIMES["rows_per_s"],
    }
