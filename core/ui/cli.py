"""``bli-memory-mcp ui [--no-open] [--port N]``: serve the memory browser on 127.0.0.1.

The first stdout line is the URL with this start's token
(``http://127.0.0.1:PORT/?token=...``); nothing else is printed on stdout. The page
shows the embedded store; the space it opens on is the one an agent would use from
the folder the command was started in.
"""

from __future__ import annotations

import argparse
import os
import socket
import sys
from collections.abc import Mapping
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from bli_memory.core.embedded.engine import EmbeddedBackend
    from bli_memory.core.memory.backend import MemoryBackend
    from bli_memory.core.ui.app import BrowserState

__all__ = ["HOST", "main"]

#: The only address served: the browser is for the person at this machine.
HOST = "127.0.0.1"


def _port(value: str) -> int:
    """argparse type: a TCP port, 0 meaning any free one."""
    try:
        n = int(value)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{value!r} is not a port number") from None
    if not 0 <= n <= 65535:
        raise argparse.ArgumentTypeError(f"{n} is outside 0-65535")
    return n


def _listen(port: int) -> socket.socket:
    """A listening socket on 127.0.0.1:``port`` (0: the OS picks a free port).

    Raises:
        InvalidInputError: the port is taken or may not be used.
    """
    from bli_memory.core.errors import InvalidInputError

    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    # Inherited by every accepted connection (Linux): uvicorn writes a response's head and
    # body separately, and with Nagle on, a keep-alive connection then waits for the
    # browser's delayed ACK, about 40 ms a page (measured: bench/ui.py, docs/benchmarks.md).
    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    try:
        sock.bind((HOST, port))
        sock.listen(64)
    except OSError as exc:
        sock.close()
        raise InvalidInputError(f"cannot listen on {HOST}:{port}: {exc.strerror or exc}; "
                                "pick another --port, or leave it out for a free one") from exc
    return sock


def _has_gui(environ: Mapping[str, str]) -> bool:
    """Whether opening a browser would show a window: macOS, Windows, or an X11/Wayland
    display. Without one, :mod:`webbrowser` falls back to a text browser (lynx, w3m) that
    would take over the terminal the server runs in."""
    if sys.platform in ("darwin", "win32"):
        return True
    return bool(environ.get("DISPLAY") or environ.get("WAYLAND_DISPLAY"))


def _warm_up(backend: MemoryBackend) -> None:
    """Open the store and load the model; a failure is one stderr line (the pages then
    show the same error where it matters)."""
    from bli_memory.core.errors import BliMemoryError

    try:
        backend.warm_up()
    except BliMemoryError as exc:
        sys.stderr.write(f"bli-memory-mcp ui: {exc.message}\n")


def _home_state(backend: EmbeddedBackend) -> BrowserState:
    """The :class:`~bli_memory.core.ui.app.BrowserState` of the folder ``ui`` started in:
    its space as the hooks and the MCP server derive it
    (:func:`~bli_memory.core.hooks.container_tag.checked_space`).

    A ``BLI_MEMORY_CONTAINER_TAG`` that looks like a secret is refused as there (one that
    is invalid already stopped :func:`~bli_memory.core.settings.load_settings`): the page
    still starts (other spaces, captures and hook health stay readable),
    every page that would open on that space answers 400 saying why, and stderr has one
    line. The value is never repeated.
    """
    from bli_memory.core.errors import ConfigError
    from bli_memory.core.hooks.container_tag import checked_space
    from bli_memory.core.ui.app import BrowserState

    try:
        space = checked_space(os.getcwd(), environ=os.environ)
    except (ValueError, ConfigError) as exc:  # an invalid tag: load_settings stopped it before
        refused = exc.message if isinstance(exc, ConfigError) else str(exc)
    else:
        return BrowserState(backend=backend, home_space=space.tag, derived_from=space.derived_from,
                            machine=backend)
    sys.stderr.write(f"bli-memory-mcp ui: {refused}\n")
    return BrowserState(backend=backend, home_space="", home_refused=refused, machine=backend)


def main(argv: list[str]) -> int:
    """Run the memory browser until interrupted; returns the exit code."""
    parser = argparse.ArgumentParser(
        prog="bli-memory-mcp ui",
        description="A local web page to see, search, correct and forget the stored memories. "
                    "It listens on 127.0.0.1 only and prints its URL (with a one-start token) "
                    "on the first line.",
    )
    parser.add_argument("--port", type=_port, default=0, help="port to listen on (default: a free one)")
    parser.add_argument("--no-open", action="store_true", help="do not open a web browser")
    args = parser.parse_args(argv)

    import threading

    import uvicorn

    from bli_memory.core.embedded.engine import memory_backend
    from bli_memory.core.settings import load_settings
    from bli_memory.core.ui.app import build_app

    settings = load_settings()
    backend = memory_backend(settings, None)  # embedders from the installed plugins
    assert backend is not None
    if settings.remote:
        sys.stderr.write("bli-memory-mcp ui: a memory service is configured; this page shows the "
                         f"embedded store on this machine ({settings.store_path}), not the service\n")
    state = _home_state(backend)
    sock = _listen(args.port)
    port = sock.getsockname()[1]
    guard = build_app(state, port=port)
    sys.stdout.write(guard.url + "\n")
    sys.stdout.flush()
    from bli_memory.core.memory.embeddings import import_numpy_here

    import_numpy_here()  # before the warm-up thread starts

    # Open the store and load the model now, so the first search does not wait for them.
    threading.Thread(target=_warm_up, args=(backend,), name="bli-ui-warm-up", daemon=True).start()
    if not args.no_open and _has_gui(os.environ):
        import webbrowser

        threading.Thread(target=webbrowser.open, args=(guard.url,), daemon=True).start()
    else:
        sys.stderr.write("bli-memory-mcp ui: open the URL above in a browser on this machine; "
                         "Ctrl-C stops it\n")
    # No access log: the first request's URL holds the token.
    config = uvicorn.Config(guard, log_level="warning", access_log=False, lifespan="off")
    try:
        uvicorn.Server(config).run(sockets=[sock])
    finally:
        sock.close()
        backend.close()
    return 0
