"""Extractors and reconcile, with the real embedding model, a real store and a real HTTP server."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

from bli_memory.core.errors import ConfigError, ServiceError
from bli_memory.core.extraction.extractors import (
    ChatCompletionsExtractor,
    RuleExtractor,
    Statement,
    available_extractors,
    get_extractor,
    specific_terms,
)
from bli_memory.core.extraction.reconcile import OUTCOME_KEYS, decide, distil
from bli_memory.core.hookspecs import hookimpl
from bli_memory.core.plugins import get_plugin_manager
from bli_memory.core.settings import load_settings

DATA = Path(__file__).resolve().parents[2] / "data" / "extraction_labelled.jsonl"


def texts(statements: list[Statement]) -> list[str]:
    return [s.text for s in statements]


@pytest.fixture
def backend(tmp_path: Path) -> Iterator[Any]:
    from bli_memory.core.embedded.engine import EmbeddedBackend

    b = EmbeddedBackend(tmp_path / "store" / "memory.sqlite3")
    yield b
    b.close()


# --- the default extractor ------------------------------------------------------------


def test_keeps_durable_statements_and_drops_chatter() -> None:
    text = (
        "User: let's switch from npm to pnpm, CI installs take forever. I prefer small commits. "
        "Can you also check the lint job?\n\n"
        "Assistant: Sure! Let me check.\n\nDone. The lint job failed because `ruff` was pinned to "
        "0.1.0 in requirements-dev.txt; pinning `ruff==0.6.9` fixes it.\n\n"
        "- Tests run with `make test`\n- All 214 tests passed\n\nI'll keep commits small. "
        "Anything else?"
    )
    out = RuleExtractor().extract(text)
    kinds = {s.text: s.kind for s in out}
    assert kinds == {
        "The team decided to switch from npm to pnpm, CI installs take forever.": "decision",
        "The user prefers small commits.": "preference",
        "The lint job failed because `ruff` was pinned to 0.1.0 in requirements-dev.txt; pinning "
        "`ruff==0.6.9` fixes it.": "fix",
        "Tests run with `make test`.": "command",
    }


@pytest.mark.parametrize("chatter", [
    "User: thanks, that's perfect\n\nAssistant: You're welcome! Let me know if you need anything else.",
    "User: ok, continue\n\nAssistant: Continuing with the refactor. I'm extracting the retry logic now.",
    "User: what's the difference between a list and a tuple in python?\n\nAssistant: A list is "
    "mutable: you can append and remove items. A tuple is immutable once created.",
    "User: deploy to staging please\n\nAssistant: Deploying now...\n\nThe deploy finished and the "
    "health check returns 200.",
    "",
])
def test_nothing_to_keep_gives_nothing(chatter: str) -> None:
    assert RuleExtractor().extract(chatter) == []


def test_injected_recall_and_context_blocks_are_never_extracted() -> None:
    text = (
        "User: <bli-memory-recall>\n[bli] [2026-01-02] The API runs on port 8080.\n</bli-memory-recall>\n"
        "<bli-memory-context>\n[bli] User Profile:\n[bli] [2026-01-02] Always use tabs.\n"
        "</bli-memory-context>\nWe deploy the docs with `mkdocs gh-deploy`.\n\n"
        "Assistant: <hook_context>The worker lives in services/worker.</hook_context>Noted."
    )
    assert texts(RuleExtractor().extract(text)) == ["The team deploys the docs with `mkdocs gh-deploy`."]


def test_code_blocks_are_dropped_but_a_short_command_block_is_kept_with_its_lead_in() -> None:
    text = (
        "Assistant: To regenerate the client after changing the schema, run:\n\n```bash\n"
        "pnpm run codegen\n```\n\nHere is the diff:\n\n```python\nAPI_PORT = 8080  # always\n```\n"
    )
    assert texts(RuleExtractor().extract(text)) == [
        "To regenerate the client after changing the schema, run: `pnpm run codegen`."
    ]


def test_specific_terms_find_names_paths_and_values_but_not_prose() -> None:
    assert specific_terms("We moved from npm to pnpm and deploy to Fly.io on port 8080.") >= {
        "npm", "pnpm", "fly.io", "8080"
    }
    assert specific_terms("Config lives in `config/flags.yaml`.") == {"config/flags.yaml"}
    assert specific_terms("A list is mutable and a tuple is immutable.") == frozenset()


# --- plugins ----------------------------------------------------------------------------


def test_hook_register_extractors() -> None:
    pm = get_plugin_manager(load_entrypoints=False)
    seen: dict[str, Any] = {}
    pm.hook.register_extractors(register=lambda name, factory: seen.__setitem__(name, factory))
    assert {"default", "openai"} <= set(seen)
    assert isinstance(seen["default"](), RuleExtractor)

    class Plugin:
        @staticmethod
        @hookimpl
        def register_extractors(register):
            register("shout", lambda: type("Shout", (), {
                "name": "shout", "extract": lambda self, text: [Statement(text.upper(), "fact")]})())

    pm.register(Plugin(), name="shout-plugin")
    try:
        chosen = get_extractor(pm, settings=load_settings(extractor="shout"))
        assert chosen.extract("x y") == [Statement("X Y", "fact")]
    finally:
        pm.unregister(name="shout-plugin")


def test_extractor_choice_follows_settings(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    assert isinstance(get_extractor(settings=load_settings()), RuleExtractor)
    openai = get_extractor(settings=load_settings(extract_url="http://127.0.0.1:9/v1", extract_model="m"))
    assert isinstance(openai, ChatCompletionsExtractor)
    assert openai.url == "http://127.0.0.1:9/v1/chat/completions"
    with pytest.raises(ConfigError, match="no extractor named 'nope'"):
        get_extractor(settings=load_settings(extractor="nope"))
    with pytest.raises(ConfigError, match="cannot be imported"):
        available_extractors(settings=load_settings(extract_plugins="no_such_module_here"))
    # The debugging hook: a module named in BLI_MEMORY_EXTRACT_PLUGINS is registered as a plugin.
    (tmp_path / "my_extractor_plugin.py").write_text(
        "from bli_memory.core.hookspecs import hookimpl\n"
        "from bli_memory.core.extraction.extractors import Statement\n"
        "class Echo:\n    name = 'echo'\n    def extract(self, text):\n"
        "        return [Statement(text, 'fact')]\n"
        "@hookimpl\ndef register_extractors(register):\n    register('echo', Echo)\n"
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.setenv("BLI_MEMORY_EXTRACT_PLUGINS", "my_extractor_plugin")
    monkeypatch.setenv("BLI_MEMORY_EXTRACTOR", "echo")
    assert get_extractor().extract("hello there") == [Statement("hello there", "fact")]


# --- the OpenAI-compatible extractor, against a real local HTTP server --------------------


class _ChatServer:
    """A tiny OpenAI-compatible ``/v1/chat/completions`` server on 127.0.0.1."""

    def __init__(self) -> None:
        self.requests: list[dict[str, Any]] = []
        self.reply: tuple[int, bytes] = (200, b"{}")
        outer = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:  # noqa: N802 - http.server's name
                length = int(self.headers.get("Content-Length", 0))
                outer.requests.append({
                    "path": self.path, "auth": self.headers.get("Authorization"),
                    "body": json.loads(self.rfile.read(length)),
                })
                status, body = outer.reply
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *args: Any) -> None:
                pass

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}/v1"
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)
        self.thread.start()

    def answer(self, content: str, status: int = 200) -> None:
        body = {"id": "c1", "object": "chat.completion", "model": "m",
                "choices": [{"index": 0, "finish_reason": "stop",
                             "message": {"role": "assistant", "content": content}}]}
        self.reply = (status, json.dumps(body).encode())

    def close(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()


@pytest.fixture
def chat_server() -> Iterator[_ChatServer]:
    server = _ChatServer()
    yield server
    server.close()


@pytest.mark.e2e
@pytest.mark.e2e
def test_openai_compatible_extractor_talks_to_a_real_endpoint(chat_server: _ChatServer, backend) -> None:
    chat_server.answer("```json\n" + json.dumps({"facts": [
        {"text": "The project deploys with `make deploy` to Fly.io.", "kind": "command"},
        {"text": "The user prefers squash merges.", "kind": "preference"},
        {"text": "Something odd.", "kind": "gossip"},
    ]}) + "\n```")
    extractor = ChatCompletionsExtractor.from_settings(load_settings(
        extract_url=chat_server.url, extract_model="local-model", extract_api_key="k-123"))
    secret = "sk-proj-" + "Z" * 40
    text = f"User: deploy with make deploy, key OPENAI_API_KEY={secret}\n\nAssistant: ok"
    outcome = distil(text, backend=backend, space="s", source="mcp", session_id=None, extractor=extractor)
    assert outcome["added"] == 3 and set(outcome) == set(OUTCOME_KEYS)
    (req,) = chat_server.requests
    assert req["path"] == "/v1/chat/completions" and req["auth"] == "Bearer k-123"
    assert req["body"]["model"] == "local-model" and req["body"]["temperature"] == 0
    sent = req["body"]["messages"][-1]["content"]
    assert secret not in sent and "[REDACTED:" in sent  # redacted before it leaves the machine
    kinds = {m.content: m.metadata["kind"] for m in backend.store.recent(["s"], limit=10)}
    assert kinds["The user prefers squash merges."] == "preference"
    assert kinds["Something odd."] == "fact"  # an unknown kind becomes a plain fact
    assert all(m.metadata["extractor"] == "openai" for m in backend.store.recent(["s"], limit=10))


@pytest.mark.e2e
@pytest.mark.e2e
@pytest.mark.parametrize(("status", "content", "reason"), [
    (500, "boom", "http_500"),
    (200, "I could not find any facts, sorry.", "bad_response"),
    (200, json.dumps({"facts": "none"}), "bad_response"),
])
def test_openai_compatible_extractor_errors_have_closed_reasons(
    chat_server: _ChatServer, status: int, content: str, reason: str
) -> None:
    chat_server.answer(content, status)
    with pytest.raises(ServiceError) as info:
        ChatCompletionsExtractor(chat_server.url, model="m").extract("User: we use tabs\n\nAssistant: ok")
    assert info.value.reason == reason


@pytest.mark.e2e
@pytest.mark.e2e
def test_openai_compatible_extractor_unreachable() -> None:
    import socket

    with socket.socket() as s:  # a port nobody listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    with pytest.raises(ServiceError) as info:
        ChatCompletionsExtractor(f"http://127.0.0.1:{port}/v1", model="m").extract("User: x y z w")
    assert info.value.reason == "dashboard_unreachable"


# --- reconcile ------------------------------------------------------------------------------

#: (memory already stored, new statement, expected action), cosines from the real model.
PAIRS = [
    ("Always run ruff before committing.", "Run ruff before every commit.", "unchanged"),
    ("My favourite colour is teal.", "The user's favourite colour is teal.", "unchanged"),
    ("We use npm for package management.", "We moved from npm to pnpm for package management.", "update"),
    ("CI runs on Travis.", "We moved CI from Travis to GitHub Actions.", "update"),
    ("We deploy with `./scripts/deploy.sh`.", "We deploy with `./scripts/deploy.sh` every Friday.", "update"),
    ("We use npm for package management.", "We use pnpm for package management.", "conflict"),
    ("Always run ruff before committing.", "Never run ruff before committing.", "conflict"),
    ("We deploy to Fly.io.", "We deploy to Heroku.", "conflict"),
    ("The user prefers tabs over spaces.", "The user prefers spaces over tabs.", "conflict"),
    ("The API listens on port 8080.", "The admin UI listens on port 3000.", "add"),
    ("Access tokens expire after 15 minutes.", "Refresh tokens expire after 30 days.", "add"),
    ("npm audit runs nightly in CI.", "We switched from npm to pnpm.", "add"),
    # The memory already names the value the change moves to: not stale (a new user's
    # hand-saved fact was replaced by a vaguer capture).
    ("We use pnpm 9 (not npm) for the web frontend; workspaces keep installs fast.",
     "The team moved from npm to pnpm because installs were slow.", "add"),
    # Stale though it names the new value, which it rejects or only mentions (a break-it pass).
    ("We use npm, not pnpm, because pnpm broke the lockfile.", "We switched from npm to pnpm.", "update"),
    ("Deploys go to Heroku from a GitHub workflow.", "We moved deploys from Heroku to a VM.", "update"),
]


@pytest.mark.parametrize(("old", "new", "expected"), PAIRS)
def test_reconcile_decisions_on_real_cosines(old: str, new: str, expected: str) -> None:
    from bli_memory.core.memory.embeddings import get_embedder

    embedder = get_embedder()  # one text per call, as the store embeds them
    cosine = float(embedder.embed([old])[0] @ embedder.embed([new])[0])
    action, ids = decide(new, [("old-id", old, cosine)])
    assert action == expected
    assert ids == ([] if expected == "add" else ["old-id"])


def test_distil_through_the_contract_dedupes_updates_and_flags(backend) -> None:
    rules = RuleExtractor()
    first = distil("User: We use npm for package management. Production deploys go to Heroku. "
                   "I prefer squash merges.\n\nAssistant: Noted.", backend=backend, space="p",
                   source="test", session_id="s1", extractor=rules)
    assert (first["added"], first["updated"], first["unchanged"], first["conflicted"]) == (3, 0, 0, 0)
    again = distil("User: We use npm for package management. Production deploys go to Heroku.",
                   backend=backend, space="p", source="test", session_id="s1", extractor=rules)
    assert (again["added"], again["unchanged"]) == (0, 2)
    trace: list[dict[str, Any]] = []
    changed = distil("User: We moved from npm to pnpm for package management. Production deploys go "
                     "to Fly.io.", backend=backend, space="p", source="test", session_id="s2",
                     extractor=rules, trace=trace)
    assert (changed["updated"], changed["conflicted"], changed["added"]) == (1, 1, 0)
    by_action = {t["action"]: t for t in trace}
    assert set(by_action) == {"update", "conflict"}
    live = {m.content: m for m in backend.store.recent(["p"], limit=10)}
    assert set(live) == {"The team moved from npm to pnpm for package management.",
                         "The user prefers squash merges.", "Per the user, production deploys go to Heroku.",
                         "Per the user, production deploys go to Fly.io."}
    fly = live["Per the user, production deploys go to Fly.io."]
    assert fly.metadata["conflicts_with"] == [live["Per the user, production deploys go to Heroku."].id]
    pnpm = live["The team moved from npm to pnpm for package management."]
    assert [m.content for m in backend.history(pnpm.id)][1] == "The team uses npm for package management."
    # The profile picks extracted memories by their kind: the preference, not the plain facts.
    squash = live["The user prefers squash merges."]
    assert squash.metadata == {"kind": "preference", "extracted": True, "extractor": "default"}
    assert fly.metadata["kind"] == "fact" and squash.source == "test" and squash.session_id == "s1"
    assert [m.id for m in backend.profile(space="p").facts] == [squash.id]


def test_profile_keeps_old_preferences_and_shows_recent_activity(backend) -> None:
    backend.save("Always run ruff before committing.", space="q", metadata={"kind": "convention"})
    for i in range(60):  # a busy space: the convention is far behind the latest activity
        backend.save(f"Worked on ticket BLI-{100 + i} today.", space="q")
    backend.save("The user prefers squash merges.", space="q", metadata={"kind": "preference"})
    profile = backend.profile(space="q", limit=5)
    assert [m.content for m in profile.facts] == ["The user prefers squash merges.",
                                                  "Always run ruff before committing."]
    assert [m.content for m in profile.recent] == ["The user prefers squash merges."] + [
        f"Worked on ticket BLI-{159 - i} today." for i in range(4)]


def test_labelled_set_is_well_formed() -> None:
    rows = [json.loads(line) for line in DATA.read_text().splitlines() if line.strip()]
    assert 30 <= len(rows) <= 60 and len({r["id"] for r in rows}) == len(rows)
    for r in rows:
        assert r["text"].startswith("User: ") and "\n\nAssistant: " in r["text"]
        assert r["split"] in ("dev", "held_out")
        for f in r["facts"]:
            assert f["kind"] in ("decision", "preference", "convention", "fact", "command", "fix")
            assert f["text"].strip()
    assert any(not r["facts"] for r in rows) and sum(len(r["facts"]) for r in rows) >= 40


def test_a_correction_supersedes_the_stale_value_and_other_subjects_are_added(backend) -> None:
    rules = RuleExtractor()
    distil("User: The API listens on port 8443. I run Claude Code on WSL.\n\nAssistant: Noted.",
           backend=backend, space="c", source="test", session_id="s1", extractor=rules)
    trace: list[dict[str, Any]] = []
    out = distil("User: The API now listens on port 9443. I would prefer an export run on demand "
                 "instead of a background process.\n\nAssistant: Ok.",
                 backend=backend, space="c", source="test", session_id="s2", extractor=rules, trace=trace)
    assert (out["updated"], out["corrected"], out["added"]) == (1, 1, 1), trace
    live = [m.content for m in backend.store.recent(["c"], limit=10)]
    assert any("9443" in c for c in live) and not any("8443" in c for c in live)
    assert any("WSL" in c for c in live)  # the unrelated preference did not replace it
    port = next(m for m in backend.store.recent(["c"], limit=10) if "9443" in m.content)
    assert "8443" in backend.history(port.id)[1].content  # the stale value stays as history


def test_decide_needs_the_same_subject_to_supersede() -> None:
    assert decide("The API now listens on port 9443.", [("a", "The API listens on port 8443.", 0.9)]) == (
        "correct", ["a"])
    assert decide("Service 4 now listens on port 8004.",
                  [("a", "Service 3 listens on port 8003.", 0.8)])[0] != "correct"
    assert decide("We use the export script instead of a background watcher.",
                  [("a", "The export script lives in ~/claude_sessions.", 0.68)]) == ("add", [])


def test_from_names_an_old_value_only_after_a_verb_of_change() -> None:
    """"we get model-2 from dev" names a source; "moved CI from Travis" leaves a value."""
    behaviour = ("The issue is that when development.json has models, it replaces the default models, "
                 "so we only get model-2 from dev and model-3 from local.")
    memory = "A custom section in local.json is discarded, so local never has priority except for models."
    assert decide(behaviour, [("a", memory, 0.5)])[0] != "update"
    assert decide("We moved CI from Travis to GitHub Actions.", [("a", "CI runs on Travis.", 0.59)]) == (
        "update", ["a"])


def test_a_statement_that_tells_only_a_masked_secret_is_not_kept(backend) -> None:
    """Capture masks secrets first, so "My password is X and token Y" became a memory
    reading "The user's password is [REDACTED:prose_password] and token [REDACTED:...]":
    nothing to use, and it came up in searches about the account. A statement that says
    more, and a command with a placeholder in it, are still kept."""
    token = "ghp_" + "Zq7Wx2Er5Ty8Ui1Op4As" * 2
    rules = RuleExtractor()
    for n, text in enumerate((
        f"User: My password is hunter2secret and token {token}\n\nAssistant: Got it.",
        "User: My Stripe API key is sk_live_" + "a1B2c3D4e5F6g7H8" * 2
        + "\n\nAssistant: Noted.",
        "User: My password is hunter2secret!X and the staging DB runs on db-7.internal:5432.\n\n"
        f"Assistant: Noted. To deploy, run `API_TOKEN={token} make release`.",
    )):
        distil(text, backend=backend, space="m", source="test", session_id=f"s{n}", extractor=rules)
    live = [m.content for m in backend.store.recent(["m"], limit=10)]
    assert len(live) == 2, live
    assert any("db-7.internal" in c for c in live), live  # said more than the password
    assert any("make release" in c and "[REDACTED:" in c for c in live), live
    assert not any("Stripe" in c or "token [REDACTED" in c for c in live), live
