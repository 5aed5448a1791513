"""Chunks follow a document's headings, stay bounded and know their lines."""

from __future__ import annotations

from bli_memory.core.documents.chunks import chunk_document, document_format

MARKDOWN = """\
# Queue

We run jobs on a queue.

## Why Dramatiq

We switched from Celery to Dramatiq in 2024: fewer moving parts.

```python
# not a heading
x = 1
```

Setext title
------------

Body under setext.

## Errors

Errors are JSON: {"error": {"code": ..., "message": ...}}.
"""


def test_markdown_sections_carry_their_trail_and_lines() -> None:
    chunks = chunk_document("docs/adr/0003-queue.md", MARKDOWN)
    assert [(c.heading, c.start, c.end) for c in chunks] == [
        (("Queue",), 1, 4),
        (("Queue", "Why Dramatiq"), 5, 13),
        (("Queue", "Setext title"), 14, 18),
        (("Queue", "Errors"), 19, 21),
    ]
    assert "Dramatiq in 2024" in chunks[1].text and "# not a heading" in chunks[1].text
    lines = MARKDOWN.splitlines()
    for c in chunks:
        assert c.text == "\n".join(lines[c.start - 1:c.end])


def test_rst_levels_follow_the_order_styles_appear_in() -> None:
    text = ("=====\nGuide\n=====\n\nIntro.\n\nInstall\n-------\n\nRun pip.\n\n"
            "Upgrade\n-------\n\nRun it again.\n")
    chunks = chunk_document("Doc/guide.rst", text)
    assert [c.heading for c in chunks] == [("Guide",), ("Guide", "Install"), ("Guide", "Upgrade")]
    assert chunks[0].start == 1 and chunks[1].start == 7


def test_asciidoc_and_plain_text() -> None:
    adoc = chunk_document("README.adoc", "= Tool\n\nAbout.\n\n== Usage\n\nRun it.\n")
    assert [c.heading for c in adoc] == [("Tool",), ("Tool", "Usage")]
    plain = chunk_document("NOTES.txt", "# not markdown here\n\nJust text.\n")
    assert [c.heading for c in plain] == [()]
    assert document_format("CHANGELOG.md") == "markdown" and document_format("LICENSE") == "text"


def test_a_long_section_is_cut_at_blank_lines_and_a_long_line_inside() -> None:
    paragraphs = "\n\n".join(f"Paragraph {n}. " + "word " * 60 for n in range(10))
    chunks = chunk_document("a.md", "# Big\n\n" + paragraphs + "\n", max_chars=700)
    assert len(chunks) > 3 and all(len(c.text) <= 700 for c in chunks)
    assert all(c.heading == ("Big",) for c in chunks)
    assert all(c.text.lstrip().startswith(("# Big", "Paragraph")) for c in chunks)
    assert [len(c.text) for c in chunk_document("b.txt", "x" * 2000)] == [1600, 400]
