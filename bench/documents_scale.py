"""Scale of the documents index: a large real documentation tree and 10,000 commits.

    cd bench && python documents_scale.py [--json results/documents_scale.json] [--commits 10000]

(4 to 10 minutes on two shared cores, depending on their load; most of it is the model
embedding 14,000 texts in the first index.)

The issue asks for CPython's ``Doc/`` tree and its last 10,000 commits. CPython's git
history cannot be fetched here (no git hosting, only package registries), so this is a
**proxy**, built from one sdist on PyPI:

- **Documents: Django 5.1.4's ``docs/`` tree**, as released (``pip download --no-binary``,
  kept under ``bench/results/cache/sdists``): about 600 reStructuredText files (``*.txt``),
  11 MB, the order of CPython's ``Doc/`` (about 500 ``.rst`` files).
- **History: Django's release notes replayed as commits** (``docs/releases/<version>.txt``,
  0.95 to 5.1.4), oldest release first. Each change bullet of the notes is one commit
  (subject: the bullet's first sentence with the RST markup roughly removed; body: the rest
  of the bullet, wrapped, and ``Released in X.Y.Z.``). The notes hold fewer than
  10,000 bullets (3,600), so each prose paragraph of the notes (40 characters or more) is a
  commit too, in the same shape, and the rest up to ``--commits`` are *backports*: a bullet
  repeated right after itself as ``[X.Y.x] <subject>`` with ``Backport of <sha> from
  main.`` (Django's own history records a fix on main and again on each stable branch):
  every bullet once, then evenly spread bullets a second time. Backports repeat text, so
  they test scale, not retrieval. The counts of each kind are in the results
  (``history``). Author and committer date: the release date the notes give
  (``*Month D, YYYY*``; the 13 early notes without one get an approximate date,
  :data:`UNDATED`), the commits of a release spread evenly since the previous release
  date. The history has no files (every commit has the empty tree; ``git log`` reads
  messages only, as the indexer does); the last commit adds the ``docs/`` tree. So the
  repository holds ``--commits`` + 1 commits, and the index reads the newest 10,000
  (``MAX_COMMITS``). Commits are written with ``git fast-import``; their ids are computed
  here beforehand, so a backport can name its original, and the last one is checked
  against git's.

Measured, with the shipped model (or ``BLI_MEMORY_EMBEDDER``), in one process:

1. **First index** (:func:`~bli_memory.core.documents.indexer.index_space`): the total, and
   split into the documents phase (up to where the commits are read) and the commits
   phase, with where the time goes (git, chunking, masking, the model, the writes): the
   indexer's helpers are wrapped with timers, nothing in ``core/`` is changed.
2. **Re-index with nothing changed** (3 runs).
3. **Re-index after one document changes** (a paragraph appended to one file, five
   different files in turn) and **after one new commit** (that change committed), each
   followed by the first search after it (the search reads every vector again: the
   file changed).
4. **Disk**: the index file, its WAL while open, the file after closing, and which
   tables take the space (SQLite ``dbstat`` when compiled in).
5. **Search**: ~40 developer questions (documentation and history), kinds document and
   commit, limit 5, on a reopened index: the first search (reads every vector), then
   ``--rounds`` (5) warm rounds of each question, timed three ways back to back: the search
   with the query embedded (what ``search_documents`` costs a caller), the search with the
   query's vector known (the index alone, comparable to the memory-search figures of
   docs/benchmarks.md, which cache the query vectors), and the model embedding the query
   alone. Also the ``DocumentIndex.state`` read the engine adds to each search (for links).
6. **The memory search at the same row count**, in the same run (``bench/scale.py`` in
   quick mode; ``--no-memory-reference`` skips it), for context.
"""

from __future__ import annotations

import argparse
import hashlib
import os
import re
import shutil
import statistics
import subprocess
import sys
import tarfile
import tempfile
import textwrap
import time
from collections import defaultdict
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from datetime import UTC, date, datetime
from pathlib import Path
from typing import Any

from common import (
    CACHE_DIR,
    REPO_ROOT,
    RESULTS_DIR,
    bench_embedder,
    log,
    machine_description,
    markdown_table,
    percentile,
    rss_mb,
    write_json,
)

__all__ = ["Change", "main", "read_release_notes", "replay_history"]

SDIST = "Django==5.1.4"
SDISTS = CACHE_DIR / "sdists"
SPACE = "django"
IDENT = "Django Release Notes <release-notes@example.invalid>"
EMPTY_TREE = "4b825dc642cb6eb9a060e54bf8d69288fbee4904"

#: The notes without a ``*Month D, YYYY*`` line: approximate release dates (only the
#: order of the history depends on them).
UNDATED = {
    "0.95": date(2006, 7, 29), "0.96": date(2007, 3, 23), "1.0": date(2008, 9, 3),
    "1.0.1": date(2008, 11, 14), "1.0.2": date(2008, 11, 18), "1.1.2": date(2010, 10, 9),
    "1.1.3": date(2010, 12, 22), "1.1.4": date(2011, 2, 8), "1.2.1": date(2010, 5, 24),
    "1.2.2": date(2010, 9, 8), "1.2.3": date(2010, 9, 10), "1.2.4": date(2010, 12, 22),
    "1.2.5": date(2011, 2, 8),
}
#: Where history starts (before the first release).
HISTORY_START = date(2005, 7, 13)

#: Documents changed one at a time (a paragraph appended), then committed.
CHANGED_FILES = (
    "docs/topics/cache.txt",
    "docs/ref/models/querysets.txt",
    "docs/ref/settings.txt",
    "docs/howto/deployment/checklist.txt",
    "docs/releases/5.1.4.txt",
)

#: Developer questions: the documentation (how), then the history (when, why, which release).
QUERIES = (
    "how do I configure a Redis cache backend",
    "write a custom template tag with arguments",
    "CSRF protection for AJAX requests",
    "write a custom migration operation",
    "paginate a queryset in a class-based view",
    "timezone support USE_TZ aware datetimes",
    "send email through an SMTP backend",
    "deploy with gunicorn behind nginx",
    "add a custom management command",
    "post_save signal receiver",
    "ManyToManyField with a through model",
    "serve static files in production",
    "raise ValidationError in a form clean method",
    "select_related vs prefetch_related",
    "test views with the test client",
    "custom user model AUTH_USER_MODEL",
    "transaction.atomic and savepoints",
    "ListView get_queryset override",
    "translate strings in templates",
    "LOGGING setting configuration",
    "async views under ASGI",
    "database routers for multiple databases",
    "SECURE_PROXY_SSL_HEADER",
    "bulk_update",
    "when was support for Python 3.8 dropped",
    "denial of service in strip_tags",
    "SQL injection in the HasKey lookup on Oracle",
    "regression in the admin changelist filters",
    "crash in bulk_create with db_default",
    "which release fixed user email enumeration in password reset",
    "when was the Argon2 password hasher added",
    "which version added facet filters in the admin",
    "why was the USE_L10N setting removed",
    "memory leak in the autoreloader",
    "regression with GeneratedField and foreign keys",
    "DEFAULT_AUTO_FIELD BigAutoField warning",
    "urlize denial of service",
    "DEFAULT_FILE_STORAGE deprecated in favour of STORAGES",
    "migrate crashes on SQLite when renaming a field",
    "JSONField on all database backends",
    "login_required middleware",
    "fixed data loss in QuerySet.update_or_create",
)

_MONTHS = ("January February March April May June July August September October November "
           "December").split()
_DATE = re.compile(rf"^\*?({'|'.join(_MONTHS)}) (\d{{1,2}}), (\d{{4}})\.?\*?\s*$")
_ADORN = re.compile(r"""^([!-/:-@\[-`{-~])\1{2,}\s*$""")
_BULLET = re.compile(r"^(?:[*-]|#\.|\d+\.) ")
_VERSION = re.compile(r"^\d+(?:\.\d+)+$")
_SENTENCE = re.compile(r"(?<=[.!?])\s+(?=[A-Z(\"'])")


# --- the release notes ---------------------------------------------------------------


@dataclass(frozen=True)
class Change:
    """One unit of the notes: a bullet or a prose paragraph of one release, cleaned."""

    version: str
    released: date
    kind: str  # "bullet" or "paragraph"
    text: str


def _clean(text: str) -> str:
    """Roughly plain text from reStructuredText: roles, links, literals, emphasis."""
    t = re.sub(r":ticket:`(\d+)`", r"#\1", text)
    t = re.sub(r":cve:`([\d-]+)`", r"CVE-\1", t)
    t = re.sub(r":[\w:+.-]+:`([^`<]*?)\s*<[^`>]*>`", r"\1", t)  # :role:`Title <target>`

    def role(m: re.Match[str]) -> str:
        body = m.group(1)
        if body.startswith("~"):
            return body.lstrip("~").rsplit(".", 1)[-1]
        return body.lstrip("!.")

    t = re.sub(r":[\w:+.-]+:`([^`]*)`", role, t)
    t = re.sub(r"`([^`<]+?)\s*<[^`>]+>`_{1,2}", r"\1", t)  # `text <url>`_
    t = re.sub(r"`([^`]+)`_{1,2}", r"\1", t)
    t = re.sub(r"``(.+?)``", r"\1", t)
    t = re.sub(r"`([^`]+)`", r"\1", t)
    t = re.sub(r"\*\*(.+?)\*\*", r"\1", t)
    t = re.sub(r"(?<![\w*])\*(\S(?:.*?\S)?)\*(?![\w*])", r"\1", t)
    t = re.sub(r"::(\s|$)", r":\1", t)
    return re.sub(r"\s+", " ", t).strip()


def _blocks(lines: list[str]) -> Iterator[tuple[str, list[str]]]:
    """``(kind, lines)`` of a release note: ``bullet`` (with its indented continuation),
    ``paragraph``, or ``other`` (headings, directives, literal blocks, the date line)."""
    i = 0
    while i < len(lines):
        line = lines[i]
        if not line.strip():
            i += 1
            continue
        if _ADORN.match(line) or (i + 1 < len(lines) and _ADORN.match(lines[i + 1])):
            i += 1 if _ADORN.match(line) else 2
            continue
        j = i + 1
        if _BULLET.match(line):
            while j < len(lines):
                if not lines[j].strip():
                    k = j
                    while k < len(lines) and not lines[k].strip():
                        k += 1
                    if k < len(lines) and lines[k].startswith(" "):
                        j = k
                        continue
                    break
                if not lines[j].startswith(" "):
                    break
                j += 1
            yield "bullet", lines[i:j]
        elif line.startswith((" ", "..")) or _DATE.match(line):
            while j < len(lines) and (not lines[j].strip() or lines[j].startswith(" ")):
                j += 1
            yield "other", lines[i:j]
        else:
            while j < len(lines) and lines[j].strip() and not _BULLET.match(lines[j]):
                j += 1
            yield "paragraph", lines[i:j]
        i = j


def _version_key(version: str) -> tuple[int, ...]:
    return tuple(int(p) for p in version.split("."))


def read_release_notes(releases: Path) -> list[Change]:
    """The bullets and prose paragraphs (40 characters or more) of every ``<version>.txt``,
    oldest release first (by date, then version), in file order within a release."""
    out: list[Change] = []
    for f in releases.glob("*.txt"):
        version = f.stem
        if not _VERSION.match(version):
            continue  # index, security archive, porting guide
        lines = f.read_text(encoding="utf-8").splitlines()
        found = next((m for m in map(_DATE.match, lines[:40]) if m), None)
        if found:
            released = date(int(found.group(3)), _MONTHS.index(found.group(1)) + 1, int(found.group(2)))
        else:
            released = UNDATED[version]
        for kind, block in _blocks(lines):
            if kind == "other":
                continue
            text = _clean(_BULLET.sub("", block[0], count=1) + " " + " ".join(block[1:]))
            if kind == "paragraph" and len(text) < 40:
                continue
            out.append(Change(version, released, kind, text))
    out.sort(key=lambda c: (c.released, _version_key(c.version)))  # stable: file order kept
    return out


# --- the replayed history ---------------------------------------------------------------


def _message(text: str, version: str, *, backport_of: str | None = None) -> str:
    first, *rest = _SENTENCE.split(text, maxsplit=1)
    if len(first) > 100:
        cut = first[:97].rsplit(" ", 1)[0]
        first, rest = cut + "...", [text[len(cut):].strip()]
    body = textwrap.fill(rest[0], 72) + "\n\n" if rest and rest[0] else ""
    if backport_of:
        series = ".".join(version.split(".")[:2])
        return f"[{series}.x] {first}\n\n{body}Backport of {backport_of} from main.\n"
    return f"{first}\n\n{body}Released in {version}.\n"


def _commit_sha(parent: str | None, stamp: int, message: str) -> str:
    who = f"{IDENT} {stamp} +0000"
    head = (f"tree {EMPTY_TREE}\n" + (f"parent {parent}\n" if parent else "")
            + f"author {who}\ncommitter {who}\n\n")
    raw = (head + message).encode()
    return hashlib.sha1(b"commit %d\0" % len(raw) + raw).hexdigest()


def replay_history(changes: list[Change], total: int) -> tuple[list[tuple[int, str, str]], dict[str, int]]:
    """``[(unix time, message, sha)]`` oldest first, ``total`` commits (fewer when the notes
    are short of it even with backports), and the counts of each kind."""
    units: list[tuple[Change, bool]] = [(c, False) for c in changes[:total]]
    deficit = total - len(units)
    bullets = [i for i, c in enumerate(changes) if c.kind == "bullet"]
    if deficit > 0 and bullets:
        picked: list[int] = []
        while len(picked) < deficit:  # every bullet once, then evenly spread again
            want = min(len(bullets), deficit - len(picked))
            picked += [bullets[(k * len(bullets)) // want] for k in range(want)]
        after: dict[int, int] = defaultdict(int)
        for i in picked:
            after[i] += 1
        units = []
        for i, c in enumerate(changes):
            units.append((c, False))
            units += [(c, True)] * after[i]
    # Dates: the units of one release date spread evenly since the previous release date.
    stamps: list[int] = []
    start = 0
    while start < len(units):
        day = units[start][0].released
        stop = start
        while stop < len(units) and units[stop][0].released == day:
            stop += 1
        before = units[start - 1][0].released if start else HISTORY_START
        t0 = datetime(before.year, before.month, before.day, 12, tzinfo=UTC).timestamp()
        t1 = datetime(day.year, day.month, day.day, 12, tzinfo=UTC).timestamp()
        n = stop - start
        stamps += [int(t0 + (t1 - t0) * (k + 1) / n) for k in range(n)]
        start = stop
    out: list[tuple[int, str, str]] = []
    parent: str | None = None
    last_of: dict[int, str] = {}
    for (change, backport), stamp in zip(units, stamps, strict=True):
        original = last_of.get(id(change)) if backport else None
        message = _message(change.text, change.version, backport_of=original)
        parent = _commit_sha(parent, stamp, message)
        if not backport:
            last_of[id(change)] = parent
        out.append((stamp, message, parent))
    counts = {"bullets": sum(1 for c, b in units if c.kind == "bullet" and not b),
              "paragraphs": sum(1 for c, b in units if c.kind == "paragraph" and not b),
              "backports": sum(1 for _, b in units if b)}
    return out, counts


# --- the scratch repository ----------------------------------------------------------------


def _git_env(home: Path, stamp: int | None = None) -> dict[str, str]:
    env = {"GIT_AUTHOR_NAME": "Bench", "GIT_AUTHOR_EMAIL": "bench@example.invalid",
           "GIT_COMMITTER_NAME": "Bench", "GIT_COMMITTER_EMAIL": "bench@example.invalid",
           "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
           "HOME": str(home), "GIT_CONFIG_NOSYSTEM": "1", "LC_ALL": "C"}
    if stamp is not None:
        env["GIT_AUTHOR_DATE"] = env["GIT_COMMITTER_DATE"] = f"@{stamp} +0000"
    return env


def _git(root: Path, *args: str, stamp: int | None = None, data: bytes | None = None) -> str:
    done = subprocess.run(["git", "-C", str(root), *args], input=data, capture_output=True, check=False,
                          env=_git_env(root.parent, stamp))
    if done.returncode != 0:
        raise RuntimeError(f"git {args[0]} failed: {done.stderr.decode(errors='replace')[:500]}")
    return done.stdout.decode(errors="replace")


def _sdist(spec: str, given: Path | None) -> Path:
    """The sdist of ``name==version`` (``--sdist``, else downloaded once into the cache with
    pip: this interpreter's, else ``python3``'s, as bench/documents.py does)."""
    if given is not None:
        return given
    name, version = spec.split("==")
    SDISTS.mkdir(parents=True, exist_ok=True)

    def found() -> list[Path]:
        return [p for p in SDISTS.glob("*.tar.gz") if p.name.lower().startswith(f"{name.lower()}-{version}")]

    if not found():
        for python in (sys.executable, shutil.which("python3") or "python3"):
            if subprocess.run([python, "-m", "pip", "--version"], capture_output=True).returncode == 0:
                subprocess.run([python, "-m", "pip", "download", "-q", "--no-deps", "--no-binary", ":all:",
                                "-d", str(SDISTS), spec], check=True)
                break
    if not found():
        raise SystemExit(f"cannot fetch {spec}: no pip; pass --sdist")
    return found()[0]


def build_repository(sdist: Path, into: Path, commits: int) -> tuple[Path, dict[str, Any]]:
    """The scratch repository: the replayed history, then one commit adding ``docs/``."""
    root = into / "django"
    with tarfile.open(sdist) as tar, tempfile.TemporaryDirectory(dir=into) as tmp:
        members = [m for m in tar.getmembers() if m.name.split("/")[1:2] == ["docs"]]
        tar.extractall(tmp, members=members, filter="data")
        shutil.copytree(next(Path(tmp).iterdir()) / "docs", root / "docs")
    changes = read_release_notes(root / "docs" / "releases")
    history, counts = replay_history(changes, commits)
    t0 = time.perf_counter()
    _git(root, "init", "-q", "-b", "main")
    stream = bytearray()
    for stamp, message, _ in history:
        raw = message.encode()
        stream += (f"commit refs/heads/main\nauthor {IDENT} {stamp} +0000\ncommitter {IDENT} {stamp} +0000\n"
                   f"data {len(raw)}\n").encode() + raw + b"\n"
    _git(root, "fast-import", "--quiet", "--done", data=bytes(stream) + b"done\n")
    head = _git(root, "rev-parse", "refs/heads/main").strip()
    if history and head != history[-1][2]:
        raise RuntimeError(f"computed commit ids differ from git's: {head} != {history[-1][2]}")
    import_s = time.perf_counter() - t0
    last = history[-1][0] if history else int(time.time())
    _git(root, "add", "-A", "docs")
    _git(root, "commit", "-q", "-m", f"Added the {sdist.name.removesuffix('.tar.gz')} documentation.",
         stamp=last + 3600)
    total = int(_git(root, "rev-list", "--count", "HEAD"))
    releases = len({c.version for c in changes})
    info = {"sdist": sdist.name, "release_notes": releases,
            "notes_bullets": sum(c.kind == "bullet" for c in changes),
            "notes_paragraphs": sum(c.kind == "paragraph" for c in changes), "replayed": len(history),
            **{f"replayed_{k}": v for k, v in counts.items()}, "commits_in_repository": total,
            "fast_import_s": round(import_s, 2),
            "first_date": datetime.fromtimestamp(history[0][0], UTC).date().isoformat() if history else None,
            "last_date": datetime.fromtimestamp(last, UTC).date().isoformat()}
    return root, info


# --- timers around the indexer's helpers ------------------------------------------------


class Clock:
    """Seconds and calls per named step; wraps functions (nothing in core/ changes)."""

    def __init__(self) -> None:
        self.seconds: dict[str, float] = defaultdict(float)
        self.calls: dict[str, int] = defaultdict(int)
        self.marks: dict[str, float] = {}
        self.texts_embedded = 0
        #: ``{phase: [texts, seconds]}`` of the model, the phase told by the indexer's
        #: ``state`` read (it comes after the files, before the commits).
        self.embedded: dict[str, list[float]] = {}

    def reset(self) -> None:
        self.seconds.clear()
        self.calls.clear()
        self.marks.clear()
        self.texts_embedded = 0
        self.embedded = {}

    def wrap(self, name: str, fn: Callable[..., Any], mark: bool = False) -> Callable[..., Any]:
        def timed(*args: Any, **kwargs: Any) -> Any:
            t0 = time.perf_counter()
            if mark:
                self.marks.setdefault(name, t0)
            try:
                return fn(*args, **kwargs)
            finally:
                self.seconds[name] += time.perf_counter() - t0
                self.calls[name] += 1

        return timed

    def breakdown(self, total: float) -> dict[str, Any]:
        steps = {k: {"s": round(v, 4), "calls": self.calls[k]} for k, v in sorted(self.seconds.items())}
        steps["other (reading, hashing, the loop)"] = {"s": round(total - sum(self.seconds.values()), 4)}
        return steps


#: The indexer's helpers timed (module globals of bli_memory.core.documents.indexer).
#: Those missing from the checkout are left out (the indexer changes; its time then shows as other).
_INDEXER_STEPS = {"tracked_documents": "listing (git ls-files, stat, sniff)", "chunk_document": "chunking",
                  "_masked": "masking (redact)", "read_commits": "git log", "is_ancestor": "git merge-base",
                  "head_commit": "git rev-parse", "web_address": "git remote"}
#: DocumentIndex methods timed on the instance (those it has).
_STORE_STEPS = ("files", "file_vectors", "replace_file", "touch_file", "remove_file", "add_commits",
                "commit_shas", "drop_commits", "set_state", "forgotten_paths", "state")
_SEARCH_STEPS = ("vectors", "keyword", "chunks")


def _instrument(clock: Clock, index: Any, embedder: Any) -> Callable[[Any], Any]:
    """Wrap the indexer's helpers and the index's methods; returns the timed ``embed_many``."""
    from bli_memory.core.documents import indexer

    for name, label in _INDEXER_STEPS.items():
        original = getattr(indexer, name, None)
        if original is None:
            continue
        setattr(indexer, name, clock.wrap(label, getattr(original, "__wrapped_original__", original)))
        getattr(indexer, name).__wrapped_original__ = getattr(original, "__wrapped_original__", original)
    for name in [n for n in _STORE_STEPS + _SEARCH_STEPS if hasattr(type(index), n)]:
        setattr(index, name, clock.wrap(f"index.{name}", getattr(type(index), name).__get__(index),
                                        mark=name == "state"))

    def embed_many(texts: Any) -> Any:
        clock.texts_embedded += len(texts)
        stage = "commits" if "index.state" in clock.marks else "documents"
        phase = clock.embedded.setdefault(stage, [0, 0.0])
        t0 = time.perf_counter()
        try:
            return embedder.embed(texts)
        finally:
            phase[0] += len(texts)
            phase[1] += time.perf_counter() - t0

    return clock.wrap("model (embed)", embed_many)


def _index_run(index: Any, root: Path, clock: Clock, embed_many: Callable[[Any], Any], label: str,
               progress: Callable[[str, int, int], None] | None = None) -> dict[str, Any]:
    from bli_memory.core.documents.indexer import index_space

    clock.reset()
    cpu0 = time.process_time()
    t0 = time.perf_counter()
    report = index_space(index, root, space=SPACE, embed_many=embed_many, progress=progress)
    total = time.perf_counter() - t0
    cpu = time.process_time() - cpu0
    boundary = clock.marks.get("index.state", t0 + total)  # the indexer reads state once, after the files
    out = {"total_s": round(total, 4), "cpu_s": round(cpu, 4), "documents_phase_s": round(boundary - t0, 4),
           "commits_phase_s": round(t0 + total - boundary, 4), "files": report.documents,
           "files_indexed": report.indexed, "files_unchanged": report.unchanged,
           "files_removed": report.removed,
           "chunks_written": report.chunks, "commits": report.commits, "skipped": dict(report.skipped),
           "texts_embedded": clock.texts_embedded, "steps": clock.breakdown(total),
           "model_by_phase": {k: {"texts": int(n), "s": round(t, 3),
                                  "texts_per_s": round(n / t, 1) if t else None}
                              for k, (n, t) in clock.embedded.items()}}
    log(f"{label}: {total:.3f} s (documents {out['documents_phase_s']:.3f}, commits "
        f"{out['commits_phase_s']:.3f}); {report.indexed} files indexed, {report.commits} commits, "
        f"{clock.texts_embedded} texts embedded")
    return out


def _sizes(path: Path) -> dict[str, float]:
    mib = {s or "db": Path(str(path) + s).stat().st_size / 2**20
           for s in ("", "-wal", "-shm") if Path(str(path) + s).exists()}
    return {k: round(v, 2) for k, v in mib.items()} | {"total": round(sum(mib.values()), 2)}


def _tables(path: Path) -> dict[str, float] | None:
    """MiB per table and index (SQLite's dbstat), or None when it is not compiled in."""
    import sqlite3

    conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    try:
        rows = conn.execute("SELECT name, sum(pgsize) FROM dbstat GROUP BY name ORDER BY 2 DESC").fetchall()
    except sqlite3.Error:
        return None
    finally:
        conn.close()
    return {str(n): round(s / 2**20, 2) for n, s in rows}


def _summary(ms: list[float]) -> dict[str, float]:
    return {"n": len(ms), "p50_ms": round(percentile(ms, 50), 3), "p95_ms": round(percentile(ms, 95), 3),
            "max_ms": round(max(ms), 3), "mean_ms": round(statistics.fmean(ms), 3)}


# --- the measurement ---------------------------------------------------------------------


def _search_bench(index: Any, embedder: Any, clock: Clock, rounds: int) -> dict[str, Any]:
    """The first search on the opened index, then ``rounds`` warm rounds; per question, back
    to back (so load on the shared machine hits the three alike): the model embedding the
    query, the search embedding it, the search with its vector known (the index alone)."""
    from bli_memory.core.documents.search import search_documents
    from bli_memory.core.memory.retrieval import query_text

    def embed_one(text: str) -> Any:
        return embedder.embed([text])[0]

    kinds = ("document", "commit")
    t0 = time.perf_counter()
    search_documents(index, QUERIES[0], space=SPACE, embed=embed_one, limit=5, kinds=kinds)
    first_ms = (time.perf_counter() - t0) * 1000
    rss = rss_mb()
    known: dict[str, Any] = {}
    with_embed, index_only, embed_only, state_ms = [], [], [], []
    steps: dict[str, float] = defaultdict(float)
    top: list[dict[str, Any]] = []
    for r in range(rounds):
        for q in QUERIES:
            t0 = time.perf_counter()
            known[query_text(q)] = embed_one(query_text(q))
            embed_only.append((time.perf_counter() - t0) * 1000)
            t0 = time.perf_counter()
            search_documents(index, q, space=SPACE, embed=embed_one, limit=5, kinds=kinds)
            with_embed.append((time.perf_counter() - t0) * 1000)
            before = dict(clock.seconds)
            t0 = time.perf_counter()
            hits = search_documents(index, q, space=SPACE, embed=known.__getitem__, limit=5, kinds=kinds)
            index_only.append((time.perf_counter() - t0) * 1000)
            for k, v in clock.seconds.items():
                steps[k] += v - before.get(k, 0.0)
            t0 = time.perf_counter()
            index.state(SPACE)
            state_ms.append((time.perf_counter() - t0) * 1000)
            if r == 0:
                best = hits[0].chunk if hits else None
                top.append({"q": q, "kinds_top5": [h.chunk.kind for h in hits],
                            "top1": None if best is None else (
                                best.path if best.kind == "document" else best.text.split("\n", 1)[0][:100]),
                            "top1_similarity": hits[0].similarity if hits else None})
    n = len(index_only)
    per_step = {k: round(v / n * 1000, 3) for k, v in sorted(steps.items()) if v}
    rest = statistics.fmean(index_only) - sum(per_step.values())
    per_step["rest (vector scan, sort, fusion)"] = round(rest, 3)
    seqs, matrix = index.vectors(SPACE, kinds)
    log(f"search: p50 {percentile(with_embed, 50):.1f} ms with the query embedded, "
        f"{percentile(index_only, 50):.1f} ms index only, embedding {percentile(embed_only, 50):.1f} ms")
    return {"queries": len(QUERIES), "rounds": rounds, "kinds": list(kinds), "limit": 5,
            "rows_searched": len(seqs), "vector_matrix_mib": round(matrix.nbytes / 2**20, 1),
            "first_search_after_open_ms": round(first_ms, 1), "rss_mib_after_first_search": round(rss, 1),
            "with_query_embedding": _summary(with_embed), "index_only": _summary(index_only),
            "query_embedding_only": _summary(embed_only), "index_only_mean_ms_per_step": per_step,
            "engine_state_read_per_search": _summary(state_ms), "top_hits": top}


def _first_search_ms(index: Any, embedder: Any) -> float:
    from bli_memory.core.documents.search import search_documents

    t0 = time.perf_counter()
    search_documents(index, "cache key prefix", space=SPACE, embed=lambda t: embedder.embed([t])[0], limit=5)
    return round((time.perf_counter() - t0) * 1000, 1)


def _changes(index: Any, root: Path, clock: Clock, embed_many: Any, embedder: Any) -> dict[str, Any]:
    """Each file of CHANGED_FILES: a paragraph appended, re-index, search; then committed,
    re-index, search."""
    doc_runs, commit_runs = [], []
    stamp = int(_git(root, "log", "-1", "--format=%ct").strip())
    for n, rel in enumerate(CHANGED_FILES, 1):
        path = root / rel
        if not path.exists():
            log(f"changes: {rel} is not in this sdist; skipped")
            continue
        chunks = sum(1 for _ in index._conn.execute(
            "SELECT 1 FROM doc_chunks WHERE space = ? AND kind = 'document' AND path = ?", (SPACE, rel)))
        with path.open("a", encoding="utf-8") as f:
            f.write(f"\nNote {n}: when the cache key prefix changes between deploys, entries written "
                    f"under the old prefix are never read again; clear them with ``cache.clear()`` "
                    f"(bench edit {n}).\n")
        run = _index_run(index, root, clock, embed_many, f"one document changed ({rel})")
        run |= {"file": rel, "file_chunks_before": chunks,
                "first_search_after_ms": _first_search_ms(index, embedder)}
        doc_runs.append(run)
        stamp += 600
        _git(root, "commit", "-q", "-am", f"Documented stale cache keys after a prefix change in {rel}.\n\n"
             "Entries written under the old KEY_PREFIX are never read again.", stamp=stamp)
        run = _index_run(index, root, clock, embed_many, "one new commit")
        run |= {"first_search_after_ms": _first_search_ms(index, embedder)}
        commit_runs.append(run)

    def summary(runs: list[dict[str, Any]]) -> dict[str, Any]:
        totals = [r["total_s"] for r in runs]
        return {"median_s": round(statistics.median(totals), 4), "max_s": round(max(totals), 4),
                "under_1s": all(t < 1 for t in totals), "runs": runs}

    return {"one_document_changed": summary(doc_runs), "one_new_commit": summary(commit_runs)}


def _core_changes() -> str | None:
    """A short sha1 of core/'s local changes (``git diff HEAD`` and the untracked files), or
    None when core/ is as committed: the numbers belong to that code."""
    def git(*args: str) -> bytes:
        return subprocess.run(["git", "-C", str(REPO_ROOT), *args], capture_output=True, check=False).stdout

    h = hashlib.sha1(git("diff", "HEAD", "--", "core"))
    untracked = git("ls-files", "--others", "--exclude-standard", "-z", "--", "core").split(b"\0")
    for name in filter(None, untracked):
        h.update(name + (REPO_ROOT / name.decode()).read_bytes())
    return h.hexdigest()[:12] if git("status", "--porcelain", "--", "core").strip() else None


def _memory_reference(rows: int) -> dict[str, Any]:
    """The memory search at the same row count, now, on this machine (``bench/scale.py`` in
    quick mode: synthetic agent memories, 50 questions, query vectors cached as there)."""
    import scale

    out = scale.run(quick=True, sizes=[rows], queries=50)["sizes"][0]

    def ms(d: dict[str, float]) -> dict[str, float]:
        return {k: round(v, 2) for k, v in d.items()}

    ref = {"rows": rows, "exact_paths": ms(out["search"]), "exact_vector_scan": ms(out["exact_vector_scan"]),
           "keyword_any_fts": ms(out["keyword_any_fts"]), "first_search_ms": round(out["first_search_ms"], 1),
           "note": "bench/scale.py quick mode: BM25 side index from 5,000 rows (as the product), HNSW from "
                   "10,000 (the product: 50,000)"}
    if "side" in out:
        ref["side_indexes"] = ms(out["side"]["search"])
    log(f"memory reference at {rows} rows: exact paths p50 {ref['exact_paths']['p50_ms']} ms, side indexes "
        f"p50 {ref.get('side_indexes', {}).get('p50_ms')} ms")
    return ref


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--json", type=Path, default=RESULTS_DIR / "documents_scale.json")
    parser.add_argument("--md", type=Path, default=RESULTS_DIR / "documents_scale.md")
    parser.add_argument("--commits", type=int, default=10_000, help="commits replayed from the release notes")
    parser.add_argument("--rounds", type=int, default=5, help="warm rounds of the questions")
    parser.add_argument("--sdist", type=Path, help="a local Django sdist instead of the cached download")
    parser.add_argument("--keep", action="store_true", help="keep the scratch repository and index")
    parser.add_argument("--no-memory-reference", action="store_true",
                        help="skip the memory search at the same row count (bench/scale.py, quick mode)")
    args = parser.parse_args()

    from bli_memory.core.documents import indexer, search  # noqa: F401  (all of core loaded now: a snapshot)
    from bli_memory.core.documents.commits import MAX_COMMITS
    from bli_memory.core.documents.index_store import DocumentIndex

    started = time.perf_counter()
    embedder = bench_embedder()
    embedder.embed(["warm up"])
    tmp = Path(tempfile.mkdtemp(prefix="documents-scale-"))
    results: dict[str, Any] = {"machine": machine_description(), "embedder": embedder.name,
                               "core_local_changes": _core_changes(),
                               "load_average_at_start": [round(x, 2) for x in os.getloadavg()],
                               "proxy": "Django 5.1.4 docs/ + its release notes replayed as commits "
                                        "(CPython's history is not reachable here)"}
    try:
        root, results["history"] = build_repository(_sdist(SDIST, args.sdist), tmp, args.commits)
        log(f"repository: {results['history']}")
        db = tmp / "index" / "documents.sqlite3"
        index = DocumentIndex(db)
        clock = Clock()
        embed_many = _instrument(clock, index, embedder)
        marks = {"at": time.perf_counter()}

        def progress(stage: str, done: int, total: int) -> None:
            if done % (100 if stage == "documents" else 2_000) == 0 or done == total:
                log(f"first index: {stage} {done}/{total} ({time.perf_counter() - marks['at']:.0f} s)")

        first = _index_run(index, root, clock, embed_many, "first index", progress)
        first["commits_read_cap"] = MAX_COMMITS
        first["chunks_in_index"] = index.state(SPACE).chunks
        first["largest_files_by_chunks"] = dict(index._conn.execute(
            "SELECT path, count(*) FROM doc_chunks WHERE space = ? AND kind = 'document' GROUP BY path "
            "ORDER BY 2 DESC LIMIT 5", (SPACE,)).fetchall())
        results["first_index"] = first
        results["disk_open_mib"] = _sizes(db)
        results["no_change"] = [_index_run(index, root, clock, embed_many, "no change") for _ in range(3)]
        index.close()
        results["disk_closed_mib"] = _sizes(db)
        results["disk_tables_mib"] = _tables(db)
        index = DocumentIndex(db)
        embed_many = _instrument(clock, index, embedder)
        results["search"] = _search_bench(index, embedder, clock, args.rounds)
        if not args.no_memory_reference:
            results["memory_reference"] = _memory_reference(results["search"]["rows_searched"])
        results |= _changes(index, root, clock, embed_many, embedder)
        index.close()
        results["disk_after_changes_mib"] = _sizes(db)
    finally:
        if args.keep:
            log(f"kept {tmp}")
        else:
            shutil.rmtree(tmp, ignore_errors=True)
    results["runtime_s"] = round(time.perf_counter() - started, 1)
    results["load_average_at_end"] = [round(x, 2) for x in os.getloadavg()]
    results["commit_at_end"] = machine_description()["commit"]  # the checkout may move during a run
    write_json(args.json, results)
    table = _table(results)
    m = results["machine"]
    args.md.write_text(f"# Documents index at scale\n\nGenerated by `cd bench && python documents_scale.py` "
                       f"on {m['date']} ({m['cpu']}, {m['cores']} cores, load average "
                       f"{results['load_average_at_start'][0]} at the start, "
                       f"{results['load_average_at_end'][0]} at the end). {results['proxy']}.\n\n"
                       f"{table}\n\n{_details(results)}\n")
    print(table)
    return 0


def _table(r: dict[str, Any]) -> str:
    h, f, s = r["history"], r["first_index"], r["search"]
    nochange = statistics.median(x["total_s"] for x in r["no_change"])
    doc, com = r["one_document_changed"], r["one_new_commit"]
    after = statistics.median(x["first_search_after_ms"] for x in doc["runs"] + com["runs"])
    rows = [
        ["documents (files / chunks)", f"{f['files']:,} / {f['chunks_in_index']:,}"],
        ["commits indexed (in repository)",
         f"{f['commits']:,} ({h['commits_in_repository']:,}: {h['replayed_bullets']:,} bullets, "
         f"{h['replayed_paragraphs']:,} paragraphs, {h['replayed_backports']:,} backports, 1 docs commit)"],
        ["skipped", ", ".join(f"{k} {v}" for k, v in f["skipped"].items()) or "none"],
        ["first index s (documents + commits phase)",
         f"{f['total_s']:.1f} ({f['documents_phase_s']:.1f} + {f['commits_phase_s']:.1f})"],
        ["re-index, nothing changed, s (median of 3)", f"{nochange:.3f}"],
        ["re-index, one document changed, s (median / max of 5)",
         f"{doc['median_s']:.3f} / {doc['max_s']:.3f}"],
        ["re-index, one new commit, s (median / max of 5)", f"{com['median_s']:.3f} / {com['max_s']:.3f}"],
        ["index on disk MiB (closed; open with WAL)",
         f"{r['disk_closed_mib']['total']:.1f} ({r['disk_open_mib']['total']:.1f})"],
        ["search p50 / p95 ms, query embedded", f"{s['with_query_embedding']['p50_ms']:.1f} / "
                                                f"{s['with_query_embedding']['p95_ms']:.1f}"],
        ["search p50 / p95 ms, index only (query vector known)",
         f"{s['index_only']['p50_ms']:.1f} / {s['index_only']['p95_ms']:.1f}"],
        ["query embedding p50 / p95 ms", f"{s['query_embedding_only']['p50_ms']:.1f} / "
                                         f"{s['query_embedding_only']['p95_ms']:.1f}"],
        ["first search after opening ms (reads every vector)", f"{s['first_search_after_open_ms']:.0f}"],
        ["first search after a re-index ms (median)", f"{after:.0f}"],
        ["run time s", f"{r['runtime_s']:.0f}"],
    ]
    return markdown_table(["measure", "value"], rows)


def _details(r: dict[str, Any]) -> str:
    """Where the time of a re-index goes, the search's steps, the memory search beside it."""

    def step(run: dict[str, Any], *names: str) -> float:
        return sum(run["steps"].get(n, {}).get("s", 0.0) for n in names)

    runs = r["one_document_changed"]["runs"] + r["one_new_commit"]["runs"]
    rows = [[x.get("file", "(new commit)"), x.get("file_chunks_before", ""), f"{x['total_s']:.3f}",
             f"{x['cpu_s']:.3f}", f"{step(x, 'masking (redact)'):.3f}",
             f"{step(x, 'index.replace_file', 'index.add_commits', 'index.commit_shas'):.3f}",
             f"{step(x, 'listing (git ls-files, stat, sniff)'):.3f}",
             f"{step(x, 'git log', 'git merge-base', 'git rev-parse', 'git remote'):.3f}",
             f"{step(x, 'model (embed)'):.3f}",
             f"{x['first_search_after_ms']:.0f}"] for x in runs]
    out = ["Re-index after one change, where the time goes (seconds; the first search after it in ms):", "",
           markdown_table(["change", "chunks in file", "wall", "CPU", "masking", "writes",
                           "listing files", "git log etc.", "model", "search after"], rows)]
    steps = r["search"]["index_only_mean_ms_per_step"]
    out += ["", "Search, index only, mean ms per step: " + ", ".join(f"{k} {v}" for k, v in steps.items())
            + f"; the engine also reads the index state per search: p50 "
              f"{r['search']['engine_state_read_per_search']['p50_ms']} ms."]
    ref = r.get("memory_reference")
    if ref:
        side = ref.get("side_indexes", {})
        out += ["", f"Memory search at the same row count ({ref['rows']:,}), same machine, same run "
                    f"({ref['note']}): exact paths p50 / p95 {ref['exact_paths']['p50_ms']} / "
                    f"{ref['exact_paths']['p95_ms']} ms, with side indexes {side.get('p50_ms')} / "
                    f"{side.get('p95_ms')} ms."]
    return "\n".join(out)


if __name__ == "__main__":
    raise SystemExit(main())
