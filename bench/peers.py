"""Side-by-side peers on the same LoCoMo split, each driven in its own virtualenv.

Every peer lives in its own virtualenv, ``<root>/<name>``, so no peer's dependencies
mix with ours or with another peer's. ``<root>`` is ``--peer-venv`` (``bench/run``), else
``$BLI_BENCH_PEER_VENV``, else ``peer-venvs`` beside the checkout. A peer whose
virtualenv is absent is skipped with one line; ``python bench/peers.py --install
[NAME ...]`` creates them with the pinned versions of :data:`PEERS` (PyPI only; CPython
3.12 from ``pyenv`` for basic-memory, which needs it).

Each peer runs as a subprocess of its own script (``bench/peer_<name>.py``) over a job
folder written here: the same memory texts, the same questions, the timeline of each
turn, and, for mem0, the product model's vectors. The other peers take their vectors
from a local OpenAI-compatible endpoint serving the same model (:mod:`peer_embeddings`),
since nothing may be downloaded at run time. Filled peer stores are kept under
``bench/results/cache/peer-stores/`` between runs (keyed by the job and the peer's
version). Scoring is shared with :mod:`locomo`.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import locomo
from common import BENCH_DIR, CACHE_DIR, REPO_ROOT, cached_embeddings, log

__all__ = ["PEERS", "Peer", "default_root", "install", "main", "run"]


@dataclass(frozen=True)
class Peer:
    """One peer: what to install, with which interpreter, and its runner script.

    ``python`` is the CPython minor version its virtualenv is made with; ``hook`` says
    whether and why its automatic-injection path is or is not measured (shown in
    docs/benchmarks.md).
    """

    requirement: str  # pip requirements, space-separated
    python: str
    script: str
    hook: str


#: Peer name -> how it is installed and run. Versions pinned to what was measured.
PEERS = {
    "mem0": Peer("mem0ai==2.2.1", "3.11", "peer_mem0.py",
                 "mem0 ships no hook for a coding host; its memories reach a model only when "
                 "the application calls search."),
    "mcp-memory-service": Peer(
        "mcp-memory-service[sqlite]==12.4.0 pysqlite3-binary==0.5.4.post2", "3.11",
        "peer_mcp_memory_service.py",
        "its automatic injection is the Claude Code hooks (session-start and a "
        "UserPromptSubmit 'natural triggers' hook), Node.js scripts that live in its Git "
        "repository (claude-hooks/) and are neither in the PyPI wheel nor on npm, so they "
        "cannot be installed here. From their source, the prompt hook decides on phrase "
        "patterns of the prompt (explicit recall requests, questions, mentions of past "
        "work; threshold 0.6, a 30 s cooldown) and not on what the store holds, then "
        "injects up to 5 memories of a time-filtered search: it cannot tell a subject "
        "the project holds from one it does not."),
    "basic-memory": Peer(
        "basic-memory==0.24.1 pysqlite3-binary==0.5.4.post2", "3.12", "peer_basic_memory.py",
        "its hooks (`bm hook session-start` / `pre-compact` for Claude Code and Codex) add "
        "a session-start brief of the project's active tasks, open decisions and recent "
        "session notes; nothing is chosen by the prompt (there is no UserPromptSubmit "
        "hook), so a per-prompt block rate does not apply: the same brief arrives "
        "whatever is asked."),
}


def default_root() -> Path:
    """Where the peers' virtualenvs are looked for: ``$BLI_BENCH_PEER_VENV``, else beside the checkout."""
    env = os.environ.get("BLI_BENCH_PEER_VENV")
    return Path(env) if env else REPO_ROOT.parent / "peer-venvs"


def _interpreter(minor: str) -> str:
    """A CPython ``minor`` (e.g. ``"3.12"``): this one, ``pythonX.Y`` on PATH, or pyenv's."""
    if f"{sys.version_info[0]}.{sys.version_info[1]}" == minor:
        return sys.executable
    found = shutil.which(f"python{minor}")
    if found:
        return found
    try:
        root = subprocess.run(["pyenv", "root"], capture_output=True, text=True, check=True).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        root = str(Path.home() / ".pyenv")
    candidates = sorted(Path(root, "versions").glob(f"{minor}.*/bin/python"))
    if not candidates:
        raise SystemExit(f"no CPython {minor} found (PATH or pyenv); install one to run this peer")
    return str(candidates[-1])


def install(names: list[str], root: Path) -> None:
    """Create ``root/<name>`` with the pinned requirement for each peer (PyPI; minutes each)."""
    for name in names:
        peer = PEERS[name]
        venv = root / name
        if not (venv / "bin" / "python").exists():
            log(f"peers: creating {venv} with CPython {peer.python}")
            subprocess.run([_interpreter(peer.python), "-m", "venv", str(venv)], check=True)
        log(f"peers: pip install {peer.requirement} into {venv}")
        pip = [str(venv / "bin" / "python"), "-m", "pip", "install", "-q"]
        subprocess.run([*pip, *peer.requirement.split()], check=True)


def _write_job(
    job_dir: Path, conversations: list[locomo.Conversation], embedder: Any
) -> dict[str, list[float]]:
    """Write job.json and the vector files; returns text -> vector for the embeddings endpoint."""
    import numpy as np

    job_dir.mkdir(parents=True, exist_ok=True)
    texts = [t.memory for c in conversations for t in c.turns]
    questions = [q.text for c in conversations for q in c.questions]
    one = lambda ts: np.stack([embedder.embed([t])[0] for t in ts])  # noqa: E731
    turn_vecs = cached_embeddings(texts, one, f"{embedder.name}/one-by-one")
    q_vecs = cached_embeddings(questions, one, f"{embedder.name}/one-by-one")
    np.save(job_dir / "turns.npy", turn_vecs)
    np.save(job_dir / "questions.npy", q_vecs)
    spaces = []
    for c in conversations:
        last = max(t.session_date for t in c.turns)
        # The timeline of locomo.build_store: the last session is now, one second per turn.
        spaces.append({"space": c.sample_id, "turns": [
            {"dia_id": t.dia_id, "text": t.memory,
             "age_s": (last - t.session_date).total_seconds() + len(c.turns) - n}
            for n, t in enumerate(c.turns)]})
    (job_dir / "job.json").write_text(json.dumps({
        "spaces": spaces,
        "questions": [{"space": c.sample_id, "text": q.text} for c in conversations for q in c.questions],
    }))
    known = {t: v.tolist() for t, v in zip(texts, turn_vecs, strict=True)}
    known.update({t: v.tolist() for t, v in zip(questions, q_vecs, strict=True)})
    return known


def _store_dir(name: str, job_dir: Path) -> Path:
    """The peer's kept store for this job: the job's content and the pinned version name it."""
    h = hashlib.sha256((job_dir / "job.json").read_bytes())
    h.update(PEERS[name].requirement.encode())
    return CACHE_DIR / "peer-stores" / f"{name}-{h.hexdigest()[:16]}"


def run(data_path: Path, *, quick: bool = False, peer_venv: Path | None = None) -> dict[str, Any]:
    """Run every peer whose virtualenv exists on the LoCoMo split.

    Returns:
        ``{"peers": {name: {"systems": {label: {"metrics", "search_ms"}}, "import_s",
        "cached", "memories", "turns", "version", "wall_s", "searches", "hook"}`` or
        ``{"error": why, "hook": ...}`` or ``{"skipped": why, "hook": ...}}, "embeddings_endpoint":
        {"requests", "seconds"}}``. ``search_ms`` is the mean time of one search as the
        runner times it, ms (for a peer that embeds through the endpoint, one local HTTP
        request for the query vector included); the endpoint's figures count every
        request it answered (imports included) and the seconds it spent on them.
    """
    from peer_embeddings import EmbeddingServer

    from bli_memory.core.memory.embeddings import get_embedder

    root = peer_venv or default_root()
    conversations = locomo.load(data_path, limit=2 if quick else None)
    questions = [q for c in conversations for q in c.questions]
    job_dir = CACHE_DIR / ("peers-quick" if quick else "peers")
    shutil.rmtree(job_dir, ignore_errors=True)
    out: dict[str, Any] = {"peers": {}}
    ready = {}
    for name, peer in PEERS.items():
        python = root / name / "bin" / "python"
        if python.exists():
            ready[name] = python
        else:
            why = f"no virtualenv at {root / name} (python bench/peers.py --install {name})"
            out["peers"][name] = {"skipped": why, "hook": peer.hook}
            log(f"peers: {name} skipped: {why}")
    if not ready:
        return out
    from concurrent.futures import ThreadPoolExecutor

    embedder = get_embedder()
    known = _write_job(job_dir, conversations, embedder)
    # The peers run at the same time (minutes to tens of minutes each on 2 shared cores);
    # their latencies are then measured under each other's load, and ours was not.
    with EmbeddingServer(embedder, known) as server, ThreadPoolExecutor(len(ready)) as pool:
        futures = {name: pool.submit(_run_one, name, python, job_dir, server, questions)
                   for name, python in ready.items()}
        for name, future in futures.items():
            out["peers"][name] = future.result()
    out["embeddings_endpoint"] = {"requests": server.requests, "seconds": server.seconds}
    return out


def _run_one(name: str, python: Path, job_dir: Path, server: Any, questions: list[Any]) -> dict[str, Any]:
    peer = PEERS[name]
    log(f"peers: running {name}")
    store_dir = _store_dir(name, job_dir)
    store_dir.mkdir(parents=True, exist_ok=True)
    home = job_dir / f"home-{name}"
    home.mkdir(exist_ok=True)
    out_dir = job_dir / f"out-{name}"
    shutil.rmtree(out_dir, ignore_errors=True)
    out_dir.mkdir()
    for part in ("job.json", "turns.npy", "questions.npy"):
        os.link(job_dir / part, out_dir / part)
    env = dict(os.environ, HOME=str(home), PYTHONNOUSERSITE="1", BENCH_EMBEDDINGS_URL=server.url)
    env.pop("VIRTUAL_ENV", None)
    t0 = time.perf_counter()
    proc = subprocess.run([str(python), str(BENCH_DIR / peer.script), str(out_dir), str(store_dir)], env=env,
                          capture_output=True, text=True, check=False)
    wall = time.perf_counter() - t0
    result_file = out_dir / "result.json"
    if proc.returncode != 0 or not result_file.exists():
        print(proc.stderr[-4000:], file=sys.stderr)
        return {"error": (proc.stderr or proc.stdout)[-2000:], "hook": peer.hook}
    res = json.loads(result_file.read_text())
    systems = {label: {"metrics": locomo.score(s["ranked"], questions), "search_ms": s["search_ms"]}
               for label, s in res["systems"].items()}
    for label, s in systems.items():
        log(f"peers: {name} {label}: recall_any@5 {s['metrics']['overall']['recall_any@5']:.3f}")
    return {
        "systems": systems, "import_s": res["import_s"], "cached": res.get("cached", False),
        "memories": res.get("memories"), "turns": res.get("turns"), "version": res["version"],
        "wall_s": wall, "hook": peer.hook,
        "searches": len(questions) * len(res["systems"]),
    }


def main(argv: list[str]) -> int:
    """``python bench/peers.py --install [NAME ...] [--root DIR]``: create the peers' virtualenvs."""
    import argparse

    parser = argparse.ArgumentParser(prog="bench/peers.py", description=main.__doc__)
    parser.add_argument("--install", nargs="*", metavar="NAME",
                        help=f"peers to install (default all: {', '.join(PEERS)})")
    parser.add_argument("--root", type=Path, default=None,
                        help="folder of the virtualenvs (default: see the module's docstring)")
    args = parser.parse_args(argv)
    if args.install is None:
        parser.print_help()
        return 2
    unknown = [n for n in args.install if n not in PEERS]
    if unknown:
        parser.error(f"unknown peer(s) {', '.join(unknown)}; known: {', '.join(PEERS)}")
    install(args.install or list(PEERS), args.root or default_root())
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
