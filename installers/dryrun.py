"""What ``install --dry-run`` / ``uninstall --dry-run`` print: a labelled diff per host and file.

Layout::

    == gemini (Gemini CLI) ==
    -- /home/me/.gemini/settings.json: new file
    --- /dev/null
    +++ /home/me/.gemini/settings.json
    @@ ... @@
    -- /home/me/.hermes/plugins/bli-memory/__init__.py: new file, adds 187 lines (--verbose shows them)
      - <each note of the host>
    Dry run: nothing was written (5 files would change).

A file whose whole content is ours (a plugin's source, :attr:`HostConfigPlan.owned`) is
summarised as "adds N lines" / "removes N lines" / "changes N lines" unless
``verbose``; a file the person shares with us is always shown in full, since that is
where they need to see what changes.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

__all__ = ["render"]


def _what(old: str | None, new: str | None) -> str:
    if old is None:
        return "new file"
    if new is None:
        return "removed"
    return "changed"


def _summary(old: str | None, new: str | None) -> str:
    a, b = (old or "").splitlines(), (new or "").splitlines()
    if old is None:
        return f"adds {len(b)} lines"
    if new is None:
        return f"removes {len(a)} lines"
    import difflib

    changed = sum(1 for line in difflib.ndiff(a, b) if line[:1] in "+-")
    return f"changes {changed} lines"


def render(reports: list[Any], display_names: dict[str, str], *, verbose: bool,
           skipped: tuple[str, ...] = ()) -> str:
    """The dry run's text for the hosts' ``reports`` (:class:`~bli_memory.installers.apply.HostReport`).

    Args:
        reports: One report per host, with ``texts`` (path -> (old, new)) and ``owned``.
        display_names: Host name -> its display name ("Gemini CLI").
        verbose: Show the full diff of owned files too.
        skipped: Hosts ``--host all`` skipped (not on this machine).
    """
    from bli_memory.installers.files import unified_diff

    lines: list[str] = []
    count = 0
    for r in reports:
        name = display_names.get(r.host, r.host)
        if not r.texts:
            lines.append(f"== {r.host} ({name}): nothing to change ==")
        else:
            lines.append(f"== {r.host} ({name}) ==")
        for path, (old, new) in r.texts.items():
            count += 1
            if path in r.owned and not verbose:
                lines.append(f"-- {path}: {_what(old, new)}, {_summary(old, new)} (--verbose shows them)")
                continue
            lines.append(f"-- {path}: {_what(old, new)}")
            lines.append(unified_diff(Path(path), old, new).rstrip("\n"))
        lines.extend(f"  - {note}" for note in r.notes)
    lines.extend(f"== {host}: not found on this machine; skipped ==" for host in skipped)
    files = "1 file" if count == 1 else f"{count} files"
    lines.append(f"Dry run: nothing was written ({files} would change)." if count
                 else "Dry run: nothing was written (nothing would change).")
    return "\n".join(lines) + "\n"
