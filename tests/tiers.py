"""The suite's two tiers, and the guard that keeps their marking true.

- **fast**: tests that start no process, bind no socket (so run no server, host CLI or
  browser). They run on every supported CPython (``nox -s fast-3.11``).
- **e2e** (``@pytest.mark.e2e``, or ``pytestmark = pytest.mark.e2e`` for a module): tests
  that do start one. They run once, with every real part, on the newest CPython.

The guard is a :func:`sys.addaudithook` hook (PEP 578). While a test that is not marked
``e2e`` runs (the setup of its fixtures included), the interpreter's ``subprocess.Popen``,
``os.system``, ``os.posix_spawn``, ``os.exec``, ``os.spawn``, ``os.fork``, ``os.forkpty``
and ``socket.bind`` events raise :class:`UnmarkedProcessError`, and the test fails with
its name and what it started. So a new test that starts a process without the marker
fails on its first run, in either tier, and the fast tier can never start one behind
CI's back. The same events are refused while test modules are imported (collection),
where nothing may start in either tier.

Events from a thread that was already running when the test began (a server left by a
session fixture of an earlier e2e test) are not the test's doing and are let through.
What the audit events cannot see: ``multiprocessing``'s spawn and forkserver start
methods (``_posixsubprocess`` raises no event) and a ``listen()`` on a socket that was
never bound. No test uses either; a test that starts a process that way must carry the
marker by review.

A fixture shared by many tests (a Postgres server for the session) starts in whichever
test first asks for it; in the fast tier, where no ``e2e`` test ran before, that is the
unmarked test that asked, and the guard names it.
"""

from __future__ import annotations

import sys
import threading
from typing import Any

import pytest

__all__ = ["UnmarkedProcessError"]

_EVENTS = {
    "subprocess.Popen": "a process",
    "os.posix_spawn": "a process",
    "os.exec": "a process",
    "os.fork": "a forked process",
    "os.forkpty": "a forked process",
    "os.system": "a shell command",
    "os.spawn": "a process",
    "socket.bind": "a server socket",
}


class UnmarkedProcessError(RuntimeError):
    """A test that is not marked ``e2e`` started a process or bound a socket."""


_state: dict[str, Any] = {"test": None, "found": [], "threads": frozenset()}


def _describe(event: str, args: tuple[Any, ...]) -> str:
    what = _EVENTS[event]
    try:
        if event == "subprocess.Popen":
            argv = args[1]
            name = argv if isinstance(argv, (str, bytes)) else (argv[0] if argv else args[0])
            return f"{what} ({name!s})"
        if event in ("os.posix_spawn", "os.exec", "os.spawn", "os.system"):
            return f"{what} ({args[0]!s})"
        if event == "socket.bind":
            return f"{what} ({args[1]!r})"
    except Exception:  # the description is a courtesy; the refusal is what matters
        pass
    return what


def _audit(event: str, args: tuple[Any, ...]) -> None:
    test = _state["test"]
    if test is None or event not in _EVENTS:
        return
    if threading.get_ident() in _state["threads"]:
        return  # a thread older than the test: a session fixture's server, not this test
    what = _describe(event, args)
    _state["found"].append(what)
    raise UnmarkedProcessError(
        f"{test} starts {what} but is not marked e2e: add @pytest.mark.e2e (tests/tiers.py)")


sys.addaudithook(_audit)


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers", "e2e: starts a process, a server, a host CLI or a browser (tests/tiers.py); "
                   "the fast tier runs -m 'not e2e'")


def _arm(test: str | None) -> None:
    main = threading.main_thread().ident
    _state["threads"] = frozenset(t.ident for t in threading.enumerate() if t.ident != main)
    _state["found"] = []
    _state["test"] = test


@pytest.hookimpl(hookwrapper=True)
def pytest_make_collect_report(collector: pytest.Collector) -> Any:
    """Arm the guard while a test module is imported: nothing may start at import."""
    if not isinstance(collector, pytest.Module):
        yield
        return
    _arm(f"importing {collector.nodeid}")
    try:
        yield
    finally:
        _state["test"] = None


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_protocol(item: pytest.Item, nextitem: pytest.Item | None) -> Any:
    """Arm the guard for the setup and call of an unmarked test."""
    _arm(None if item.get_closest_marker("e2e") else item.nodeid)
    try:
        yield
    finally:
        _state["test"] = None


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_teardown(item: pytest.Item, nextitem: pytest.Item | None) -> Any:
    """Disarm the guard for teardown: it also finalizes the fixtures of wider scope (the
    session's Postgres stops in the last test's teardown), which an e2e test started.
    A function's own fixture that starts something started it in setup, where it is seen."""
    test, _state["test"] = _state["test"], None
    try:
        yield
    finally:
        _state["test"] = test


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]) -> Any:
    """Fail a phase in which the guard refused something, even when the code under test
    caught the refusal (a server thread, a ``try: ... except Exception``)."""
    outcome = yield
    report = outcome.get_result()
    found, _state["found"] = _state["found"], []  # each refusal fails one phase, once
    if found and report.passed and _state["test"] == item.nodeid:
        report.outcome = "failed"
        report.longrepr = (f"{item.nodeid} starts {found[0]} but is not marked e2e: "
                           f"add @pytest.mark.e2e (tests/tiers.py)")
