"""The default extractor on lines of the tuning sessions of bench/data: what changed this round.

Each case is a kind of line the rules handled wrongly in the replay of the tuning part
of the real-session bench (bench/extraction_sessions.py); the lines are shaped like the
ones there, not copied.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from bli_memory.core.extraction import durability
from bli_memory.core.extraction.candidates import candidates
from bli_memory.core.extraction.extractors import RuleExtractor
from bli_memory.core.extraction.rephrase import list_intro

REPO = Path(__file__).resolve().parents[3]


def kept(user: str, assistant: str = "Ok.") -> list[str]:
    return [s.text for s in RuleExtractor().extract(f"User: {user}\n\nAssistant: {assistant}")]


def test_a_limitation_of_the_setup_is_kept_as_a_root_cause() -> None:
    assert kept("does it check the pid of the session?",
                "Unfortunately, there's no direct way to map a `claude` process PID to its session ID "
                "from the JSONL files alone.") == [
        "Unfortunately, there's no direct way to map a `claude` process PID to its session ID from the "
        "JSONL files alone."]
    # It stays true while the setup does, though it reads like the moment.
    assert kept("why did it export the wrong one",
                "The script currently picks the newest JSONL file, which could be from a different "
                "concurrent session.") == [
        "The script currently picks the newest JSONL file, which could be from a different concurrent "
        "session."]


def test_a_place_the_person_names_outlives_the_request() -> None:
    out = kept("I would like to create a folder called exports/ and have each session saved in it.")
    assert out == ["The user wants to create a folder called exports/ and have each session saved in it."]
    assert kept("Commit and push it.") == []


def test_a_sentence_that_introduces_a_list_keeps_its_statement() -> None:
    assert list_intro("This is a static website project for Acme - a company site with pages for:") == (
        "This is a static website project for Acme.")
    assert list_intro("Here are the options:") == "Here are the options:"
    assert list_intro("The project is a CLI for Acme.") == "The project is a CLI for Acme."
    assert kept("look at this folder",
                "This is a static website project for Acme - a company site with pages for:\n\n"
                "- Services\n- Contact") == ["The project is a static website project for Acme."]


@pytest.mark.parametrize("line", [
    "Missing Troubleshooting Guide - The docs/ folder has no troubleshooting page.",
    "Line Count Discrepancy - Documentation claims 1,066 lines, actual is 798 lines.",
    "Settings Contains Test-Specific Paths - Experimental paths in `.claude/settings.local.json`.",
])
def test_an_audit_entry_of_the_moment_is_dropped(line: str) -> None:
    title, rest = line.split(" - ", 1)
    assert kept("audit the repo", f"## Gaps\n\n1. **{title}** - {rest}") == []


def test_an_entry_that_states_a_rule_is_not_an_audit_finding() -> None:
    assert durability.is_finding_item("Line Count Discrepancy - Documentation claims 1,066 lines.")
    assert not durability.is_finding_item("Claims - numbers must be sourced because readers check them.")
    assert not durability.is_finding_item("The API listens on port 8080.")


def test_a_sentence_that_only_points_back_is_dropped() -> None:
    assert kept("read the doctrine", "All content must conform to this standard.") == []
    assert kept("read the doctrine", "All content must conform to `DOCTRINE.md`.") == [
        "All content must conform to `DOCTRINE.md`."]
    assert not durability.points_back("I would prefer for this to be something I run on demand.")


def test_a_rule_given_as_label_and_values_is_kept() -> None:
    assert durability.is_rule_label("Headlines: 4-6 words, periods encouraged, no slogans.")
    assert not durability.is_rule_label("Backend: Node.js + Express + SQLite.")


def test_a_label_line_is_its_own_item() -> None:
    texts = [c.text for c in candidates(
        "Assistant: Proposed stack:\nBackend: Node.js + Express + SQLite\nFrontend: React with Vite")]
    assert "Backend: Node.js + Express + SQLite" in texts
    assert "Frontend: React with Vite" in texts


def test_candidates_carry_the_rules_verdict() -> None:
    got = {c.text: c.rule_keep for c in candidates(
        "User: where do sessions live?\n\nAssistant: Claude Code stores sessions in `~/.claude/projects/`. "
        "Let me check the folder for you now.")}
    assert got["Claude Code stores sessions in `~/.claude/projects/`."] is True
    assert got["Let me check the folder for you now."] is False


@pytest.mark.e2e
@pytest.mark.e2e
def test_the_bench_replays_a_revision_with_its_own_capture_modules() -> None:
    """``load_version`` must not mix a revision's extraction with this tree's rules."""
    found = subprocess.run(["git", "cat-file", "-e", "3c5eb55^{commit}"], cwd=REPO, capture_output=True)
    if found.returncode:
        pytest.skip("not a git checkout with history")
    script = (
        "import sys; sys.path.insert(0, 'bench')\n"
        "from extraction_sessions import load_version\n"
        "import bli_memory.core.extraction.durability as now\n"
        "with load_version('3c5eb55') as (cls, distil):\n"
        "    then = sys.modules['bli_memory.core.durability']\n"  # that revision's flat name
        "    inside = hasattr(then, 'is_limitation')\n"
        "import bli_memory.core.extraction.durability as after\n"
        "gone = 'bli_memory.core.durability' not in sys.modules\n"
        "print(json.dumps([inside, after is now, hasattr(after, 'is_limitation'), gone]))\n"
    )
    out = subprocess.run([sys.executable, "-c", "import json\n" + script], cwd=REPO, capture_output=True,
                         text=True, check=True)
    assert json.loads(out.stdout) == [False, True, True, True]


def test_a_heading_states_nothing_but_a_heading_label_names_the_next_line() -> None:
    heading = "### Arguments for moving it to `bonus/`\n\n- Visibility for reviewers"
    assert kept("should it move?", heading) == []
    assert kept("where do exports go?", "### Output Location:\n`~/exports/YYYY-MM-DD/`") == [
        "The output location is `~/exports/YYYY-MM-DD/`."]


@pytest.mark.parametrize("line", [
    "Use it as the entry point before diving into `hooks/` workflows.",
    "Commit hash: `fe6d2cc`",
    "I need to explore the `docimp` structure to understand how different it is.",
])
def test_advice_about_it_a_commit_hash_and_intentions_are_dropped(line: str) -> None:
    assert kept("what do you think of the bonus file?", line) == []


def test_a_restriction_of_the_setup_is_kept() -> None:
    line = "Plan mode restricts me from making any changes to the system, including git operations."
    assert kept("commit and push the bonus folder", line) == [line]


def test_what_another_session_is_doing_and_a_request_to_read_are_not_facts() -> None:
    assert kept("(Note: another instance of you is writing a README for the `bonus` folder.") == []
    assert kept("Read the README in `bonus/` if you haven't already.") == []


@pytest.mark.e2e
@pytest.mark.e2e
def test_the_bench_never_shows_the_test_part() -> None:
    out = subprocess.run([sys.executable, "bench/extraction_sessions.py", "--show", "test"], cwd=REPO,
                         capture_output=True, text=True)
    assert out.returncode != 0 and "test part stays blind" in out.stderr
    assert "[durable]" not in out.stdout and "[noise]" not in out.stdout


@pytest.mark.e2e  # runs the bench as a process
def test_the_bench_replays_the_tuning_part_alone_only() -> None:
    out = subprocess.run([sys.executable, "bench/extraction_sessions.py", "--split", "test"], cwd=REPO,
                         capture_output=True, text=True)
    assert out.returncode != 0 and "test part is read once" in out.stderr
    assert "@0.6" not in out.stdout


@pytest.mark.e2e  # runs the bench as a process
def test_the_trained_gates_skip_the_test_lines_before_parsing_them() -> None:
    """``bench/extraction_train.py`` and ``extraction_gate.py`` drop a test line by its text, unparsed."""
    lines = (REPO / "bench" / "data" / "real_sessions.jsonl").read_text().splitlines()
    test_lines = [line for line in lines if line.strip() and json.loads(line)["split"] == "test"]
    assert test_lines and all('"split": "test"' in line for line in test_lines)
    script = ("import sys, json; sys.path.insert(0, 'bench')\n"
              "from extraction_train import tuning_rows\n"
              "rows = tuning_rows()\n"
              "print(json.dumps([len(rows), sorted({r['split'] for r in rows})]))\n")
    out = subprocess.run([sys.executable, "-c", script], cwd=REPO, capture_output=True, text=True, check=True)
    tuning = sum(1 for line in lines if line.strip()) - len(test_lines)
    assert json.loads(out.stdout) == [tuning, ["tuning"]]


def test_do_not_opens_a_rule_not_a_request() -> None:
    """"Do so" asks for the task at hand; "Do not ..." states a standing rule."""
    assert kept("Do not use emoji in commit messages or code comments.") == [
        "Per the user, do not use emoji in commit messages or code comments."]
    assert kept("Do so and then update any markdown files where it is referenced.") == []


def test_the_real_session_data_is_split_by_session_and_sourced() -> None:
    data = (REPO / "bench" / "data" / "real_sessions.jsonl").read_text()
    rows = [json.loads(line) for line in data.splitlines() if line.strip()]
    splits: dict[str, set[str]] = {}
    for row in rows:
        splits.setdefault(row["session"], set()).add(row["split"])
        assert row["split"] in ("tuning", "test")
        assert row["text"].startswith("User: ") and "\n\nAssistant: " in row["text"]
        assert row["source"]["repository"] and row["source"]["path"] and row["source"]["licence"]
        assert len(row["source"]["commit"]) == 40
        assert all(isinstance(f, str) and f for f in row["facts"])
    assert all(len(s) == 1 for s in splits.values()), "a session must sit in one split"
    readme = (REPO / "bench" / "data" / "README.md").read_text()
    assert all(f"| {name} |" in readme for name in splits), "every session has a row in the sources table"
