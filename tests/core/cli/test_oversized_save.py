"""``memory save`` checks the size of the text before masking it (see
tests/core/mcp/test_oversized_save.py for why and how the order is proved)."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from bli_memory.core.memory.retrieval_writes import MAX_CONTENT_CHARS
from tests.conftest import bin_path
from tests.oversized import KEY, fits_only_masked

pytestmark = pytest.mark.e2e  # starts processes or servers (tests/tiers.py)


def cli(project: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([bin_path(), "memory", *args], cwd=project, capture_output=True, text=True,
                          env=dict(os.environ), timeout=120)


def test_memory_save_refuses_by_the_size_as_given_before_masking(project: Path) -> None:
    note = fits_only_masked()
    r = cli(project, "save", note)
    assert r.returncode == 1, (r.stdout, r.stderr)
    expected = f"content is {len(note)} characters; the limit is {MAX_CONTENT_CHARS}. Save its durable"
    assert expected in r.stderr
    assert KEY not in r.stderr + r.stdout
    listed = cli(project, "list")
    assert listed.returncode == 0 and "no live memories" in listed.stdout, listed.stdout
