"""A forget sticks: automatic capture respects tombstones (embedded store, real processes).

The repro: the same stop hook twice (two queued jobs), ``worker --once --max-jobs 1``,
``memory forget ID``, ``worker --once``. The second job ran after the forget and must not
bring the forgotten memory back; a later capture restating it is ``unchanged``; an
explicit save still saves it.
"""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from tests.conftest import bin_path
from tests.core.extraction.test_worker import (
    backend,
    done_lines,
    live,
    space_of,
    stop,
    worker,
    write_transcript,
)

pytestmark = [pytest.mark.e2e, pytest.mark.e2e]  # starts processes or servers (tests/tiers.py)

DECISION = "We decided the public API listens on port 8443 because the load balancer expects it."


@pytest.fixture
def project(tmp_path: Path) -> Path:
    p = tmp_path / "project"
    p.mkdir()
    return p


def _forget(memory_id: str, project: Path) -> None:
    proc = subprocess.run([bin_path(), "memory", "forget", memory_id, "--space", space_of(project)],
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr


def test_a_job_queued_before_the_forget_does_not_bring_it_back(project: Path, tmp_path: Path) -> None:
    transcript = write_transcript(tmp_path / "s.jsonl", [(DECISION, "Noted.")])
    stop(project, transcript)
    stop(project, transcript)  # two jobs with the same exchange
    (first,) = done_lines(worker("--max-jobs", "1").stderr)
    assert first["added"] == 1, first
    (memory,) = [m for m in live(project) if "8443" in m.content]

    _forget(memory.id, project)
    assert not [m for m in live(project) if "8443" in m.content]

    (second,) = done_lines(worker().stderr)
    assert second["added"] == 0 and second["updated"] == 0 and second["conflicted"] == 0, second
    assert second["unchanged"] == 1
    assert not [m for m in live(project) if "8443" in m.content]  # still forgotten

    # A later session restates it with a lead-in: suppressed, reported unchanged.
    again = write_transcript(tmp_path / "t.jsonl", [("Reminder: " + DECISION[0].lower() + DECISION[1:],
                                                     "Thanks.")])
    stop(project, again)
    (third,) = done_lines(worker().stderr)
    assert third["added"] == 0 and third["unchanged"] == 1, third
    assert not [m for m in live(project) if "8443" in m.content]

    # The agent asks explicitly: that is saved.
    b = backend()
    try:
        saved = b.save(memory.content, space=space_of(project), source="mcp")
        assert saved.status == "created" and saved.memory is not None
    finally:
        b.close()
    assert [m.id for m in live(project) if "8443" in m.content] == [saved.memory.id]


def test_a_statement_about_another_value_is_not_suppressed(project: Path, tmp_path: Path) -> None:
    stop(project, write_transcript(tmp_path / "a.jsonl", [(DECISION, "Noted.")]))
    worker()
    (memory,) = [m for m in live(project) if "8443" in m.content]
    _forget(memory.id, project)
    stop(project, write_transcript(tmp_path / "b.jsonl", [
        ("We decided the admin UI listens on port 9443 because the VPN only opens that port.", "Ok.")]))
    (line,) = done_lines(worker().stderr)
    assert line["added"] == 1, line
    assert [m.content for m in live(project) if "9443" in m.content]


def test_restates_covers_lead_ins_and_shorter_restatements_only() -> None:
    from bli_memory.core.extraction.tombstones import restates

    gone = [DECISION]
    assert restates(DECISION, gone) == DECISION
    assert restates("Reminder: " + DECISION, gone) == DECISION
    assert restates("Reminder: we decided the API port is 8443.", gone) == DECISION
    assert restates("We decided the admin UI listens on port 9443.", gone) is None  # another value
    assert restates("We decided the public API never listens on port 8443.", gone) is None  # negated
    assert restates("The load balancer expects health checks on /healthz.", gone) is None


STAGING = "We decided staging uses port 8443 for the load balancer."
RESTATED = "Reminder: the staging port is 8443."


def test_a_purge_sticks_against_queued_and_later_captures_in_other_words(project: Path,
                                                                         tmp_path: Path) -> None:
    from bli_memory.core.paths import store_path

    stop(project, write_transcript(tmp_path / "a.jsonl", [(STAGING, "Noted.")]))
    worker()
    (memory,) = [m for m in live(project) if "8443" in m.content]
    stop(project, write_transcript(tmp_path / "b.jsonl", [(RESTATED, "Right.")]))  # queued before the purge

    proc = subprocess.run([bin_path(), "memory", "purge", memory.id, "--yes"], capture_output=True, text=True,
                          timeout=120)
    assert proc.returncode == 0, proc.stderr
    (line,) = done_lines(worker().stderr)
    assert line["added"] == 0 and line["unchanged"] >= 1, line
    assert not [m for m in live(project) if "8443" in m.content]

    agreed = STAGING.replace("We decided", "As agreed, we decided")
    stop(project, write_transcript(tmp_path / "c.jsonl", [(agreed, "Sure.")]))
    (later,) = done_lines(worker().stderr)
    assert later["added"] == 0, later
    assert not [m for m in live(project) if "8443" in m.content]

    # A purge keeps no text: the words of the purged memory are nowhere in the files.
    for path in store_path().parent.glob(store_path().name + "*"):
        assert b"load balancer" not in path.read_bytes(), path

    # The agent asks explicitly: that is saved.
    b = backend()
    try:
        assert b.save(STAGING, space=space_of(project), source="mcp").status == "created"
    finally:
        b.close()


@pytest.mark.parametrize("how", ["forget", "purge"])
def test_a_forget_does_not_suppress_other_facts_with_the_same_value(project: Path, tmp_path: Path,
                                                                    how: str) -> None:
    b = backend()
    try:
        saved = b.save("The staging port is 8443.", space=space_of(project), source="mcp")
    finally:
        b.close()
    if how == "forget":
        _forget(saved.memory.id, project)
    else:
        proc = subprocess.run([bin_path(), "memory", "purge", saved.memory.id, "--yes"], capture_output=True,
                              text=True, timeout=120)
        assert proc.returncode == 0, proc.stderr
    said = ("Remember this: the staging port is 8 443. Also remember: the production port is 8443. "
            "And the metrics port is 8443.")
    stop(project, write_transcript(tmp_path / "a.jsonl", [(said, "Noted.")]))
    (line,) = done_lines(worker().stderr)
    assert line["added"] == 2 and line["unchanged"] == 1, line
    kept = sorted(m.content for m in live(project))
    assert len(kept) == 2 and "production" in kept[1] and "metrics" in kept[0], kept
