"""git for the documents tests: a neutral identity and environment, output returned."""

from __future__ import annotations

import subprocess
from pathlib import Path


def git(repo: Path, *args: str, stdin: bytes | None = None) -> str:
    """Run ``git -C repo ARGS`` (raising on failure); returns its stdout."""
    return subprocess.run(["git", "-C", str(repo), *args], check=True, capture_output=True, input=stdin,
                          env={"GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@x", "GIT_COMMITTER_NAME": "t",
                               "GIT_COMMITTER_EMAIL": "t@x", "PATH": "/usr/bin:/bin", "HOME": str(repo)},
                          ).stdout.decode()
