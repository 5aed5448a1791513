"""Reading and writing host config files without losing anything of the person's.

- :func:`read_json_object` refuses a malformed file with a clear error naming it
  (never overwritten); a missing or empty file is an empty object.
- :func:`dump_json_like` writes JSON back in the file's own style (indent unit,
  trailing newline), key order kept, so untouched content stays byte-for-byte where
  the original was written the usual way (``JSON.stringify(x, null, 2)``).
- :func:`atomic_write` writes a temp file in the same folder, keeps the old file's
  mode (``~/.claude.json`` is 0600), saves a backup of the previous content next to
  it (``<name>.bli-memory-<UTC time>.bak``; once the change is in place the older
  backups of that file are pruned, so one is kept per file), follows a symlink to its
  target, and renames over the original. :func:`stage_write` and
  :func:`commit_write` split that in two so several files change all or nothing.
- :func:`unified_diff` is what ``--dry-run`` prints.

Adapters import this module on the hook path, so it imports only what every hook
already has loaded; ``difflib`` and ``tempfile`` load when a file is written or diffed.
"""

from __future__ import annotations

import json
import os
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from bli_memory.core.errors import InstallConflict
from bli_memory.core.private_files import make_private_dir, replace_file, write_temp

__all__ = [
    "BACKUP_SUFFIX",
    "StagedWrite",
    "as_it_was",
    "atomic_write",
    "backups_of",
    "commit_write",
    "conflict",
    "dict_at",
    "discard_write",
    "dump_json_like",
    "put_or_drop",
    "read_json_object",
    "read_text",
    "stage_write",
    "unified_diff",
]

BACKUP_SUFFIX = ".bli-memory.bak"


def read_text(path: Path) -> str | None:
    """File text, or None when it does not exist.

    Raises:
        InstallConflict: it exists but cannot be read as UTF-8 text.
    """
    try:
        return path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return None
    except (OSError, UnicodeDecodeError) as exc:
        raise InstallConflict(f"{path}: cannot be read ({exc}); nothing was written") from exc


def read_json_object(path: Path, text: str | None) -> dict[str, Any]:
    """Parse a JSON config file that must hold an object.

    Raises:
        InstallConflict: malformed JSON or not an object; names the file and the problem.
    """
    if text is None or not text.strip():
        return {}
    try:
        data = json.loads(text)
    except ValueError as exc:
        raise InstallConflict(
            f"{path} is not valid JSON ({exc}); fix or move it, nothing was written"
        ) from exc
    if not isinstance(data, dict):
        raise InstallConflict(
            f"{path} must hold a JSON object, found {type(data).__name__}; nothing was written"
        )
    return data


_INDENT = re.compile(r"^([ \t]+)\S", re.MULTILINE)


def dump_json_like(data: dict[str, Any], original: str | None) -> str:
    """Serialise ``data`` in the style of ``original`` (default: 2-space indent, newline)."""
    indent: str | int = 2
    trailing = "\n"
    if original:
        m = _INDENT.search(original)
        if m:
            indent = m.group(1)
        elif original.strip() and "\n" not in original.strip():
            indent = None  # type: ignore[assignment]  # a one-line file stays one line
        trailing = "\n" if original.endswith("\n") else ""
    return json.dumps(data, indent=indent, ensure_ascii=False) + trailing


def conflict(message: str) -> InstallConflict:
    """The error for a config file we must not touch (the message names file and problem)."""
    return InstallConflict(message)


def dict_at(data: dict[str, Any], key: str, where: Any) -> dict[str, Any]:
    """``data[key]`` as an object (``{}`` when absent).

    Raises:
        InstallConflict: it exists but is not an object.
    """
    value = data.get(key, {})
    if not isinstance(value, dict):
        raise conflict(f"{where}: {key} is not an object; nothing was written")
    return value


def put_or_drop(container: dict[str, Any], key: str, value: Any, before: Any) -> None:
    """Set ``container[key] = value``; when we emptied a value that had content, drop the key.

    So uninstall removes the containers install created, and leaves a container the
    person already had (even an empty one) in place.
    """
    if value:
        container[key] = value
    elif before:
        container.pop(key, None)
    elif key in container:
        container[key] = value


def backups_of(path: Path) -> list[Path]:
    """Every ``<name>.bli-memory-<UTC time>.bak`` beside ``path``, oldest first."""
    import glob

    return sorted(path.parent.glob(f"{glob.escape(path.name)}{BACKUP_SUFFIX.removesuffix('.bak')}-*.bak"))


def as_it_was(path: Path, text: str) -> tuple[str, bool]:
    """``(text for path on uninstall, whether it is the file as it was before our install)``.

    When ``text`` says the same as the file's oldest backup (the same JSON, TOML or YAML
    document; the same text else), that backup's text comes back byte for byte: taking
    our entries out gives the person's file back as they wrote it, not reformatted (a
    one-line ``"hooks"`` value stays on one line), and it then needs no backup.
    """
    for backup in backups_of(Path(os.path.realpath(path)))[:1]:
        try:
            before = backup.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError):
            return text, False
        if before == text or _document(path, before) == _document(path, text) is not None:
            return before, True
    return text, False


def _document(path: Path, text: str) -> Any:
    """``text`` parsed as ``path``'s format, or the stripped text; None when it does not parse."""
    try:
        if path.suffix == ".json":
            return json.loads(text)
        if path.suffix == ".toml":
            import tomlkit

            return tomlkit.parse(text).unwrap()
        if path.suffix in (".yaml", ".yml"):
            from ruamel.yaml import YAML

            return YAML(typ="safe", pure=True).load(text)
    except Exception:  # noqa: BLE001 - a file that does not parse is compared as text by nobody
        return None
    return text.strip()


def _backup_name(path: Path) -> Path:
    """A backup path that never overwrites an earlier backup (UTC timestamp in the name)."""
    import time

    stamp = time.strftime("%Y%m%dT%H%M%S", time.gmtime()) + f"{time.time_ns() % 1_000_000_000:09d}"
    return path.with_name(f"{path.name}{BACKUP_SUFFIX.removesuffix('.bak')}-{stamp}.bak")


@dataclass
class StagedWrite:
    """A file change prepared on disk: the new text in a temp file beside the target."""

    path: Path
    tmp: str | None
    backup: Path | None


def stage_write(path: Path, text: str | None, *, default_mode: int = 0o600,
                backup: bool = True) -> StagedWrite:
    """Prepare replacing ``path`` (the symlink's target, if it is one) with ``text``.

    Writes a backup of the current content (unless ``backup`` is False: a file of ours
    alone that uninstall removes) and the new content to temp files; the target is
    untouched until :func:`commit_write`. ``text=None`` stages a removal.
    """
    path = Path(os.path.realpath(path))  # write through a dotfiles symlink, keep the link
    make_private_dir(path.parent)
    kept: Path | None = None
    mode = default_mode
    if path.exists():
        mode = path.stat().st_mode & 0o777
    if path.exists() and backup:
        kept = backup_path = _backup_name(path)
        fd = os.open(backup_path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, mode)
        with os.fdopen(fd, "wb") as fh:
            fh.write(path.read_bytes())
    if text is None:
        return StagedWrite(path, None, kept)
    return StagedWrite(path, str(write_temp(path, text, mode=mode)), kept)


def commit_write(staged: StagedWrite) -> None:
    """Put a staged change in place (an atomic rename, or the removal).

    Older backups of the file are then pruned: the one this change made is kept. A
    change staged without a backup keeps none.
    """
    if staged.tmp is None:
        staged.path.unlink(missing_ok=True)
    else:
        replace_file(Path(staged.tmp), staged.path)
    for old in backups_of(staged.path):
        if old != staged.backup:
            old.unlink(missing_ok=True)


def discard_write(staged: StagedWrite) -> None:
    """Throw a staged change away (its temp file and its now useless backup)."""
    if staged.tmp is not None:
        Path(staged.tmp).unlink(missing_ok=True)
    if staged.backup is not None:
        staged.backup.unlink(missing_ok=True)


def atomic_write(path: Path, text: str | None, *, default_mode: int = 0o600) -> Path | None:
    """Replace ``path`` with ``text`` atomically (``None`` deletes it), keeping a backup.

    Args:
        path: The config file (a symlink is followed: its target is replaced).
        text: New content, or None to remove the file.
        default_mode: Mode of a file that did not exist before.

    Returns:
        The backup path, when there was a previous file.
    """
    staged = stage_write(path, text, default_mode=default_mode)
    commit_write(staged)
    return staged.backup


def unified_diff(path: Path, old: str | None, new: str | None) -> str:
    """A unified diff of one file's change (``/dev/null`` for creation or removal)."""
    import difflib

    a = (old or "").splitlines(keepends=True)
    b = (new or "").splitlines(keepends=True)
    diff = difflib.unified_diff(
        a, b, fromfile=str(path) if old is not None else "/dev/null",
        tofile=str(path) if new is not None else "/dev/null",
    )
    out = "".join(line if line.endswith("\n") else line + "\n\\ No newline at end of file\n" for line in diff)
    return out
