"""Install, uninstall and status over the host adapters.

Every host's edits are planned first (each adapter's ``host_plan_config``); only when
every plan succeeded is anything written, so a malformed config file of any host
means nothing is written anywhere. Writes are atomic with a backup
(:func:`bli_memory.installers.files.atomic_write`). A plan with no file changes is a
no-op that says so: install is idempotent.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from bli_memory.core.errors import ConfigError, InstallConflict
from bli_memory.core.models import HostConfigPlan, HostStatus
from bli_memory.installers.files import StagedWrite, commit_write, discard_write, stage_write, unified_diff

__all__ = ["HostReport", "apply_plans", "known_hosts", "plan_hosts", "select_hosts", "status_hosts"]


@dataclass
class HostReport:
    """What happened to one host: ``changed``, ``unchanged`` or ``skipped`` (not found)."""

    host: str
    outcome: str
    files: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    diff: str = ""
    backups: list[str] = field(default_factory=list)
    texts: dict[str, tuple[str | None, str | None]] = field(default_factory=dict)
    owned: set[str] = field(default_factory=set)


def known_hosts(pm: Any) -> dict[str, dict[str, Any]]:
    """Every host plugin's info, by name."""
    return {info["name"]: info for info in pm.hook.host_info()}


def select_hosts(pm: Any, requested: str) -> tuple[list[str], list[str]]:
    """Hosts to act on and hosts skipped, for ``--host NAME``, ``--host A,B`` or ``--host all``.

    ``all`` means every host found on this machine; the others are skipped, not errors.

    Raises:
        ConfigError: an unknown host name.
    """
    hosts = known_hosts(pm)
    if requested == "all":
        present = sorted(h for h, info in hosts.items() if info.get("present"))
        return present, [h for h in hosts if h not in present]
    wanted = [h.strip() for h in requested.split(",") if h.strip()]
    unknown = [h for h in wanted if h not in hosts]
    if unknown or not wanted:
        raise ConfigError(f"unknown host {(unknown or [requested])[0]!r}; known: {', '.join(sorted(hosts))}, "
                          "all, or several joined by commas (gemini,codex)")
    return list(dict.fromkeys(wanted)), []


def plan_hosts(pm: Any, hosts: list[str], contract: dict[str, Any], home: Path, *,
               uninstall: bool) -> list[HostConfigPlan]:
    """Plan every host's edits; raises before anything is written.

    Raises:
        InstallConflict: a host's existing config is malformed.
    """
    plans = []
    for host in hosts:
        plan = pm.hook.host_plan_config(host=host, contract=contract, home=home, uninstall=uninstall)
        if plan is None:
            raise ConfigError(f"no adapter plans config for host {host!r}")
        plans.append(plan)
    return plans


def apply_plans(plans: list[HostConfigPlan], *, dry_run: bool, uninstall: bool = False) -> list[HostReport]:
    """Write (or, with ``dry_run``, only diff) every planned file, all or nothing.

    Every new file and every backup is staged first; only when all were staged are
    the targets replaced (renames). If staging fails, nothing is changed. Install
    records the files and folders it creates; uninstall removes a recorded file left
    :func:`~bli_memory.installers.created.hollow` and a recorded folder left empty
    (:mod:`bli_memory.installers.created`). A file install created is never backed up
    (there is no earlier version to restore); one that others have written into since
    is kept without our entries and leaves the record.

    Raises:
        InstallConflict: a file could not be staged (permissions, disk full, ...).
    """
    from bli_memory.installers.created import Record, hollow, missing_dirs
    from bli_memory.installers.files import as_it_was

    record = Record()
    reports = []
    staged: list[tuple[HostReport, str, StagedWrite]] = []
    created: list[Path] = []
    try:
        for plan in plans:
            report = HostReport(host=plan.host, outcome="changed" if plan.files else "unchanged",
                                notes=list(plan.notes), owned=set(plan.owned))
            reports.append(report)
            for path, (old, new) in plan.files.items():
                made = record.created(path)  # install made it: no earlier version to restore
                restored = False
                if uninstall and made and hollow(new):
                    new = None
                elif uninstall and new is not None and not made:
                    new, restored = as_it_was(Path(path), new)
                report.files.append(path)
                report.diff += unified_diff(Path(path), old, new)
                report.texts[path] = (old, new)
                if dry_run:
                    continue
                if old is None and new is not None:
                    record.files.add(path)
                    created.extend(missing_dirs(Path(path)))
                # A file given back byte for byte as it was before our install needs no backup,
                # and its old one goes too: HOME is as it was.
                staged.append((report, path, stage_write(Path(path), new, backup=not (made or restored))))
                if uninstall and made and new is not None:
                    record.files.discard(path)  # kept for what others wrote into it: theirs now
    except OSError as exc:
        for _, _, write in staged:
            discard_write(write)
        raise InstallConflict(f"cannot prepare {exc.filename or 'a config file'}: {exc.strerror}; "
                              "nothing was written") from exc
    for report, path, write in staged:
        commit_write(write)
        if write.backup is not None:
            report.backups.append(str(write.backup))
        if write.tmp is None:
            record.files.discard(path)
    if dry_run:
        return reports
    record.dirs.update(str(d) for d in created)
    if uninstall:
        record.remove_empty_dirs()
    try:
        record.save()
    except OSError:
        pass  # the record only helps a later uninstall tidy up; the install itself is done
    return reports


def status_hosts(pm: Any, hosts: list[str], contract: dict[str, Any], home: Path) -> list[HostStatus]:
    """Each host's :class:`HostStatus`."""
    out = []
    for host in hosts:
        status = pm.hook.host_status(host=host, contract=contract, home=home)
        out.append(status if status is not None else HostStatus(host=host, state="not_found"))
    return out
