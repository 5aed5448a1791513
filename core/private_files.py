"""Folders and files that only their owner can read, whatever the umask.

``Path.mkdir(parents=True, mode=0o700)`` applies ``mode`` to the last folder only:
the parents it creates (``~/.local``, ``~/.local/share``) get ``0o777`` minus the
umask, which under ``umask 000`` is world-writable. SQLite creates a database with
``0o644`` minus the umask and gives its ``-wal`` and ``-shm`` files the database's
mode. These helpers create every missing folder 0700 and files 0600; a mode passed
to ``mkdir``/``open`` can only lose bits to the umask, never gain them. Folders that
already exist are left as they are: they are not ours. Standard library only, since
the hooks import it.
"""

from __future__ import annotations

import os
from pathlib import Path

__all__ = ["DIR_MODE", "FILE_MODE", "make_private_dir", "make_private_file"]

#: Mode of every folder we create: owner only.
DIR_MODE = 0o700
#: Mode of every file we create: owner read and write.
FILE_MODE = 0o600


def make_private_dir(path: Path) -> None:
    """Create ``path`` and each missing parent with mode 0700; existing folders stay.

    Raises:
        OSError: a component cannot be created (read-only disk, a file in the way).
    """
    missing: list[Path] = []
    current = path
    while not current.exists():
        missing.append(current)
        if current.parent == current:
            break
        current = current.parent
    for folder in reversed(missing):
        try:
            os.mkdir(folder, DIR_MODE)
        except FileExistsError:
            if not folder.is_dir():
                raise
    if not path.is_dir():
        raise NotADirectoryError(f"not a folder: {path}")


def make_private_file(path: Path) -> None:
    """Create ``path`` empty with mode 0600 if missing (its folder with :func:`make_private_dir`).

    An existing file keeps its content; if group or others could read it, it is made 0600.

    Raises:
        OSError: the file or its folder cannot be created.
    """
    make_private_dir(path.parent)
    fd = os.open(path, os.O_WRONLY | os.O_CREAT, FILE_MODE)
    try:
        if os.fstat(fd).st_mode & 0o077:
            os.fchmod(fd, FILE_MODE)
    finally:
        os.close(fd)
