"""The session digest a host model is given: never the transcript.

A digest holds three parts, in this order, each line once:

1. **The person's statements**: the sentences of the user's turns (pasted program output
   left out), because the person's own words carry most preferences and decisions;
2. **Candidate sentences from the replies**: every sentence of the assistant's turns the
   rules consider a candidate (:func:`~bli_memory.core.extraction.candidates.candidates`),
   kept or not: the rules find where durable facts may sit, the model decides and
   restates them;
3. **Files named**: the file and folder names the exchange mentions, never their bodies
   (code blocks are not candidates, so no file body reaches the digest).

The digest is cut to a token budget (4 characters a token, OpenAI's rule of thumb for
English text), the person's statements first. The text it is built from was redacted
already (:func:`~bli_memory.core.extraction.reconcile.distil`). Standard library only.
"""

from __future__ import annotations

import re

from bli_memory.core.extraction.candidates import candidates
from bli_memory.core.extraction.sentences import is_output_line, turns, units

__all__ = ["CHARS_PER_TOKEN", "digest", "estimate_tokens"]

#: Characters per token for the budget (OpenAI: "one token generally corresponds to ~4
#: characters of text for common English text").
CHARS_PER_TOKEN = 4

_FILE_NAME = re.compile(
    r"(?<![\w@:/.-])((?:~|\.{1,2})?/?(?:[\w.-]+/)+[\w.*-]*|"
    r"[\w-]+\.(?:md|txt|json|jsonl|ya?ml|toml|py|js|ts|tsx|go|rs|java|rb|sh|cfg|ini|csv|html|css|sql|lock))"
    r"(?![\w/])")
_MOST_FILES = 40
#: A path segment that reads as a key or a token, not a name: long, and letters, digits
#: and case mixed with no word separator ("q8Z3Kp0vX9aaZZt7RpLmN0wQ4sT2uV6y").
_TOKEN_LIKE = re.compile(r"(?=[^/]*[A-Z])(?=[^/]*[a-z])(?=[^/]*\d)[A-Za-z0-9+=]{16,}")
_FENCE = re.compile(r"```.*?(?:```|\Z)", re.DOTALL)
#: A line of program output pasted into a prompt: a timestamp or a log level first.
_LOG_LINE = re.compile(r"^\W*(?:\d{4}-\d{2}-\d{2}[T ]\d{2}:\d{2}|\d{2}:\d{2}:\d{2}\b|"
                       r"(?:TRACE|DEBUG|INFO|WARN|WARNING|ERROR|FATAL)\b)")


def estimate_tokens(text: str) -> int:
    """Tokens ``text`` counts as against the budget (:data:`CHARS_PER_TOKEN`)."""
    return -(-len(text) // CHARS_PER_TOKEN)


def _user_lines(text: str) -> list[str]:
    lines: list[str] = []
    for role, body in turns(text):
        if role != "user":
            continue
        for unit in units(body, per_line=True):
            line = " ".join(unit.split())
            if line and not is_output_line(unit) and not _LOG_LINE.match(line) and len(line.split()) >= 2:
                lines.append(line)
    return lines


def _files(text: str) -> list[str]:
    names: list[str] = []
    for match in _FILE_NAME.finditer(_FENCE.sub(" ", text)):  # a code block is a body, not a name
        name = match.group(1).rstrip(".")
        named = (len(name) > 2 and re.search(r"[A-Za-z]", name) and "://" not in name
                 and not _TOKEN_LIKE.search(name))
        if named and name not in names and not name.startswith("//"):
            names.append(name)
        if len(names) >= _MOST_FILES:
            break
    return names


def digest(text: str, *, max_tokens: int) -> str:
    """The digest of an exchange (``User: ...`` / ``Assistant: ...``) or of free text.

    Args:
        text: The redacted exchange.
        max_tokens: The budget; the digest's :func:`estimate_tokens` stays within it.

    Returns:
        The digest, or ``""`` when the exchange holds nothing to distil.
    """
    from bli_memory.core.extraction.rephrase import home_to_tilde

    text = home_to_tilde(text)  # /home/<name>/... -> ~/...: the person's user name is not sent
    budget = max_tokens * CHARS_PER_TOKEN
    said = _user_lines(text)
    replies = [c.text for c in candidates(text) if c.role != "user"]
    files = _files(text)
    sections = (("The person said:", said), ("Sentences from the assistant's replies:", replies),
                ("Files named:", files))
    out: list[str] = []
    used = 0
    seen: set[str] = set()
    for title, items in sections:
        fresh = [i for i in items if i.lower() not in seen]
        if not fresh:
            continue
        head = f"{title}\n"
        if used + len(head) > budget:
            break
        block = [head]
        used += len(head)
        for item in fresh:
            if item.lower() in seen:  # each line once, within a section too
                continue
            line = f"- {item}\n"
            if used + len(line) > budget:
                break
            block.append(line)
            seen.add(item.lower())
            used += len(line)
        if len(block) > 1:
            out.append("".join(block))
    return "\n".join(out).strip()
