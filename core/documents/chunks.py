"""A document cut into chunks that follow its structure: a heading and its section, bounded.

Each chunk knows its file, its heading trail (the headings above it, outermost first) and
its line range, so a match can say where it is and link to it. Headings are read from the
text itself, for the formats a project writes its documents in:

- Markdown: ATX headings (``# Title`` to ``###### Title``) and setext headings (a line
  underlined with ``===`` or ``---``), never inside fenced code blocks (CommonMark);
- reStructuredText: a title underlined (and optionally overlined) with one punctuation
  character, the levels in the order the styles first appear (the docutils rule);
- AsciiDoc: ``= Title`` to ``====== Title``;
- anything else (plain text): no headings, paragraphs.

A section longer than :data:`MAX_CHUNK_CHARS` is cut at blank lines, and a paragraph
longer than that at line ends (one line longer still is cut where it must). Standard
library only.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass

__all__ = ["MAX_CHUNK_CHARS", "MAX_HEADING_CHARS", "Chunk", "chunk_document", "document_format"]

#: Longest chunk, in characters: about 400 tokens, beyond the 256 the embedding model reads,
#: and short enough to show whole as a match's supporting text.
MAX_CHUNK_CHARS = 1600

#: Longest heading title kept in a trail, in characters: the trail is repeated in every chunk
#: of its section, so a one-line "heading" of a megabyte must not be.
MAX_HEADING_CHARS = 200

_ATX = re.compile(r"^ {0,3}(#{1,6})[ \t]+(.*?)(?:[ \t]+#+)?[ \t]*$")
_FENCE = re.compile(r"^ {0,3}(`{3,}|~{3,})")
_SETEXT = re.compile(r"^ {0,3}(=+|-+)[ \t]*$")
_ADOC = re.compile(r"^(={1,6})[ \t]+(\S.*?)[ \t]*$")
_RST_ADORN = re.compile(r"""^([!-/:-@\[-`{-~])\1{2,}[ \t]*$""")


@dataclass(frozen=True)
class Chunk:
    """One piece of a document.

    Attributes:
        path: The file, relative to the repository root, with ``/``.
        heading: The heading trail, outermost first (empty before the first heading).
        start: First line, 1-based.
        end: Last line, inclusive.
        text: The lines ``start`` to ``end``, as in the file.
    """

    path: str
    heading: tuple[str, ...]
    start: int
    end: int
    text: str


def document_format(path: str) -> str:
    """``markdown``, ``rst``, ``asciidoc`` or ``text``, from the file name."""
    name = path.lower()
    if name.endswith((".md", ".markdown", ".mdx")):
        return "markdown"
    if name.endswith((".rst", ".rest")):
        return "rst"
    if name.endswith((".adoc", ".asciidoc", ".asc")):
        return "asciidoc"
    return "text"


def _headings(lines: list[str], fmt: str) -> Iterator[tuple[int, int, int, str]]:
    """``(first line index, heading lines, level, title)`` of each heading, in order."""
    if fmt == "markdown":
        fence: str | None = None
        for i, line in enumerate(lines):
            m = _FENCE.match(line)
            if m:
                mark = m.group(1)
                if fence is None:
                    fence = mark
                elif mark[0] == fence[0] and len(mark) >= len(fence):
                    fence = None
                continue
            if fence is not None:
                continue
            m = _ATX.match(line)
            if m:
                yield i, 1, len(m.group(1)), m.group(2).strip()
            elif (i > 0 and _SETEXT.match(line) and lines[i - 1].strip()
                  and not _ATX.match(lines[i - 1]) and not _FENCE.match(lines[i - 1])
                  and (i < 2 or not lines[i - 2].strip())):
                yield i - 1, 2, 1 if line.strip()[0] == "=" else 2, lines[i - 1].strip()
    elif fmt == "asciidoc":
        for i, line in enumerate(lines):
            m = _ADOC.match(line)
            if m:
                yield i, 1, len(m.group(1)), m.group(2)
    elif fmt == "rst":
        styles: list[tuple[str, bool]] = []
        i = 0
        while i < len(lines) - 1:
            title, under = lines[i], lines[i + 1]
            over = i > 0 and bool(_RST_ADORN.match(lines[i - 1]))
            if (title.strip() and not _RST_ADORN.match(title) and _RST_ADORN.match(under)
                    and len(under.rstrip()) >= len(title.rstrip())):
                style = (under.strip()[0], over)
                if style not in styles:
                    styles.append(style)
                yield (i - 1 if over else i), (3 if over else 2), styles.index(style) + 1, title.strip()
                i += 2
                continue
            i += 1


def _pieces(lines: list[str], first: int, limit: int) -> Iterator[tuple[int, int]]:
    """``(start, end)`` index ranges (end exclusive) of at most ``limit`` characters, cut at
    blank lines where possible, else at line ends, else inside a line."""
    start, size, cut = first, 0, None
    end = first + len(lines)
    i = first
    while i < end:
        line = lines[i - first]
        if size + len(line) + 1 > limit and i > start:
            stop = cut if cut is not None and cut > start else i
            yield start, stop
            start, size, cut = stop, sum(len(x) + 1 for x in lines[stop - first:i - first]), None
            continue
        size += len(line) + 1
        if not line.strip():
            cut = i + 1
        i += 1
    if start < end:
        yield start, end


def chunk_document(path: str, text: str, *, max_chars: int = MAX_CHUNK_CHARS) -> list[Chunk]:
    """Cut ``text`` (the file ``path``) into chunks by its headings, each at most
    ``max_chars`` characters (a single line longer than that is cut inside).

    Blank-only chunks are left out. The heading line starts its section's first chunk; a
    section cut in several chunks keeps its trail in each.

    Returns:
        The chunks in file order.
    """
    lines = text.splitlines()
    marks = list(_headings(lines, document_format(path)))
    sections: list[tuple[int, int, tuple[str, ...]]] = []
    trail: list[tuple[int, str]] = []
    start = 0
    for index, _, level, full_title in marks:
        title = full_title[:MAX_HEADING_CHARS]
        if index > start:
            sections.append((start, index, tuple(t for _, t in trail)))
        while trail and trail[-1][0] >= level:
            trail.pop()
        trail.append((level, title))
        start = index
    sections.append((start, len(lines), tuple(t for _, t in trail)))
    out: list[Chunk] = []
    for first, stop, heading in sections:
        for a, b in _pieces(lines[first:stop], first, max_chars):
            body = "\n".join(lines[a:b])
            if not body.strip():
                continue
            for k in range(0, len(body), max_chars):  # one line longer than a chunk
                part = body[k:k + max_chars]
                if part.strip():
                    out.append(Chunk(path=path, heading=heading, start=a + 1, end=b, text=part))
    return out
