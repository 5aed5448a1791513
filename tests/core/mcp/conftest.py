"""The MCP tool tests run twice: served in process, and relayed to the daemon's MCP server.

``mcp_route`` is parametrised over ``in-process`` and ``daemon``. On the daemon route a
real daemon of the test's HOME is started and ready before the test, every MCP server
the test starts (through :func:`tests.mcp_client.run_session`) writes its stderr to a
file, and the test fails if any of them answered a call in process (the route logs
``mcp route in-process``), so a silent fallback cannot pass for the daemon route.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests import mcp_client
from tests.core.daemon.test_daemon import Daemons


class Route:
    """The route one test runs on, and its daemon when that is the daemon route."""

    def __init__(self, name: str, daemons: Daemons | None, errlog: Path | None) -> None:
        self.name = name
        self.daemons = daemons
        self.errlog = errlog

    def restart(self) -> None:
        """Start a new daemon with the test's environment as it is now (daemon route only)."""
        if self.daemons is not None:
            self.daemons.kill_all()
            self.daemons.start()

    def server_stderr(self) -> str:
        """What the MCP servers of this test wrote to stderr ("" in process)."""
        if self.errlog is None or not self.errlog.exists():
            return ""
        return self.errlog.read_text(errors="replace")


@pytest.fixture(params=["in-process", "daemon"])
def mcp_route(request: pytest.FixtureRequest, temp_home: Path, tmp_path: Path,
              monkeypatch: pytest.MonkeyPatch):
    if request.param == "in-process":
        yield Route("in-process", None, None)
        return
    monkeypatch.setenv("BLI_MEMORY_DAEMON", "1")
    errlog = tmp_path / "mcp-servers.err"
    monkeypatch.setattr(mcp_client, "ERRLOG", errlog)
    daemons = Daemons(temp_home, tmp_path)
    try:
        daemons.start()
        route = Route("daemon", daemons, errlog)
        yield route
        stderr = route.server_stderr()
        assert "mcp route in-process" not in stderr, stderr[-3000:]
    finally:
        daemons.kill_all()
