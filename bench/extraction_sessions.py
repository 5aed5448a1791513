"""Automatic capture on real, public coding-agent sessions: what is kept, before and after.

Data: ``bench/data/real_sessions.jsonl`` (sources and licences in ``bench/data/README.md``).
Each line is one exchange of a real session as the stop hook queues it (``User: ...``
and the assistant's text of that turn; tool calls and results left out, as the host
adapters do), with the durable facts it holds (``facts``) and statements it makes that
are true but only for the moment (``transient``). Sessions are split ``tuning`` /
``test`` by session, never by line; the test part is reported and was not looked at
while writing the rules.

Protocol, per version (``before``: the extractor and reconcile of the ``--before``
revision, loaded from git; ``after``: this tree) and per session:

1. **Replay.** A fresh space in a real SQLite store; every exchange in order goes through
   :func:`bli_memory.core.extraction.reconcile.distil` with the default extractor, as the worker
   drains the queue after each stop hook.
2. **Label what was written.** Each memory an exchange added, updated or flagged is
   matched one-to-one (best cosine first, all-MiniLM-L6-v2 int8, the product's embedder)
   to that exchange's facts: matched at cosine >= the threshold is **durable**;
   otherwise it is **transient** when it matches one of the exchange's transient
   statements at that threshold, else **noise**.
3. **Scores.** Precision = durable / kept; recall = facts matched / facts present; per
   session and over the split, at 0.6 and 0.7.
4. **Hygiene counts.** Verbatim prompts (a kept memory that is, once case and spaces are
   normalised, a run of at least six words of the exchange's user prompt); absolute home
   paths (``/home/<name>``, ``/Users/<name>``, ``C:\\Users\\<name>``); unrelated
   supersessions (an update whose old and new texts match different facts of the
   session, or score below cosine 0.5).
5. **Whole-session replay.** Live memories at the end of each session, and the facts of
   the session the ``before`` live set matched (cosine >= 0.6) that the ``after`` live
   set no longer matches.

Run: ``python bench/extraction_sessions.py [--before REV] [--write]``; prints markdown,
writes ``bench/results/extraction_sessions.json``; ``--write`` replaces the section of
``docs/benchmarks-extraction.md`` between its ``real-sessions`` markers.
``--split tuning`` replays the tuning part alone (its test lines are skipped unread) and
prints each version's totals, for work on the rules; it writes nothing.

``--extractor openai|host ...`` replays the rules and a model side by side instead
(precision, recall, tokens and seconds per exchange): see ``bench/extraction_models.py``.
"""

from __future__ import annotations

import contextlib
import json
import re
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from common import REPO_ROOT, RESULTS_DIR, log, machine_description, markdown_table, write_json
from revisions import load_revision

__all__ = ["load_version", "main", "replay"]

DATA = REPO_ROOT / "bench" / "data" / "real_sessions.jsonl"
DOC = REPO_ROOT / "docs" / "benchmarks-extraction.md"
#: The baselines replayed beside this tree: ``original`` is the tree before the capture
#: rework (the count the capture issue reported), ``start`` the first capture pass.
BASELINES = (("original", "a74adae"), ("start", "3c5eb55"))
THRESHOLDS = (0.6, 0.7)
_BEGIN, _END = "<!-- real-sessions:begin -->", "<!-- real-sessions:end -->"
_HOME = re.compile(r"/home/[A-Za-z0-9._-]+|/Users/[A-Za-z0-9._-]+|[A-Za-z]:\\Users\\")


class _Cosines:
    """Cosine similarity with the product's embedder, cached per text."""

    def __init__(self) -> None:
        from bli_memory.core.memory.embeddings import get_embedder

        self._embedder = get_embedder()
        self._cache: dict[str, Any] = {}

    def __call__(self, a: str, b: str) -> float:
        for t in (a, b):
            if t not in self._cache:
                self._cache[t] = self._embedder.embed([t])[0]
        return float(self._cache[a] @ self._cache[b])

    def vector(self, text: str) -> Any:
        """The unit embedding of ``text`` (cached)."""
        if text not in self._cache:
            self._cache[text] = self._embedder.embed([text])[0]
        return self._cache[text]


def _pairs(left: list[str], right: list[str], cosine: _Cosines, threshold: float) -> dict[int, int]:
    """Greedy one-to-one matching, best cosine first: ``{left index: right index}``."""
    ranked = sorted(((cosine(a, b), i, j) for i, a in enumerate(left) for j, b in enumerate(right)),
                    reverse=True)
    out: dict[int, int] = {}
    used: set[int] = set()
    for sim, i, j in ranked:
        if sim < threshold:
            break
        if i not in out and j not in used:
            out[i] = j
            used.add(j)
    return out


#: The modules that make up capture; a revision's own copies are loaded for "before".
@contextlib.contextmanager
def load_version(rev: str | None) -> Iterator[tuple[Any, Any]]:
    """``(RuleExtractor class, distil function)`` of revision ``rev`` (None: this tree).

    The capture modules of ``rev`` stand in for this tree's while the context is open
    (:func:`revisions.load_revision`, which also replays revisions of the flat layout).
    """
    if rev is None:
        from bli_memory.core.extraction.extractors import RuleExtractor
        from bli_memory.core.extraction.reconcile import distil

        yield RuleExtractor, distil
        return
    with load_revision(rev, REPO_ROOT) as modules:
        extractor = next(m.RuleExtractor for m in modules.values() if hasattr(m, "RuleExtractor"))
        distil = next(m.distil for m in modules.values() if hasattr(m, "distil"))
        yield extractor, distil


def _user_prompt(text: str) -> str:
    return text.split("\n\nAssistant:", 1)[0].removeprefix("User:").strip()


def _norm(text: str) -> str:
    return " ".join(re.findall(r"[a-z0-9]+", text.lower()))


def _verbatim(memory: str, prompt: str) -> bool:
    words = _norm(memory).split()
    return len(words) >= 6 and " ".join(words) in _norm(prompt)


def replay(rows: list[dict[str, Any]], rev: str | None, cosine: _Cosines,
           extractor: Any = None) -> dict[str, Any]:
    """Replay every session through ``distil`` of revision ``rev``; per-exchange traces.

    ``extractor`` replaces the revision's default extractor (``bench/extraction_gate.py``
    replays a gate that is not in the tree).
    """
    from bli_memory.core.embedded.engine import EmbeddedBackend

    sessions: dict[str, dict[str, Any]] = {}
    with load_version(rev) as (extractor_cls, distil), tempfile.TemporaryDirectory() as tmp:
        extractor = extractor or extractor_cls()
        backend = EmbeddedBackend(Path(tmp) / "memory.sqlite3")
        try:
            for row in rows:
                s = sessions.setdefault(row["session"], {"split": row["split"], "exchanges": []})
                space = "bench_" + re.sub(r"\W", "_", row["session"])
                trace: list[dict[str, Any]] = []
                said: dict[str, Any] = {}
                mine = {"report": said} if rev is None else {}  # older revisions' distil has no report
                outcome = distil(row["text"], backend=backend, space=space, source="bench",
                                 session_id=row["session"], extractor=extractor, trace=trace, **mine)
                extract_ms = outcome.get("extract_ms")
                if extract_ms is None:  # a revision before distil timed its extractor
                    t0 = time.perf_counter()
                    extractor.extract(row["text"])
                    extract_ms = (time.perf_counter() - t0) * 1000
                old = {}
                for t in trace:
                    if t["action"] == "update" and t.get("related"):
                        history = backend.history(t["id"])
                        old[t["text"]] = history[1].content if len(history) > 1 else ""
                s["exchanges"].append({"row": row, "trace": trace, "replaced": old, "extract_ms": extract_ms,
                                       "report": said})
                s["live"] = [m.content for m in backend.store.recent([space], limit=1000)]
        finally:
            backend.close()
    return sessions


def score(sessions: dict[str, Any], cosine: _Cosines, threshold: float) -> dict[str, Any]:
    """Labels, precision, recall and hygiene counts per session, at ``threshold``."""
    out: dict[str, Any] = {}
    for name, s in sessions.items():
        kept = durable = transient = noise = facts = found = verbatim = home = unrelated = 0
        labelled: list[dict[str, Any]] = []
        missed: list[str] = []
        all_facts = [f for e in s["exchanges"] for f in e["row"]["facts"]]
        for e in s["exchanges"]:
            row = e["row"]
            written = [t["text"] for t in e["trace"] if t["action"] in ("add", "update", "conflict")]
            matched = _pairs(written, row["facts"], cosine, threshold)
            rest = [i for i in range(len(written)) if i not in matched]
            trans = _pairs([written[i] for i in rest], row.get("transient", []), cosine, threshold)
            for i, text in enumerate(written):
                label = "durable" if i in matched else (
                    "transient" if rest.index(i) in trans else "noise")
                labelled.append({"text": text, "label": label})
                durable += label == "durable"
                transient += label == "transient"
                noise += label == "noise"
                verbatim += _verbatim(text, _user_prompt(row["text"]))
                home += bool(_HOME.search(text))
            kept += len(written)
            facts += len(row["facts"])
            missed += [f for j, f in enumerate(row["facts"]) if j not in matched.values()]
            found += len(matched)
            for new, old in e["replaced"].items():
                a = _pairs([new], all_facts, cosine, threshold)
                b = _pairs([old], all_facts, cosine, threshold)
                if cosine(new, old) < 0.5 or (a and b and a[0] != b[0]):
                    unrelated += 1
        out[name] = {"split": s["split"], "kept": kept, "durable": durable, "transient": transient,
                     "noise": noise, "facts": facts, "found": found,
                     "precision": durable / kept if kept else 1.0, "recall": found / facts if facts else 1.0,
                     "verbatim": verbatim, "home_paths": home, "unrelated_supersessions": unrelated,
                     "live": len(s["live"]), "labelled": labelled, "missed": missed,
                     "exchanges": len(s["exchanges"])}
    return out


def _totals(per: dict[str, Any], split: str) -> dict[str, Any]:
    chosen = [v for v in per.values() if split == "all" or v["split"] == split]
    keys = ("kept", "durable", "transient", "noise", "facts", "found", "verbatim", "home_paths",
            "unrelated_supersessions", "live", "exchanges")
    t = {k: sum(v[k] for v in chosen) for k in keys}
    t["precision"] = t["durable"] / t["kept"] if t["kept"] else 1.0
    t["recall"] = t["found"] / t["facts"] if t["facts"] else 1.0
    t["sessions"] = len(chosen)
    return t


def _lost(before: dict[str, Any], after: dict[str, Any], cosine: _Cosines) -> list[str]:
    """Facts the before live set matched (>= 0.6) that the after live set does not."""
    lost = []
    for name, s in before.items():
        facts = [f for e in s["exchanges"] for f in e["row"]["facts"]]
        had = set(_pairs(facts, s["live"], cosine, 0.6))
        has = set(_pairs(facts, after[name]["live"], cosine, 0.6))
        lost += [facts[i] for i in sorted(had - has)]
    return lost


def _doc(results: dict[str, Any], machine: dict[str, Any], revs: dict[str, str]) -> str:
    names = list(revs) + ["after"]
    head = ["version", "split", "sessions", "exchanges", "kept", "durable", "transient", "noise", "precision",
            "facts", "recall", "verbatim prompts", "home paths", "unrelated supersessions"]
    rows = []
    for t in THRESHOLDS:
        for split in ("test", "tuning"):
            for version in names:
                x = results[version][f"{t}"]["totals"][split]
                rows.append([f"{version} @{t}", split, x["sessions"], x["exchanges"], x["kept"], x["durable"],
                             x["transient"], x["noise"], x["precision"], x["facts"], x["recall"],
                             x["verbatim"], x["home_paths"], x["unrelated_supersessions"]])
    per_head = ["session", "split"] + [f"kept {v}" for v in names] + [f"P {v}" for v in names] + [
        f"R {v}" for v in names]
    per_rows = []
    for name, a in results["after"]["0.6"]["sessions"].items():
        per = [results[v]["0.6"]["sessions"][name] for v in names]
        per_rows.append([name, a["split"]] + [p["kept"] for p in per] + [p["precision"] for p in per] +
                        [p["recall"] for p in per])
    live = {v: sum(x["live"] for x in results[v]["0.6"]["sessions"].values()) for v in names}
    replay_lines = []
    for v in revs:
        lost = results["lost"][v]
        replay_lines.append(
            f"- against `{v}` ({revs[v]}): {live[v]} live memories, after {live['after']} "
            f"({live['after'] / live[v]:.2f} of it); durable facts it held that after lost: {len(lost)}"
            + (" (" + "; ".join(lost) + ")" if lost else "") + ".")
    times = ", ".join(f"{v} {results[v]['extract_ms']:.2f} ms" for v in names)
    rev_text = ", ".join(f"`{v}` = revision `{r}`" for v, r in revs.items())
    return "\n".join([
        _BEGIN,
        "## Real sessions: automatic capture before and after",
        "",
        "Generated by `python bench/extraction_sessions.py --write`; protocol in that file's docstring, "
        "data and sources in `bench/data/` (public Claude Code sessions, split by session into `tuning` "
        "and `test`; the test part is the number to expect).",
        f"Machine: {machine.get('cpu')}, {machine.get('cores')} cores, Python {machine.get('python')}, "
        f"commit {machine.get('commit', 'unknown')}; {rev_text}, `after` = this tree, same run.",
        "",
        markdown_table(head, rows),
        "",
        "Per session at cosine 0.6:",
        "",
        markdown_table(per_head, per_rows),
        "",
        "Whole-session replay (live memories at the end of every session, summed):",
        "",
        *replay_lines,
        "",
        f"Extraction time per exchange (mean): {times}.",
        "",
        _END,
    ])


def _show(sessions_scored: dict[str, Any], split: str) -> None:
    """Print every kept memory of ``split`` with its label (for working on the tuning part)."""
    for name, s in sessions_scored.items():
        if s["split"] != split:
            continue
        sys.stdout.write(f"## {name}: P {s['precision']:.2f} R {s['recall']:.2f}\n")
        for item in s["labelled"]:
            sys.stdout.write(f"  [{item['label']}] {item['text']}\n")
        for fact in s["missed"]:
            sys.stdout.write(f"  [missed] {fact}\n")


def main(argv: list[str]) -> int:
    """Replay every version in one process; ``--write`` updates the doc section.

    ``--show tuning`` prints each kept memory of the tuning part with its label and the
    facts missed, and skips the baselines; the test part is never shown. ``--split
    tuning`` replays every version on the tuning part alone and prints its totals.
    """
    if "--extractor" in argv:  # the rules beside a model, in one run (bench/extraction_models.py)
        from extraction_models import main as models_main

        return models_main(argv)
    revs = dict(BASELINES)
    if "--before" in argv:
        revs = {"before": argv[argv.index("--before") + 1]}
    if "--show" in argv and argv[argv.index("--show") + 1:][:1] != ["tuning"]:
        raise SystemExit("only the tuning part is shown: the test part stays blind")
    if "--split" in argv and argv[argv.index("--split") + 1:][:1] != ["tuning"]:
        raise SystemExit("only the tuning part is replayed alone: the test part is read once, in full runs")
    rows = [json.loads(line) for line in DATA.read_text().splitlines() if line.strip()
            and ("--split" not in argv or '"split": "test"' not in line)]
    log(f"{len(rows)} exchanges in {len({r['session'] for r in rows})} sessions")
    cosine = _Cosines()
    if "--split" in argv:
        versions = {**revs, "after": None}
        for version, rev in versions.items():
            sessions = replay(rows, rev, cosine)
            for t in THRESHOLDS:
                x = _totals(score(sessions, cosine, t), "tuning")
                sys.stdout.write(f"{version} @{t} tuning: kept {x['kept']} durable {x['durable']} "
                                 f"P {x['precision']:.3f} R {x['recall']:.3f} ({x['facts']} facts)\n")
        return 0
    if "--show" in argv:
        split = "tuning"
        per = score(replay([r for r in rows if r["split"] == split], None, cosine), cosine, 0.6)
        _show(per, split)
        t = _totals(per, split)
        sys.stdout.write(f"{split}: kept {t['kept']} P {t['precision']:.3f} R {t['recall']:.3f}\n")
        return 0
    results: dict[str, Any] = {}
    replays = {v: replay(rows, r, cosine) for v, r in revs.items()}
    replays["after"] = replay(rows, None, cosine)
    for version, sessions in replays.items():
        entry: dict[str, Any] = {}
        for t in THRESHOLDS:
            per = score(sessions, cosine, t)
            totals = {s: _totals(per, s) for s in ("test", "tuning", "all")}
            entry[f"{t}"] = {"sessions": per, "totals": totals}
        times = [e["extract_ms"] for s in sessions.values() for e in s["exchanges"]]
        entry["extract_ms"] = sum(times) / len(times)
        results[version] = entry
    results["lost"] = {v: _lost(replays[v], replays["after"], cosine) for v in revs}
    machine = machine_description()
    write_json(RESULTS_DIR / "extraction_sessions.json",
               {"machine": machine, "baselines": revs, "results": results})
    text = _doc(results, machine, revs)
    sys.stdout.write(text + "\n")
    if "--write" in argv:
        doc = DOC.read_text()
        if _BEGIN in doc:
            doc = doc[: doc.index(_BEGIN)] + text + doc[doc.index(_END) + len(_END):]
        else:
            doc = doc.rstrip("\n") + "\n\n" + text + "\n"
        DOC.write_text(doc)
        log(f"wrote {DOC}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
