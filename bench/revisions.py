"""Load the capture modules of an older revision beside this tree, for side-by-side replays.

A revision's extractor and reconcile are read with ``git show`` and imported under their own
names through a finder that serves the revision's sources, so their imports of each other (at
the top of a module or inside a function) resolve to the same revision. Revisions
from before the wings layout (``core/extraction.py`` at the top of ``core/``) import every
module by its flat name (``bli_memory.core.terms``); :data:`FLAT_NAMES` maps those names to
today's modules, so an old revision's imports of modules outside capture find this tree's.
"""

from __future__ import annotations

import contextlib
import importlib
import importlib.abc
import importlib.machinery
import importlib.util
import subprocess
import sys
import types
from collections.abc import Iterator
from pathlib import Path
from typing import Any

__all__ = ["FLAT_NAMES", "capture_modules", "load_revision"]

#: ``core/<flat>.py`` before the wings layout -> today's module under ``bli_memory.core``.
FLAT_NAMES: dict[str, str] = {
    "blocks": "hooks.blocks",
    "candidates": "extraction.candidates",
    "cli": "cli.main",
    "cockpit": "cli.cockpit",
    "conflicts": "memory.conflicts",
    "daemon": "daemon.server",
    "daemon_client": "hooks.daemon_client",
    "daemon_start": "hooks.daemon_start",
    "demo": "cli.demo",
    "durability": "extraction.durability",
    "embeddings": "memory.embeddings",
    "engine": "embedded.engine",
    "experience": "experience.log",
    "experience_cli": "cli.experience",
    "expiry": "memory.expiry",
    "extraction": "extraction.extractors",
    "hook_events": "hooks.events",
    "hook_stats": "hooks.stats",
    "hook_stdin": "hooks.stdin",
    "hooks": "hooks.main",
    "import_links": "memory.import_links",
    "injection_log": "hooks.injection_log",
    "job_ids": "memory.job_ids",
    "keyword_index": "embedded.keyword_index",
    "mcp_server": "mcp.server",
    "mcp_stdio": "mcp.stdio",
    "memory_cli": "cli.memory",
    "migrations": "embedded.migrations",
    "ops": "cli.ops",
    "pairing": "team.client.pairing",
    "payloads": "hooks.payloads",
    "pg_migrations": "team.postgres.migrations",
    "pg_pool": "team.postgres.pool",
    "pg_store": "team.postgres.store",
    "ranking": "memory.ranking",
    "receipt_log": "hooks.receipt_log",
    "receipts": "hooks.receipts",
    "reconcile": "extraction.reconcile",
    "records": "memory.records",
    "redaction": "memory.redaction",
    "reembed": "embedded.reembed",
    "relevance": "memory.relevance",
    "remote": "team.client.remote",
    "rephrase": "extraction.rephrase",
    "service": "team.service.app",
    "service_cli": "cli.service",
    "service_http": "team.service.http",
    "side_indexes": "embedded.side_indexes",
    "spaces": "memory.spaces",
    "spool": "team.client.spool",
    "store": "embedded.store",
    "stored_secrets": "memory.stored_secrets",
    "switches": "memory.switches",
    "term_evidence": "memory.term_evidence",
    "terms": "memory.terms",
    "tombstones": "extraction.tombstones",
    "tool_text": "mcp.tool_text",
    "transcripts": "hooks.transcripts",
    "trivial": "hooks.trivial",
    "unicode_text": "memory.unicode_text",
    "vector_index": "embedded.vector_index",
    "version_ids": "memory.version_ids",
    "worker": "extraction.worker",
}

#: Flat modules that are now split: the stand-in holds the names of every part.
_SPLIT_NAMES: dict[str, tuple[str, ...]] = {"contracts": ("hookspecs", "plugins", "memory.backend")}

#: The capture modules in the flat layout (those a revision has are loaded).
_FLAT_CAPTURE = ("tombstones", "durability", "rephrase", "candidates", "extraction", "reconcile")


def capture_modules(rev: str, repo: Path) -> list[tuple[str, str]]:
    """``[(module name, path in the revision), ...]`` of the capture modules of ``rev``."""
    listed = subprocess.run(["git", "ls-tree", "-r", "--name-only", rev, "core/"], cwd=repo,
                            capture_output=True, text=True, check=True).stdout.split()
    if "core/extraction.py" in listed:  # the flat layout
        return [(f"bli_memory.core.{n}", f"core/{n}.py") for n in _FLAT_CAPTURE if f"core/{n}.py" in listed]
    # early wing revisions kept the tombstones in core/memory/
    wanted = [p for p in listed if p.startswith("core/extraction/") and p.endswith(".py")
              and not p.endswith("__init__.py") and p.count("/") == 2] + ["core/memory/tombstones.py"]
    return [("bli_memory.core." + p[len("core/"):-3].replace("/", "."), p) for p in wanted if p in listed]


class _RevisionFinder(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    """Serves the capture modules of one revision from their ``git show`` sources."""

    def __init__(self, rev: str, sources: dict[str, tuple[str, str]]) -> None:
        self._rev = rev
        self._sources = sources  # module name -> (path in the revision, source)

    def find_spec(self, fullname: str, path: Any = None,
                  target: Any = None) -> importlib.machinery.ModuleSpec | None:
        if fullname not in self._sources:
            return None
        return importlib.util.spec_from_loader(fullname, self)

    def create_module(self, spec: importlib.machinery.ModuleSpec) -> None:
        return None  # the default module object

    def exec_module(self, module: types.ModuleType) -> None:
        path, source = self._sources[module.__name__]
        module.__file__ = f"{self._rev}:{path}"
        exec(compile(source, module.__file__, "exec"), module.__dict__)  # noqa: S102


@contextlib.contextmanager
def load_revision(rev: str, repo: Path) -> Iterator[dict[str, types.ModuleType]]:
    """Stand the capture modules of ``rev`` in for this tree's while the context is open.

    Yields ``{module name: module}``; on exit every name is restored to what it was.
    """
    flat = any(name.count(".") == 2 for name, _ in capture_modules(rev, repo))
    saved: dict[str, Any] = {}

    def stand_in(full: str, module: types.ModuleType) -> None:
        parent_name, _, leaf = full.rpartition(".")
        parent = importlib.import_module(parent_name)
        saved.setdefault(full, (sys.modules.get(full), parent, leaf, getattr(parent, leaf, None)))
        sys.modules[full] = module  # dataclasses and lazy imports look it up
        setattr(parent, leaf, module)

    loaded: dict[str, types.ModuleType] = {}
    finder: _RevisionFinder | None = None
    try:
        names = capture_modules(rev, repo)
        if flat:  # an old revision's imports of other modules by their flat names
            capture = {n for n, _ in names}
            for old, new in FLAT_NAMES.items():
                # a flat name that is now a wing's package (cli, hooks, ...) keeps the package
                if f"bli_memory.core.{old}" not in capture and not new.startswith(old + "."):
                    stand_in(f"bli_memory.core.{old}", importlib.import_module(f"bli_memory.core.{new}"))
            for old, parts in _SPLIT_NAMES.items():
                joined = types.ModuleType(f"bli_memory.core.{old}")
                for part in parts:
                    part_names = vars(importlib.import_module(f"bli_memory.core.{part}"))
                    vars(joined).update({k: v for k, v in part_names.items() if not k.startswith("__")})
                stand_in(joined.__name__, joined)
        sources = {full: (path, subprocess.run(["git", "show", f"{rev}:{path}"], cwd=repo,
                                                capture_output=True, text=True, check=True).stdout)
                   for full, path in names}
        for full in sources:  # this tree's modules step aside, so the finder serves these names
            parent_name, _, leaf = full.rpartition(".")
            parent = importlib.import_module(parent_name)
            saved.setdefault(full, (sys.modules.get(full), parent, leaf, getattr(parent, leaf, None)))
            sys.modules.pop(full, None)
        sys.meta_path.insert(0, finder := _RevisionFinder(rev, sources))
        for full in sources:
            loaded[full] = importlib.import_module(full)
        yield loaded
    finally:
        if finder is not None:
            sys.meta_path.remove(finder)
        for full, (module, parent, leaf, attr) in reversed(list(saved.items())):
            if module is None:
                sys.modules.pop(full, None)
            else:
                sys.modules[full] = module
            if attr is None:
                if hasattr(parent, leaf):
                    delattr(parent, leaf)
            else:
                setattr(parent, leaf, attr)
