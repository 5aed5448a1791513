"""The store reads behind the browser's pages: keyset pages, counts per space, jobs; and
the charts, which escape what they draw."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from bli_memory.core.embedded.store import SQLiteStore
from bli_memory.core.ui.charts import bar_chart, line_chart
from tests.core.embedded.rows import forget_row, save_row, supersede_row


def _store(tmp_path: Path) -> SQLiteStore:
    return SQLiteStore(tmp_path / "m.sqlite3", model_name="test-model", dimensions=4)


def _vec(i: int) -> np.ndarray:
    v = np.array([1.0, i % 3, i % 5, 1.0], dtype=np.float32)
    return v / np.linalg.norm(v)


def test_pages_cover_every_live_row_once_newest_first(tmp_path: Path) -> None:
    store = _store(tmp_path)
    try:
        for i in range(23):
            save_row(store, f"memory {i}", _vec(i), space="a")
        save_row(store, "elsewhere", _vec(1), space="b")
        gone = save_row(store, "to forget", _vec(2), space="a")
        forget_row(store, gone)
        seen, before = [], None
        while True:
            page = store.browse.page_live(("a",), before_seq=before, limit=10)
            if not page:
                break
            seen += [m.content for _, m in page]
            before = page[-1][0]
        assert seen == [f"memory {i}" for i in range(22, -1, -1)]
    finally:
        store.close()


def test_space_counts_and_aliases(tmp_path: Path) -> None:
    store = _store(tmp_path)
    try:
        for i in range(3):
            save_row(store, f"a {i}", _vec(i), space="a")
        first = save_row(store, "b 0", _vec(0), space="b")
        supersede_row(store, first, "b 1", _vec(1))
        store.add_alias("b_old", "b")
        assert store.browse.space_counts() == [("a", {"active": 3, "superseded": 0, "forgotten": 0}),
                                        ("b", {"active": 1, "superseded": 1, "forgotten": 0})]
        assert store.browse.space_counts(limit=1)[0][0] == "a"
        assert store.aliases() == {"b": ["b_old"]}
    finally:
        store.close()


def test_recent_jobs_never_carry_the_text(tmp_path: Path) -> None:
    store = _store(tmp_path)
    try:
        first = store.jobs.enqueue_job("user: secret-ish raw exchange", space="a", source="hook:claude",
                                  session_id="s")
        store.jobs.enqueue_job("user: second", space="a", source="hook:codex", session_id=None)
        job = store.jobs.claim_job("w", lease_seconds=30, max_attempts=3)
        assert job is not None and job.id == first
        store.jobs.finish_job(first, "w", {"added": 1, "updated": 0, "unchanged": 2, "conflicted": 0})
        jobs = store.jobs.recent_jobs()
        assert [j["state"] for j in jobs] == ["queued", "done"]
        assert jobs[1]["outcome"]["unchanged"] == 2 and jobs[0]["outcome"] is None
        assert all("text" not in j for j in jobs)
        assert "raw exchange" not in repr(jobs)
    finally:
        store.close()


def test_charts_escape_every_label() -> None:
    evil = "<script>alert(1)</script>&"
    svg = bar_chart(evil, [(evil, 3), ("ok", 0)])
    assert "<script>" not in svg and "&lt;script&gt;" in svg and "&amp;" in svg
    line = line_chart(evil, [evil, "b"], {evil: [1.0, None]})
    assert "<script>" not in line and "&lt;script&gt;" in line
    assert bar_chart("t", []) == "" and line_chart("t", ["a"], {"x": [None]}) == ""
