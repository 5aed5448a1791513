"""Side-by-side peers on the same LoCoMo split, driven in their own virtualenv.

Peers are installed in a separate virtualenv (``--peer-venv``, default
``bench/results/cache/peervenv``, created with pinned versions when missing) so the
product's environment stays clean; each peer runs as a subprocess of its own script
(``bench/peer_<name>.py``) over a job folder written here: the same memory texts, the
same questions, and the product model's vectors for both. Scoring is shared with
:mod:`locomo`.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
import venv
from pathlib import Path
from typing import Any

import locomo
from common import BENCH_DIR, CACHE_DIR, cached_embeddings, log

__all__ = ["PEERS", "ensure_venv", "run"]

#: Peer name -> (pip requirement, script). Versions pinned to what was measured.
PEERS = {"mem0": ("mem0ai==2.2.1", "peer_mem0.py")}

#: Peers that cannot run here, and exactly why (shown in docs/benchmarks.md).
UNAVAILABLE = {
    "basic-memory": (
        "every release on PyPI (0.15.1 up to 0.24.1) declares Requires-Python >= 3.12; this machine "
        "(Debian 12) has CPython 3.11 only and no 3.12 is available from Debian's or PyPI's "
        "registries, so pip refuses to install it. Its semantic search would also need FastEmbed "
        "to download a model from Hugging Face at run time, which is offline here; only its "
        "SQLite FTS5 text search could run."
    ),
}


def ensure_venv(path: Path) -> Path:
    """The peer venv's python, creating the venv and installing the peers if needed."""
    python = path / "bin" / "python"
    if not python.exists():
        log(f"peers: creating {path}")
        venv.EnvBuilder(with_pip=True).create(path)
    missing = []
    for _, (req, _) in PEERS.items():
        name = req.split("==")[0]
        ok = subprocess.run([str(python), "-c", f"import importlib.metadata as m; m.version({name!r})"],
                            capture_output=True, check=False).returncode == 0
        if not ok:
            missing.append(req)
    if missing:
        log(f"peers: pip install {' '.join(missing)}")
        subprocess.run([str(python), "-m", "pip", "install", "-q", *missing], check=True)
    return python


def _write_job(job_dir: Path, conversations: list[locomo.Conversation], embedder: Any) -> None:
    import numpy as np

    job_dir.mkdir(parents=True, exist_ok=True)
    texts = [t.memory for c in conversations for t in c.turns]
    questions = [q.text for c in conversations for q in c.questions]
    one = lambda ts: np.stack([embedder.embed([t])[0] for t in ts])  # noqa: E731
    np.save(job_dir / "turns.npy", cached_embeddings(texts, one, f"{embedder.name}/one-by-one"))
    np.save(job_dir / "questions.npy", cached_embeddings(questions, one, f"{embedder.name}/one-by-one"))
    (job_dir / "job.json").write_text(json.dumps({
        "spaces": [{"space": c.sample_id, "turns": [{"dia_id": t.dia_id, "text": t.memory} for t in c.turns]}
                   for c in conversations],
        "questions": [{"space": c.sample_id, "text": q.text} for c in conversations for q in c.questions],
    }))


def run(data_path: Path, *, quick: bool = False, peer_venv: Path | None = None) -> dict[str, Any]:
    """Run every peer on the LoCoMo split.

    Returns:
        ``{"peers": {name: {"metrics": ..., "import_s": ..., "search_ms": ..., "version": ...}
        or {"error": why}}, "unavailable": {name: why}}``.
    """
    import shutil

    from bli_memory.core.memory.embeddings import get_embedder

    conversations = locomo.load(data_path, limit=2 if quick else None)
    questions = [q for c in conversations for q in c.questions]
    job_dir = CACHE_DIR / ("peers-quick" if quick else "peers")
    shutil.rmtree(job_dir, ignore_errors=True)
    _write_job(job_dir, conversations, get_embedder())
    out: dict[str, Any] = {"peers": {}, "unavailable": dict(UNAVAILABLE)}
    try:
        python = ensure_venv(peer_venv or CACHE_DIR / "peervenv")
    except (OSError, subprocess.CalledProcessError) as exc:
        for name in PEERS:
            out["peers"][name] = {"error": f"could not install the peer venv: {exc}"}
        return out
    for name, (_, script) in PEERS.items():
        log(f"peers: running {name}")
        t0 = time.perf_counter()
        env = dict(os.environ, HOME=str(job_dir / "home"), PYTHONNOUSERSITE="1")
        (job_dir / "home").mkdir(exist_ok=True)
        proc = subprocess.run([str(python), str(BENCH_DIR / script), str(job_dir)], env=env,
                              capture_output=True, text=True, check=False)
        wall = time.perf_counter() - t0
        result_file = job_dir / f"{name}.json"
        if proc.returncode != 0 or not result_file.exists():
            out["peers"][name] = {"error": (proc.stderr or proc.stdout)[-2000:]}
            print(proc.stderr[-4000:], file=sys.stderr)
            continue
        res = json.loads(result_file.read_text())
        out["peers"][name] = {
            "metrics": locomo.score(res["ranked"], questions), "import_s": res["import_s"],
            "search_ms": res["search_ms"], "version": res["version"], "wall_s": wall,
        }
        log(f"peers: {name} recall_any@5 {out['peers'][name]['metrics']['overall']['recall_any@5']:.3f}")
    return out
