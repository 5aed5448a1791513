"""Folders and files that only their owner can read, whatever the umask.

``Path.mkdir(parents=True, mode=0o700)`` applies ``mode`` to the last folder only:
the parents it creates (``~/.local``, ``~/.local/share``) get ``0o777`` minus the
umask, which under ``umask 000`` is world-writable. SQLite creates a database with
``0o644`` minus the umask and gives its ``-wal`` and ``-shm`` files the database's
mode. These helpers create every missing folder 0700 and files 0600; a mode passed
to ``mkdir``/``open`` can only lose bits to the umask, never gain them. Folders that
already exist are left as they are: they are not ours, except a folder that holds
memories (the data folder), which :func:`make_own_private_dir` makes private whatever
it was. Standard library only, since the hooks import it.
"""

from __future__ import annotations

import contextlib
import os
import stat
from pathlib import Path

__all__ = [
    "DIR_MODE",
    "FILE_MODE",
    "atomic_write",
    "make_own_private_dir",
    "make_private_dir",
    "make_private_file",
    "replace_file",
    "write_temp",
]

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


def make_own_private_dir(path: Path) -> None:
    """Make ``path`` a folder only this user can enter: created 0700 (its missing parents
    too), or, when it exists, made 0700.

    For a folder that is ours to keep private data in, such as the data folder that holds
    the store: a folder created before (by hand, by a script, under ``umask 000``) with
    group or other bits is tightened, not used as it is. One that belongs to another user
    and is open to others cannot be made private by us, and is refused. A shared folder
    with the sticky bit (``/tmp``) is left as it is: nobody else may remove or replace
    what we keep there, each of our files is 0600, and it is not ours to close.

    Raises:
        PermissionError: the folder belongs to another user and others may enter it, or its
            mode cannot be changed; the message names the folder, its mode and what to do.
        OSError: it cannot be created (read-only disk, a file in the way).
    """
    make_private_dir(path)
    st = os.stat(path)
    loose = stat.S_IMODE(st.st_mode) & 0o077
    if not loose or st.st_mode & stat.S_ISVTX:
        return
    mode = oct(stat.S_IMODE(st.st_mode))[2:].zfill(4)
    if st.st_uid != os.geteuid():
        raise PermissionError(
            f"the folder {path} is open to other users (mode {mode}) and belongs to another user "
            f"(uid {st.st_uid}), so it cannot be made private; make it yours with mode 0700, or "
            "choose a folder of yours with BLI_MEMORY_DATA_DIR")
    try:
        os.chmod(path, DIR_MODE)
    except OSError as exc:
        raise PermissionError(
            f"the folder {path} is open to other users (mode {mode}) and cannot be made 0700 "
            f"({exc.strerror}); make it 0700, or choose another folder with BLI_MEMORY_DATA_DIR"
        ) from exc


def make_private_file(path: Path) -> None:
    """Create ``path`` empty with mode 0600 if missing (its folder with :func:`make_private_dir`).

    An existing file keeps its content; if group or others could read it, it is made 0600.
    An existing file is never opened: closing any descriptor of a file drops every POSIX
    lock the process holds on it, so opening a SQLite database that a connection of this
    process has open would let another process's closing connection take it for unused
    and delete its ``-wal`` and ``-shm`` files from under that connection (SQLite's "How
    To Corrupt An SQLite Database File", section 2.2).

    Raises:
        OSError: the file or its folder cannot be created.
    """
    make_private_dir(path.parent)
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, FILE_MODE)
    except FileExistsError:
        if os.stat(path).st_mode & 0o077:
            os.chmod(path, FILE_MODE)
        return
    os.close(fd)


def write_temp(path: Path, data: bytes | str, *, mode: int | None = None) -> Path:
    """Write ``data`` to a new temporary file beside ``path``, flushed to disk.

    The temporary file is in ``path``'s folder (so the rename is atomic), named
    ``.<name>.<pid>.<random>.tmp``, created with ``O_EXCL`` and given its final mode
    before any reader can see it at ``path``.

    Args:
        path: The file the data is for; its folder must exist.
        data: The whole new content; ``str`` is written as UTF-8.
        mode: Permission bits of the result; default: those of the existing ``path``,
            else :data:`FILE_MODE` (0600).

    Returns:
        The temporary file's path; put it in place with :func:`replace_file`.

    Raises:
        OSError: the folder is missing or not writable, or the disk is full; the
            temporary file is removed and ``path`` is untouched.
    """
    if mode is None:
        try:
            mode = stat.S_IMODE(os.stat(path).st_mode)
        except FileNotFoundError:
            mode = FILE_MODE
    raw = data.encode("utf-8") if isinstance(data, str) else data
    tmp = path.with_name(f".{path.name}.{os.getpid()}.{os.urandom(4).hex()}.tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, FILE_MODE)
    try:
        try:
            view = memoryview(raw)
            while view:
                view = view[os.write(fd, view):]
            os.fchmod(fd, mode)  # exactly ``mode``, whatever the umask
            os.fsync(fd)
        finally:
            os.close(fd)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise
    return tmp


def replace_file(tmp: Path, path: Path) -> None:
    """Rename ``tmp`` (from :func:`write_temp`) over ``path``, then flush the folder.

    ``os.replace`` is atomic on POSIX; the folder's fsync makes the rename itself
    survive a power cut. A folder that cannot be fsynced (some network filesystems)
    does not fail the write.

    Raises:
        OSError: the rename failed; ``path`` keeps its old content.
    """
    os.replace(tmp, path)
    with contextlib.suppress(OSError):
        fd = os.open(path.parent, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)


def atomic_write(path: Path, data: bytes | str, *, mode: int | None = None) -> None:
    """Replace ``path``'s content with ``data``: temporary file, fsync, rename, fsync folder.

    Args:
        path: The file to write; its folder must exist (:func:`make_private_dir`).
        data: The whole new content; ``str`` is written as UTF-8.
        mode: As for :func:`write_temp` (default: the existing file's mode, else 0600).

    Raises:
        OSError: nothing was replaced; ``path`` keeps its old content and no
            temporary file is left behind.
    """
    tmp = write_temp(path, data, mode=mode)
    try:
        replace_file(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise
