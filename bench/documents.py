"""Retrieval quality of the documents index on public projects' own documentation and history.

    python bench/documents.py [--json bench/results/documents.json] [--locomo FILE]

Documents. For each source of ``bench/data/documents_questions.json``: the project's sdist is
fetched from PyPI once (``pip download``, kept under ``bench/results/cache/sdists``), its docs
folder is committed to a scratch git repository (the index reads what git tracks), indexed
(:func:`bli_memory.core.documents.indexer.index_space`, the shipped model), and each
labelled question is searched (documents only, top 5). A question is answered when one of
the top 5 chunks is in the labelled file and its heading trail holds the labelled heading.

Commits. Public history cannot be cloned here, so ``bench/data/documents_commits.json`` is
labelled on a proxy: starlette's ``docs/release-notes.md`` (in its sdist) lists every
release's changes as bullets naming their pull request. Each bullet becomes one commit of a
scratch repository (``git fast-import``, oldest release first): subject = the bullet with
markdown links reduced to their text and its PR numbers moved to a trailing ``(#NNNN)`` as
a GitHub squash merge writes it, body = ``Released in <version>.``, author and committer
date = the release date of the heading (releases without one get placeholder dates, one day
apart, before the oldest dated release). The docs folder is committed last, so documents
and commits share the space. Each question is searched over the commits only (top 5); it
is answered when a commit's text holds its labelled ``#<pr>``.

Reported for both: recall@1, recall@5 and MRR@5 of the hybrid search, beside a keyword-only
baseline (FTS5 over the same chunks, any query term, bm25 order), and the index's size and
time. Then memories and documents mixed in one space (:mod:`documents_mixed`, its own
protocol), unless the LoCoMo file is missing.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import tarfile
import tempfile
import time
from collections.abc import Callable, Sequence
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from common import CACHE_DIR, REPO_ROOT, RESULTS_DIR, bench_embedder, log, markdown_table, write_json

QUESTIONS = Path(__file__).resolve().parent / "data" / "documents_questions.json"
COMMIT_QUESTIONS = Path(__file__).resolve().parent / "data" / "documents_commits.json"
SDISTS = CACHE_DIR / "sdists"
LOCOMO = REPO_ROOT.parent / "shared" / "bench" / "locomo" / "locomo-dev.json"
_GIT_ENV = {"GIT_AUTHOR_NAME": "bench", "GIT_AUTHOR_EMAIL": "b@x", "GIT_COMMITTER_NAME": "bench",
            "GIT_COMMITTER_EMAIL": "b@x", "PATH": "/usr/bin:/bin"}


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


def _git(root: Path, *args: str, env: dict[str, str] | None = None, stdin: bytes | None = None) -> None:
    subprocess.run(["git", "-C", str(root), *args], check=True, capture_output=True, input=stdin,
                   env={**_GIT_ENV, "HOME": str(root.parent), **(env or {})})


def _extract(spec: str, folder: str, to: Path) -> None:
    """Copy the sdist's ``folder`` to ``to/folder``."""
    with tarfile.open(_sdist(spec)) as tar, tempfile.TemporaryDirectory() as tmp:
        tar.extractall(tmp, filter="data")
        top = next(Path(tmp).iterdir())
        shutil.copytree(top / folder, to / folder, dirs_exist_ok=True)


def _repo(spec: str, folder: str, into: Path) -> Path:
    """A scratch git repository holding the sdist's ``folder``, committed."""
    root = into / spec.replace("==", "-")
    _extract(spec, folder, root)
    for args in (["init", "-q"], ["add", "-A"], ["commit", "-q", "-m", f"{spec} docs"]):
        _git(root, *args)
    return root


def _hit(chunk: Any, want: dict[str, str]) -> bool:
    return chunk.path == want["path"] and want["heading"] in chunk.heading


# --- the commit proxy: release notes replayed as squash merges ---------------------------

_RELEASE = re.compile(r"^## (\S+)(?: \((\w+) (\d+)(?:st|nd|rd|th)?, (\d{4})\))?\s*$")
_BULLET = re.compile(r"^ {0,3}[*-] +(.*)$")
_LINK = re.compile(r"\[([^\]]*)\]\(([^)\s]*)\)")
_PR_LINK = re.compile(r"github\.com/encode/starlette/(?:pull/)?(\d+)\b")
_BARE_PR = re.compile(r"https?://github\.com/encode/starlette/pull/(\d+)")
_TRAILING_PR = re.compile(r"(?<=[\s-])#(\d+)\.?\s*$")


def release_bullets(notes: str) -> list[tuple[str, datetime | None, list[str]]]:
    """``(version, date or None, bullets)`` per ``## <version> (<date>)`` heading, newest first;
    a bullet's continuation lines are joined to it, fenced code and prose are left out."""
    out: list[tuple[str, datetime | None, list[list[str]]]] = []
    fence = False
    bullet: list[str] | None = None
    for line in notes.splitlines():
        if line.strip().startswith("```"):
            fence, bullet = not fence, None
            continue
        if fence:
            continue
        if m := _RELEASE.match(line):
            day = datetime.strptime(f"{m[2]} {m[3]} {m[4]}", "%B %d %Y").replace(tzinfo=UTC) if m[2] else None
            out.append((m[1], day, []))
            bullet = None
        elif (b := _BULLET.match(line)) and out:
            bullet = [b[1]]
            out[-1][2].append(bullet)
        elif not line.strip() or line.startswith("#"):
            bullet = None
        elif bullet is not None:
            bullet.append(line.strip())
    return [(v, d, [" ".join(b) for b in bs]) for v, d, bs in out]


def squash_subject(bullet: str) -> str:
    """A bullet as a squash merge's subject: links reduced to their text, links to commits
    dropped, PR references moved to a trailing ``(#a, #b)``."""
    prs: list[str] = []

    def ref(number: str) -> str:
        prs.append(number)
        return "\0"

    def link(m: re.Match[str]) -> str:
        label, url = m[1], m[2]
        if "/commit/" in url:
            return "\0"
        pr = _PR_LINK.search(url)
        if pr and "/issues/" not in url:
            return ref(label[1:] if re.fullmatch(r"#\d+", label) else pr[1])
        return label

    s = _BARE_PR.sub(lambda m: ref(m[1]), _LINK.sub(link, bullet))
    s = _TRAILING_PR.sub(lambda m: ref(m[1]), s)
    s = re.sub(r"\0(?:[\s,]*(?:and\s+)?\0)*", "\0", s)
    s = re.sub(r"\s*(?:See\s+|[-–]\s*)?\0", "", s)
    s = re.sub(r"\s+([.,])(?=\s|$)", r"\1", s)
    s = re.sub(r"([.,])[.,](?=\s|$)", r"\1", s)
    s = " ".join(s.split()).rstrip(" .")
    return s + (f" ({', '.join('#' + n for n in dict.fromkeys(prs))})" if prs else "")


def history_repo(spec: str, folder: str, notes: str, into: Path) -> tuple[Path, dict[str, Any]]:
    """A scratch repository whose history is the release notes' bullets (see the module
    docstring), with the sdist's ``folder`` committed on top."""
    root = into / (spec.replace("==", "-") + "-history")
    root.mkdir(parents=True)
    _extract(spec, folder, root)
    releases = list(reversed(release_bullets((root / notes).read_text(encoding="utf-8"))))
    oldest = min(d for _, d, _ in releases if d is not None)
    undated = [v for v, d, _ in releases if d is None]
    stream, commits = bytearray(), 0
    for version, date, bullets in releases:
        when = date or oldest - timedelta(days=len(undated) - undated.index(version))
        stamp = f"bench <b@x> {int(when.timestamp())} +0000"
        for bullet in bullets:
            message = f"{squash_subject(bullet)}\n\nReleased in {version}.\n".encode()
            head = f"commit refs/heads/main\nauthor {stamp}\ncommitter {stamp}\ndata {len(message)}\n"
            stream += head.encode() + message + b"\n"
            commits += 1
    _git(root, "init", "-q", "-b", "main")
    _git(root, "fast-import", "--quiet", stdin=bytes(stream))
    last = max(d for _, d, _ in releases if d is not None).isoformat()
    _git(root, "add", "-A")
    _git(root, "commit", "-q", "-m", f"{spec} {folder}",
         env={"GIT_AUTHOR_DATE": last, "GIT_COMMITTER_DATE": last})
    return root, {"releases": len(releases), "undated_releases": len(undated), "commits": commits + 1}


def _mentions(chunk: Any, pr: str) -> bool:
    return re.search(rf"#{pr}(?!\d)", chunk.text) is not None


def _commit_hit(chunk: Any, pr: str) -> bool:
    return chunk.kind == "commit" and _mentions(chunk, pr)


class EmbedCache:
    """``embed_many`` answering texts already embedded from a dict (the same text indexed into
    several spaces costs the model once)."""

    def __init__(self, embedder: Any) -> None:
        self.embedder = embedder
        self.known: dict[str, Any] = {}

    def __call__(self, texts: Sequence[str]) -> Any:
        import numpy as np

        missing = list(dict.fromkeys(t for t in texts if t not in self.known))
        if missing:
            self.known.update(zip(missing, self.embedder.embed(missing), strict=True))
        return np.stack([self.known[t] for t in texts])


def _ranks(index: Any, space: str, q: str, kinds: tuple[str, ...], embed: Callable[[str], Any],
           hit: Callable[[Any], bool]) -> dict[str, int | None]:
    """Rank (1..5) of the first right chunk: hybrid search, and the keyword-only baseline."""
    from bli_memory.core.documents.search import search_documents
    from bli_memory.core.memory.terms import fts_any_query, query_terms

    hits = search_documents(index, q, space=space, embed=embed, limit=5, kinds=kinds)
    expr = fts_any_query(query_terms(q))
    seqs = index.keyword(space, kinds, expr, limit=5) if expr else []
    chunks = index.chunks(seqs)
    return {"hybrid_rank": next((i for i, h in enumerate(hits, 1) if hit(h.chunk)), None),
            "keyword_rank": next((i for i, s in enumerate(seqs, 1) if s in chunks and hit(chunks[s])), None)}


def scores(rows: Sequence[dict[str, Any]]) -> dict[str, dict[str, float]]:
    """recall@1, recall@5 and MRR@5 of the hybrid and of the keyword ranks."""
    out = {}
    for name in ("hybrid", "keyword"):
        ranks = [r[f"{name}_rank"] for r in rows]
        out[name] = {"recall@1": sum(1 for r in ranks if r == 1) / len(ranks),
                     "recall@5": sum(1 for r in ranks if r is not None) / len(ranks),
                     "mrr@5": sum(1 / r for r in ranks if r is not None) / len(ranks)}
    return out


def _table(results: dict[str, Any]) -> str:
    return markdown_table(["search", "recall@1", "recall@5", "mrr@5"],
                          [[name, f"{s['recall@1']:.2f}", f"{s['recall@5']:.2f}", f"{s['mrr@5']:.3f}"]
                           for name, s in (("hybrid (cosine + FTS5, RRF)", results["hybrid"]),
                                           ("keyword only (FTS5 any, bm25)", results["keyword"]))])


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--json", type=Path, default=RESULTS_DIR / "documents.json")
    parser.add_argument("--locomo", type=Path, default=Path(os.environ.get("BLI_BENCH_LOCOMO") or LOCOMO),
                        help="LoCoMo JSON file of the mixed part (skipped when absent)")
    args = parser.parse_args()

    from bli_memory.core.documents.index_store import DocumentIndex
    from bli_memory.core.documents.indexer import index_space

    data = json.loads(QUESTIONS.read_text())
    history = json.loads(COMMIT_QUESTIONS.read_text())
    embedder = bench_embedder()

    def embed(text: str) -> Any:
        return embedder.embed([text])[0]

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
            ranks = _ranks(index, q["repo"], q["q"], ("document",), embed, lambda c, q=q: _hit(c, q))
            results["rows"].append({"repo": q["repo"], "q": q["q"], **ranks})
        results.update(scores(results["rows"]))

        src = history["source"]
        root, made = history_repo(src["sdist"], src["folder"], src["notes"], Path(tmp))
        space = root.name
        t0 = time.perf_counter()
        cache = EmbedCache(embedder)  # the mixed part indexes the same texts again
        report = index_space(index, root, space=space, embed_many=cache)
        commits: dict[str, Any] = {"repo": {**made, "space": space, "indexed_commits": report.commits,
                                            "documents": report.documents, "chunks": report.chunks,
                                            "index_s": round(time.perf_counter() - t0, 2)}, "rows": []}
        log(f"documents: {space}: {report.commits} commits, {report.documents} files, {report.chunks} chunks")
        for q in history["questions"]:
            ranks = _ranks(index, space, q["q"], ("commit",), embed, lambda c, q=q: _commit_hit(c, q["pr"]))
            commits["rows"].append({"q": q["q"], "pr": q["pr"], "release": q["release"], **ranks})
        commits.update(scores(commits["rows"]))
        results["commits"] = commits
        index.close()

        tables = [f"Documents ({len(results['rows'])} questions, documents only, top 5):", _table(results),
                  "",
                  f"Commits ({len(commits['rows'])} questions, commits only, top 5):", _table(commits)]
        if args.locomo.exists():
            import documents_mixed

            # One documents tree answers every question: starlette's docs with their history,
            # and the other sources' docs committed beside them (no path collides).
            for source in data["sources"].values():
                if source["sdist"] != src["sdist"]:
                    _extract(source["sdist"], source["folder"], root)
                    _git(root, "add", "-A")
                    _git(root, "commit", "-q", "-m", f"{source['sdist']} {source['folder']}")
            probes = [documents_mixed.Probe("documents", q["q"], lambda c, q=q: _hit(c, q))
                      for q in data["questions"]]
            probes += [documents_mixed.Probe("commits: the commit", q["q"],
                                             lambda c, q=q: _commit_hit(c, q["pr"]))
                       for q in history["questions"]]
            probes += [documents_mixed.Probe("commits: the commit or its release-notes section", q["q"],
                                             lambda c, q=q: _mentions(c, q["pr"]))
                       for q in history["questions"]]
            results["mixed"] = documents_mixed.run(args.locomo, root, probes, embedder=embedder,
                                                   embed_many=cache)
            tables += ["", *documents_mixed.tables(results["mixed"])]
        else:
            log(f"documents: no LoCoMo file at {args.locomo}: the mixed part is skipped")
    write_json(args.json, results)
    print("\n".join(tables))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
