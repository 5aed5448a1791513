"""Which memories one host session has already been given: per-session, bounded hook state.

The prompt hook and session-start inject memories into the model's context. Within one
session that context persists, so a memory injected once is never injected again: it
would only cost tokens. This module keeps, per host session, the ids already injected.

- One small JSON file per session under ``<state dir>/injected/``, named by a SHA-256 of
  ``host`` and the host's session id (the id itself never reaches a file name).
- Bounded: at most :data:`MAX_IDS` ids per session (oldest dropped first), at most
  :data:`MAX_SESSIONS` files (least recently written removed first), and files older
  than :data:`MAX_AGE_SECONDS` are removed when a new session file is created.
- Given only once delivered. A run that builds a block *reserves* its ids
  (:func:`reserve_injected`) and the hook process, once the block is written to its
  stdout, *confirms* them (:func:`confirm_injected`); a write that fails (the host
  closed the pipe) *releases* them (:func:`release_injected`), so the next prompt gives
  them. A reservation never confirmed (the hook killed, or past its deadline, between
  the two) lapses after :data:`PENDING_SECONDS`. While it holds, the ids count as given:
  two prompts of one session at the same moment still give a memory once.
- Writes are atomic (temporary file, then rename) with mode 0600, so the daemon, which
  reserves, and the hook process, which confirms, share it. Every change reads, merges
  and writes under an exclusive lock on ``<state dir>/injected/lock`` (``flock``: it
  holds between the daemon's threads and between processes alike). The lock is held for
  one small read and write; a hook waits for it at most :data:`LOCK_WAIT_SECONDS`, then
  goes on without it.
- The state dir is always this process's own: the daemon's is the one its callers
  share, since they reach it through the socket in that folder.
- Best effort: an unreadable or corrupt file reads as "nothing injected yet", and a
  failed write is ignored. A hook never fails because of this state.

Standard library only.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import time
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path

from bli_memory.core.private_files import FILE_MODE, atomic_write, make_private_dir

__all__ = [
    "LOCK_WAIT_SECONDS",
    "MAX_AGE_SECONDS",
    "MAX_IDS",
    "MAX_SESSIONS",
    "PENDING_SECONDS",
    "already_injected",
    "claim_injected",
    "confirm_injected",
    "log_dir",
    "record_injected",
    "release_injected",
    "reserve_injected",
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
#: How long a reservation holds without being confirmed: the longest timeout the installer
#: registers for a hook (30 s), after which the host has killed a hook that never wrote.
PENDING_SECONDS = 30.0


def log_dir(environ: Mapping[str, str] | None = None) -> Path:
    """Folder of the per-session files: ``<state dir>/injected``."""
    from bli_memory.core.paths import state_dir

    return state_dir(environ) / "injected"


def _file(host: str, session_id: str, environ: Mapping[str, str] | None) -> Path:
    digest = hashlib.sha256(f"{host}\0{session_id}".encode("utf-8", "replace")).hexdigest()[:32]
    return log_dir(environ) / f"{digest}.json"


def _read(path: Path) -> tuple[list[str], dict[str, float]]:
    """A session file's given ids and unexpired reservations (id -> when it lapses)."""
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return [], {}
    if not isinstance(data, dict):
        return [], {}
    ids = data.get("ids")
    given = [i for i in ids if isinstance(i, str)] if isinstance(ids, list) else []
    held = data.get("pending")
    now = time.time()
    pending = ({i: float(t) for i, t in held.items()
                if isinstance(i, str) and isinstance(t, (int, float)) and t > now}
               if isinstance(held, dict) else {})
    return given, pending


def already_injected(
    host: str, session_id: str | None, *, environ: Mapping[str, str] | None = None
) -> set[str]:
    """Ids of the memories this session was already given, or is being given right now
    (reserved by a run whose block is not written yet); empty without a session id.

    Never raises: a missing, unreadable or corrupt file gives an empty set.
    """
    if not session_id:
        return set()
    given, pending = _read(_file(host, session_id, environ))
    return {*given, *pending}


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


_Change = Callable[[list[str], dict[str, float]], tuple[list[str], dict[str, float], list[str]]]


def _change(host: str, session_id: str, environ: Mapping[str, str] | None, change: _Change,
            fallback: list[str]) -> list[str]:
    """Apply ``change(given, pending) -> (given, pending, answer)`` to the session's file
    under the folder's lock; ``fallback`` when the state cannot be read or written."""
    import os

    path = _file(host, session_id, environ)
    fd: int | None = None
    try:
        make_private_dir(path.parent)
        fd = _locked(path.parent)
        fresh = not path.exists()
        given, pending = _read(path)
        new_given, new_pending, answer = change(given, pending)
        if new_given != given or new_pending != pending:
            data: dict[str, object] = {"ids": new_given[-MAX_IDS:]}
            if new_pending:
                data["pending"] = new_pending
            atomic_write(path, json.dumps(data), mode=FILE_MODE)
        if fresh:
            _prune(path.parent, path)
        return answer
    except OSError:
        return fallback
    finally:
        if fd is not None:
            os.close(fd)


def _unique(ids: Iterable[str]) -> list[str]:
    return list(dict.fromkeys(i for i in ids if isinstance(i, str)))


def reserve_injected(
    host: str, session_id: str | None, ids: Iterable[str], *, environ: Mapping[str, str] | None = None
) -> list[str]:
    """Of ``ids``, those this session was neither given nor is being given, held for it.

    The ids are held, not given: the hook process confirms them once its block is on
    stdout (:func:`confirm_injected`) or releases them when the write failed
    (:func:`release_injected`); a hold neither confirmed nor released lapses after
    :data:`PENDING_SECONDS`. Of two hooks of one session reserving the same id at once,
    one gets it. Without a session id nothing is held and every id is returned. Never
    raises: when the state cannot be read, written or locked in time, the ids are
    returned (a memory shown twice costs tokens; a hook that fails or stalls costs the
    prompt).

    Returns:
        The reserved ids, in the order given.
    """
    new = _unique(ids)
    if not session_id or not new:
        return new

    def change(given: list[str], pending: dict[str, float]) -> tuple[list[str], dict[str, float], list[str]]:
        taken = {*given, *pending}
        won = [i for i in new if i not in taken]
        until = time.time() + PENDING_SECONDS
        return given, {**pending, **dict.fromkeys(won, until)}, won

    return _change(host, session_id, environ, change, new)


def confirm_injected(
    host: str, session_id: str | None, ids: Iterable[str], *, environ: Mapping[str, str] | None = None
) -> None:
    """Record ``ids`` as given to the session (their block was written); their holds end.
    Never raises; no-op without a session id."""
    done = _unique(ids)
    if not session_id or not done:
        return

    def change(given: list[str], pending: dict[str, float]) -> tuple[list[str], dict[str, float], list[str]]:
        seen = set(given)
        rest = {i: t for i, t in pending.items() if i not in done}
        return [*given, *(i for i in done if i not in seen)], rest, []

    _change(host, session_id, environ, change, [])


def release_injected(
    host: str, session_id: str | None, ids: Iterable[str], *, environ: Mapping[str, str] | None = None
) -> None:
    """End the holds on ``ids`` without recording them (their block never reached the
    host), so a later prompt of the session may give them. Never raises."""
    dropped = set(_unique(ids))
    if not session_id or not dropped:
        return

    def change(given: list[str], pending: dict[str, float]) -> tuple[list[str], dict[str, float], list[str]]:
        return given, {i: t for i, t in pending.items() if i not in dropped}, []

    _change(host, session_id, environ, change, [])


def claim_injected(
    host: str, session_id: str | None, ids: Iterable[str], *, environ: Mapping[str, str] | None = None
) -> list[str]:
    """Of ``ids``, those this session was not given yet (nor is being given), recorded as
    given, in one step (:func:`reserve_injected` and :func:`confirm_injected` at once:
    for a caller that has delivered already). Never raises; see :func:`reserve_injected`.

    Returns:
        The claimed ids, in the order given.
    """
    new = _unique(ids)
    if not session_id or not new:
        return new

    def change(given: list[str], pending: dict[str, float]) -> tuple[list[str], dict[str, float], list[str]]:
        taken = {*given, *pending}
        won = [i for i in new if i not in taken]
        return [*given, *won], pending, won

    return _change(host, session_id, environ, change, new)


def record_injected(
    host: str, session_id: str | None, ids: Iterable[str], *, environ: Mapping[str, str] | None = None
) -> None:
    """Add ``ids`` to what this session was given (:func:`claim_injected`, answer unused).
    Never raises; no-op without a session id."""
    claim_injected(host, session_id, ids, environ=environ)
