"""Regenerate docs/cli.md from the commands' ``--help`` output.

Run from the repository root with the project's virtualenv active::

    python scripts/gen_cli_docs.py
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from tests.test_docs import DOCS, _help_text  # noqa: E402

if __name__ == "__main__":
    (DOCS / "cli.md").write_text(_help_text())
    print("wrote docs/cli.md")
