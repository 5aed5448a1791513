"""The daemon's endpoint: one instance per user (a ``flock``) and its Unix socket.

The lock is ``memory-daemon.lock`` beside the socket, held for the daemon's whole life;
a second instance pings the holder and leaves when it answers with the same version.
The socket is created mode 0600 in a 0700 folder; a socket left by a killed daemon (no
lock holder) is replaced, one owned by someone else is refused.
"""

from __future__ import annotations

import fcntl
import os
import socket
import stat
import time
from pathlib import Path
from typing import Any

from bli_memory.core._version import VERSION
from bli_memory.core.daemon.oplog import log
from bli_memory.core.hooks import daemon_client
from bli_memory.core.private_files import make_private_dir

__all__ = ["LOCK_WAIT_S", "Endpoint", "Refused"]

#: How long a starting instance waits for a previous one that is standing down.
LOCK_WAIT_S = 10.0


class Refused(Exception):
    """The daemon cannot start here; ``reason`` names why (exit 1)."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


class Endpoint:
    """The per-user lock and the listening socket of one daemon.

    Args:
        socket_path: Where to listen; the lock file sits in the same folder.
    """

    def __init__(self, socket_path: Path) -> None:
        self.socket_path = socket_path
        self.listener: socket.socket | None = None
        self.socket_ino: int | None = None
        self.lock_fd: int | None = None

    def acquire(self) -> bool:
        """Take the per-user lock; False when another live daemon holds it.

        Raises:
            Refused: the state folder is unusable or belongs to another user.
        """
        folder = self.socket_path.parent
        try:
            make_private_dir(folder)
            st = os.lstat(folder)
        except OSError as exc:
            raise Refused("state_dir_unavailable") from exc
        if not stat.S_ISDIR(st.st_mode) or st.st_uid != os.getuid():
            raise Refused("socket_not_owned")
        if st.st_mode & 0o077:
            os.chmod(folder, 0o700)
        lock_path = folder / "memory-daemon.lock"
        try:
            fd = os.open(lock_path, os.O_RDWR | os.O_CREAT, 0o600)
        except OSError as exc:
            raise Refused("state_dir_unavailable") from exc
        give_up = time.monotonic() + LOCK_WAIT_S
        while True:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                self.lock_fd = fd
                return True
            except OSError:
                pass
            other = self.ping_other()
            if other is not None and other.get("version") == VERSION:
                os.close(fd)
                log("skipped", reason="daemon_already_running", pid=other.get("pid"))
                return False
            # Otherwise an older daemon is leaving, or the holder is still binding:
            # its lock is released or its socket answers in a moment.
            if time.monotonic() > give_up:
                os.close(fd)
                log("skipped", reason="daemon_already_running", pid=None)
                return False
            time.sleep(0.05)

    def ping_other(self) -> dict[str, Any] | None:
        """Ping the lock holder with our version: one of another version stands down.

        Returns:
            Its ping reply; ``{"stand_down": True}`` when it is leaving; None when
            nothing answers (it is still starting, or it just left).
        """
        try:
            return daemon_client.exchange(
                {"ping": True, "version": VERSION}, deadline=time.monotonic() + 0.5,
                path=self.socket_path, connect_budget=0.5,
            )
        except daemon_client.DaemonUnavailable as exc:
            return {"stand_down": True} if exc.reason == "stand_down" else None

    def bind(self) -> None:
        """Listen on the socket path (mode 0600), replacing a socket a killed daemon left.

        Raises:
            Refused: the path is not ours, not a socket, or cannot be bound.
        """
        path = self.socket_path
        try:
            st = os.lstat(path)
        except FileNotFoundError:
            st = None
        except OSError as exc:
            raise Refused("state_dir_unavailable") from exc
        if st is not None:
            if st.st_uid != os.getuid():
                raise Refused("socket_not_owned")
            if not stat.S_ISSOCK(st.st_mode):
                raise Refused("socket_path_not_a_socket")
            # We hold the lock, so no daemon of ours listens there: a killed one left it.
            try:
                os.unlink(path)
            except FileNotFoundError:
                pass
            except OSError as exc:
                raise Refused("stale_socket_not_removable") from exc
            log("stale_socket_replaced")
        listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        old_umask = os.umask(0o177)
        try:
            with daemon_client.socket_address(path) as address:
                listener.bind(address)
        except OSError as exc:
            listener.close()
            raise Refused("socket_bind_failed") from exc
        finally:
            os.umask(old_umask)
        os.chmod(path, 0o600)
        listener.listen(128)
        listener.settimeout(0.25)
        self.listener = listener
        self.socket_ino = os.lstat(path).st_ino

    def release(self) -> None:
        """Give the per-user lock back (idempotent)."""
        if self.lock_fd is not None:
            try:
                os.close(self.lock_fd)  # releases the flock
            except OSError:
                pass
            self.lock_fd = None

    def close(self) -> None:
        """Stop listening and remove our socket file (not one a newer daemon bound since)."""
        if self.listener is not None:
            try:
                self.listener.close()
            except OSError:
                pass
        try:
            if self.socket_ino is not None and os.lstat(self.socket_path).st_ino == self.socket_ino:
                os.unlink(self.socket_path)
        except OSError:
            pass
