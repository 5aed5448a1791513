"""The hook section's prompts typed through the real hook process, daemon route.

:mod:`hook` runs every prompt through :func:`bli_memory.core.hooks.events.answer_hook`
in its own process (about 6,000 prompts; a process per prompt costs about half a
second on a loaded 2-core machine, which would make the section take most of an hour).
This module takes a fixed sample of those prompts (every ``step``-th prompt of each
condition, so each condition is in it) and types each one as a host does:
``bli-memory-mcp hook prompt`` spawned with the Claude Code payload on stdin, its
``cwd`` the prompt's repository and a fresh session id, against a resident daemon
started on the bench's store (``BLI_MEMORY_DAEMON=1``). It then reads the block the
process printed and compares it with the block the in-process run gave the same prompt.

A run the daemon did not answer (its receipt's ``via`` is not ``daemon``: on a loaded
machine the daemon can miss its 1 s answer budget and the hook answers directly, or
the whole 2 s deadline passes) is typed once more; what still did not come through the
daemon is counted apart (``not_daemon``), not compared.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import time
import uuid
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from common import log

__all__ = ["sample", "through_process"]

_ID = re.compile(r"id ([0-9a-f-]{36})\)")
_BIN = str(Path(sys.executable).with_name("bli-memory-mcp"))


def sample(prompts: Sequence[Any], step: int) -> list[Any]:
    """Every ``step``-th prompt of each condition, in the section's order."""
    seen: dict[str, int] = {}
    out = []
    for p in prompts:
        i = seen.get(p.cond, 0)
        seen[p.cond] = i + 1
        if i % step == 0:
            out.append(p)
    return out


def _env(home_env: dict[str, str]) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("BLI_MEMORY_", "XDG_"))}
    env.update(home_env)
    env["BLI_MEMORY_DAEMON"] = "1"
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    return env


def _start_daemon(env: dict[str, str]) -> subprocess.Popen[bytes]:
    from bli_memory.core.hooks import daemon_client

    proc = subprocess.Popen(
        [sys.executable, "-m", "bli_memory.core.cli.main", "daemon"],
        env=env,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    sock = Path(env["XDG_STATE_HOME"]) / "bli-cockpit" / "memory-daemon.sock"
    give_up = time.monotonic() + 180
    while time.monotonic() < give_up:
        try:
            if daemon_client.ping(sock).get("ready"):
                return proc
        except daemon_client.DaemonUnavailable:
            pass
        time.sleep(0.1)
    proc.kill()
    raise SystemExit("hook section: the daemon did not become ready")


def _type(env: dict[str, str], repo: str, text: str) -> tuple[dict[str, Any], list[str], int]:
    """One hook process: its receipt, the memory ids of its block and the block's length."""
    payload = {
        "session_id": f"bench-proc-{uuid.uuid4()}",
        "cwd": repo,
        "hook_event_name": "UserPromptSubmit",
        "prompt": text,
        "transcript_path": "/nonexistent",
    }
    proc = subprocess.run(
        [_BIN, "hook", "prompt"],
        input=json.dumps(payload).encode(),
        env=env,
        cwd=repo,
        capture_output=True,
        timeout=60,
        check=False,
    )
    receipt: dict[str, Any] = {"outcome": "none"}
    for line in proc.stderr.decode("utf-8", "replace").splitlines():
        if line.startswith("[bli-memory] prompt "):
            _, _, outcome, *body = line.split(" ", 3)
            receipt = {"outcome": outcome, **(json.loads(body[0]) if body else {})}
    out = proc.stdout.decode("utf-8", "replace").strip()
    if proc.returncode != 0:
        receipt["exit"] = proc.returncode
    if not out:
        return receipt, [], 0
    block = json.loads(out)["hookSpecificOutput"]["additionalContext"]
    return receipt, _ID.findall(block), len(block)


def through_process(home_env: dict[str, str], prompts: Sequence[Any], dia: dict[str, str]) -> dict[str, Any]:
    """Type ``prompts`` through ``bli-memory-mcp hook prompt`` against a running daemon.

    Args:
        home_env: The bench's private HOME, XDG and data folders (``BenchHome.env``).
        prompts: :class:`hook.Prompt` rows whose in-process run filled ``hook_ids``.
        dia: Memory id to LoCoMo dia id (or docstring module), as the section scores.

    Returns:
        ``{"n", "daemon", "not_daemon", "exit_nonzero", "same_block", "per_cond",
        "ms_p50"}``: per condition, the block rate and (own) hook recall of the
        process runs beside those of the in-process runs of the same prompts, and how
        many blocks held exactly the same memories.
    """
    from common import percentile

    env = _env(home_env)
    daemon = _start_daemon(env)
    rows: list[tuple[Any, list[str], int]] = []
    not_daemon = 0
    nonzero = 0
    ms: list[float] = []
    try:
        for n, p in enumerate(prompts):
            for _attempt in range(2):
                t0 = time.perf_counter()
                receipt, ids, chars = _type(env, p.repo, p.text)
                ms.append((time.perf_counter() - t0) * 1000)
                if receipt.get("via") == "daemon":
                    break
            nonzero += 1 if receipt.get("exit") else 0
            if receipt.get("via") != "daemon":
                not_daemon += 1
                continue
            rows.append((p, [dia.get(i, "") for i in ids], chars))
            if n % 100 == 99:
                log(f"hook: {n + 1}/{len(prompts)} prompts through the hook process")
    finally:
        daemon.terminate()
        try:
            daemon.wait(timeout=20)
        except subprocess.TimeoutExpired:
            daemon.kill()
    per: dict[str, dict[str, Any]] = {}
    for cond in dict.fromkeys(p.cond for p, _, _ in rows):
        sel = [(p, ids, chars) for p, ids, chars in rows if p.cond == cond]
        k = len(sel)
        row: dict[str, Any] = {
            "n": k,
            "process_block_rate": sum(1 for _, ids, _ in sel if ids) / k,
            "in_process_block_rate": sum(1 for p, _, _ in sel if p.hook_ids) / k,
            "process_chars": sum(c for _, _, c in sel) / k,
            "in_process_chars": sum(p.hook_chars for p, _, _ in sel) / k,
            "same_block": sum(1 for p, ids, _ in sel if ids == p.hook_ids) / k,
        }
        if cond == "own":
            row["process_hook_recall"] = sum(1 for p, ids, _ in sel if set(ids) & p.evidence) / k
            row["in_process_hook_recall"] = sum(1 for p, _, _ in sel if set(p.hook_ids) & p.evidence) / k
        per[cond] = row
    return {
        "n": len(prompts),
        "daemon": len(rows),
        "not_daemon": not_daemon,
        "exit_nonzero": nonzero,
        "same_block": sum(1 for p, ids, _ in rows if ids == p.hook_ids) / max(len(rows), 1),
        "per_cond": per,
        "ms_p50": percentile(ms, 50),
    }
