"""A container tag forced by ``BLI_MEMORY_CONTAINER_TAG`` that looks like a secret.

A container tag is a name: listings show it, and on the team service everyone the space
is shared with sees it, so the stores refuse to write under one that holds a credential
(:func:`~bli_memory.core.memory.stored_secrets.check_container_tag`). A hook forced into
such a space could neither save nor find anything there, so it stops before the
backend with its own receipt reason, ``invalid_container_tag``, and fails open as for
any bad setting; ``cockpit doctor`` names the variable and why. The value itself is
never repeated: not in the receipt, the log, the message or the doctor's row. A tag that
passed is remembered as a SHA-256 of the release and the tag in the state dir, so later
hooks skip the redaction rules' import (about 0.3 s cold); the tag itself is not written.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from bli_memory.core.memory.spaces import Space

__all__ = ["CONTAINER_TAG_REFUSED", "check_forced_tag", "checked_space"]

#: What the hooks and ``cockpit doctor`` say of such a tag (no value in it).
CONTAINER_TAG_REFUSED = (
    "BLI_MEMORY_CONTAINER_TAG is refused: its value looks like a secret (a token, key or "
    "password), and a container tag is a name shown in listings and shared on the team "
    "service; set it to a name (the value is not shown)")


def check_forced_tag(tag: str) -> None:
    """Refuse ``tag``, forced by ``BLI_MEMORY_CONTAINER_TAG``, when it looks like a secret.

    The rule is the stores' (:func:`~bli_memory.core.memory.stored_secrets.check_container_tag`,
    the redaction rules of docs/redaction.md), so a tag passes here exactly when a save
    under it would.

    Raises:
        ConfigError: reason ``invalid_container_tag``, message :data:`CONTAINER_TAG_REFUSED`.
    """
    if _passed_before(tag):
        return
    from bli_memory.core.errors import ConfigError, InvalidInputError
    from bli_memory.core.memory.stored_secrets import check_container_tag

    try:
        check_container_tag(tag)
    except InvalidInputError:
        raise ConfigError(CONTAINER_TAG_REFUSED, reason="invalid_container_tag") from None
    _remember_passed(tag)


def checked_space(folder: str, *, environ: Mapping[str, str]) -> Space:
    """The space of ``folder`` (:func:`~bli_memory.core.memory.spaces.derive_space`), with a
    tag forced by ``BLI_MEMORY_CONTAINER_TAG`` refused when it looks like a secret.

    The one check the hooks, the MCP server's default space and the ``memory`` commands
    make before they act for a folder.

    Raises:
        ValueError: ``BLI_MEMORY_CONTAINER_TAG`` is set but invalid (the value not repeated).
        ConfigError: it looks like a secret (:func:`check_forced_tag`).
    """
    from bli_memory.core.memory.spaces import derive_space

    space = derive_space(folder, environ=environ)
    if space.kind == "forced":
        check_forced_tag(space.tag)
    return space


#: Tags a check passed, kept as hashes so a hook need not load the redaction rules
#: (0.3 s on a cold process, most of the direct route's budget) to check the same tag again.
_PASSED_FILE = "container-tags-passed"
_PASSED_KEEP = 64


def _digest(tag: str) -> str:
    """The record of ``tag`` passing under this release's rules (new rules check again)."""
    import hashlib

    from bli_memory.core._version import VERSION

    return hashlib.sha256(f"{VERSION}\n{tag}".encode("utf-8", "surrogatepass")).hexdigest()


def _passed_before(tag: str) -> bool:
    from bli_memory.core import paths

    try:
        lines = (paths.state_dir() / _PASSED_FILE).read_text(encoding="utf-8").split()
    except (OSError, UnicodeDecodeError):
        return False
    return _digest(tag) in lines


def _remember_passed(tag: str) -> None:
    """Add ``tag``'s digest to the record, keeping the newest :data:`_PASSED_KEEP` (never raises)."""
    from bli_memory.core import paths
    from bli_memory.core.private_files import atomic_write, make_private_dir

    path = paths.state_dir() / _PASSED_FILE
    try:
        lines = path.read_text(encoding="utf-8").split()
    except (OSError, UnicodeDecodeError):
        lines = []
    kept = [d for d in lines if d != _digest(tag)][-(_PASSED_KEEP - 1):] + [_digest(tag)]
    try:
        make_private_dir(path.parent)
        atomic_write(path, "\n".join(kept) + "\n", mode=0o600)
    except OSError:
        pass
