"""Gitignore-like globs over repository paths, matched in time linear in their size.

The include and exclude globs and the ``documents forget`` paths read as ``.gitignore`` lines:

- a pattern without ``/`` (a trailing one aside) matches a name at any depth (``*.md``);
  with one, it is anchored at the repository's top folder (``docs/*.md``, ``/README.md``);
- ``*`` matches within one name, ``?`` one character of a name, and a ``**`` name any
  number of folders (``docs/**/*.rst``, ``**/adr/*``);
- a pattern also matches everything under a folder it names (``docs/drafts``), and one
  ending in ``/`` matches only what is under the folder (``docs/drafts/``).

Every other character stands for itself. The match never backtracks over the whole path:
names are matched one at a time (the classic two-pointer wildcard walk) and ``**`` by a table
over the names, so a pattern like ``*a*a*a*a*a*a*a*a*a*a*b``, which a regular expression
takes minutes over, costs a few hundred steps. Standard library only.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from functools import lru_cache

__all__ = ["forget_pattern", "glob_matches", "name_matches"]


def name_matches(pattern: str, name: str) -> bool:
    """Whether one name matches one name pattern (``*`` and ``?``; no ``/``).

    The greedy two-pointer walk: on a mismatch after a ``*``, the star takes one more
    character and the walk resumes; at most ``len(pattern) * len(name)`` steps.
    """
    p = n = 0
    star, mark = -1, 0
    while n < len(name):
        if p < len(pattern) and (pattern[p] == "?" or pattern[p] == name[n]):
            p += 1
            n += 1
        elif p < len(pattern) and pattern[p] == "*":
            star, mark = p, n
            p += 1
        elif star >= 0:
            p, mark = star + 1, mark + 1
            n = mark
        else:
            return False
    while p < len(pattern) and pattern[p] == "*":
        p += 1
    return p == len(pattern)


def _prefix_lengths(parts: Sequence[str], names: Sequence[str]) -> set[int]:
    """The ``k`` for which the pattern names ``parts`` match exactly ``names[:k]``."""
    reach = {0}  # how many names the pattern's first i parts can match
    for part in parts:
        if part == "**":
            reach = set(range(min(reach), len(names) + 1)) if reach else set()
        else:
            part = part.replace("**", "*")
            reach = {k + 1 for k in reach if k < len(names) and name_matches(part, names[k])}
        if not reach:
            break
    return reach


@lru_cache(maxsize=512)
def _parsed(pattern: str) -> tuple[tuple[str, ...], bool, bool]:
    folder = pattern.endswith("/")
    anchored = "/" in pattern.rstrip("/")
    parts = tuple(p for p in pattern.strip("/").split("/") if p)
    return parts, anchored, folder


def _matches(pattern: str, path: str) -> bool:
    parts, anchored, folder = _parsed(pattern)
    if not parts:
        return False
    names = path.split("/")
    for start in range(1 if anchored else len(names)):
        ends = _prefix_lengths(parts, names[start:])
        # what the pattern names is the path itself, or a folder the path is under
        if any(k >= 1 and (k < len(names) - start or not folder) for k in ends):
            return True
    return False


def glob_matches(path: str, patterns: Iterable[str]) -> bool:
    """True when the repository path ``path`` (``/`` between names, no leading ``/``) matches
    one of the gitignore-like ``patterns`` (see the module docstring)."""
    return any(_matches(p, path) for p in patterns)


def forget_pattern(raw: str) -> str:
    """The pattern ``documents forget`` keeps out, from what it was given: relative to the
    repository's top folder, without a leading ``./``.

    Raises:
        ValueError: it is empty, absolute, or leads out of the repository (``..``).
    """
    path = raw.strip().removeprefix("./")
    if not path or path in ("/", ".") or path.startswith("/") or ".." in path.split("/") or "\0" in path:
        raise ValueError(f"{raw[:200]!r} is not a path inside the repository: give it relative to the "
                         "repository's top folder, e.g. docs/drafts/")
    return path
