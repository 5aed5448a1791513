"""A capture gate that sees the sentence's embedding, measured against the rules.

The question: does a gate over the candidate's embedding (all-MiniLM-L6-v2 int8, the
product's own embedder, which the worker already loads for reconcile) tell durable
sentences from status lines and noise better than the cue features of
``bench/extraction_train.py`` or the rules of ``core/extraction/durability.py``?
Durable facts ("The user runs Claude Code on WSL") and status lines ("The script has
been updated") might sit in different regions of embedding space across projects.

Data and labels: the candidates of the ``tuning`` sessions of
``bench/data/real_sessions.jsonl`` and their labels, exactly as in
``bench/extraction_train.py`` (:func:`extraction_train.labelled_candidates`); the
``test`` lines are skipped before they are parsed, so the test part stays blind.

Feature sets (every one has a bias column):

- ``cues``: the 34 cue features of :func:`extraction_train.features`, the rules' verdict among them;
- ``prototype``: one number, the cosine of the candidate's embedding to the direction
  "mean durable minus mean non-durable embedding" of the training fold (a centroid
  score, which needs few examples);
- ``cues+prototype``;
- ``embedding``: the 384 dimensions, times sqrt(384) so each is of unit scale;
- ``embedding+cues``.

Model: L2 logistic regression (:func:`extraction_train.fit`, Newton's method in numpy).
Used three ways: **alone** (keep when p >= t), as a **veto** on the rules (keep what the
rules keep when p >= t) and as an **addition** (keep what the rules keep, or p >= t).

Protocol, nested so that no number is chosen on the part it is scored on:

1. **Outer folds.** Leave one session out (15 folds); also leave one project out (the
   five repositories of the tuning part), which is closer to a new user's project.
2. **Inner choice.** On the outer fold's training sessions, the same leave-one-group-out
   gives held-out probabilities for each L2 penalty of :data:`LAMBDAS`; the penalty and
   the threshold (:data:`THRESHOLDS`) with the best pooled inner F1 are chosen, per way
   of use.
3. **Outer score.** A model with that penalty, fitted on all the training sessions,
   scores the held-out group; its decisions are pooled over the outer folds into
   candidate precision, recall and F1, beside the rules alone.
4. **Hindsight bound.** The best F1 any penalty and threshold reach on the pooled outer
   held-out probabilities (chosen on the scored data, so optimistic): if even this does
   not clearly beat the rules, no choice of settings would.
5. **Session bench** (``--sessions``): the tuning sessions replayed through
   ``distil`` as ``bench/extraction_sessions.py`` does, once with the rules and once
   with the best gate, each session's gate fitted on the other sessions; kept-memory
   precision and recall at cosine 0.6 and 0.7.
6. **Time** (``--sessions``): warm, per tuning exchange, the candidates alone and the
   candidates plus one batched embedding of them.

Run: ``python bench/extraction_gate.py [--sessions]`` (about 11 minutes on 2 cores with
``--sessions``); prints the comparison and writes it to ``bench/results/extraction_gate.txt``.
The conclusion and the numbers are in ``docs/benchmarks-extraction.md``.
"""

from __future__ import annotations

import contextlib
import io
import math
import sys
import time
from collections.abc import Callable
from typing import Any

import numpy as np
from common import RESULTS_DIR, log, machine_description
from extraction_train import FEATURES, features, fit, labelled_candidates, tuning_rows

__all__ = ["CUE_LAMBDAS", "EMBEDDING_LAMBDAS", "FEATURE_SETS", "LAMBDAS", "THRESHOLDS", "main", "nested"]

#: L2 penalties tried by the inner folds for a set with one block of features (the bias
#: is never penalised).
LAMBDAS = (0.3, 1.0, 3.0, 10.0, 30.0, 100.0, 300.0)
#: For ``embedding+cues`` the two blocks get their own penalty: the cues one of these
#: (the values the cues alone chose) and the embedding one of :data:`EMBEDDING_LAMBDAS`,
#: whose largest all but switches the embedding off, so the set can fall back to the cues.
CUE_LAMBDAS = (1.0, 3.0)
EMBEDDING_LAMBDAS = (10.0, 30.0, 100.0, 300.0, 1000.0, 10000.0)
#: Thresholds on the model's probability tried by the inner folds.
THRESHOLDS = tuple(round(0.04 + 0.02 * k, 2) for k in range(44))
FEATURE_SETS = ("cues", "prototype", "cues+prototype", "embedding", "embedding+cues")
WAYS = ("alone", "veto", "addition")

_RULE = FEATURES.index("rule_keep")
Key = Any  # a penalty: a float, or (cue penalty, embedding penalty)


def _prob(x: np.ndarray, w: np.ndarray) -> np.ndarray:
    return np.asarray(1.0 / (1.0 + np.exp(-np.clip(x @ w, -30, 30))))


def _f1(y: np.ndarray, kept: np.ndarray) -> tuple[float, float, float]:
    tp = float((kept & (y == 1)).sum())
    precision = tp / kept.sum() if kept.sum() else 1.0
    recall = tp / (y == 1).sum() if (y == 1).sum() else 1.0
    return precision, recall, (2 * precision * recall / (precision + recall) if precision + recall else 0.0)


def _decide(way: str, p: np.ndarray, rules: np.ndarray, t: float) -> np.ndarray:
    if way == "alone":
        return p >= t
    if way == "veto":
        return rules & (p >= t)
    return rules | (p >= t)


class _Design:
    """Design matrices and penalties of one feature set.

    Columns: bias, then the cues (without their own bias), the prototype score and the
    embedding, as the set's name says. The prototype direction is learnt on the
    training rows of each fit, never on the rows it scores.
    """

    def __init__(self, name: str, cues: np.ndarray, emb: np.ndarray, y: np.ndarray) -> None:
        self.name, self.cues, self.emb, self.y = name, cues, emb, y
        self.blocks = [("cues", cues.shape[1] - 1), ("prototype", 1), ("embedding", emb.shape[1])]
        self.blocks = [(b, n) for b, n in self.blocks if b in name.split("+")]

    def grid(self) -> list[Key]:
        """The penalties to try, in the order a warm-started path runs them (largest first)."""
        if len(self.blocks) == 2 and self.blocks[1][0] == "embedding":
            return [(c, e) for c in sorted(CUE_LAMBDAS, reverse=True)
                    for e in sorted(EMBEDDING_LAMBDAS, reverse=True)]
        return sorted(LAMBDAS, reverse=True)

    def penalty(self, key: Key) -> float | np.ndarray:
        """``fit``'s penalty for ``key``: one number, or one per column."""
        if not isinstance(key, tuple):
            return float(key)
        return np.concatenate([[0.0], *(np.full(n, k) for (_, n), k in zip(self.blocks, key, strict=True))])

    def transform(self, train: np.ndarray) -> Callable[[np.ndarray, np.ndarray], np.ndarray]:
        """The map ``(cue rows, embedding rows) -> design rows`` learnt on the ``train`` rows."""
        pos, neg = train & (self.y == 1), train & (self.y == 0)
        direction = self.emb[pos].mean(0) - self.emb[neg].mean(0)
        direction /= np.linalg.norm(direction) or 1.0
        scale = math.sqrt(self.emb.shape[1])

        def rows_of(cues: np.ndarray, emb: np.ndarray) -> np.ndarray:
            parts = [np.ones((len(cues), 1))]
            for block, _ in self.blocks:
                if block == "cues":
                    parts.append(cues[:, 1:])
                elif block == "prototype":
                    parts.append(10.0 * (emb @ direction)[:, None])
                else:
                    parts.append(scale * emb)
            return np.hstack(parts)

        return rows_of

    def __call__(self, train: np.ndarray, rows: np.ndarray) -> np.ndarray:
        return self.transform(train)(self.cues[rows], self.emb[rows])


def _path(design: _Design, train: np.ndarray) -> dict[Key, np.ndarray]:
    """Weights fitted on the ``train`` rows for every penalty of the grid, each fit started from the last."""
    x, y = design(train, train), design.y[train]
    out: dict[Key, np.ndarray] = {}
    w = None
    for key in design.grid():
        if isinstance(key, tuple) and w is not None and key[1] == max(EMBEDDING_LAMBDAS):
            w = None  # a new cue penalty: start afresh
        w = out[key] = fit(x, y, design.penalty(key), start=w)
    return out


def _held_out(design: _Design, groups: np.ndarray, within: np.ndarray) -> dict[Key, np.ndarray]:
    """Leave-one-group-out probabilities for the rows in ``within`` (zeros elsewhere), per penalty."""
    out = {key: np.zeros(len(design.y)) for key in design.grid()}
    for g in np.unique(groups[within]):
        test = within & (groups == g)
        for key, w in _path(design, within & ~test).items():
            out[key][test] = _prob(design(within & ~test, test), w)
    return out


def _choose(design: _Design, way: str, p: dict[Key, np.ndarray], rules: np.ndarray,
            rows: np.ndarray) -> tuple[Key, float]:
    """The penalty and threshold with the best pooled F1 of ``way`` on ``rows``."""
    y = design.y
    return max(((key, t) for key in design.grid() for t in THRESHOLDS),
               key=lambda c: _f1(y[rows], _decide(way, p[c[0]][rows], rules[rows], c[1]))[2])


def nested(design: _Design, rules: np.ndarray, groups: np.ndarray) -> dict[str, Any]:
    """Nested leave-one-group-out decisions for every way of use; see the module docstring.

    Args:
        design: The feature set, with the ``(n,)`` labels 0/1.
        rules: ``(n,)`` booleans, the rules' verdict.
        groups: ``(n,)`` the group (session or project) of each candidate.

    Returns:
        ``{way: {"kept": (n,) bool, "chosen": [(penalty, threshold), ...]}, "hindsight":
        {way: (P, R, F1, penalty, threshold)}}``.
    """
    y = design.y
    out: dict[str, Any] = {way: {"kept": np.zeros(len(y), bool), "chosen": []} for way in WAYS}
    outer = {key: np.zeros(len(y)) for key in design.grid()}
    for g in np.unique(groups):
        test = groups == g
        inner = _held_out(design, groups, ~test)
        for key, w in _path(design, ~test).items():
            outer[key][test] = _prob(design(~test, test), w)
        for way in WAYS:
            key, t = _choose(design, way, inner, rules, ~test)
            out[way]["kept"][test] = _decide(way, outer[key][test], rules[test], t)
            out[way]["chosen"].append((key, t))
    everything = np.ones(len(y), bool)
    out["hindsight"] = {}
    for way in WAYS:
        key, t = _choose(design, way, outer, rules, everything)
        out["hindsight"][way] = (*_f1(y, _decide(way, outer[key], rules, t)), key, t)
    return out


def _bootstrap(y: np.ndarray, a: np.ndarray, b: np.ndarray, groups: np.ndarray,
               n: int = 2000) -> tuple[float, float]:
    """95 % interval of F1(a) - F1(b), resampling whole sessions with replacement."""
    rng = np.random.default_rng(0)
    names = np.unique(groups)
    index = {g: np.flatnonzero(groups == g) for g in names}
    diffs = []
    for _ in range(n):
        rows = np.concatenate([index[g] for g in rng.choice(names, len(names))])
        diffs.append(_f1(y[rows], a[rows])[2] - _f1(y[rows], b[rows])[2])
    low, high = np.percentile(diffs, [2.5, 97.5])
    return float(low), float(high)


def _neighbours(y: np.ndarray, emb: np.ndarray, sessions: np.ndarray) -> str:
    """How often the nearest candidate of another session has the same label."""
    sim = emb @ emb.T
    sim[sessions[:, None] == sessions[None, :]] = -2.0
    nearest = y[sim.argmax(1)]
    return (f"nearest candidate of another session (cosine): durable for {nearest[y == 1].mean():.2f} of "
            f"durable candidates and {nearest[y == 0].mean():.2f} of the others (base rate {y.mean():.2f})\n")


def _line(label: str, y: np.ndarray, kept: np.ndarray, extra: str = "") -> str:
    p, r, f = _f1(y, kept)
    return f"  {label:26s} kept {int(kept.sum()):4d}  P {p:.3f}  R {r:.3f}  F1 {f:.3f}{extra}\n"


def _gate_extractor(weights: np.ndarray, design_row: Callable[[Any, np.ndarray], np.ndarray], way: str,
                    t: float) -> Any:
    """An extractor like the default one whose keep-or-drop is the gate's (bench only)."""
    from bli_memory.core.extraction.candidates import candidates
    from bli_memory.core.extraction.classify import rewrite
    from bli_memory.core.extraction.statements import MAX_STATEMENTS, Statement
    from bli_memory.core.memory.embeddings import get_embedder

    class Gated:
        name = "gated"

        def extract(self, text: str) -> list[Statement]:
            chosen, seen = [], set()
            for c in candidates(text):
                s = rewrite(c.text, c.role)
                key = " ".join(s.lower().split())
                if key not in seen:
                    seen.add(key)
                    chosen.append((c, s))
            if not chosen:
                return []
            vectors = get_embedder().embed([s for _, s in chosen])
            out = []
            for (c, s), v in zip(chosen, vectors, strict=True):
                p = _prob(design_row(c, v)[None, :], weights)
                if _decide(way, p, np.array([c.rule_keep]), t)[0]:
                    out.append(Statement(text=s, kind=c.kind or "fact"))
            return out[:MAX_STATEMENTS]

    return Gated()


def _sessions(rows: list[dict[str, Any]], cosine: Any, gates: list[tuple[_Design, str]],
              groups: np.ndarray) -> None:
    """Session bench on the tuning part: the rules, then each gate fitted on the other sessions."""
    from extraction_sessions import _totals, replay, score

    results: dict[str, dict[str, Any]] = {"rules": replay(rows, None, cosine)}
    for design, way in gates:
        label = f"{design.name} {way}"
        results[label] = {}
        rules = design.cues[:, _RULE] > 0.5
        for name in dict.fromkeys(r["session"] for r in rows):
            train = groups != name
            key, t = _choose(design, way, _held_out(design, groups, train), rules, train)
            w = fit(design(train, train), design.y[train], design.penalty(key))
            rows_of = design.transform(train)

            def row_of(c: Any, v: np.ndarray, rows_of: Any = rows_of) -> np.ndarray:
                return np.asarray(rows_of(np.array([features(c)]), v[None, :].astype(float))[0])

            gate = _gate_extractor(w, row_of, way, t)
            session_rows = [r for r in rows if r["session"] == name]
            results[label].update(replay(session_rows, None, cosine, extractor=gate))
    for threshold in (0.6, 0.7):
        for version, sessions in results.items():
            x = _totals(score(sessions, cosine, threshold), "tuning")
            sys.stdout.write(f"  session bench @{threshold} {version:26s}: kept {x['kept']:3d}  "
                             f"durable {x['durable']:3d}  P {x['precision']:.3f}  R {x['recall']:.3f}  "
                             f"({x['facts']} facts)\n")


def _timing(rows: list[dict[str, Any]]) -> None:
    """Warm time per exchange: candidates alone, and one batched embedding of them."""
    from bli_memory.core.extraction.candidates import candidates
    from bli_memory.core.extraction.classify import rewrite
    from bli_memory.core.memory.embeddings import get_embedder

    embedder = get_embedder()
    embedder.embed(["warm up"])
    for run in range(3):
        rules_ms = embed_ms = 0.0
        count = 0
        for row in rows:
            t0 = time.perf_counter()
            texts = [rewrite(c.text, c.role) for c in candidates(row["text"])]
            t1 = time.perf_counter()
            if texts:
                embedder.embed(texts)
            t2 = time.perf_counter()
            rules_ms += (t1 - t0) * 1000
            embed_ms += (t2 - t1) * 1000
            count += len(texts)
        sys.stdout.write(f"  time pass {run + 1}: candidates {rules_ms / len(rows):.1f} ms per exchange, "
                         f"embedding them {embed_ms / len(rows):.1f} ms per exchange "
                         f"({count / len(rows):.1f} candidates per exchange)\n")


def main(argv: list[str]) -> int:
    """Nested cross-validation of every feature set and way of use.

    ``--sessions`` adds the session bench of the best gate and the time per exchange;
    ``--only NAME`` runs one feature set.
    """
    machine = machine_description()
    report = _Tee(sys.stdout)
    report.write(f"Machine: {machine.get('cpu')}, {machine.get('cores')} cores, "
                 f"Python {machine.get('python')}, commit {machine.get('commit', 'unknown')}.\n")
    with contextlib.redirect_stdout(report):
        _compare(argv)
    RESULTS_DIR.mkdir(parents=True, exist_ok=True)
    (RESULTS_DIR / "extraction_gate.txt").write_text(report.getvalue())
    return 0


class _Tee(io.StringIO):
    """Text written to it goes to ``stream`` as well."""

    def __init__(self, stream: Any) -> None:
        super().__init__()
        self._stream = stream

    def write(self, text: str) -> int:
        self._stream.write(text)
        return super().write(text)


def _compare(argv: list[str]) -> None:
    """The body of :func:`main`: every comparison, printed."""
    from extraction_sessions import _Cosines

    rows = tuning_rows()
    cosine = _Cosines()
    items = labelled_candidates(rows, cosine)
    y = np.array([lab for _, _, lab, _ in items], dtype=float)
    sessions = np.array([g for _, _, _, g in items])
    project_of = {r["session"]: r["source"]["repository"] for r in rows}
    projects = np.array([project_of[g] for g in sessions])
    cues = np.array([features(c) for c, _, _, _ in items])
    emb = np.array([cosine.vector(text) for _, text, _, _ in items], dtype=float)
    rules = cues[:, _RULE] > 0.5
    log(f"{len(y)} candidates from {len(rows)} tuning exchanges, {int(y.sum())} durable")
    sys.stdout.write(_neighbours(y, emb, sessions))
    chosen_sets = FEATURE_SETS if "--only" not in argv else (argv[argv.index("--only") + 1],)
    best: dict[bool, tuple[float, str, str]] = {}  # uses the embedding -> (F1, set, way)
    for fold_name, groups in (("session", sessions), ("project", projects)):
        sys.stdout.write(f"leave-one-{fold_name}-out ({len(np.unique(groups))} folds, nested choice of "
                         f"penalty and threshold), {len(y)} candidates, {int(y.sum())} durable:\n")
        sys.stdout.write(_line("rules alone", y, rules))
        for set_name in chosen_sets:
            t0 = time.perf_counter()
            result = nested(_Design(set_name, cues, emb, y), rules, groups)
            for way in WAYS:
                kept = result[way]["kept"]
                low, high = _bootstrap(y, kept, rules, sessions)
                keys = sorted({key for key, _ in result[way]["chosen"]})
                hp, hr, hf, hkey, ht = result["hindsight"][way]
                sys.stdout.write(_line(f"{set_name} {way}", y, kept,
                                       f"  dF1 [{low:+.3f}, {high:+.3f}]  penalty {keys}  "
                                       f"(hindsight F1 {hf:.3f} at {hkey}, t {ht})"))
                if fold_name == "session":
                    embedded = "embedding" in set_name or "prototype" in set_name
                    best[embedded] = max(best.get(embedded, (-1.0, "", "")), (_f1(y, kept)[2], set_name, way))
            log(f"{set_name}: {time.perf_counter() - t0:.0f} s")
    for embedded, (f1, set_name, way) in sorted(best.items()):
        sys.stdout.write(f"best by leave-one-session-out F1{' with the embedding' if embedded else ''}: "
                         f"{set_name} {way} ({f1:.3f})\n")
    if "--sessions" in argv:
        gates = [(_Design(n, cues, emb, y), w) for _, n, w in sorted(best.values())]
        _sessions(rows, cosine, gates, sessions)
        _timing(rows)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
