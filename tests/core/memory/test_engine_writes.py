"""The engine's writing rules against an in-memory store and a fixed clock: dedup, expiry,
the upsert, versions, the forget policy and the read-only refusal, with no database and no
model (the three real stores run the same rules in tests/contract)."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import replace
from typing import Any

import pytest

from bli_memory.core.errors import InvalidInputError, NotFoundError
from bli_memory.core.memory.engine import MemoryEngine
from bli_memory.core.memory.engine_writes import LiveRow
from bli_memory.core.memory.ranking import RankingConfig
from bli_memory.core.memory.retrieval_writes import content_hash
from bli_memory.core.models import Memory

NOW = "2099-06-01T12:00:00.000000Z"
LATER = "2099-06-01T12:00:05.000000Z"


class FakeWrite:
    """One write session over a list of rows; rows owned by someone in ``read_only`` cannot change."""

    def __init__(self, store: FakeStore, tag: str) -> None:
        self.canonical, self.spaces, self.at = tag, (tag,), store.clock
        self._store = store

    def _live(self, unexpired: bool = True) -> list[tuple[Memory, str]]:
        return [(m, o) for m, o in self._store.rows if m.state == "active" and m.space in self.spaces
                and (not unexpired or m.expires_at is None or m.expires_at > self.at)]

    def find_live(self, *, id: str | None = None, custom_id: str | None = None, sha: str | None = None,
                  unexpired: bool = True, writable_only: bool = False) -> LiveRow | None:
        for m, owner in self._live(unexpired):
            if writable_only and owner in self._store.read_only:
                continue
            if (id is not None and m.id == id) or (custom_id is not None and m.custom_id == custom_id) or (
                    sha is not None and content_hash(m.content) == sha):
                return LiveRow(m, owner)
        return None

    def chain_ends(self, id: str) -> tuple[Memory | None, Memory | None]:
        start = next((m for m, _ in self._store.rows if m.id == id), None)
        if start is None:
            return None, None
        newest = start
        while (nxt := next((m for m, _ in self._store.rows if m.supersedes == newest.id), None)) is not None:
            newest = nxt
        return start, newest

    def nearest_live(self, vector: Any) -> tuple[LiveRow, float] | None:
        live = self._live()
        if not live:
            return None
        m, owner = max(live, key=lambda r: self._store.similarity(vector, r[0].content))
        return LiveRow(m, owner), self._store.similarity(vector, m.content)

    def forgotten_since(self, since: str, *, limit: int) -> list[Memory]:
        return [m for m, _ in reversed(self._store.rows)
                if m.state == "forgotten" and (m.forgotten_at or "") >= since]

    def check_writable(self, row: LiveRow) -> None:
        if row.owner in self._store.read_only:
            raise NotFoundError("shared with you read-only", reason="read_only")

    def insert(self, memory: Memory, vector: Any, *, like: LiveRow | None = None) -> None:
        self._store.events.append("insert")
        self._store.rows.append((memory, "me" if like is None else str(like.owner)))

    def retire(self, row: LiveRow, state: Any) -> bool:
        rows = self._store.rows
        i = next((i for i, (m, _) in enumerate(rows) if m.id == row.memory.id and m.state == "active"), None)
        if i is None:
            return False
        rows[i] = (replace(rows[i][0], state=state, forgotten_at=self.at if state == "forgotten" else None),
                   rows[i][1])
        return True


class Vec(str):
    """A fake unit vector: the text itself; ``a @ b`` is the store's similarity of the two."""

    store: FakeStore

    def __matmul__(self, other: str) -> float:
        return self.store.similarity(str(other), str(self))


class FakeStore:
    """Rows as ``(memory, owner)``; the "vector" of a text is the text itself, and the
    similarity of two texts is given by ``similarities`` (1.0 for the same text)."""

    def __init__(self) -> None:
        self.rows: list[tuple[Memory, str]] = []
        self.read_only: set[str] = set()
        self.similarities: dict[tuple[str, str], float] = {}
        self.events: list[str] = []
        self.clock = NOW

    def similarity(self, a: str, b: str) -> float:
        return 1.0 if a == b else self.similarities.get((a, b), 0.0)

    @contextmanager
    def writing(self, tag: str) -> Iterator[FakeWrite]:
        self.events.append("open")
        yield FakeWrite(self, tag)

    def reading(self, tag: str) -> Any:  # the reading half is tested in test_engine.py
        raise AssertionError("no read in these tests")


@pytest.fixture
def store() -> FakeStore:
    return FakeStore()


@pytest.fixture
def engine(store: FakeStore) -> MemoryEngine:
    Vec.store = store

    def embed(text: str) -> Vec:
        store.events.append("embed")
        return Vec(text)

    return MemoryEngine(store, embed, RankingConfig(),  # type: ignore[arg-type]
                        embed_many=lambda texts: [Vec(t) for t in texts])


def test_identical_content_is_one_memory_but_an_expired_one_is_not_live(engine: MemoryEngine,
                                                                        store: FakeStore) -> None:
    first = engine.save("We deploy on Fridays.", space="s", expires_at="2099-06-01T12:00:03Z")
    assert first.status == "created"
    assert store.events == ["embed", "open", "insert"]  # the model runs before the write opens
    again = engine.save("  We deploy on Fridays.\n", space="s", expires_at="2099-06-01T12:00:03Z")
    assert again.status == "duplicate" and again.memory.id == first.memory.id
    store.clock = LATER  # past its expiry
    again = engine.save("We deploy on Fridays.", space="s")
    assert again.status == "created" and again.memory.id != first.memory.id


def test_a_custom_id_upserts_and_the_same_content_and_metadata_change_nothing(engine: MemoryEngine,
                                                                             store: FakeStore) -> None:
    v1 = engine.save("Node 20.", space="s", custom_id="node", metadata={"kind": "setup"}).memory
    assert engine.save("Node 20.", space="s", custom_id="node").status == "duplicate"
    same = engine.save("Node 20.", space="s", custom_id="node", metadata={"kind": "setup"})
    assert same.status == "duplicate"
    v2 = engine.save("Node 22.", space="s", custom_id="node")
    assert v2.status == "updated" and v2.previous == v1
    assert (v2.memory.version, v2.memory.supersedes, v2.memory.metadata) == (2, v1.id, {"kind": "setup"})
    store.clock = LATER
    v3 = engine.save("Node 24.", space="s", custom_id="node", expires_at="2099-07-01")
    assert v3.status == "updated" and v3.memory.supersedes == v2.memory.id  # brought back past expiry


def test_an_update_through_an_old_id_acts_on_the_live_head_and_says_so(engine: MemoryEngine) -> None:
    v1 = engine.save("Port 8000.", space="s").memory
    v2 = engine.update("Port 8080.", space="s", id=v1.id).memory
    res = engine.update("Port 9090.", space="s", id=v1.id, source="cli")
    assert res.named is not None and (res.previous.id, res.named.id) == (v2.id, v1.id)
    assert (res.memory.version, res.memory.source, res.memory.supersedes) == (3, "cli", v2.id)
    assert engine.update("Port 9090.", space="s", id=res.memory.id).status == "unchanged"
    with pytest.raises(InvalidInputError):
        engine.update("Port 1.", space="s", id=v1.id, custom_id="x")
    with pytest.raises(NotFoundError, match="not in space other"):
        engine.update("Port 1.", space="other", id=v1.id)


def test_forget_by_query_acts_only_at_085_or_more_and_says_the_score(engine: MemoryEngine,
                                                                     store: FakeStore) -> None:
    kept = engine.save("The API rate limit is 100 per minute.", space="s").memory
    store.similarities[("rate limit of the api", kept.content)] = 0.84
    with pytest.raises(NotFoundError, match="similarity 0.84, below the 0.85"):
        engine.forget(space="s", query="rate limit of the api")
    store.similarities[("the api rate limit", kept.content)] = 0.86
    gone = engine.forget(space="s", query="the api rate limit")
    assert (gone.matched_by, gone.similarity, gone.memory.state) == ("query", 0.86, "forgotten")
    with pytest.raises(NotFoundError, match="holds no memories"):
        engine.forget(space="s", query="anything")
    with pytest.raises(InvalidInputError, match="exactly one"):
        engine.forget(space="s", id=kept.id, query="x")


def test_forget_by_text_compares_the_text_as_stored_and_a_retry_finds_it(engine: MemoryEngine,
                                                                        store: FakeStore) -> None:
    token = "ghp_" + "A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q7r8"
    saved = engine.save(f"The CI token is {token}.", space="s")
    assert saved.masked == 1 and token not in saved.memory.content
    gone = engine.forget(space="s", content=f"The CI token is {token}.")  # pasted with the secret
    assert gone.memory.id == saved.memory.id
    found = engine.forgotten_by(space="s", since=0.0, content=f"The CI token is {token}.")
    assert found is not None and found.memory.id == saved.memory.id
    assert engine.forgotten_by(space="s", since=0.0, content="Another text.") is None


def test_a_row_shared_read_only_is_refused_and_never_a_duplicate(engine: MemoryEngine,
                                                                 store: FakeStore) -> None:
    theirs = Memory(id="00000000-0000-4000-8000-000000000001", space="s", content="Use tabs.",
                    created_at=NOW, updated_at=NOW)
    store.rows.append((theirs, "them"))
    store.read_only.add("them")
    with pytest.raises(NotFoundError) as refused:
        engine.update("Use spaces.", space="s", id=theirs.id)
    assert refused.value.reason == "read_only"
    with pytest.raises(NotFoundError):
        engine.forget(space="s", content="Use tabs.")
    mine = engine.save("Use tabs.", space="s")
    assert mine.status == "created"  # their row is not one this person may dedup into


def test_an_extract_job_is_checked_before_anything_is_queued(engine: MemoryEngine) -> None:
    job = engine.checked_extract("<bli-memory-recall>old</bli-memory-recall>\nUser: we use uv",
                                 space="s", source="hook:codex")
    assert job.text == "User: we use uv" and job.job_id is None
    with pytest.raises(InvalidInputError, match="nothing to extract"):
        engine.checked_extract("<bli-memory-recall>only this</bli-memory-recall>", space="s", source="h")
    with pytest.raises(InvalidInputError):
        engine.checked_extract("User: hi", space="s", source="h", job_id="not-a-uuid")


def test_an_upsert_compares_metadata_and_expiry_as_stored(engine: MemoryEngine, store: FakeStore) -> None:
    def save(**extra: Any) -> Any:
        return engine.save("Retries: on.", space="s", custom_id="retries", **extra)

    first = save(metadata={"enabled": 1})
    assert save(metadata={"enabled": 1.0}).status == "updated"  # 1.0 is not 1 in JSON
    keyed = save(metadata={1: "x"})
    assert keyed.status == "updated" and keyed.memory.metadata == {"1": "x"}  # as JSON keeps it
    assert save(metadata={1: "x"}).status == "duplicate"
    longer = save(expires_at="2099-07-01")
    assert longer.status == "updated" and longer.memory.expires_at == "2099-07-01T00:00:00.000000Z"
    assert first.memory.id != longer.memory.id


def test_a_twin_that_lives_longer_carries_its_expiry_forward(engine: MemoryEngine, store: FakeStore) -> None:
    brief = engine.save("The VPN is down.", space="s", expires_at="2099-06-01T12:00:03Z")
    shorter = engine.save("The VPN is down.", space="s", expires_at="2099-06-01T12:00:02Z")
    assert shorter.status == "duplicate" and shorter.memory.id == brief.memory.id
    kept = engine.save("The VPN is down.", space="s")
    assert kept.status == "updated" and kept.previous == brief.memory and kept.memory.expires_at is None
    assert [m.content for m, _ in store.rows if m.state == "active"] == ["The VPN is down."]


@pytest.mark.parametrize("call", [
    lambda e: e.forget(space="s", id=5),
    lambda e: e.forget(space="s", content=["x"]),
    lambda e: e.forget(space="s", query=5),
    lambda e: e.forget(space="s", query="\ud800 bad"),
    lambda e: e.forgotten_by(space="s", since=float("nan"), content="x"),
    lambda e: e.forgotten_by(space="s", since=1e20, content="x"),
    lambda e: e.forgotten_by(space="s", since="0", content="x"),
    lambda e: e.save("x", space=7),
    lambda e: e.save("x", space=""),
    lambda e: e.save("x", space="my project"),
    lambda e: e.save("x", space="s", source=5),
    lambda e: e.update("x", space="s", custom_id=["x"]),
    lambda e: e.update("x", space="s", id="a", source=5),
    lambda e: e.checked_extract("User: a\x00b", space="s", source="h"),
    lambda e: e.list_memories(space="s", limit="abc"),
])
def test_bad_input_is_a_clear_refusal(engine: MemoryEngine, call: Any) -> None:
    with pytest.raises(InvalidInputError):
        call(engine)


def test_text_longer_than_any_memory_is_not_searched_for(engine: MemoryEngine, store: FakeStore) -> None:
    with pytest.raises(NotFoundError, match="at most 20000 characters"):
        engine.forget(space="s", content="x" * 50_000)
    assert "open" not in store.events  # refused before any write session


def test_a_retried_forget_by_query_is_not_another_memorys(engine: MemoryEngine, store: FakeStore) -> None:
    a = engine.save("The API listens on port 8080.", space="s").memory
    b = engine.save("The API listens on port 8081.", space="s").memory
    engine.forget(space="s", id=b.id)  # another request's forget
    query = "The API listens on port 8080."
    store.similarities[(query, b.content)] = 0.93
    assert engine.forgotten_by(space="s", since=0.0, query=query) is None  # a (live) is closer
    engine.forget(space="s", id=a.id)
    found = engine.forgotten_by(space="s", since=0.0, query=query)
    assert found is not None and found.memory.id == a.id


def test_a_keyless_twin_only_lengthens_a_keyed_memorys_life(engine: MemoryEngine, store: FakeStore) -> None:
    keyed = engine.save("Likes green tea.", space="s", custom_id="drink", source="mcp",
                        metadata={"kind": "preference", "note": "keep"}, expires_at="2099-07-01").memory
    later = engine.save("Likes green tea.", space="s", metadata={"kind": "note"}, source="hook:claude")
    assert later.status == "updated" and later.memory.expires_at is None
    assert (later.memory.custom_id, later.memory.metadata, later.memory.source) == (
        "drink", {"kind": "preference", "note": "keep"}, keyed.source)


def test_a_retried_forget_by_text_answers_the_forget_done_even_with_a_live_copy(engine: MemoryEngine) -> None:
    engine.save("Prefers tabs.", space="s")
    engine.save("Prefers tabs.", space="s", custom_id="indent")  # a second live copy, under a key
    gone = engine.forget(space="s", content="Prefers tabs.")
    again = engine.forgotten_by(space="s", since=0.0, content="Prefers tabs.")
    assert again is not None and again.memory.id == gone.memory.id  # the retry does not forget the other

