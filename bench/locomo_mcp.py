"""LoCoMo through the public tool path: ``save_memory`` then ``search_memory`` over MCP.

What an agent gets, as opposed to the import path of :mod:`locomo`: every conversation
lives in its own git repository (its space is derived from the remote, as a user's is);
one real ``bli-memory-mcp`` server is started per conversation over stdio with the
official MCP client (a host starts one server per agent session, so the conversation's
turns share that connection's session id), each turn is saved with ``save_memory``
(``metadata.dia_id`` kept for scoring), and each question is asked with
``search_memory`` (``limit`` 10). Turns are saved in order and all carry the time of the
run (the tool path cannot back-date a memory), so the recency prior sees no age spread.

The store this builds is reused by the hook section (:mod:`hook`). The data is CC BY-NC
4.0 and is read from its shared folder, never copied.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from common import log

__all__ = ["BenchHome", "make_repo", "run"]


class BenchHome:
    """A private HOME, XDG folders and data dir, so the bench never touches the user's."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.env = {
            "HOME": str(root / "home"),
            "XDG_DATA_HOME": str(root / "home" / ".local" / "share"),
            "XDG_STATE_HOME": str(root / "home" / ".local" / "state"),
            "XDG_CONFIG_HOME": str(root / "home" / ".config"),
            "BLI_MEMORY_DATA_DIR": str(root / "data"),
            "BLI_MEMORY_DAEMON": "0",
        }
        if os.environ.get("BLI_MEMORY_EMBEDDER"):  # bench/run --embedder: the model under test
            self.env["BLI_MEMORY_EMBEDDER"] = os.environ["BLI_MEMORY_EMBEDDER"]

    def reset(self) -> None:
        """Start from nothing (a previous run's store and state are removed)."""
        shutil.rmtree(self.root, ignore_errors=True)
        for key in ("HOME", "BLI_MEMORY_DATA_DIR"):
            Path(self.env[key]).mkdir(parents=True, exist_ok=True)

    def apply(self) -> None:
        """Use these folders in this process too (the hook section runs in-process)."""
        for key in [k for k in os.environ if k.startswith("BLI_MEMORY_")]:
            del os.environ[key]
        os.environ.update(self.env)


def make_repo(root: Path, name: str) -> Path:
    """A git repository ``root/name`` whose ``origin`` is ``https://example.org/bench/<name>.git``."""
    repo = root / "repos" / name
    repo.mkdir(parents=True, exist_ok=True)
    subprocess.run(["git", "init", "-q", str(repo)], check=True)
    subprocess.run(
        ["git", "-C", str(repo), "remote", "add", "origin", f"https://example.org/bench/{name}.git"],
        check=False,
        capture_output=True,
    )
    return repo


def _server_bin() -> str:
    return str(Path(sys.executable).with_name("bli-memory-mcp"))


async def _session(repo: Path, env: dict[str, str], body: Any) -> Any:
    from mcp.client import Client
    from mcp.client.stdio import StdioServerParameters

    params = StdioServerParameters(command=_server_bin(), args=[], env={**os.environ, **env}, cwd=str(repo))
    async with Client(params, read_timeout_seconds=120) as client:
        return await body(client)


def save_all(home: BenchHome, repo: Path, texts: Sequence[str], metadata: Sequence[dict[str, Any]]) -> str:
    """Save ``texts`` in order through one MCP connection; returns the space tag used."""
    import anyio

    async def body(client: Any) -> str:
        tag = ""
        for text, meta in zip(texts, metadata, strict=True):
            res = await client.call_tool("save_memory", {"content": text, "metadata": meta})
            if res.is_error:
                raise RuntimeError(f"save_memory failed: {res.content}")
            tag = res.structured_content["containerTag"]
        return tag

    return anyio.run(_session, repo, home.env, body)


def search_all(home: BenchHome, repo: Path, questions: Sequence[str], limit: int = 10) -> list[list[dict]]:
    """``search_memory`` for each question through one MCP connection: the hits' metadata."""
    import anyio

    async def body(client: Any) -> list[list[dict]]:
        out = []
        for q in questions:
            res = await client.call_tool("search_memory", {"query": q, "limit": limit})
            hits = (
                (res.structured_content or {}).get("results")
                or (res.structured_content or {}).get("hits")
                or []
            )
            out.append([h.get("metadata") or (h.get("memory") or {}).get("metadata") or {} for h in hits])
        return out

    return anyio.run(_session, repo, home.env, body)


def run(conversations: Sequence[Any], home: BenchHome, *, reuse: bool = False) -> dict[str, Any]:
    """Save every conversation over MCP, then search every question over MCP.

    With ``reuse``, the repositories and store a previous run left in ``home`` are kept
    and only the searches run (the saves are the slow part).

    Returns:
        ``{"metrics": score(...), "spaces": {sample_id: tag}, "repos": {sample_id: path},
        "save_ms": mean per save, "search_ms": mean per search}``.
    """
    import locomo

    reuse = reuse and (home.root / "reused.json").exists()
    if not reuse:
        home.reset()
    spaces: dict[str, str] = json.loads((home.root / "reused.json").read_text()) if reuse else {}
    repos: dict[str, str] = {}
    t0 = time.perf_counter()
    n_saved = 0
    for c in conversations:
        repo = make_repo(home.root, c.sample_id)
        repos[c.sample_id] = str(repo)
        if reuse:
            continue
        spaces[c.sample_id] = save_all(
            home, repo, [t.memory for t in c.turns], [{"dia_id": t.dia_id} for t in c.turns]
        )
        n_saved += len(c.turns)
        log(f"locomo/mcp: saved {c.sample_id} ({len(c.turns)} turns) into {spaces[c.sample_id]}")
    save_ms = (time.perf_counter() - t0) * 1000 / max(n_saved, 1) if n_saved else None
    (home.root / "reused.json").write_text(json.dumps(spaces))
    ranked: list[list[str]] = []
    questions = []
    t0 = time.perf_counter()
    for c in conversations:
        metas = search_all(home, Path(repos[c.sample_id]), [q.text for q in c.questions])
        ranked += [[m.get("dia_id", "") for m in hits] for hits in metas]
        questions += list(c.questions)
    search_ms = (time.perf_counter() - t0) * 1000 / max(len(questions), 1)
    metrics = locomo.score(ranked, questions)
    log(f"locomo/mcp: recall_any@5 {metrics['overall']['recall_any@5']:.3f}")
    return {"metrics": metrics, "spaces": spaces, "repos": repos, "save_ms": save_ms, "search_ms": search_ms}
