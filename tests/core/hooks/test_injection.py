"""What automatic injection gives a session: the gate, per-session dedup, ids on every line.

Hook runs go through :func:`bli_memory.core.hooks.events.answer_hook` in this process: the
function the hook process and the daemon both run, with the real Claude Code adapter,
a real SQLite store and the real embedder (one warm backend, so the hook's 2 s deadline
on a loaded machine never decides a test). The routes themselves are covered by
``tests/core/hooks/test_hooks.py`` and ``tests/core/daemon/test_daemon.py``.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from pathlib import Path

import pytest

from bli_memory.core.hooks.blocks import recall_block
from bli_memory.core.hooks.injection_log import MAX_IDS, already_injected, log_dir, record_injected
from bli_memory.core.models import Memory, SearchHit
from bli_memory.core.paths import store_path
from tests.conftest import FIXTURES
from tests.hooks_util import save

CLAUDE = FIXTURES / "claude"
_ID = re.compile(r"id ([0-9a-f-]{36})\)")


def fixture(name: str, **overrides: object) -> dict:
    data = json.loads((CLAUDE / name).read_text())
    data.update(overrides)
    return data


@dataclass
class Run:
    outcome: str
    fields: dict
    context: str | None


_CTX: dict[str, object] = {}


def _close_contexts() -> None:
    """Close the cached backends' stores (an unclosed sqlite3 connection warns on 3.13)."""
    for ctx in _CTX.values():
        ctx.backend.close()
    _CTX.clear()


@pytest.fixture(autouse=True, scope="module")
def _closed_contexts_after_the_module():
    yield
    _close_contexts()


def hook(event: str, payload: dict, project: Path) -> Run:
    from bli_memory.core.hooks.events import HookContext, answer_hook
    from bli_memory.core.plugins import get_plugin_manager

    pm = get_plugin_manager(host="claude")
    key = str(store_path())
    if key not in _CTX:
        _close_contexts()
        _CTX[key] = HookContext.build(pm)
    ans = answer_hook(pm, host="claude", event=event, payload=payload, context=lambda: _CTX[key],
                      cwd=str(project))
    ctx = json.loads(ans.stdout)["hookSpecificOutput"]["additionalContext"] if ans.stdout else None
    return Run(ans.outcome, dict(ans.fields), ctx)


def prompt(project: Path, text: str, session: str = "s-1") -> Run:
    return hook("prompt", fixture("prompt.json", cwd=str(project), prompt=text, session_id=session), project)


def _hit(content: str, n: int = 0) -> SearchHit:
    memory = Memory(
        id=f"00000000-0000-4000-8000-{n:012d}",
        space="s",
        content=content,
        created_at="2026-11-30T10:00:00.000000Z",
        updated_at="2026-11-30T10:00:00.000000Z",
    )
    return SearchHit(memory=memory, similarity=0.5, score=1.0, channels=("vector",))


def test_a_line_cut_to_the_budget_keeps_its_memory_id() -> None:
    long = _hit("We moved the billing jobs to the new queue because " + "the old one stalled " * 60, 7)
    block = recall_block([_hit("Short note.", 1), long], space="s", budget=500)
    assert block is not None and len(block) <= 500
    last = block.splitlines()[-2]
    assert "…" in last and last.endswith("(similarity 0.50; id 00000000-0000-4000-8000-000000000007)")
    assert "id 00000000-0000-4000-8000-000000000001)" in block


def test_a_line_with_too_little_room_is_left_out_not_cut_to_nothing() -> None:
    block = recall_block([_hit("x" * 300, 1), _hit("y" * 300, 2)], space="s", budget=560)
    assert block is not None and "000000000001" in block and "000000000002" not in block


def test_same_session_gets_a_memory_once_and_another_session_gets_it_again(project: Path) -> None:
    save(project, "The user's favourite colour is teal.", "The CI runs on GitHub Actions.")
    first = prompt(project, "What is my favourite colour?")
    assert "teal" in (first.context or "") and first.fields["hits"] == 1
    again = prompt(project, "Which favourite colour did I name?")
    assert again.outcome == "ok" and again.context is None and again.fields["hits"] == 0
    other = prompt(project, "What is my favourite colour?", session="s-2")
    assert "teal" in (other.context or "")


def test_session_start_counts_as_injected_for_the_prompts_after_it(project: Path) -> None:
    save(project, "The user's favourite colour is teal.")
    start = hook("session-start", fixture("session_start.json", cwd=str(project), session_id="s-9"), project)
    assert "teal" in (start.context or "")
    after = prompt(project, "What is my favourite colour?", session="s-9")
    assert after.outcome == "ok" and after.context is None


def test_memories_of_the_current_session_are_not_injected_and_the_header_says_so(project: Path) -> None:
    from bli_memory.core.embedded.engine import EmbeddedBackend
    from bli_memory.core.memory.spaces import derive_space

    backend = EmbeddedBackend(store_path())
    tag = derive_space(project).tag
    backend.save("The staging port is 8443.", space=tag, session_id="s-now")
    backend.save("The staging host is staging.example.org, port 8443.", space=tag, session_id="s-old")
    backend.close()
    r = prompt(project, "Which staging port do we use?", session="s-now")
    ctx = r.context or ""
    assert "staging.example.org" in ctx and "The staging port is 8443." not in ctx
    assert "from other sessions" in ctx.splitlines()[1]
    assert "earlier sessions" not in ctx


def test_a_prompt_about_something_the_space_never_mentions_gets_nothing(project: Path) -> None:
    save(
        project,
        *[f"Caroline went to the pottery class on day {n} and painted a bowl." for n in range(30)],
        *[f"Melanie ran a charity race in week {n} with her kids." for n in range(90)],
    )
    r = prompt(project, "What did Jonathan say about his trip to Rome with Gina?")
    assert r.outcome == "ok" and r.context is None and r.fields["gate"] == "below_threshold"
    ok = prompt(project, "What did Caroline paint at the pottery class?", session="s-3")
    assert "pottery" in (ok.context or "")


def test_an_identifier_named_in_a_prompt_is_still_injected(project: Path) -> None:
    save(
        project,
        "BLI-3580 moved the billing jobs to the new queue.",
        *[f"Unrelated note {n} about fonts and colours." for n in range(150)],
    )
    r = prompt(project, "what happened with BLI-3580 again?")
    assert "BLI-3580 moved the billing jobs" in (r.context or "")
    assert r.fields["gate"] == "exact_keyword"


def test_the_log_is_bounded_and_survives_a_corrupt_file(tmp_path: Path) -> None:
    record_injected("claude", "s", [f"id-{n}" for n in range(MAX_IDS + 50)])
    ids = already_injected("claude", "s")
    assert len(ids) == MAX_IDS and "id-0" not in ids and f"id-{MAX_IDS + 49}" in ids
    (path,) = log_dir().glob("*.json")
    assert "s" not in path.stem and path.stat().st_mode & 0o777 == 0o600
    path.write_text("{not json")
    assert already_injected("claude", "s") == set()
    record_injected("claude", "s", ["a"])
    assert already_injected("claude", "s") == {"a"}
    assert already_injected("claude", None) == set()


def test_session_start_shows_a_profile_fact_once_not_again_under_recent_context(project: Path) -> None:
    from bli_memory.core.embedded.engine import EmbeddedBackend
    from bli_memory.core.memory.spaces import derive_space

    backend = EmbeddedBackend(store_path())
    tag = derive_space(project).tag
    fact = backend.save("We decided to deploy with blue-green on Fridays.", space=tag,
                        metadata={"kind": "decision"}).memory
    backend.save("The staging host is staging.example.org.", space=tag)
    backend.close()
    start = hook("session-start", fixture("session_start.json", cwd=str(project), session_id="s-7"), project)
    assert start.context is not None
    assert _ID.findall(start.context).count(fact.id) == 1, start.context


def test_a_prompt_sharing_only_the_words_every_memory_uses_gets_nothing(project: Path) -> None:
    # A codebase whose memories all say "return", "file", "module", "value": a prompt about
    # another codebase finds those words here, and only those; each weighs next to nothing.
    topics = ["connection pool", "proxy", "retry policy", "request timeout", "response headers",
              "cookie jar", "redirect history", "certificate", "session", "streaming body",
              "chunked upload", "auth handler"]
    forms = ["Return the file module value of the {t}.",
             "This module reads the {t} value from a file and returns it.",
             "Set the {t} value in the module file.",
             "Return the {t} read from the module's file as a value."]
    save(project, *[f.format(t=t) + f" Case {k}." for t in topics for f in forms for k in range(3)])
    near = ["This module reads the tar archive checksum value from a file.",
            "Set the locale decimal separator value in the module file.",
            "Return the calendar month read from the module's file as a value."]
    runs = [prompt(project, text, session=f"near-{n}") for n, text in enumerate(near)]
    assert [(r.context, r.fields["gate"]) for r in runs] == [(None, "below_threshold")] * len(near)
    own = prompt(project, "How does the module return the proxy value?", session="own")
    assert "value of the proxy" in (own.context or "")


def test_a_keyword_hit_far_below_the_best_cosine_is_left_out_of_the_block(project: Path) -> None:
    save(project, "We parse YAML files with ruamel.yaml, never PyYAML.",
         "The staging deploy function runs on Fridays.",
         "Stripe webhooks are verified in the payments function.",
         "The team standup is at 9:30.")
    r = prompt(project, "Please write a function that reads YAML files", session="yaml-1")
    assert r.context is not None and "ruamel.yaml" in r.context
    assert "Stripe" not in r.context and "staging deploy" not in r.context, r.context


def test_a_reservation_holds_until_confirmed_released_or_lapsed(monkeypatch: pytest.MonkeyPatch) -> None:
    from bli_memory.core.hooks import injection_log as log

    assert log.reserve_injected("claude", "s", ["a", "b"]) == ["a", "b"]
    assert log.already_injected("claude", "s") == {"a", "b"}  # held: a prompt at the same moment skips them
    assert log.reserve_injected("claude", "s", ["a", "c"]) == ["c"]
    log.confirm_injected("claude", "s", ["a"])  # its block was written
    log.release_injected("claude", "s", ["b"])  # its block never reached the host
    assert log.already_injected("claude", "s") == {"a", "c"}
    assert log.reserve_injected("claude", "s", ["a", "b"]) == ["b"]

    monkeypatch.setattr(log, "PENDING_SECONDS", -1.0)  # a hook killed between the two lapses
    assert log.reserve_injected("claude", "t", ["x"]) == ["x"]
    assert log.already_injected("claude", "t") == set()
    assert log.reserve_injected("claude", "t", ["x"]) == ["x"]
