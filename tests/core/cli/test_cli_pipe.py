"""The CLI when its reader goes away early (`bli-memory-mcp status | head`)."""

from __future__ import annotations

import subprocess

import pytest

from tests.conftest import bin_path

pytestmark = [pytest.mark.e2e, pytest.mark.e2e]  # starts processes or servers (tests/tiers.py)


@pytest.mark.parametrize("args", [("--print-config",), ("status",)])
def test_a_closed_pipe_ends_quietly_without_a_traceback(args: tuple[str, ...]) -> None:
    proc = subprocess.Popen([bin_path(), *args], stdin=subprocess.DEVNULL,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    assert proc.stdout is not None and proc.stderr is not None
    proc.stdout.close()  # the reader is gone before the first line is written
    with proc.stderr:
        err = proc.stderr.read().decode("utf-8", "replace")
    proc.wait(timeout=60)
    assert "Traceback" not in err and "BrokenPipeError" not in err, err
