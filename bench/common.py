"""Shared helpers of the benchmark harness: paths, caches, machine description, tables.

Everything here is used by ``bench/run`` and the section modules beside it. Nothing
in the product imports this folder.
"""

from __future__ import annotations

import hashlib
import json
import os
import platform
import subprocess
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

__all__ = [
    "BENCH_DIR",
    "CACHE_DIR",
    "REPO_ROOT",
    "RESULTS_DIR",
    "CachingEmbedder",
    "bench_embedder",
    "cached_embeddings",
    "log",
    "machine_description",
    "markdown_table",
    "percentile",
    "rss_mb",
    "write_json",
]

BENCH_DIR = Path(__file__).resolve().parent
REPO_ROOT = BENCH_DIR.parent
RESULTS_DIR = BENCH_DIR / "results"
CACHE_DIR = RESULTS_DIR / "cache"

_T0 = time.monotonic()


def log(message: str) -> None:
    """Progress line on stderr with seconds since the harness started."""
    print(f"[bench {time.monotonic() - _T0:7.1f}s] {message}", file=sys.stderr, flush=True)


def percentile(values: Sequence[float], q: float) -> float:
    """The ``q``-th percentile (0..100) by linear interpolation; NaN for no values."""
    if not values:
        return float("nan")
    s = sorted(values)
    pos = (len(s) - 1) * q / 100
    lo = int(pos)
    hi = min(lo + 1, len(s) - 1)
    return s[lo] + (s[hi] - s[lo]) * (pos - lo)


def rss_mb() -> float:
    """Resident set size of this process in MiB (Linux ``/proc``; 0 elsewhere)."""
    try:
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    except OSError:
        pass
    return 0.0


def write_json(path: Path, data: Any) -> None:
    """Write ``data`` as indented JSON, creating the folder."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(data, indent=1, sort_keys=True, default=str) + "\n")


def markdown_table(header: Sequence[str], rows: Sequence[Sequence[Any]]) -> str:
    """A GitHub markdown table; floats are printed with 3 decimals."""

    def cell(v: Any) -> str:
        if isinstance(v, float):
            return f"{v:.3f}"
        return str(v)

    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(cell(v) for v in row) + " |" for row in rows]
    return "\n".join(lines)


def _cpu_model() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown"


def _mem_total_gib() -> float:
    try:
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemTotal:"):
                return int(line.split()[1]) / 1024 / 1024
    except OSError:
        pass
    return 0.0


def machine_description() -> dict[str, Any]:
    """Machine, OS, Python, key library versions and the checkout's commit."""
    import sqlite3

    import numpy as np

    versions = {"numpy": np.__version__, "sqlite": sqlite3.sqlite_version}
    for name in ("onnxruntime", "usearch", "tantivy", "matplotlib"):
        try:
            from importlib.metadata import version

            versions[name] = version(name)
        except Exception:  # not installed
            versions[name] = "not installed"
    try:
        commit = subprocess.run(
            ["git", "-C", str(REPO_ROOT), "rev-parse", "--short", "HEAD"],
            capture_output=True, text=True, check=False,
        ).stdout.strip()
        dirty = subprocess.run(
            ["git", "-C", str(REPO_ROOT), "status", "--porcelain", "--untracked-files=no"],
            capture_output=True, text=True, check=False,
        ).stdout.strip()
    except OSError:
        commit, dirty = "unknown", ""
    return {
        "cpu": _cpu_model(),
        "cores": os.cpu_count(),
        "memory_gib": round(_mem_total_gib(), 1),
        "os": f"{platform.system()} {platform.release()}",
        "python": platform.python_version(),
        "versions": versions,
        "commit": commit + (" (+ local changes)" if dirty else ""),
        "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
    }


def bench_embedder() -> Any:
    """The embedder under test: ``BLI_MEMORY_EMBEDDER`` (``bench/run --embedder``), else the shipped one.

    The value is what the product takes (a registered name such as ``mpnet``, or the path
    of a model folder), resolved the product's way (``load_embedder``).
    """
    spec = os.environ.get("BLI_MEMORY_EMBEDDER", "").strip()
    from bli_memory.core.memory.embeddings import MODEL_NAME, get_embedder

    if not spec or spec == MODEL_NAME:
        return get_embedder()
    from bli_memory.core.memory.embedder import load_embedder

    return load_embedder(spec)


def cached_embeddings(texts: Sequence[str], embed: Callable[[Sequence[str]], Any], tag: str) -> Any:
    """Embeddings of ``texts``, computed once and kept in ``bench/results/cache``.

    Args:
        texts: The texts, in order.
        embed: Function texts -> float32 array (n, d).
        tag: Names the embedder configuration (part of the cache key).

    Returns:
        float32 array (n, d), row i the embedding of ``texts[i]``.
    """
    import numpy as np

    h = hashlib.sha256(tag.encode())
    for t in texts:
        h.update(t.encode("utf-8", "surrogatepass"))
        h.update(b"\0")
    path = CACHE_DIR / f"emb-{h.hexdigest()[:20]}.npy"
    if path.exists():
        return np.load(path)
    matrix = np.asarray(embed(texts), dtype=np.float32)
    path.parent.mkdir(parents=True, exist_ok=True)
    np.save(path, matrix)
    return matrix


class CachingEmbedder:
    """Wraps the product embedder; answers texts it has already seen from a dict.

    Used so repeated ablation runs over the same questions do not re-run the model;
    the engine's code path is unchanged (it calls ``embed([text])`` as always).

    Args:
        inner: The real embedder (``name``, ``dimensions``, ``embed``).
        known: Optional text -> vector entries to answer from.
    """

    def __init__(self, inner: Any, known: dict[str, Any] | None = None) -> None:
        self.inner = inner
        self.name = inner.name
        self.dimensions = inner.dimensions
        self.known: dict[str, Any] = dict(known or {})

    def embed(self, texts: Sequence[str]) -> Any:
        import numpy as np

        missing = [t for t in texts if t not in self.known]
        if missing:
            # One text at a time: the engine embeds one text per call, and dynamic int8
            # quantisation makes a vector depend slightly on its batch (core/memory/embeddings.py).
            for t in dict.fromkeys(missing):
                self.known[t] = self.inner.embed([t])[0]
        return np.stack([self.known[t] for t in texts]) if texts else self.inner.embed([])
