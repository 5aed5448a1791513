"""Text -> turns -> sentences: how the default extractor cuts an exchange into candidates.

An exchange ``User: ...`` / ``Assistant: ...`` is split into turns, each turn into
paragraphs, bullets and lines, each of those into sentences, with inline code kept whole
and a short shell block attached to the line that introduces it. Pure functions; the
standard library only.
"""

from __future__ import annotations

import re

from bli_memory.core.extraction.patterns import rules
from bli_memory.core.extraction.statement_terms import CODE_SPAN

__all__ = ["clean", "is_output_line", "is_question", "turns", "units"]


_ABBREVIATION = r"(?i)(?:^|[\s(])(?:e\.g|i\.e|etc|vs|approx|cf|mr|ms|dr|no|fig)\.$"


def _protect_code(text: str) -> tuple[str, list[str]]:
    spans: list[str] = []

    def keep(m: re.Match[str]) -> str:
        spans.append(m.group(0))
        return f"\x00{len(spans) - 1}\x00"

    return re.sub(CODE_SPAN, keep, text), spans


def _restore_code(text: str, spans: list[str]) -> str:
    return re.sub(r"\x00(\d+)\x00", lambda m: spans[int(m.group(1))], text)


def turns(text: str) -> list[tuple[str, str]]:
    """Split ``User: ... Assistant: ...`` text into turns.

    Returns:
        ``[(role, body), ...]`` in order; role is ``user``, ``assistant``, or ``text``
        for unmarked text (before the first marker, or all of it).
    """
    r = rules()
    marks = list(r.role_line.finditer(text))
    if not marks:
        return [("text", text)]
    out: list[tuple[str, str]] = []
    head = text[: marks[0].start()].strip()
    if head:
        out.append(("text", head))
    for k, m in enumerate(marks):
        end = marks[k + 1].start() if k + 1 < len(marks) else len(text)
        who = m.group(1).lower()
        role = "user" if who in ("user", "human") else "assistant"
        out.append((role, text[m.end() : end].strip()))
    return out


def _code_blocks(body: str) -> str:
    """Drop fenced code, but attach a short shell block to the line that introduces it."""
    r = rules()

    def repl(m: re.Match[str]) -> str:
        lang = (m.group(1) or "").lower()
        lines = [ln.strip() for ln in m.group(2).splitlines() if ln.strip()]
        shell = lang in ("", "bash", "sh", "shell", "console", "zsh", "fish", "powershell", "ps")
        if shell and 1 <= len(lines) <= 3 and all(
            r.command_word.match(ln.lstrip("$ ").strip()) for ln in lines
        ):
            cmds = "; ".join(f"`{ln.lstrip('$ ').strip()}`" for ln in lines)
            return f"\x01{cmds}.\n\n"
        return "\n\n"

    out = r.fence.sub(repl, body)
    out = re.sub(r":[ \t]*(?:\r?\n\s*)*\x01", ": ", out)  # "run:" + block -> "run: `cmd`."
    return out.replace("\x01", "")


#: A line that opens with a short label and a colon ("Backend: Node.js + Express").
_LABEL_LINE = re.compile(r"^[A-Z][\w/+.-]*(?: [\w/+.-]+){0,2}:\s+\S")


def units(body: str, *, per_line: bool = False) -> list[str]:
    """Paragraphs -> bullets/lines -> sentences, with inline code kept whole.

    Args:
        body: One turn's text.
        per_line: A line that opens with a capital, a digit or a symbol, or follows
            a line that ended a sentence, is its own item (the person's turn: pasted
            logs and instruction templates come one item to a line); a line that
            opens in lower case still continues the sentence before it.

    Returns:
        The sentences (units) in order, stripped; headings, tables and rules left out.
    """
    r = rules()
    body = _code_blocks(body)
    out: list[str] = []
    for para in re.split(r"\n\s*\n", body):
        items: list[str] = []
        for line in para.splitlines():
            stripped = line.strip()
            if not stripped or stripped.startswith("|") or re.fullmatch(r"[-=*_#]{3,}", stripped):
                continue
            if re.match(r"#{1,6}\s", stripped) and not stripped.endswith(":"):
                continue  # a heading titles what follows ("### Arguments for moving it"); it states nothing
            stripped = re.sub(r"^#{1,6}\s+", "", stripped)  # "### Output Location:" labels the next line
            new_line = per_line and bool(items) and (
                not stripped[0].islower() or items[-1].rstrip().endswith((".", "!", "?")))
            if r.bullet.match(stripped) or not items or new_line:
                items.append(r.bullet.sub("", stripped))
            elif items[-1].rstrip().endswith(":") and re.fullmatch(r"`[^`]+`", stripped):
                items[-1] += " " + stripped  # "Output location:" + "`~/exports/`" on the next line
            elif items[-1].rstrip().endswith(":") or _LABEL_LINE.match(stripped):
                items.append(stripped)  # "Backend: Node.js + Express" on its own line is its own item
            else:
                items[-1] += " " + stripped
        for item in items:
            protected, spans = _protect_code(item)  # `__init__` keeps its underscores
            protected = protected.replace("**", "").replace("__", "")
            pieces = r.sentence_end.split(protected)
            merged: list[str] = []
            for piece in pieces:
                if merged and re.search(_ABBREVIATION, merged[-1]):
                    merged[-1] += " " + piece
                else:
                    merged.append(piece)
            out.extend(_restore_code(p, spans).strip() for p in merged if p.strip())
    return out


def clean(sentence: str) -> tuple[str, bool]:
    """Strip fillers, "remember that" and "please"; capitalise the first letter.

    Returns:
        ``(cleaned text, True when the sentence began with an acknowledgement)``.
    """
    r = rules()
    s = sentence.strip().strip("*_ ")
    acknowledged = bool(r.acknowledgement.match(s))
    for _ in range(3):
        new = r.filler.sub("", s, count=1).strip()
        new = r.remember.sub("", new, count=1).strip()
        if new == s:
            break
        s = new
    s = re.sub(r",?\s*please[.!]?$", "", s, flags=re.IGNORECASE).strip()
    s = re.sub(r"^please\s+", "", s, flags=re.IGNORECASE)
    if s and s[0].islower():
        s = s[0].upper() + s[1:]
    return s, acknowledged


def is_question(body: str) -> bool:
    """True when a person's turn asks something rather than states or instructs."""
    text = body.strip()
    return text.endswith("?") or bool(rules().question_start.match(text) and "." not in text[:-1])


_OUTPUT_LINE = (
    r"^\W*(?:=>|\$ |> |\[[\w /:.-]+\]|\d[\d.:]*\s)|\S\s{4,}\S|"
    r"^(?:INFO|WARNING|WARN|ERROR|DEBUG|TRACE|FATAL|Traceback)\b")


def is_output_line(line: str) -> bool:
    """True for a line of program output pasted into a prompt ("=> ERROR [builder 5/5]
    RUN pip install ...   7.9s", "INFO:     Started server process [1]", "2.733 Collecting
    Pillow==10.2.0"): a log prefix, a shell prompt, a build step or column padding. It
    is what a program printed once, not something the person states."""
    return re.search(_OUTPUT_LINE, line.strip()) is not None  # compiled on first use (re's cache)
