"""``recall``: a prompt's search and the injection gate's inputs, in one call, on every store.

On the team service it is one request: the prompt hook's search, term counts and space
background used to be three (``/search``, ``/terms``, ``/background``) inside its 2 s budget.
"""

from __future__ import annotations

import uuid

import httpx
import pytest

PROMPT = "deploy billing on Fridays, BLI-3580 and Rome?"


def _fill(backend, space: str) -> None:
    gone = backend.save("We deploy the billing service with blue-green.", space=space).memory
    backend.save("We deploy on Fridays; BLI-3580 tracks the billing queue.", space=space)
    backend.save("Lunch is at noon on Fridays.", space=space)
    backend.save("We deploy the billing service from another project.", space=space + "_other")
    backend.forget(id=gone.id, space=space)


def test_recall_is_the_search_with_the_term_counts_and_the_background(backend, space: str) -> None:
    _fill(backend, space)
    got = backend.recall(PROMPT, space=space, limit=5)
    searched = backend.search(PROMPT, space=space, limit=5)
    assert [h.memory.id for h in got.result.hits] == [h.memory.id for h in searched.hits]
    assert [h.similarity for h in got.result.hits] == pytest.approx([h.similarity for h in searched.hits])
    assert got.result.space == space and got.result.query == PROMPT
    assert list(got.term_counts) == [("deploy", 1), ("billing", 1), ("fridays", 2), ("bli-3580", 1),
                                     ("rome", 0)]
    assert got.live == 2
    assert got.background is None  # two memories: too few pairs to tell


def test_recall_of_a_space_with_nothing_found_reads_no_gate_input(backend, space: str) -> None:
    got = backend.recall(PROMPT, space=space + "_empty", limit=5)
    assert got.result.hits == () and got.term_counts == () and got.live == 0 and got.background is None


@pytest.mark.e2e
def test_one_prompt_on_the_team_store_is_one_http_request(pg_admin, service_url: str) -> None:
    """What the prompt hook runs for a prompt (``prompt_decision``), through the real
    service over a real socket: exactly one request, to the recall door."""
    from bli_memory.core.hooks.prompt_recall import prompt_decision
    from bli_memory.core.team.client.remote import RemoteBackend

    sent: list[str] = []

    class Counting(httpx.HTTPTransport):
        def handle_request(self, request: httpx.Request) -> httpx.Response:
            sent.append(request.url.path)
            return super().handle_request(request)

    _, token = pg_admin.create_token(f"person-{uuid.uuid4().hex[:12]}", "laptop")
    space = f"repo_contract__{uuid.uuid4().hex[:16]}"
    backend = RemoteBackend(service_url, token=token, transport=Counting())
    try:
        _fill(backend, space)
        for n in range(100):  # a space big enough to have a background
            backend.save(f"Release note {n}: the billing queue drained on Friday {n}.", space=space)
        sent.clear()
        result, decision = prompt_decision(backend, "When do we deploy billing?", space=space, limit=3,
                                           floor=0.0)
        assert sent == ["/api/memory/recall"]
        assert result.hits and decision.reason in {"exact_keyword", "relevant", "below_threshold"}
        assert backend.recall("When do we deploy billing?", space=space, limit=9).background is not None
    finally:
        backend.close()


@pytest.mark.e2e
def test_a_service_from_before_the_recall_door_is_asked_apart(pg_admin, service_url: str) -> None:
    """A new client on an older service: the recall door answers 404 there (the real
    service's own answer for a door it does not have), so the client asks for the search,
    the term counts and the background apart, and keeps doing so without asking again."""
    from bli_memory.core.team.client.remote import RemoteBackend

    sent: list[str] = []

    class OldService(httpx.HTTPTransport):
        def handle_request(self, request: httpx.Request) -> httpx.Response:
            sent.append(request.url.path)
            if request.url.path == "/api/memory/recall":  # a door this service does not have yet
                request.url = request.url.copy_with(path="/api/memory/recall-is-not-here-yet")
            return super().handle_request(request)

    _, token = pg_admin.create_token(f"person-{uuid.uuid4().hex[:12]}", "laptop")
    space = f"repo_contract__{uuid.uuid4().hex[:16]}"
    backend = RemoteBackend(service_url, token=token, transport=OldService())
    try:
        _fill(backend, space)
        sent.clear()
        got = backend.recall(PROMPT, space=space, limit=5)
        assert sent == ["/api/memory/recall", "/api/memory/search", "/api/memory/terms",
                        "/api/memory/background"]
        assert got.live == 2 and dict(got.term_counts)["fridays"] == 2 and got.result.hits
        sent.clear()
        backend.recall(PROMPT, space=space, limit=5)
        assert sent == ["/api/memory/search", "/api/memory/terms", "/api/memory/background"]
    finally:
        backend.close()
