"""Which memories one host session has already been given: per-session, bounded hook state.

The prompt hook and session-start inject memories into the model's context. Within one
session that context persists, so a memory injected once is never injected again: it
would only cost tokens. This module keeps, per host session, the ids already injected.

- One small JSON file per session under ``<state dir>/injected/``, named by a SHA-256 of
  ``host`` and the host's session id (the id itself never reaches a file name).
- Bounded: at most :data:`MAX_IDS` ids per session (oldest dropped first), at most
  :data:`MAX_SESSIONS` files (least recently written removed first), and files older
  than :data:`MAX_AGE_SECONDS` are removed when a new session file is created.
- Writes are atomic (temporary file, then rename) with mode 0600, so the daemon and a
  direct hook process (both routes run :func:`bli_memory.core.hooks.events.handle`) can
  share it. :func:`claim_injected` reads, merges and writes under an exclusive lock on
  ``<state dir>/injected/lock`` (``flock``: it holds between the daemon's threads and
  between processes alike), so two prompts of one session at the same moment are given
  a memory once, not once each. The lock is held for one small read and write; a hook
  waits for it at most :data:`LOCK_WAIT_SECONDS`, then goes on without it.
- Best effort: an unreadable or corrupt file reads as "nothing injected yet", and a
  failed write is ignored. A hook never fails because of this state.

Standard library only.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import time
from collections.abc import Iterable, Mapping
from pathlib import Path

from bli_memory.core.private_files import FILE_MODE, atomic_write, make_private_dir

__all__ = [
    "LOCK_WAIT_SECONDS",
    "MAX_AGE_SECONDS",
    "MAX_IDS",
    "MAX_SESSIONS",
    "already_injected",
    "claim_injected",
    "log_dir",
    "record_injected",
]

#: Ids kept per session. A session injects at most 5 memories per prompt (recall_limit)
#: plus a session-start block, so 1,000 ids cover 190+ prompts; older ones are
#: forgotten first, and re-injecting a memory after that long costs little.
MAX_IDS = 1000
#: Session files kept (about 40 KB each at most); enough for weeks of sessions.
MAX_SESSIONS = 256
#: A session file unwritten for this long belongs to a session that has ended (hosts
#: resume sessions within days, not weeks): 7 days.
MAX_AGE_SECONDS = 7 * 24 * 3600
#: Longest wait for the lock (the holder only reads and writes one small file): 0.2 s,
#: as the hourly stats wait (:mod:`bli_memory.core.hooks.stats`), a tenth of a prompt's
#: deadline; stretched by ``BLI_MEMORY_HOOK_DEADLINE_SCALE`` as the deadline is.
LOCK_WAIT_SECONDS = 0.2


def log_dir(environ: Mapping[str, str] | None = None) -> Path:
    """Folder of the per-session files: ``<state dir>/injected``."""
    from bli_memory.core.paths import state_dir

    return state_dir(environ) / "injected"


def _file(host: str, session_id: str, environ: Mapping[str, str] | None) -> Path:
    digest = hashlib.sha256(f"{host}\0{session_id}".encode("utf-8", "replace")).hexdigest()[:32]
    return log_dir(environ) / f"{digest}.json"


def already_injected(
    host: str, session_id: str | None, *, environ: Mapping[str, str] | None = None
) -> set[str]:
    """Ids of the memories this session was already given (empty without a session id).

    Never raises: a missing, unreadable or corrupt file gives an empty set.
    """
    if not session_id:
        return set()
    try:
        data = json.loads(_file(host, session_id, environ).read_text(encoding="utf-8"))
        ids = data.get("ids") if isinstance(data, dict) else None
        return {i for i in ids if isinstance(i, str)} if isinstance(ids, list) else set()
    except (OSError, ValueError):
        return set()


def _prune(folder: Path, keep: Path) -> None:
    now = time.time()
    files: list[tuple[float, Path]] = []
    for path in folder.glob("*.json"):
        with contextlib.suppress(OSError):
            files.append((path.stat().st_mtime, path))
    files.sort()
    excess = len(files) - MAX_SESSIONS
    for n, (mtime, path) in enumerate(files):
        if path != keep and (n < excess or now - mtime > MAX_AGE_SECONDS):
            with contextlib.suppress(OSError):
                path.unlink()


def _locked(folder: Path) -> int | None:
    """An fd holding the folder's lock, or None after :data:`LOCK_WAIT_SECONDS`."""
    import fcntl
    import os

    from bli_memory.core.hooks.deadlines import deadline_scale

    fd = os.open(folder / "lock", os.O_WRONLY | os.O_CREAT, FILE_MODE)
    give_up = time.monotonic() + LOCK_WAIT_SECONDS * deadline_scale()
    while True:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            return fd
        except BlockingIOError:
            if time.monotonic() >= give_up:
                os.close(fd)
                return None
            time.sleep(0.002)


def claim_injected(
    host: str, session_id: str | None, ids: Iterable[str], *, environ: Mapping[str, str] | None = None
) -> list[str]:
    """Of ``ids``, those this session was not given yet, recorded as given, in one step.

    Read, merge and write happen under the folder's lock, so of two hooks of one session
    claiming the same id at once, one gets it. Without a session id nothing is recorded
    and every id is returned. Never raises: when the state cannot be read, written or
    locked in time, the ids are returned as given (a memory shown twice costs tokens; a
    hook that fails or stalls costs the prompt).

    Returns:
        The claimed ids, in the order given.
    """
    import os

    new = list(dict.fromkeys(i for i in ids if isinstance(i, str)))
    if not session_id or not new:
        return new
    path = _file(host, session_id, environ)
    fd: int | None = None
    try:
        make_private_dir(path.parent)
        fd = _locked(path.parent)
        fresh = not path.exists()
        previous: list[str] = []
        if not fresh:
            with contextlib.suppress(OSError, ValueError):
                data = json.loads(path.read_text(encoding="utf-8"))
                if isinstance(data, dict) and isinstance(data.get("ids"), list):
                    previous = [i for i in data["ids"] if isinstance(i, str)]
        seen = set(previous)
        claimed = [i for i in new if i not in seen]
        if claimed:
            merged = [*previous, *claimed][-MAX_IDS:]
            atomic_write(path, json.dumps({"ids": merged}), mode=FILE_MODE)
        if fresh:
            _prune(path.parent, path)
        return claimed
    except OSError:
        return new
    finally:
        if fd is not None:
            os.close(fd)


def record_injected(
    host: str, session_id: str | None, ids: Iterable[str], *, environ: Mapping[str, str] | None = None
) -> None:
    """Add ``ids`` to what this session was given (:func:`claim_injected`, answer unused).
    Never raises; no-op without a session id."""
    claim_injected(host, session_id, ids, environ=environ)
