"""The package version (kept equal to ``pyproject.toml``; a test checks)."""

VERSION = "0.1.0"
