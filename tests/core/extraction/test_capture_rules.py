"""The default extractor on lines of real sessions: durable kept and rewritten, the rest dropped.

Each case is a kind of line that the offline rules kept before (or stored word for word)
in a replay of public Claude Code sessions; see docs/extraction.md.
"""

from __future__ import annotations

import pytest

from bli_memory.core.extraction.extractors import RuleExtractor
from bli_memory.core.extraction.rephrase import attribute_user, home_to_tilde, label_value


def kept(user: str, assistant: str = "Ok.") -> list[str]:
    return [s.text for s in RuleExtractor().extract(f"User: {user}\n\nAssistant: {assistant}")]


@pytest.mark.parametrize("line", [
    "The script has been updated with XML support and the export now works.",
    "🎉 The XML file is now showing in the output!",
    "The files are identical - both already have XML support in `export.py`.",
    "The `/user:export` slash command is working flawlessly.",
    "The parent process of our shell is PID 41749, which is a `claude` process.",
    "Current session: `f33cdb42-0a41-40d4-91eb-c89c109af38a.jsonl`",
    "Runs the Python script `export.py` automatically.",
    "My recommendation: Go with the first approach - create both backend/ and frontend/ subfolders.",
    "Florida/ ├── backend/ ├── frontend/ └── README.md",
    "CTAs: Most are compliant (Explore Solutions, Talk to an Expert, Request Proposal).",
    "The export is saved in a timestamped folder in `exports/`, making it easy to track exports.",
])
def test_reports_of_the_moment_are_dropped(line: str) -> None:
    assert kept("add xml output to the exporter", line) == []


def test_the_persons_setup_becomes_a_fact_about_them_never_the_prompt() -> None:
    prompt = ("I am running Claude Code on wsl and I would like to create a process that automatically "
              "outputs a verbose output of each chat session in a folder somewhere under that session id.")
    assert kept(prompt) == ["The user runs Claude Code on WSL."]
    assert kept("that looks good an woiuld work but keep in mind often i have multiple claude code "
                "sessions running at one time in the same folder.") == [
        "The user often has multiple Claude Code sessions running at one time in the same folder."]


def test_a_request_for_the_task_at_hand_is_not_a_convention() -> None:
    assert kept("Great. Commit and push it. Use the --no-verify flag. Only stage/commit the files you "
                "changed") == []
    assert kept("Always use the --no-verify flag when pushing to the docs branch.") == [
        "Per the user, always use the --no-verify flag when pushing to the docs branch."]


def test_home_paths_become_tilde_and_project_paths_stay() -> None:
    assert home_to_tilde("Sessions live in /home/jim/.claude/projects/.") == (
        "Sessions live in ~/.claude/projects/.")
    assert home_to_tilde("See /Users/nik/Code/app/README.md") == "See ~/Code/app/README.md"
    assert home_to_tilde(r"Logs are in C:\Users\ann\AppData\x.log") == "Logs are in ~/AppData\\x.log"
    assert home_to_tilde("Config is in docs/ASSIGNMENT.md and /etc/app.conf") == (
        "Config is in docs/ASSIGNMENT.md and /etc/app.conf")
    assert kept("where are sessions kept",
                "Claude Code stores sessions in `/home/jim/.claude/projects/`.") == [
        "Claude Code stores sessions in `~/.claude/projects/`."]


def test_summary_lines_stand_alone() -> None:
    assert label_value("Session Storage Location: `~/.claude/projects/`") == (
        "The session storage location is `~/.claude/projects/`.")
    assert label_value("Current session: `f33c.jsonl`") == "Current session: `f33c.jsonl`"
    assert kept("read the documentation",
                "Establishes that the project follows the Enterprise Apple doctrine.") == [
        "The project follows the Enterprise Apple doctrine."]
    assert kept("read the docs", "Prohibited words: Strategic, Best-in-class, Cutting-edge.") == [
        "Prohibited words: Strategic, Best-in-class, Cutting-edge."]


@pytest.mark.parametrize(("said", "fact"), [
    ("We deploy the docs with mkdocs.", "The team deploys the docs with mkdocs."),
    ("I prefer small commits.", "The user prefers small commits."),
    ("My editor is Neovim.", "The user's editor is Neovim."),
    ("Production deploys go to Heroku.", "Per the user, production deploys go to Heroku."),
    ("I'd like this to be a slash command.", "The user wants this to be a slash command."),
])
def test_attribute_user(said: str, fact: str) -> None:
    assert attribute_user(said) == fact


def test_the_persons_requirements_and_context_are_kept_as_facts() -> None:
    out = kept("Please initialize this brand new, empty repo. It needs to be posted as a public repo on "
               "GitHub. The audience is a hiring team interested in me.")
    assert out == ["Per the user, the project needs to be posted as a public repo on GitHub.",
                   "Per the user, the audience is a hiring team interested in the user."]


@pytest.mark.parametrize(("prompt", "fact"), [
    ("Run migrations with `alembic upgrade head`.",
     "Per the user, run migrations with `alembic upgrade head`."),
    ("Please fix the login bug. Use `pytest -q` to run the tests.",
     "Per the user, use `pytest -q` to run the tests."),
])
def test_an_instruction_that_teaches_a_command_is_kept_even_in_a_request(prompt: str, fact: str) -> None:
    assert kept(prompt) == [fact]


@pytest.mark.parametrize("line", [
    "Good, the default is 'all' in `export.py`.",
    "`~/.claude/commands/export.md` - Slash command is up to date.",
    "The XML file is now available at `/mnt/c/python/cctrace/conversation_full.xml` for you to use.",
    "Your complete export tool in `export.py` is now fully functional and ready for use! 🎉",
    "The session ID is `f33cdb42-0a41-40d4-91eb-c89c109af38a`.",
])
def test_verdicts_status_and_identifiers_of_the_moment_are_dropped(line: str) -> None:
    assert kept("add xml output to the exporter", line) == []


def test_make_sure_asks_for_this_task_unless_it_states_a_standing_rule() -> None:
    assert kept("make sure all files in the current working directory are updated to latest versions.") == []
    assert kept("Always make sure `ruff check .` passes before every commit.") != []


def test_items_under_a_change_report_are_dropped_unless_they_say_where_or_how() -> None:
    reply = ("Perfect! All files in the working directory are up to date with:\n\n"
             "**Latest features included:**\n"
             "1. **Session ID fix** (uses actual session ID from metadata, not filename)\n"
             "2. **XML export** support with full metadata\n\n"
             "### Updated Files:\n"
             "- **Installed version** (`~/claude_sessions/export_claude_session.py`)\n"
             "- Command line: `--no-copy-to-cwd` flag to disable\n")
    assert kept("please copy any updated files to the working folder", reply) == [
        "The installed version is `~/claude_sessions/export_claude_session.py`.",
        "Command line: `--no-copy-to-cwd` flag to disable."]
    # The same items outside a change report are judged on their own.
    assert "XML export support with full metadata." in kept(
        "list the features", "Features:\n- **XML export** support with full metadata\n")


def test_switches_ignore_entries_and_root_causes_are_kept() -> None:
    assert kept("add an off switch", "- Added `claude_export_*/` to `.gitignore`") == [
        "`claude_export_*/` is in `.gitignore`."]
    assert kept("add an off switch", "Set `CLAUDE_EXPORT_COPY_TO_CWD=false` to skip the copy.") == [
        "Set `CLAUDE_EXPORT_COPY_TO_CWD=false` to skip the copy."]
    assert kept("why was the xml missing?",
                "The key fix was changing the default of `output_format` from 'md' to 'all'.") == [
        "The key fix was changing the default of `output_format` from 'md' to 'all'."]
    assert kept("is it fixed?", "The issue is now fixed in `export.py`.") == []


def test_the_persons_pointers_to_files_are_kept_and_pasted_output_is_not() -> None:
    prompt = ("During creation backend container I got an error\n"
              " => ERROR [builder 5/5] RUN pip install --no-cache-dir --user -r requirements.txt      7.9s\n"
              "INFO:     Started server process [1]\n"
              "Read CLAUDE.md and AI*.md files for rules and instructions\n"
              "Previous conversations can be found under docs/chats/ directory")
    assert kept(prompt) == ["Per the user, read CLAUDE.md and AI*.md files for rules and instructions.",
                            "Per the user, previous conversations can be found under docs/chats/ directory."]
    assert kept("Read config.py") == []


def test_options_offered_are_not_kept_but_the_analysis_is() -> None:
    reply = ("## Analysis\n\nThe issue is that **Pillow 10.2.0 is not compatible with Python 3.13**.\n\n"
             "### Option 1: Upgrade Pillow version (Recommended)\n"
             "Update Pillow to a newer version that supports Python 3.13. "
             "Pillow 10.3.0+ has Python 3.13 support.\n\n"
             "**Pros:**\n- Uses `pip-tools` to pin versions\n")
    assert kept("the docker build fails", reply) == [
        "The issue is that Pillow 10.2.0 is not compatible with Python 3.13."]


def test_exclamations_and_test_status_of_the_assistant_are_the_moment() -> None:
    assert kept("why does it fail", "The `kwargs` is empty!") == []
    assert kept("why does it fail", "The test is failing because production.json uses `/data` paths.") == []


def test_code_spans_keep_their_underscores_and_a_con_is_a_proposal() -> None:
    cause = "The issue is that the custom `__init__` in `config.py` runs after `super().__init__()`."
    assert kept("why?", cause) == [cause]
    con = "- **Con**: When you upgraded Python to 3.13, the pinned Pillow version isn't compatible"
    assert kept("pin it?", con) == []


def test_bullets_that_open_with_a_done_verb_report_the_work() -> None:
    for line in ("- Updated function docstring to document that only models merge from `local.json`",
                 "- Fixed edge case: now handles when base config has no models but `local.json` does"):
        assert kept("update the docs", line) == []


def test_a_proposal_ends_where_the_work_starts() -> None:
    reply = ("## Proposed Changes\n\n### 1. **Add Warning Log**\n"
             "When `local.json` has other keys, emit a warning.\n\n"
             "Let me implement these changes:\n\n"
             "The issue is that `development.json` models replace the default models in a deep merge.")
    assert kept("implement the review", reply) == [
        "The issue is that `development.json` models replace the default models in a deep merge."]
