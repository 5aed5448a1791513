"""Side indexes (keyword BM25 with top-k pruning, HNSW) and the context channel, on a real store."""

from __future__ import annotations

import sqlite3
from contextlib import closing
from pathlib import Path

import pytest

from bli_memory.core.embedded import keyword_index
from bli_memory.core.embedded.engine import EmbeddedBackend
from bli_memory.core.embedded.search_source import EmbeddedChannels
from bli_memory.core.memory.ranking import RankingConfig
from bli_memory.core.memory.terms import index_text, query_forms, query_terms

SPACE = "bench_side"

FACTS = [
    "We deploy the billing service with make release-billing after the BLI-3580 migration.",
    "Ana prefers ruff over flake8 for the payments repo; keep configs in pyproject.toml.",
    "Decision (BLI-4410): the search service moves to eu-west-1 next sprint, owned by Ben.",
    "The flaky test in tests/conftest.py fails when pytest runs in parallel.",
    "Convention: every gateway endpoint logs a request id; see core/logging.py for the formatter.",
    "Backups of the ledger database run nightly at 02:00 UTC to the staging bucket.",
    "The checkout feature flag new_cart must stay off in production until BLI-5120 lands.",
    "To debug the scheduler locally run docker compose up scheduler.",
    "Use Python 3.11 for the ingest worker; 3.12 broke the build in BLI-6001.",
    "Release notes for the mailer go in docs/CHANGES.md; Chloe reviews them before the tag.",
    "Café opening hours changed: the team lunch moves to the café on Friday.",
    "In api/routes.ts, fetchUserName retries three times with exponential backoff.",
]
QUERIES = [
    "how do we deploy billing", "BLI-3580", "who owns the search move", "why is the test flaky",
    "when do ledger backups run", "is new_cart on in production", "which python for ingest",
    "cafe lunch", "fetch_user_name retries", "release notes reviewer",
]


def _backend(path: Path, **kw: int) -> EmbeddedBackend:
    return EmbeddedBackend(path, **kw)


@pytest.fixture
def store_path(tmp_path: Path) -> Path:
    path = tmp_path / "memory.sqlite"
    b = _backend(path)
    for fact in FACTS:
        b.save(fact, space=SPACE)
    b.close()
    return path


def _ids(result: object) -> list[str]:
    return [h.memory.id for h in result.hits]  # type: ignore[attr-defined]


def test_keyword_index_ranks_like_fts5_over_the_same_terms(store_path: Path) -> None:
    exact = _backend(store_path)
    indexed = _backend(store_path, keyword_index_min_rows=0, vector_index_min_rows=10**9)
    side = indexed.enable_side_indexes(background=False)
    vs = exact.store.vectors((SPACE,))
    fts5 = EmbeddedChannels(exact.store, (SPACE,), None, exact._embed_one)
    for q in QUERIES:
        terms = query_terms(q)
        for every in (True, False):
            want = fts5._keyword(terms, 50, every=every)
            got = side.keyword_query((SPACE,), vs, query_forms(terms), 50, every=every)
            assert got is not None
            assert set(got) == set(want), (q, every)
            if want:
                assert got[0] == want[0], (q, every)  # the best row agrees (no ties in these facts)
    assert side.status() == {f"keyword:{SPACE}": "ready"}
    exact.close()
    indexed.close()


def test_search_with_both_side_indexes_matches_the_exact_engine(store_path: Path) -> None:
    exact = _backend(store_path)
    indexed = _backend(store_path, keyword_index_min_rows=0, vector_index_min_rows=0)
    indexed.enable_side_indexes(background=False)
    for q in QUERIES:
        a, b = exact.search(q, space=SPACE, limit=3), indexed.search(q, space=SPACE, limit=3)
        assert _ids(a)[:1] == _ids(b)[:1], q
        # Similarities shown are exact cosines, whichever index found the row.
        sims_a = {h.memory.id: h.similarity for h in a.hits}
        for h in b.hits:
            if h.memory.id in sims_a:
                assert h.similarity == sims_a[h.memory.id]
    assert set(indexed.side_indexes.status().values()) == {"ready"}  # type: ignore[union-attr]
    exact.close()
    indexed.close()


def test_side_indexes_follow_saves_updates_forgets_and_other_processes(store_path: Path) -> None:
    b = _backend(store_path, keyword_index_min_rows=0, vector_index_min_rows=0)
    b.enable_side_indexes(background=False)
    assert b.search("BLI-3580", space=SPACE).hits
    saved = b.save("The quarkfield cache is warmed by the nightly job.", space=SPACE)
    hit = b.search("quarkfield", space=SPACE).hits
    assert [h.memory.id for h in hit] == [saved.memory.id]

    upd = b.update("The zephyrine cache is warmed by the hourly job.", space=SPACE, id=saved.memory.id)
    assert not b.search("quarkfield", space=SPACE).hits
    assert [h.memory.id for h in b.search("zephyrine", space=SPACE).hits] == [upd.memory.id]

    # A write by another process (another engine on the same file) is seen too.
    other = _backend(store_path)
    theirs = other.save("Ivan renamed the mailer queue to postbox.", space=SPACE)
    other.forget(space=SPACE, id=upd.memory.id)
    other.close()
    assert [h.memory.id for h in b.search("postbox", space=SPACE).hits][:1] == [theirs.memory.id]
    assert not b.search("zephyrine", space=SPACE).hits
    b.close()


def test_background_build_serves_exact_results_until_ready(store_path: Path) -> None:
    b = _backend(store_path, keyword_index_min_rows=0, vector_index_min_rows=0)
    side = b.enable_side_indexes()  # background, as the daemon and MCP server run it
    first = b.search("BLI-3580", space=SPACE)
    assert first.hits and "BLI-3580" in first.hits[0].memory.content
    side.wait(60)
    assert set(side.status().values()) == {"ready"}
    again = b.search("BLI-3580", space=SPACE)
    assert _ids(again)[:1] == _ids(first)[:1]
    b.close()


def test_small_spaces_keep_the_exact_paths(store_path: Path) -> None:
    b = _backend(store_path)  # default thresholds: 20k / 50k rows
    side = b.enable_side_indexes(background=False)
    assert b.search("BLI-3580", space=SPACE).hits
    assert side.status() == {}
    b.close()


def test_warm_up_turns_side_indexes_on(store_path: Path) -> None:
    b = _backend(store_path)
    assert b.side_indexes is None
    b.warm_up()
    assert b.side_indexes is not None
    b.close()


def test_keyword_index_folds_diacritics_like_fts5() -> None:
    index = keyword_index.KeywordIndex()
    index.add([(1, index_text("Lunch at the café")), (2, index_text("Coffee at the office"))])
    index.commit()
    assert index.query(query_forms(query_terms("cafe")), 5) == [1]
    assert index.query(query_forms(query_terms("café")), 5) == [1]
    # Only Latin letters lose their marks, as in FTS5: ligatures, superscripts, full-width
    # letters and Greek accents stay what they are.
    assert keyword_index.fold("Crème brûlée") == "Creme brulee"
    for kept in ("\ufb01le", "x\u00b2", "\uff46ull", "\u1f48\u03b4\u03c5\u03c3\u03c3\u03ad\u03c5\u03c2"):
        assert keyword_index.fold(kept) == kept
    index.remove([1])
    index.commit()
    assert index.query(query_forms(query_terms("cafe")), 5) == []
    assert len(index) == 1


def test_context_channel_brings_the_reply_to_a_matching_turn(tmp_path: Path) -> None:
    b = _backend(tmp_path / "m.sqlite")
    turns = [
        "Ana: Did anyone look at the flaky payments reconciliation job last night?",
        "Ben: Yes, I pinned the worker pool to four and it has been green since.",
        "Ana: Great, thanks.",
        "Chloe: Lunch is at noon today.",
    ]
    ids = [b.save(t, space=SPACE, session_id="s1").memory.id for t in turns]
    for i in range(30):  # unrelated turns of other sessions
        b.save(f"Omar: note {i} about the gateway rollout plan and its dashboards", space=SPACE,
               session_id=f"other{i}")
    q = "what happened with the flaky payments reconciliation job"
    with_ctx = b.search(q, space=SPACE, limit=3)
    assert _ids(with_ctx)[0] == ids[0]
    reply = next(h for h in with_ctx.hits if h.memory.id == ids[1])
    assert "context" in reply.channels
    without = b.search(q, space=SPACE, limit=3, ranking=RankingConfig(context_weight=0.0))
    assert all("context" not in h.channels for h in without.hits)
    b.close()


def test_context_channel_never_crosses_sessions_or_spaces(tmp_path: Path) -> None:
    b = _backend(tmp_path / "m.sqlite")
    anchor = b.save("The zanzibar deploy key rotates monthly.", space=SPACE, session_id="s1")
    b.save("An unrelated remark in another session.", space=SPACE, session_id="s2")
    b.save("A remark in another space, same session id.", space="other_space", session_id="s1")
    b.save("A remark without a session.", space=SPACE)
    res = b.search("zanzibar deploy key", space=SPACE, limit=10)
    assert _ids(res)[0] == anchor.memory.id
    assert all("context" not in h.channels for h in res.hits)
    b.close()


def test_session_index_exists(store_path: Path) -> None:
    conn = sqlite3.connect(store_path)
    names = {r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type = 'index'")}
    conn.close()
    assert "memories_session" in names


def test_a_purged_row_never_lends_its_number_to_the_next_save(store_path: Path) -> None:
    b = _backend(store_path, keyword_index_min_rows=0, vector_index_min_rows=0)
    b.enable_side_indexes(background=False)
    secret = b.save("The prod door code is zebra7731.", space=SPACE).memory
    assert b.search("zebra7731", space=SPACE).hits  # indexes built with the secret in them
    assert b.purge(secret.id) == 1
    other = _backend(store_path)  # the next save may come from another process
    new = other.save("Kubernetes ingress uses the nginx controller.", space=SPACE).memory
    other.close()
    assert not b.search("zebra7731", space=SPACE).hits
    hit = b.search("kubernetes ingress nginx", space=SPACE).hits[0]
    assert hit.memory.id == new.id and "keyword_all" in hit.channels
    with closing(sqlite3.connect(store_path)) as conn:
        seqs = {int(r[0]) for r in conn.execute("SELECT seq FROM memories")}
    assert max(seqs) > len(FACTS) + 1  # the purged number was skipped, not reused
    b.close()


def test_a_failing_index_falls_back_to_exact_search_and_is_retried_later(store_path: Path) -> None:
    from bli_memory.core.embedded import side_indexes

    b = _backend(store_path, keyword_index_min_rows=0, vector_index_min_rows=10**9)
    side = b.enable_side_indexes(background=False)
    calls = {"n": 0}

    def broken(seqs):  # the store read a build needs fails
        calls["n"] += 1
        raise OSError("disk went away")

    side._fetch_terms = broken
    exact = _backend(store_path)
    for q in ("BLI-3580", "who owns the search move"):
        assert _ids(b.search(q, space=SPACE)) == _ids(exact.search(q, space=SPACE))
    assert side.status() == {f"keyword:{SPACE}": "failed"} and calls["n"] == 1  # not retried at once

    side._fetch_terms = lambda seqs: b.store.keyword_terms(seqs)
    side._slots[("keyword", SPACE)].failed_at -= side_indexes.RETRY_S + 1
    assert _ids(b.search("BLI-3580", space=SPACE))[:1] == _ids(exact.search("BLI-3580", space=SPACE))[:1]
    assert side.status() == {f"keyword:{SPACE}": "ready"}

    # A sync that breaks after the build drops the index; the search still answers.
    b.save("A new fact about the zanzibar cache.", space=SPACE)
    side._fetch_terms = broken
    assert b.search("zanzibar cache", space=SPACE).hits
    assert side.status().get(f"keyword:{SPACE}") != "ready"  # dropped (and its rebuild failed too)
    exact.close()
    b.close()


def test_indexes_kept_per_process_are_bounded(tmp_path: Path) -> None:
    from bli_memory.core.embedded import side_indexes

    b = _backend(tmp_path / "m.sqlite", keyword_index_min_rows=0, vector_index_min_rows=10**9)
    side = b.enable_side_indexes(background=False)
    for i in range(side_indexes.MAX_SLOTS + 3):
        b.save(f"Fact {i} about the gateway.", space=f"space_{i}")
        assert b.search("gateway", space=f"space_{i}").hits
    assert len(side.status()) == side_indexes.MAX_SLOTS
    assert f"keyword:space_{side_indexes.MAX_SLOTS + 2}" in side.status()
    b.close()


def test_keyword_removals_are_tombstones_until_a_batch_is_deleted() -> None:
    index = keyword_index.KeywordIndex()
    index.add([(i, index_text(f"deploy note {i} zeta")) for i in range(1, 101)])
    index.commit()
    index.remove([1, 2, 3])
    index.commit()  # nothing to write: only tombstones
    assert len(index) == 97 and index.num_docs() == 100
    found = index.query(query_forms(query_terms("zeta")), 100)
    assert len(found) == 97 and not {1, 2, 3} & set(found)
    index.add([(2, index_text("deploy note two omega"))])  # back, with other terms
    index.commit()
    assert index.query(query_forms(query_terms("omega")), 5) == [2]
    assert 2 not in index.query(query_forms(query_terms("zeta")), 100)
    index.remove(range(10, 10 + keyword_index.TOMBSTONES + 1))
    index.commit()
    assert index.num_docs() == len(index) == 100 - 2 - keyword_index.TOMBSTONES - 1
