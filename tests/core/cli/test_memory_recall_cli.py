"""``memory search|save|recall`` through the real console script, against a real store file."""

from __future__ import annotations

import json
import os
import re
import subprocess
from pathlib import Path

import pytest

from bli_memory.core.paths import store_path
from tests.conftest import bin_path
from tests.hooks_util import HookRun, run_hook

pytestmark = [pytest.mark.e2e, pytest.mark.e2e]  # starts processes or servers (tests/tiers.py)

TOKEN = "ghp_" + "a1B2c3D4e5F6g7H8i9J0" * 2


def cli(project: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([bin_path(), "memory", *args], cwd=project, capture_output=True, text=True,
                          env=dict(os.environ), timeout=120)


def test_save_masks_secrets_and_search_finds_what_was_saved(project: Path) -> None:
    r = cli(project, "save", "We deploy the billing service with blue-green on Fridays")
    assert r.returncode == 0, r.stderr
    assert re.match(r"saved [0-9a-f-]{36} in space dir_project__", r.stdout)
    r = cli(project, "save", f"the staging token is {TOKEN}")
    assert r.returncode == 0 and "1 secret masked" in r.stdout
    again = cli(project, "save", "We deploy the billing service with blue-green on Fridays")
    assert again.stdout.startswith("already remembered")
    for f in store_path().parent.iterdir():
        assert TOKEN.encode() not in f.read_bytes(), f.name
    found = json.loads(cli(project, "search", "blue-green deploys", "--json").stdout)
    assert found["hits"][0]["content"].startswith("We deploy the billing service")
    assert "vector" in found["hits"][0]["channels"] and found["hits"][0]["similarity"] > 0.3
    plain = cli(project, "search", "nothing like this is stored, zebra quantum", "--limit", "3")
    assert plain.returncode == 0
    # The same words as the tools and the browser: a similarity, and how the hit matched.
    shown = cli(project, "search", "blue-green deploys").stdout.splitlines()[0]
    assert "similarity 0." in shown and "meaning" in shown and "vector" not in shown, shown


def _answered(payload: dict, project: Path, tries: int = 3) -> HookRun:
    """The prompt hook's answer to ``payload``, run again while a run misses its real 2 s
    deadline (a cold model load in each fresh hook process, on a loaded machine).

    The last run is returned whatever it says, so the caller's assertions always run: a
    timeout has neither a block nor ``given``, and fails them.
    """
    hook = run_hook("prompt", payload, cwd=project)
    for _ in range(tries - 1):
        if hook.reason != "timeout":
            break
        hook = run_hook("prompt", payload, cwd=project)
    return hook


def test_recall_shows_the_hooks_own_decision(project: Path) -> None:
    for text in ("We deploy the billing service with blue-green on Fridays",
                 "Use ruff for linting; its settings live in pyproject.toml",
                 "The staging database is Postgres 16 on port 5433"):
        assert cli(project, "save", text).returncode == 0
    prompt = "how do we deploy the billing service?"
    shown = json.loads(cli(project, "recall", prompt, "--json").stdout)
    assert shown["reason"] in {"relevant", "exact_keyword"}
    assert [h["content"] for h in shown["inject"]][0].startswith("We deploy")
    # The real prompt hook, in a fresh session, injects exactly what recall showed.
    for attempt in range(3):  # a fresh session each time: a run past its deadline may have given it
        payload = {"session_id": f"s-{attempt}", "cwd": str(project), "hook_event_name": "UserPromptSubmit",
                   "prompt": prompt, "transcript_path": "/nonexistent"}
        hook = run_hook("prompt", payload, cwd=project)
        if hook.reason != "timeout":
            break
    assert hook.receipt[0] == "ok", hook.stderr
    block = json.loads(hook.stdout)["hookSpecificOutput"]["additionalContext"]
    assert re.findall(r"id ([0-9a-f-]{36})\)", block) == [h["id"] for h in shown["inject"]]
    # recall writes nothing: the hook's session state is untouched, so a second hook of
    # another session gets the same block, and recall itself can be asked again.
    assert json.loads(cli(project, "recall", prompt, "--json").stdout)["inject"] == shown["inject"]
    text = cli(project, "recall", prompt).stdout
    assert "would inject" in text and "We deploy the billing service" in text
    # It says it answers for a new session, and explains both of the gate's tests.
    assert "in a new session" in text and "already given these memories" in text
    assert "best cosine similarity" in text and "floor" in text
    assert "relevance score" in text or "every word" in text
    assert shown["session"] == "fresh" and "floor" in shown["why"]
    assert shown["block"] == block  # the same block, header included
    # The same session asking again gets nothing, and its receipt says why (retried in that
    # session: it was given the memory, so every run must answer nothing).
    again = _answered({**payload, "prompt": prompt + " again"}, project)
    assert again.stdout == "" and again.receipt[1].get("given", 0) >= 1, again.receipt


def test_recall_reports_a_trivial_prompt_as_the_hook_skips_it(project: Path) -> None:
    assert cli(project, "save", "We deploy the billing service with blue-green on Fridays").returncode == 0
    r = cli(project, "recall", "ok")
    assert r.returncode == 0 and r.stdout.startswith("skipped: a trivial prompt")
    assert json.loads(cli(project, "recall", "ok", "--json").stdout)["reason"] == "trivial_prompt"


def test_recall_says_why_a_prompt_gets_nothing(project: Path) -> None:
    assert cli(project, "save", "We deploy the billing service with blue-green on Fridays").returncode == 0
    r = cli(project, "recall", "what is the capital of France?")
    assert r.returncode == 0
    assert "nothing would be injected" in r.stdout and "gate: " in r.stdout
    shown = json.loads(cli(project, "recall", "what is the capital of France?", "--json").stdout)
    assert shown["inject"] == [] and shown["block"] is None
    assert shown["reason"] in {"below_threshold", "no_hits"}
    assert "must pass both" in shown["why"] or "matched the prompt at all" in shown["why"]


def test_save_into_a_switched_off_space_is_refused(project: Path) -> None:
    from bli_memory.core.memory.spaces import derive_space
    from bli_memory.core.memory.switches import set_enabled

    set_enabled(False, derive_space(str(project)).tag)
    r = cli(project, "save", "We deploy on Fridays")
    assert r.returncode == 1 and "switched off" in r.stderr and "Traceback" not in r.stderr
    assert cli(project, "search", "deploy", "--json").returncode == 0


def test_a_secret_looking_space_is_refused_and_never_printed(project: Path, monkeypatch) -> None:
    """``memory search|save|recall`` refuse a token as ``--space`` or as
    ``BLI_MEMORY_CONTAINER_TAG`` (they printed "nothing found in space ghp_..." and exited
    0, and ``recall`` blamed the prompt), and say which one was refused."""
    for args in (("search", "deploys", "--space", TOKEN),
                 ("save", "Deploys run on Fridays", "--space", TOKEN)):
        r = cli(project, *args)
        assert r.returncode != 0 and "--space holds what looks like a secret" in r.stderr, r
        assert "nothing was done" in r.stderr and "saved" not in r.stderr, r  # search saves nothing
        assert TOKEN not in r.stdout + r.stderr
    monkeypatch.setenv("BLI_MEMORY_CONTAINER_TAG", TOKEN)
    for args in (("search", "deploys"), ("recall", "How do we deploy the billing service?"), ("list",)):
        r = cli(project, *args)
        assert r.returncode != 0 and "BLI_MEMORY_CONTAINER_TAG is refused" in r.stderr, (args, r)
        assert TOKEN not in r.stdout + r.stderr
