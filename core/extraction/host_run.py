"""Run one headless host command, and leave nothing of it running.

The command runs in its own process group in an empty private folder, with
``BLI_MEMORY_HOOKS_OFF=1`` (:data:`~bli_memory.core.headless.HOOKS_OFF_ENV`), under the
guard of :mod:`~bli_memory.core.extraction.host_guard`: when the CLI exits, what it left in
the group is killed; when the worker is gone (killed outright, or a daemon or MCP server
that exited mid-request), the guard kills the whole group. When the request times out or
the worker stops it, the worker kills the group itself (``SIGKILL``). Should the guard
itself be killed with the worker, the next worker that takes the request lock kills what
is left (:func:`~bli_memory.core.extraction.host_ledger.reap_leftover`).
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import subprocess
import sys
from pathlib import Path
from typing import IO

from bli_memory.core.extraction import host_guard
from bli_memory.core.extraction.host_ledger import group_members, note_running
from bli_memory.core.headless import HOOKS_OFF_ENV, HeadlessCommand, HeadlessRun

__all__ = ["run_headless"]

#: Most bytes kept of each output stream (a headless JSON answer is a few kB).
MAX_OUTPUT_BYTES = 1_000_000


def _write_files(command: HeadlessCommand, workdir: Path) -> None:
    root = workdir.resolve()
    for relative, text in command.files.items():
        target = (root / relative).resolve()
        if root not in target.parents:
            raise ValueError(f"a headless command's file leaves its folder: {relative!r}")
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(text, encoding="utf-8")
        target.chmod(0o600)


def _kill_group(pgid: int) -> None:
    with contextlib.suppress(OSError):
        os.killpg(pgid, signal.SIGKILL)


def run_headless(command: HeadlessCommand, *, workdir: Path, timeout_s: float,
                 lock: IO[str] | None = None) -> HeadlessRun | str:
    """Run ``command`` (after its login check, if it has one) in ``workdir``; see :func:`_run`.

    Returns:
        The finished run, or ``"host_missing"``, ``"timeout"`` or ``"not_logged_in"`` (the
        login check exited non-zero).
    """
    if command.login_check:
        check = HeadlessCommand(argv=command.login_check, env=command.env)
        answer = _run(check, workdir=workdir, timeout_s=min(timeout_s, 30.0), lock=lock)
        if isinstance(answer, str):
            return answer
        if answer.returncode != 0:
            return "not_logged_in"
    return _run(command, workdir=workdir, timeout_s=timeout_s, lock=lock)


def _run(command: HeadlessCommand, *, workdir: Path, timeout_s: float,
         lock: IO[str] | None = None) -> HeadlessRun | str:
    """Run ``command`` in ``workdir`` and return what it printed, or a failure reason.

    Args:
        command: From the host's adapter (``host_headless_command``), or its login check.
        workdir: An empty folder, the run's working directory; its files are written here.
        timeout_s: Seconds before the whole process group is killed.
        lock: The held request lock, where the running group is noted for
            :func:`~bli_memory.core.extraction.host_ledger.reap_leftover`.

    Returns:
        The finished run, or ``"host_missing"`` (the CLI is not on ``PATH``) or
        ``"timeout"`` (killed).
    """
    executable = shutil.which(command.argv[0])
    if executable is None:
        return "host_missing"
    _write_files(command, workdir)
    env = {**os.environ, **command.env, HOOKS_OFF_ENV: "1"}
    argv = [sys.executable, "-I", str(Path(host_guard.__file__)), executable, *command.argv[1:]]
    proc = subprocess.Popen(  # noqa: S603 - the host's own CLI, resolved on PATH
        argv, cwd=workdir, env=env, start_new_session=True,
        stdin=subprocess.PIPE if command.stdin is not None else subprocess.DEVNULL,
        stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    pgid = proc.pid  # start_new_session: the child leads its own group
    if lock is not None:
        note_running(lock, {"pgid": pgid, "workdir": str(workdir)})
    try:
        out, err = proc.communicate(
            input=command.stdin.encode() if command.stdin is not None else None, timeout=timeout_s)
    except subprocess.TimeoutExpired:
        _kill_group(pgid)
        proc.communicate()
        return "timeout"
    except BaseException:  # the worker is stopping: nothing of the request stays behind
        _kill_group(pgid)
        with contextlib.suppress(Exception):
            proc.communicate(timeout=5)
        raise
    finally:
        if group_members(pgid):
            _kill_group(pgid)  # helpers the CLI left running after it answered
    return HeadlessRun(returncode=proc.returncode,
                       stdout=out[:MAX_OUTPUT_BYTES].decode("utf-8", "replace"),
                       stderr=err[:MAX_OUTPUT_BYTES].decode("utf-8", "replace"), workdir=workdir)
