"""A trained gate for capture, measured against the rules: logistic regression on cue features.

The question: does a small classifier over cue features, trained on the tuning part,
keep durable sentences better than the rules of ``core/extraction/durability.py`` alone? Measured
by leave-one-session-out cross-validation on the tuning part (the test part is never
read); the answer and the numbers are in ``docs/benchmarks-extraction.md``. The model
is not shipped: on this data it did not beat the rules.

Data: the ``tuning`` sessions of ``bench/data/real_sessions.jsonl``; the ``test``
sessions are skipped before anything else is read, so the test part stays blind.

Protocol:

1. **Candidates.** :func:`bli_memory.core.extraction.extractors.candidates` of every exchange,
   each rewritten as the extractor would store it; repeats within an exchange are
   dropped, as the extractor drops them.
2. **Labels.** A candidate is positive when it is matched one-to-one (best cosine
   first, all-MiniLM-L6-v2 int8, the product's embedder) to one of the exchange's
   hand-written durable facts at cosine >= 0.6, the match the session bench counts as
   durable; otherwise negative.
3. **Model.** Logistic regression over :data:`FEATURES`,
   L2 penalty ``LAMBDA`` on every weight but the bias, fitted by Newton's method in
   numpy.
4. **Threshold.** Leave-one-session-out cross-validation: each session is scored by a
   model fitted on the others; the threshold is the one of 0.20, 0.22, ..., 0.80 with
   the highest F1 over the pooled held-out scores. The shipped weights are then fitted
   on every tuning session.

Run: ``python bench/extraction_train.py`` (prints the cross-validated precision and
recall of candidates for the model alone, the rules alone, and the model as a veto on
or an addition to the rules, then the weights fitted on every tuning session).
"""

from __future__ import annotations

import json
import math
import re
import sys
from typing import Any

import numpy as np
from common import REPO_ROOT, log

__all__ = ["FEATURES", "LAMBDA", "features", "fit", "labelled_candidates", "main", "tuning_rows"]

DATA = REPO_ROOT / "bench" / "data" / "real_sessions.jsonl"
#: L2 penalty; small data (a few hundred candidates) needs a firm prior towards 0.
LAMBDA = 2.0
THRESHOLDS = tuple(round(0.20 + 0.02 * k, 2) for k in range(31))

_KINDS = ("decision", "preference", "convention", "fact", "command", "fix")

#: Feature names, in the order :func:`features` returns them (the weights file repeats
#: them, and a file whose names differ is ignored).
FEATURES: tuple[str, ...] = (
    "bias", "role_user", "role_assistant", "rule_keep", *(f"kind_{k}" for k in _KINDS),
    "transient", "task_request", "code_span", "path", "specific_terms", "content_terms", "words",
    "first_person", "second_person", "narration", "future", "template", "heading", "stative",
    "general", "reason", "requirement", "number", "exclamation", "label_value", "asked", "request",
    "anaphora", "mark", "list_of_names", "limitation", "rule_label", "colon_end",
)

_I = re.IGNORECASE
_PATH = re.compile(r"(?:^|[\s`(])(?:~|\.{0,2})/?[\w.-]+/[\w./-]*|"
                   r"\b[\w-]+\.(?:md|py|ts|js|json|toml|ya?ml|sh|txt|jsonl|env|envrc|cfg|ini|lock)\b")
_NARRATION = re.compile(
    r"^(?:let me|let's|now (?:let me|i'll|i will|i'm|creating|i)|i'll|i will|i need to|i'm going to|"
    r"i (?:have|'ve) (?:created|updated|added|made|moved|read|researched|completed|found)|"
    r"i (?:created|updated|added|made|moved|read|researched|found|see|understand)|perfect|great|excellent|"
    r"done|good|first,? (?:let me|i)|next,? (?:let me|i)|then (?:let me|i))\b", _I)
_FUTURE = re.compile(r"\b(?:will|won't|i'll|we'll|you'll|going to|let me)\b", _I)
_TEMPLATE = re.compile(
    r"^(?:output(?: as)?|extract|find|create|include|add|show|return|format|target length|start now|"
    r"your task|requirements?|structure|what to skip|step \d+|task|goal|deliverables?|example|note|"
    r"be (?:thorough|comprehensive)|focus on|total (?:output|length|time)|paste|search for|look for|"
    r"document|explain|list|check|verify|read)\b[^.]{0,60}(?::|\bmax\b|$)", _I)
_HEADING = re.compile(r"^(?:[A-Z][\w'&/-]*(?:\s+|$)){1,7}$")
_STATIVE = re.compile(
    r"\b(?:is|are|lives?|runs? (?:on|in)|uses?|stores?|stored|located|holds?|contains?|points? to|"
    r"defaults? to|requires?|depends on|belongs? to|goes|go|keeps?|kept|written in|built (?:with|on)|"
    r"configured|loads?|reads?)\b", _I)
_GENERAL = re.compile(
    r"\b(?:always|never|every|by default|from now on|whenever|each time|all (?:the )?\w+)\b", _I)
_REASON = re.compile(r"\b(?:because|so that|since|to avoid|to prevent|which means|caused by|due to)\b", _I)
_REQUIREMENT = re.compile(r"\b(?:must|should|needs? to|has to|have to|required|mandatory|only|prohibited|"
                          r"avoid|do not|don't)\b", _I)
_FIRST = re.compile(r"^(?:i|i'm|i've|i'd|we|we're|we've|my|our|the user|the team|per the user)\b", _I)
_SECOND = re.compile(r"\b(?:you|your|you're|you've)\b", _I)
_ANAPHORA = re.compile(r"^(?:it|this|that|they|these|those|which|here|there)\b", _I)
_MARK = re.compile(r"[\u2600-\u27bf\U0001F300-\U0001FAFF]")
_LABEL = re.compile(r"^[\w\s`'\"./-]{2,40}:\s+\S")


def features(c: Any) -> list[float]:
    """The cue vector of one candidate, in the order of :data:`FEATURES`.

    Every cue is one a reader can check and holds for anyone's sessions (who speaks,
    the rules' verdict and kind, inline code, paths, narration, template lines, ...);
    none names a project, a file or a tool.

    Args:
        c: A candidate of :func:`bli_memory.core.extraction.extractors.candidates`.

    Returns:
        Floats: 0/1 indicators, and ``log1p`` of counts for ``specific_terms``,
        ``content_terms`` and ``words``.
    """
    from bli_memory.core.extraction import durability
    from bli_memory.core.extraction.statement_terms import content_terms, specific_terms

    s = c.text.strip()
    plain = re.sub(r"`[^`]*`", "x", s)
    specifics = specific_terms(s)
    names = re.findall(r"(?:^|,\s*)[A-Z`][\w`.-]*(?:\s[A-Z][\w.-]*)?(?=,|$)", plain)
    vec = [
        1.0, float(c.role == "user"), float(c.role == "assistant"), float(c.rule_keep),
        *(float(c.kind == k) for k in _KINDS),
        float(durability.is_transient(s)), float(c.role == "user" and durability.is_task_request(s)),
        float("`" in s), float(bool(_PATH.search(s))), math.log1p(len(specifics)),
        math.log1p(len(content_terms(s))), math.log1p(len(s.split())),
        float(bool(_FIRST.match(s))), float(bool(_SECOND.search(plain))), float(bool(_NARRATION.match(s))),
        float(bool(_FUTURE.search(plain))), float(bool(_TEMPLATE.match(s))),
        float(bool(_HEADING.match(s.rstrip(".:"))) and len(s.split()) <= 7),
        float(bool(_STATIVE.search(plain))), float(bool(_GENERAL.search(plain))),
        float(bool(_REASON.search(plain))), float(bool(_REQUIREMENT.search(plain))),
        float(bool(re.search(r"\d", plain))), float(s.endswith("!")), float(bool(_LABEL.match(s))),
        float(c.asked), float(c.request), float(bool(_ANAPHORA.match(s))), float(bool(_MARK.search(s))),
        float(len(names) >= 3), float(durability.is_limitation(s)), float(durability.is_rule_label(s)),
        float(s.endswith(":")),
    ]
    return vec


def labelled_candidates(rows: list[dict[str, Any]], cosine: Any) -> list[tuple[Any, str, int, str]]:
    """Every candidate of ``rows`` with its stored text, its label and its session.

    Candidates are those of :func:`bli_memory.core.extraction.candidates.candidates`, each
    rewritten as the extractor would store it; repeats within an exchange are dropped,
    as the extractor drops them. A candidate is labelled 1 when it is matched
    one-to-one (best cosine first) to one of the exchange's durable facts at cosine >=
    0.6, the match the session bench counts as durable.

    Args:
        rows: Exchanges of ``bench/data/real_sessions.jsonl`` (the tuning part only).
        cosine: ``extraction_sessions._Cosines``, the product's embedder with a cache.

    Returns:
        ``(candidate, stored text, label 0/1, session)`` in order of appearance.
    """
    from extraction_sessions import _pairs

    from bli_memory.core.extraction.candidates import candidates
    from bli_memory.core.extraction.classify import rewrite as _rewrite

    out: list[tuple[Any, str, int, str]] = []
    for row in rows:
        seen: set[str] = set()
        chosen = []
        for c in candidates(row["text"]):
            text = _rewrite(c.text, c.role)
            key = " ".join(text.lower().split())
            if key not in seen:
                seen.add(key)
                chosen.append((c, text))
        matched = _pairs([t for _, t in chosen], row["facts"], cosine, 0.6)
        out += [(c, text, int(i in matched), row["session"]) for i, (c, text) in enumerate(chosen)]
    return out


def tuning_rows() -> list[dict[str, Any]]:
    """The ``tuning`` exchanges of the real-session set; ``test`` lines are skipped unread."""
    rows = []
    for line in DATA.read_text().splitlines():
        if line.strip() and '"split": "test"' not in line:
            row = json.loads(line)
            if row["split"] == "tuning":
                rows.append(row)
    return rows


def _dataset(rows: list[dict[str, Any]]) -> tuple[np.ndarray, np.ndarray, list[str]]:
    """``(X, y, session of each row)`` from the candidates of ``rows``."""
    from extraction_sessions import _Cosines

    items = labelled_candidates(rows, _Cosines())
    x = np.array([features(c) for c, _, _, _ in items])
    return x, np.array([y for _, _, y, _ in items], dtype=float), [g for _, _, _, g in items]


def fit(x: np.ndarray, y: np.ndarray, lam: float | np.ndarray = LAMBDA,
        start: np.ndarray | None = None) -> np.ndarray:
    """L2-regularised logistic regression by Newton's method; the bias (column 0) is free.

    Args:
        x: ``(n, d)`` features, column 0 all ones.
        y: ``(n,)`` labels in {0, 1}.
        lam: The L2 penalty, one for every weight or ``(d,)`` one per weight (entry 0,
            the bias's, is ignored).
        start: Weights to start from (a fit with a nearby penalty converges in a few steps).

    Returns:
        ``(d,)`` weights.
    """
    w = np.zeros(x.shape[1]) if start is None else start.copy()
    penalty = np.full(x.shape[1], lam, dtype=float)
    penalty[0] = 0.0
    for _ in range(50):
        p = 1.0 / (1.0 + np.exp(-np.clip(x @ w, -30, 30)))
        grad = x.T @ (p - y) + penalty * w
        hess = (x * (p * (1 - p))[:, None]).T @ x + np.diag(penalty) + 1e-6 * np.eye(x.shape[1])
        step = np.linalg.solve(hess, grad)
        w -= step
        if np.abs(step).max() < 1e-8:
            break
    return w


def _scores(y: np.ndarray, p: np.ndarray, t: float) -> tuple[float, float, float]:
    kept = p >= t
    tp = float((kept & (y == 1)).sum())
    precision = tp / kept.sum() if kept.sum() else 1.0
    recall = tp / (y == 1).sum() if (y == 1).sum() else 1.0
    f1 = 2 * precision * recall / (precision + recall) if precision + recall else 0.0
    return precision, recall, f1


def main(argv: list[str]) -> int:
    """Cross-validate the model and the rules on the tuning part; print the comparison."""
    rows = tuning_rows()
    x, y, groups = _dataset(rows)
    log(f"{len(y)} candidates from {len(rows)} tuning exchanges, {int(y.sum())} durable")
    held = np.zeros(len(y))
    for name in sorted(set(groups)):
        test = np.array([g == name for g in groups])
        w = fit(x[~test], y[~test])
        held[test] = 1.0 / (1.0 + np.exp(-np.clip(x[test] @ w, -30, 30)))
    best = max(THRESHOLDS, key=lambda t: (_scores(y, held, t)[2], -abs(t - 0.5)))
    rules = x[:, FEATURES.index("rule_keep")]
    lines = [("model alone", held, best), ("rules alone", rules, 0.5)]
    for t in (0.15, 0.3):
        lines.append((f"rules, model veto below {t}", np.where(held >= t, rules, 0.0), 0.5))
    for t in (0.3, 0.5):
        lines.append((f"rules, or model above {t}", np.maximum(rules, (held >= t).astype(float)), 0.5))
    sys.stdout.write(f"leave-one-session-out on {len(set(groups))} tuning sessions, {len(y)} candidates, "
                     f"{int(y.sum())} durable (model threshold {best}, chosen by F1):\n")
    for label, p, t in lines:
        precision, recall, f1 = _scores(y, p, t)
        sys.stdout.write(f"  {label:32s} kept {int((p >= t).sum()):4d}  P {precision:.3f}  R {recall:.3f}  "
                         f"F1 {f1:.3f}\n")
    w = fit(x, y)
    for name, value in sorted(zip(FEATURES, w, strict=True), key=lambda t: -abs(t[1]))[:12]:
        sys.stdout.write(f"  weight {name:16s} {value:+.3f}\n")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
