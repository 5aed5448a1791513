"""The one place a command's failure becomes its exit status.

Every command line (``bli-memory-mcp`` and its subcommands, ``cockpit``) runs its work
through :func:`run_cli`, so a :class:`~bli_memory.core.errors.BliMemoryError` is one
line on stderr and exit status 1 everywhere, with no traceback. The numbers follow the
shell conventions: 0 success, 1 failure, 2 usage error (as argparse exits), 128 + the
signal number for an interrupt (SIGINT: 130).
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable

__all__ = ["EXIT_FAILED", "EXIT_INTERRUPTED", "EXIT_OK", "EXIT_USAGE", "run_cli"]

EXIT_OK = 0
EXIT_FAILED = 1
EXIT_USAGE = 2
EXIT_INTERRUPTED = 130


def run_cli(prog: str, command: Callable[[list[str]], int], args: list[str]) -> int:
    """``command(args)``, with its failures turned into exit statuses.

    Args:
        prog: Name shown before the message (``bli-memory-mcp``, ``cockpit``).
        command: The work; returns its own exit status.
        args: Its arguments.

    Returns:
        ``command``'s status; :data:`EXIT_FAILED` after a ``BliMemoryError`` (its
        message printed as ``prog: message``) or when stdout's reader went away;
        :data:`EXIT_INTERRUPTED` on Ctrl-C.
    """
    from bli_memory.core.errors import BliMemoryError

    try:
        return command(args)
    except BliMemoryError as exc:
        sys.stderr.write(f"{prog}: {exc.message}\n")
        return EXIT_FAILED
    except KeyboardInterrupt:
        return EXIT_INTERRUPTED
    except BrokenPipeError:
        # The reader went away (`status | head`): nothing more to say, and no traceback.
        # Point stdout at /dev/null so the interpreter's final flush cannot fail again
        # (the recipe of the Python docs, "Note on SIGPIPE").
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        return EXIT_FAILED
