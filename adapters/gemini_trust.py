"""``install --host gemini --trust-folder PATH``: trust exactly one folder for Gemini CLI, on request.

Gemini CLI 0.61 disables every MCP server in a folder it does not trust
(docs/hosts.md section 3). A folder is trusted by an entry in
``~/.gemini/trustedFolders.json`` (``$GEMINI_CLI_HOME`` replaces the home folder;
``GEMINI_CLI_TRUSTED_FOLDERS_PATH`` names the file itself)::

    {"/abs/project": "TRUST_FOLDER"}

BLI Memory never trusts a folder by itself. With ``--trust-folder PATH``, install adds
exactly ``{"<PATH, absolute and resolved>": "TRUST_FOLDER"}`` (shown in ``--dry-run``
like every other change) and records that it did, in the installer's record
(:class:`bli_memory.installers.created.Record`). Uninstall removes the entries it
recorded, only while they still say ``TRUST_FOLDER``: an entry the person had already,
or has changed since, is theirs and stays. A folder the person marked
``DO_NOT_TRUST`` is refused with an error rather than overridden.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from bli_memory.core.errors import InstallConflict

__all__ = [
    "TRUST_LEVEL",
    "TRUST_NOTE_PREFIX",
    "adjust_plan",
    "gemini_dir",
    "is_subpath",
    "record_trust",
    "rules_path",
    "trust_changes",
    "untrust_changes",
    "with_trust",
    "with_untrust",
]

TRUST_LEVEL = "TRUST_FOLDER"


#: How the "untrusted folder" note of Gemini's plan and status begins.
TRUST_NOTE_PREFIX = "Gemini CLI disables bli-memory in "


def gemini_dir(home: Any) -> Path:
    """Gemini CLI's folder: ``$GEMINI_CLI_HOME/.gemini``, else ``<home>/.gemini``."""
    override = os.environ.get("GEMINI_CLI_HOME")
    return Path(override or home) / ".gemini"


def is_subpath(parent: str, child: str) -> bool:
    """Whether ``child`` is ``parent`` or lies inside it (both absolute, no symlinks resolved)."""
    rel = os.path.relpath(child, parent)
    return rel == "." or not (rel == ".." or rel.startswith(".." + os.sep) or os.path.isabs(rel))


def rules_path(home: Any) -> Path:
    """The ``trustedFolders.json`` Gemini CLI reads."""
    override = os.environ.get("GEMINI_CLI_TRUSTED_FOLDERS_PATH")
    return Path(override) if override else Path(gemini_dir(home)) / "trustedFolders.json"


def _load(path: Path) -> tuple[str | None, dict[str, Any]]:
    from bli_memory.installers.files import read_json_object, read_text

    old = read_text(path)
    return old, read_json_object(path, old)


def trust_changes(folder: str, home: Any) -> tuple[str, dict[str, tuple[str | None, str | None]]]:
    """The folder's resolved path and the file change that trusts it (empty when it already is).

    Raises:
        InstallConflict: the folder does not exist, or the person marked it ``DO_NOT_TRUST``,
            or ``trustedFolders.json`` is malformed.
    """
    from bli_memory.installers.files import dump_json_like

    resolved = os.path.realpath(os.path.expanduser(folder))
    if not os.path.isdir(resolved):
        raise InstallConflict(f"--trust-folder {folder}: no such folder; nothing was written")
    path = rules_path(home)
    old, rules = _load(path)
    current = rules.get(resolved)
    if current == TRUST_LEVEL:
        return resolved, {}
    if current is not None:
        raise InstallConflict(f"{path} marks {resolved} as {current}; change it in Gemini CLI "
                              "(/permissions) if you mean to trust it. Nothing was written")
    return resolved, {str(path): (old, dump_json_like({**rules, resolved: TRUST_LEVEL}, old))}


def untrust_changes(folders: set[str], home: Any) -> dict[str, tuple[str | None, str | None]]:
    """The file change removing the recorded ``folders`` that still say ``TRUST_FOLDER``."""
    from bli_memory.installers.files import dump_json_like

    if not folders:
        return {}
    path = rules_path(home)
    old, rules = _load(path)
    kept = {k: v for k, v in rules.items() if not (k in folders and v == TRUST_LEVEL)}
    if kept == rules:
        return {}
    return {str(path): (old, dump_json_like(kept, old))}


def with_trust(plan: Any, folder: str, home: Any, cwd: str) -> tuple[Any, str | None]:
    """Gemini's ``plan`` plus the entry trusting ``folder``; returns it and the folder to record.

    The folder to record is None when the entry was there already (it is the person's).
    The "not a trusted folder" note goes when ``folder`` covers ``cwd``.

    Raises:
        InstallConflict: as :func:`trust_changes`.
    """
    from dataclasses import replace

    resolved, changes = trust_changes(folder, home)
    notes = list(plan.notes)
    if is_subpath(resolved, os.path.realpath(cwd)):
        notes = [n for n in notes if not n.startswith(TRUST_NOTE_PREFIX)]
    where = next(iter(changes), str(rules_path(home)))
    notes.append(f"trusts {resolved} for Gemini CLI ({where}); uninstall removes that entry"
                 if changes else f"{resolved} is already a trusted folder; left as it is")
    return replace(plan, files={**plan.files, **changes}, notes=tuple(notes)), (resolved if changes else None)


def with_untrust(plan: Any, folders: set[str], home: Any) -> Any:
    """Gemini's uninstall ``plan`` plus the removal of the trust entries install recorded."""
    from dataclasses import replace

    changes = untrust_changes(folders, home)
    return replace(plan, files={**plan.files, **changes}) if changes else plan


def record_trust(trusted: str | None, forget: bool) -> None:
    """Keep the folders install trusted in the installer's record, for uninstall to remove.

    Args:
        trusted: A folder install added an entry for (None: none added).
        forget: Drop every recorded folder first (uninstall removed their entries).

    A record that cannot be written is left as it was (never raises ``OSError``).
    """
    if trusted is None and not forget:
        return
    from bli_memory.installers.created import Record

    record = Record()
    if forget:
        record.trusted.clear()
    if trusted is not None:
        record.trusted.add(trusted)
    try:
        record.save()
    except OSError:
        pass


def adjust_plan(plan: Any, folder: str | None, home: Any, uninstall: bool) -> Any:
    """Gemini's ``host_adjust_plan``: trust ``--trust-folder``'s folder, or untrust the recorded ones.

    Returns an :class:`~bli_memory.core.models.AdjustedPlan`, or None when there is
    nothing to add (install without ``--trust-folder``).

    Raises:
        InstallConflict: as :func:`trust_changes`.
    """
    from functools import partial

    from bli_memory.core.models import AdjustedPlan

    if uninstall:
        from bli_memory.installers.created import Record

        return AdjustedPlan(with_untrust(plan, Record().trusted, home), partial(record_trust, None, True))
    if not folder:
        return None
    adjusted, resolved = with_trust(plan, folder, home, os.getcwd())
    return AdjustedPlan(adjusted, partial(record_trust, resolved, False))
