"""``bli-memory-mcp documents index|status|search|forget|delete``: the project's own documents
and commit history, indexed beside the memories (:mod:`bli_memory.core.documents`).

The index is a file of its own next to the memory store (``documents.sqlite3``); a space
defaults to the current folder's, the repository to the git work tree around it. On a machine
paired with a team memory service (``BLI_MEMORY_DASHBOARD_URL`` or ``cockpit login``), ``index``,
``status``, ``search`` and ``forget`` act on the space's index on the service instead, which the
team shares (:mod:`bli_memory.core.team.client.documents`): this machine lists, chunks and masks
the documents and uploads what the service lacks. ``delete`` deletes this machine's file only.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

__all__ = ["index_path", "main"]


def index_path() -> Path:
    """The documents index file: ``documents.sqlite3`` beside the memory store."""
    from bli_memory.core.settings import load_settings

    return load_settings().store_path.with_name("documents.sqlite3")


def _space(arg: str | None) -> str:
    from bli_memory.core.memory.engine_writes import checked_space

    if arg:
        return checked_space(arg)
    from bli_memory.core.hooks.container_tag import checked_space as folder_space

    return folder_space(os.getcwd(), environ=os.environ).tag


def _root(arg: str | None) -> Path:
    from bli_memory.core.errors import InvalidInputError

    where = arg or os.getcwd()
    from bli_memory.core.documents.commits import git_run

    try:
        done = git_run(Path(where), "rev-parse", "--show-toplevel", timeout=60)
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise InvalidInputError(f"cannot run git: {exc}") from None
    if done.returncode != 0:
        raise InvalidInputError(f"{where} is not inside a git work tree: documents are the files git tracks")
    return Path(done.stdout.decode("utf-8", "surrogateescape").strip())


def _embedder() -> Any:
    from bli_memory.core.memory import embeddings
    from bli_memory.core.memory.embedder import load_embedder
    from bli_memory.core.plugins import get_plugin_manager
    from bli_memory.core.settings import load_settings

    name = load_settings().embedder
    if name == embeddings.MODEL_NAME:
        return embeddings.get_embedder()
    return load_embedder(name, get_plugin_manager())


def _remote() -> Any:
    """The service's client when this machine uses a memory service, else None."""
    from bli_memory.core.settings import load_settings
    from bli_memory.core.team.client.remote import RemoteBackend, remote_target

    target = remote_target(load_settings())
    return None if target is None else RemoteBackend(target[0], token=target[1])


def main(argv: list[str]) -> int:
    """Run one ``documents`` subcommand; returns the exit code."""
    parser = argparse.ArgumentParser(
        prog="bli-memory-mcp documents",
        description="The project's documents and commit messages, searched beside its memories.")
    sub = parser.add_subparsers(dest="command", required=True, metavar="command")
    p = sub.add_parser("index", help="index (or bring up to date) the repository's documents and commits")
    p.add_argument("--space", help="container tag (default: the current folder's)")
    p.add_argument("--root", help="a folder in the repository (default: the current folder)")
    p.add_argument("--include", action="append", default=None, metavar="GLOB",
                   help="files that are documents (default: Markdown, reST, AsciiDoc, text, README, "
                   "CHANGELOG, ...; a run given no --include or --exclude takes the last run's)")
    p.add_argument("--exclude", action="append", default=[], metavar="GLOB",
                   help="files never indexed")
    p.add_argument("--background", action="store_true",
                   help="run in a process of its own and return at once (`documents status` shows progress)")
    p = sub.add_parser("status", help="what is indexed, when, and what was skipped and why")
    p.add_argument("--space")
    p.add_argument("--json", action="store_true")
    p = sub.add_parser("search", help="search the documents and commit messages")
    p.add_argument("query")
    p.add_argument("--space")
    p.add_argument("--kind", choices=("document", "commit", "all"), default="all")
    p.add_argument("--limit", type=int, default=5)
    p.add_argument("--all", action="store_true",
                   help="also show matches below the similarity search_memory needs to show one (0.35)")
    p.add_argument("--json", action="store_true")
    p = sub.add_parser("forget", help="keep a path (a file, a folder or a glob, as in .gitignore) out of the "
                       "index from now on, and drop what is indexed of it")
    p.add_argument("path", help="relative to the repository's top folder")
    p.add_argument("--space")
    p.add_argument("--undo", action="store_true", help="let the path back in (the next index run reads it)")
    p = sub.add_parser("delete", help="delete the whole documents index (every space)")
    p.add_argument("--yes", action="store_true", help="really delete it")
    args = parser.parse_args(argv)

    if args.command == "delete":
        return _delete(args.yes)
    remote = _remote()
    if remote is not None:
        try:
            return _on_service(remote, _space(args.space), args)
        finally:
            remote.close()
    from bli_memory.core.documents.index_store import DocumentIndex

    index = DocumentIndex(index_path())
    try:
        space = _space(args.space)
        if args.command == "index":
            return _index(index, space, args)
        if args.command == "status":
            return _status(index, space, args.json)
        if args.command == "forget":
            return _forget(index.forget_path, index.unforget_path, space, args.path, undo=args.undo)
        return _search(index, space, args)
    finally:
        index.close()


def _globs(args: argparse.Namespace, last: Any) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """``(include, exclude)`` of a run: the ones given, else the last run's (``last``, a
    :class:`~bli_memory.core.memory.documents.DocumentsState` or None); an empty include means
    the defaults."""
    if args.include or args.exclude or last is None:
        return tuple(args.include or ()), tuple(args.exclude)
    return tuple(last.include), tuple(last.exclude)


def _index(index: Any, space: str, args: argparse.Namespace) -> int:
    from bli_memory.core.documents.indexer import index_space
    from bli_memory.core.documents.runs import index_run
    from bli_memory.core.documents.sources import DEFAULT_INCLUDE
    from bli_memory.core.errors import InvalidInputError

    root = _root(args.root)
    include, exclude = _globs(args, index.state(space))  # a run given no glob takes the last run's globs
    if args.background:
        return _background(index.path, space, root, include, exclude)
    with index_run(index.path, space) as run:
        embedder = _embedder()
        try:
            report = index_space(index, root, space=space, embed_many=embedder.embed,
                                 include=include or DEFAULT_INCLUDE, exclude=exclude, progress=_progress(run))
        except ValueError as exc:  # git could not list the files or read the history
            raise InvalidInputError(str(exc)) from None
    return _show_report(space, report)


def _background(lock: Path, space: str, root: Path, include: Any, exclude: Any) -> int:
    """Start the run in a process of its own (:func:`~bli_memory.core.documents.refresh.spawn_index_run`)."""
    from bli_memory.core.documents.refresh import log_path, spawn_index_run
    from bli_memory.core.documents.runs import IndexBusy, current_run

    running = current_run(lock)
    if running is not None:
        raise IndexBusy(running)
    pid = spawn_index_run(lock, space, root, include=include, exclude=exclude)
    sys.stdout.write(f"indexing space {space} in the background (pid {pid}); `bli-memory-mcp documents "
                     f"status` shows its progress; its output goes to {log_path(lock)}\n")
    return 0


def _show_report(space: str, report: Any, where: str = "") -> int:
    """Print one run's :class:`~bli_memory.core.documents.indexer.IndexReport` in one line."""
    if sys.stderr.isatty():
        sys.stderr.write("\n")
    skipped = ", ".join(f"{n} {reason}" for reason, n in sorted(report.skipped.items())) or "none"
    sys.stdout.write(f"space {space}{where}: {_count(report.documents, 'document')} "
                     f"({report.indexed} indexed, {report.unchanged} unchanged, {report.removed} removed; "
                     f"{_count(report.chunks, 'chunk')} written), "
                     f"{_count(report.commits, 'new commit')}"
                     + (f", {_count(report.dropped_commits, 'commit')} dropped (no longer in the history)"
                        if report.dropped_commits else "")
                     + f"; skipped: {skipped}\n")
    return 0


def _progress(run: Any) -> Any:
    """The indexer's progress callback: the run's progress file, and a counter on a terminal."""

    def progress(stage: str, done: int, total: int) -> None:
        run.progress(stage, done, total)
        if sys.stderr.isatty() and (stage == "commits" or done == total or done % 50 == 0):
            sys.stderr.write(f"\r{stage}: {done}/{total}")
            sys.stderr.flush()

    return progress


def _forget_path(raw: str) -> str:
    """The path ``documents forget`` was given, as it is kept
    (:func:`~bli_memory.core.documents.globs.forget_pattern`).

    Raises:
        InvalidInputError: it is empty, absolute, or leads out of the repository.
    """
    from bli_memory.core.documents.globs import forget_pattern
    from bli_memory.core.errors import InvalidInputError

    try:
        return forget_pattern(raw)
    except ValueError as exc:
        raise InvalidInputError(str(exc)) from None


def _forget(forget: Callable[[str, str], int], unforget: Callable[[str, str], bool], space: str, raw: str, *,
            undo: bool, where: str = "") -> int:
    """``documents forget [--undo] PATH`` on either index: ``forget(space, path)`` answers the
    files it dropped, ``unforget(space, path)`` whether the path was kept out; ``where`` names
    the service when it is the team's index."""
    path = _forget_path(raw)
    if undo:
        if not unforget(space, path):
            sys.stdout.write(f"{path} was not kept out of space {space}{where}; nothing changed\n")
            return 1
        sys.stdout.write(f"{path} is let back into space {space}{where}: the next `documents index` "
                         "reads it\n")
        return 0
    dropped = forget(space, path)
    what = f"{_count(dropped, 'indexed file')} dropped" if dropped else "no indexed file matched it"
    sys.stdout.write(f"{path} is kept out of space {space}{where} from now on ({what}; "
                     f"`documents forget --undo {path}` lets it back in)\n")
    return 0


def _count(n: int, noun: str) -> str:
    return f"{n} {noun}{'' if n == 1 else 's'}"


def _when(stamp: str | None) -> str:
    return f"{stamp[:10]} {stamp[11:16]} UTC" if stamp else "never"


def _status(index: Any, space: str, as_json: bool) -> int:
    from bli_memory.core.documents.runs import current_run

    st = index.state(space)
    running = current_run(index.path)
    if as_json:
        out = {"space": space, "documents": st.documents, "chunks": st.chunks, "commits": st.commits,
               "lastCommit": st.last_commit, "refreshedAt": st.refreshed_at, "root": st.root,
               "skipped": [{"path": p, "reason": r} for p, r in st.skipped],
               "forgotten": index.forgotten_paths(space),
               "indexing": None if running is None else {
                   "space": running.space, "stage": running.stage, "done": running.done,
                   "total": running.total, "startedAt": running.started_at, "pid": running.pid}}
        sys.stdout.write(json.dumps(out, indent=2) + "\n")
        return 0
    sys.stdout.write(f"space {space}: {_count(st.documents, 'document')} ({_count(st.chunks, 'chunk')}), "
                     f"{_count(st.commits, 'commit')}; refreshed {_when(st.refreshed_at)}\n")
    for path in index.forgotten_paths(space):
        sys.stdout.write(f"  kept out (documents forget): {path}\n")
    if running is not None:
        sys.stdout.write(running.describe() + "\n")
    for path, reason in st.skipped:
        sys.stdout.write(f"  skipped {path}: {reason}\n")
    return 0


def _search(index: Any, space: str, args: argparse.Namespace) -> int:
    from bli_memory.core.documents.search import link_for, search_documents

    kinds = ("document", "commit") if args.kind == "all" else (args.kind,)
    embedder = _embedder()
    st = index.state(space)
    found = search_documents(index, args.query, space=space, embed=lambda t: embedder.embed([t])[0],
                             limit=max(1, min(args.limit, 50)), kinds=kinds,
                             links=lambda c: link_for(c, root=st.root, web=st.web, revision=st.revision))
    return _show_hits(found, space, args, indexed=bool(st.refreshed_at))


def _show_hits(found: Any, space: str, args: argparse.Namespace, *, indexed: bool) -> int:
    """Print a search's matches at :data:`~bli_memory.core.mcp.document_results.DOCUMENT_FLOOR`
    or more (``--all``: every one; ``--json``: a list of objects)."""
    from bli_memory.core.mcp.document_results import DOCUMENT_FLOOR

    hits = found if args.all else [h for h in found if h.similarity >= DOCUMENT_FLOOR]
    if args.json:
        rows = [{"kind": h.chunk.kind, "path": h.chunk.path or None, "startLine": h.chunk.start,
                 "endLine": h.chunk.end, "sha": h.chunk.sha, "date": h.chunk.date,
                 "heading": list(h.chunk.heading), "text": h.chunk.text, "similarity": h.similarity,
                 "link": h.link} for h in hits]
        sys.stdout.write(json.dumps(rows, indent=2) + "\n")
        return 0
    if not hits:
        if not indexed:
            sys.stdout.write(f"(space {space} has no documents index; run `documents index` first)\n")
        else:
            weaker = f"; --all shows {len(found)} weaker" if found else ""
            sys.stdout.write(f"(no document or commit message of space {space} matches at similarity "
                             f"{DOCUMENT_FLOOR} or more{weaker})\n")
    for h in hits:
        c = h.chunk
        where = (f"{c.path}:{c.start}-{c.end}" if c.kind == "document" else f"commit {c.sha and c.sha[:12]} "
                 f"{(c.date or '')[:10]}")
        trail = " > ".join(c.heading)
        sys.stdout.write(f"{where}  [similarity {h.similarity:.2f}]{'  ' + trail if trail else ''}\n")
        sys.stdout.write("    " + " ".join(c.text.split())[:300] + "\n")
        if h.link:
            sys.stdout.write(f"    {h.link}\n")
    return 0


def _on_service(remote: Any, space: str, args: argparse.Namespace) -> int:
    """``index``, ``status``, ``search`` or ``forget`` on the space's index on the service
    (:class:`~bli_memory.core.team.client.documents.RemoteDocuments`). A run holds this machine's
    run lock beside :func:`index_path`, so ``documents status`` here shows its progress."""
    from bli_memory.core.documents.runs import current_run, index_run
    from bli_memory.core.errors import InvalidInputError

    docs, where, lock = remote.documents, f" on the service {remote.base_url}", index_path()
    if args.command == "index":
        root = _root(args.root)
        given = bool(args.include or args.exclude)  # none given: the index's last run's globs
        include, exclude = tuple(args.include or ()), tuple(args.exclude)
        if args.background:
            return _background(lock, space, root, include, exclude)
        with index_run(lock, space) as run:
            try:
                report = docs.index(root, space=space, include=include if given else None,
                                    exclude=exclude if given else None, progress=_progress(run))
            except ValueError as exc:  # git could not list the files or read the history
                raise InvalidInputError(str(exc)) from None
        return _show_report(space, report, where)
    if args.command == "search":
        kinds = ("document", "commit") if args.kind == "all" else (args.kind,)
        found = docs.search(args.query, space=space, limit=max(1, min(args.limit, 50)), kinds=kinds)
        return _show_hits(found, space, args, indexed=bool(found) or docs.plan(space).state is not None)
    if args.command == "forget":
        return _forget(docs.forget, docs.unforget, space, args.path, undo=args.undo, where=where)
    plan = docs.plan(space)
    running = current_run(lock)
    st = plan.state
    if args.json:
        out = {"space": space, "service": remote.base_url, "owner": plan.owner, "writable": plan.writable,
               "documents": st.documents if st else 0, "chunks": st.chunks if st else 0,
               "commits": st.commits if st else 0, "lastCommit": plan.last_commit,
               "refreshedAt": st.refreshed_at if st else None, "root": st.root if st else None,
               "skipped": [{"path": p, "reason": r} for p, r in (st.skipped if st else ())],
               "forgotten": list(plan.forgotten), "indexing": None if running is None else running.describe()}
        sys.stdout.write(json.dumps(out, indent=2) + "\n")
        return 0
    whose = f"{plan.owner}'s index" + ("" if plan.writable else ", shared with you read-only")
    if st is None:
        sys.stdout.write(f"space {space}{where}: no documents index yet; `documents index` builds one\n")
    else:
        sys.stdout.write(f"space {space}{where} ({whose}): {_count(st.documents, 'document')} "
                         f"({_count(st.chunks, 'chunk')}), {_count(st.commits, 'commit')}; "
                         f"refreshed {_when(st.refreshed_at)}\n")
    for path in plan.forgotten:
        sys.stdout.write(f"  kept out (documents forget): {path}\n")
    if running is not None:
        sys.stdout.write(running.describe() + "\n")
    for path, reason in st.skipped if st else ():
        sys.stdout.write(f"  skipped {path}: {reason}\n")
    return 0


def _delete(yes: bool) -> int:
    path = index_path()
    if not yes:
        sys.stdout.write(f"this deletes {path} (every space's documents index); run again with --yes\n")
        return 1
    from bli_memory.core.documents.runs import IndexBusy, current_run

    running = current_run(path)
    if running is not None:
        raise IndexBusy(running)
    removed = 0
    ends = ("-wal", "-shm", ".lock", ".run.json", ".log", ".refresh")
    for part in (path, *(path.with_name(path.name + end) for end in ends)):
        try:
            part.unlink()
            removed += 1
        except FileNotFoundError:
            pass
    sys.stdout.write(f"deleted {path}\n" if removed else f"no documents index at {path}\n")
    from bli_memory.core.settings import load_settings
    from bli_memory.core.team.client.remote import remote_target

    if remote_target(load_settings()) is not None:
        sys.stdout.write("this machine uses a team memory service: the space's index there is untouched "
                         "(`documents forget PATH` keeps files out of it)\n")
    return 0
