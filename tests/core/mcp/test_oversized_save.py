"""``save_memory`` and ``update_memory`` check the size of the text before masking it.

Masking runs every redaction rule over the whole text: a 10 MB save cost seconds of CPU
only to be refused for its size. The size is checked first now, on the text as given.
The proof that the check comes first is what it counts: a note that is over the limit as
given but well under it once its private key is masked used to be saved (the check ran
on the masked text); it is refused now, and the refusal names its length as given.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from bli_memory.core.memory.retrieval_writes import MAX_CONTENT_CHARS
from tests.mcp_client import run_session, text_of
from tests.oversized import KEY, fits_only_masked

pytestmark = pytest.mark.e2e  # starts processes or servers (tests/tiers.py)

SHORT = "The deploy runs on Fridays."


def test_save_memory_refuses_by_the_size_as_given_before_masking(tmp_path: Path, mcp_route) -> None:
    note = fits_only_masked()
    huge = "The build log says: step ok. " * 70_000  # about 2 MB

    async def body(client):
        masked_fits = await client.call_tool("save_memory", {"content": note})
        big = await client.call_tool("save_memory", {"content": huge})
        listed = await client.call_tool("list_memories", {})
        return masked_fits, big, listed

    masked_fits, big, listed = run_session(tmp_path, body)
    assert masked_fits.is_error, text_of(masked_fits)
    assert f"content is {len(note)} characters; the limit is {MAX_CONTENT_CHARS}" in text_of(masked_fits)
    assert KEY not in text_of(masked_fits)
    assert big.is_error
    assert f"content is {len(huge.strip())} characters; the limit is {MAX_CONTENT_CHARS}" in text_of(big)
    assert "holds no live memories" in text_of(listed)


def test_update_memory_refuses_by_the_size_as_given_before_masking(tmp_path: Path, mcp_route) -> None:
    note = fits_only_masked()

    async def body(client):
        saved = await client.call_tool("save_memory", {"content": SHORT})
        memory_id = saved.structured_content["memory"]["id"]
        updated = await client.call_tool("update_memory", {"id": memory_id, "content": note})
        listed = await client.call_tool("list_memories", {})
        return updated, listed

    updated, listed = run_session(tmp_path, body)
    assert updated.is_error, text_of(updated)
    assert f"content is {len(note)} characters; the limit is {MAX_CONTENT_CHARS}" in text_of(updated)
    assert SHORT in text_of(listed)
