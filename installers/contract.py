"""The install contract ``bli-memory-install-config.v1``: emit, resolve, validate.

The contract (BLI Memory spec, "Install") names the MCP server entry and the three
hooks with their timeouts, because this executable is the only thing that knows
which hook subcommands it implements::

    {"schema": "bli-memory-install-config.v1", "server_id": "bli-memory",
     "mcp_server": {"command": "/abs/bin/bli-memory-mcp", "args": [], "env": {}},
     "hooks": [{"event": "SessionStart", "command": "/abs/bin/bli-memory-mcp hook session-start",
                "timeout_seconds": 30}, ...],
     "permissions_allow": ["mcp__bli-memory__search_memory"]}

The bare executable name is replaced by the resolved absolute path in every string
(shell-quoted in hook commands, so paths with spaces work); never ``npx``/``uvx``
re-resolution. Every contract is validated against
``schemas/bli-memory-install-config.v1.schema.json`` (JSON Schema 2020-12) before it
is printed or used: an invalid one is a bug and fails loudly.
"""

from __future__ import annotations

import json
import os
import shlex
import shutil
import sys
from functools import cache
from importlib import resources
from pathlib import Path
from typing import Any

from bli_memory.core.errors import ConfigError
from bli_memory.core.hooks.deadlines import REGISTERED_TIMEOUTS_S

__all__ = [
    "BIN_NAME",
    "HOOK_SUBCOMMANDS",
    "SCHEMA_ID",
    "SERVER_ID",
    "ContractError",
    "build_contract",
    "hook_command",
    "load_schema",
    "resolve_bin",
    "validate_contract",
]

SCHEMA_ID = "bli-memory-install-config.v1"
SERVER_ID = "bli-memory"
BIN_NAME = "bli-memory-mcp"

#: Host event -> (our hook subcommand, timeout registered with the host in seconds).
#: The hook's own deadlines (8 / 2 / 15 s) sit under these (BLI Memory spec).
HOOK_SUBCOMMANDS: dict[str, tuple[str, int]] = {
    host_event: (event, REGISTERED_TIMEOUTS_S[event])
    for host_event, event in (("SessionStart", "session-start"), ("UserPromptSubmit", "prompt"),
                              ("Stop", "stop"))
}


class ContractError(ConfigError):
    """An emitted contract does not validate: a bug, never written anywhere."""

    default_reason = "contract_invalid"


@cache
def load_schema() -> dict[str, Any]:
    """The contract's JSON Schema, loaded from package data."""
    text = resources.files("bli_memory.schemas").joinpath(f"{SCHEMA_ID}.schema.json").read_text("utf-8")
    return json.loads(text)


def resolve_bin() -> str:
    """Absolute path of the ``bli-memory-mcp`` executable of this installation.

    The script next to the running interpreter wins (a virtualenv's ``bin/``), then the
    one on ``PATH``. Symlinks are not resolved: a venv's path must stay the venv's.

    Raises:
        ConfigError: no executable can be found.
    """
    beside = Path(sys.executable).parent / BIN_NAME
    if beside.exists():
        return os.path.abspath(beside)
    found = shutil.which(BIN_NAME)
    if found:
        return os.path.abspath(found)
    raise ConfigError(f"cannot find the {BIN_NAME} executable next to {sys.executable} or on PATH")


def hook_command(bin_path: str, subcommand: str, *extra: str) -> str:
    """Shell command line for a hook: quoted absolute path + ``hook <subcommand>``."""
    return " ".join([shlex.quote(bin_path), "hook", subcommand, *extra])


def build_contract(bin_path: str | None = None) -> dict[str, Any]:
    """Emit the resolved, validated contract.

    Args:
        bin_path: Absolute executable path (default: :func:`resolve_bin`).

    Returns:
        The contract as a dict.

    Raises:
        ContractError: the result does not validate (a bug).
    """
    path = bin_path or resolve_bin()
    contract = {
        "schema": SCHEMA_ID,
        "server_id": SERVER_ID,
        "mcp_server": {"command": path, "args": [], "env": {}},
        "hooks": [
            {"event": event, "command": hook_command(path, sub), "timeout_seconds": timeout}
            for event, (sub, timeout) in HOOK_SUBCOMMANDS.items()
        ],
        "permissions_allow": [f"mcp__{SERVER_ID}__search_memory"],
    }
    validate_contract(contract)
    return contract


def validate_contract(contract: Any) -> None:
    """Validate a contract against the schema.

    Raises:
        ContractError: naming the first violation (path and message).
    """
    from jsonschema import Draft202012Validator

    validator = Draft202012Validator(load_schema())
    errors = sorted(validator.iter_errors(contract), key=lambda e: list(e.absolute_path))
    if errors:
        first = errors[0]
        where = "/".join(str(p) for p in first.absolute_path) or "(root)"
        raise ContractError(f"install contract is invalid at {where}: {first.message}")
