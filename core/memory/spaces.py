"""Derive the memory *space* (container tag) for a working directory.

Every memory lives in a space named by a container tag. The rule comes from
the BLI Memory spec: ``repo_<name>__<sha256(normalised remote)[0:16]>`` for a
git repository, ``dir_<name>__<sha256(absolute resolved path)[0:16]>`` for a
plain folder, and ``BLI_MEMORY_CONTAINER_TAG`` overrides both. The full rule,
the remote normalisation and test vectors are documented in
``docs/spaces.md``.

This module runs inside a hook process on every prompt, so it uses the
standard library only and never spawns ``git``: it reads ``.git`` files,
``commondir`` and ``config`` directly (the remote normaliser and the config parser
are :mod:`bli_memory.core.memory.git_remotes`). Apart from the ``ValueError`` for an
invalid forced tag, :func:`derive_space` never raises; anything unreadable
falls back to a weaker rule.
"""

from __future__ import annotations

import hashlib
import os
import re
import stat
from collections.abc import Mapping
from dataclasses import dataclass

from bli_memory.core.memory.git_remotes import (
    GitConfig,
    normalise_remote,
    pick_remote,
    read_config,
    read_text,
    remote_basename,
    resolve_path,
    strip_dot_git,
)
from bli_memory.core.models import validate_tag

__all__ = [
    "ENV_CONTAINER_TAG",
    "ENV_ISOLATE_WORKTREES",
    "Space",
    "derive_space",
    "normalise_remote",
    "sanitise_name",
    "validate_tag",
]

ENV_CONTAINER_TAG = "BLI_MEMORY_CONTAINER_TAG"
"""Environment variable that forces the container tag verbatim."""

ENV_ISOLATE_WORKTREES = "BLI_MEMORY_ISOLATE_WORKTREES"
"""Environment variable that gives each linked worktree its own tag."""

_NAME_BAD_RE = re.compile(r"[^a-z0-9._-]+")
_DASHES_RE = re.compile(r"-{2,}")
_TRUTHY = frozenset({"1", "true", "yes", "on"})
_NAME_MAX = 64
_HASH_LEN = 16


@dataclass(frozen=True)
class Space:
    """The memory space of a working directory.

    Attributes:
        tag: The container tag, e.g. ``repo_bli__0123456789abcdef``.
        kind: ``"repo"`` (inside a git repository), ``"dir"`` (plain folder)
            or ``"forced"`` (``BLI_MEMORY_CONTAINER_TAG``).
        name: The sanitised ``<name>`` part of the tag (the forced tag itself
            for ``"forced"``).
        derived_from: Human-readable seed description, e.g.
            ``"git remote github.com/org/repo"``, ``"folder /abs/path"`` or
            ``"BLI_MEMORY_CONTAINER_TAG"``. Never contains credentials.
        root: Top-level folder of the repository/worktree, or the folder for
            ``"dir"``; ``None`` for ``"forced"``.
    """

    tag: str
    kind: str
    name: str
    derived_from: str
    root: str | None


# --------------------------------------------------------------------------
# Tags and names
# --------------------------------------------------------------------------


def sanitise_name(raw: str) -> str:
    """Sanitise the ``<name>`` part of a container tag.

    Lowercase; every character outside ``[a-z0-9._-]`` becomes ``-``; runs of
    ``-`` collapse to one; leading/trailing ``-`` are stripped; the result is
    cut to 64 characters (and stripped of ``-`` again); empty becomes
    ``root``.

    Args:
        raw: A repository or folder name.

    Returns:
        The sanitised name, always non-empty and tag-safe.
    """
    name = _NAME_BAD_RE.sub("-", raw.lower())
    name = _DASHES_RE.sub("-", name).strip("-")
    name = name[:_NAME_MAX].strip("-")
    return name or "root"


def _sha16(seed: str) -> str:
    try:
        data = seed.encode("utf-8", "surrogateescape")
    except UnicodeEncodeError:
        data = seed.encode("utf-8", "surrogatepass")
    return hashlib.sha256(data).hexdigest()[:_HASH_LEN]


def _truthy(value: str | None) -> bool:
    return value is not None and value.strip().lower() in _TRUTHY


# --------------------------------------------------------------------------
# Repository discovery
# --------------------------------------------------------------------------


class _Repo:
    """A discovered repository (plain class: cheaper to define than a dataclass)."""

    __slots__ = ("common_dir", "git_dir", "linked", "worktree_root")

    def __init__(self, worktree_root: str, git_dir: str, common_dir: str, linked: bool) -> None:
        self.worktree_root = worktree_root  # top-level of the current worktree (or bare dir)
        self.git_dir = git_dir  # per-worktree git dir
        self.common_dir = common_dir  # shared git dir (holds config)
        self.linked = linked  # True for a linked worktree (git worktree add)


class _BrokenRepo(Exception):
    """A ``.git`` entry exists but cannot be used (git itself would fail)."""


def _stat(path: str) -> os.stat_result | None:
    try:
        return os.stat(path)
    except (OSError, ValueError):
        return None


def _is_file(path: str) -> bool:
    st = _stat(path)
    return st is not None and stat.S_ISREG(st.st_mode)


def _is_dir(path: str) -> bool:
    st = _stat(path)
    return st is not None and stat.S_ISDIR(st.st_mode)


def _common_dir(git_dir: str) -> tuple[str, bool]:
    """Return (common dir, is linked worktree) for a git dir."""
    text = read_text(os.path.join(git_dir, "commondir"))
    if text is None or not text.strip():
        return git_dir, False
    target = text.strip()
    common = resolve_path(os.path.join(git_dir, target))
    if not _is_dir(common):
        raise _BrokenRepo(f"commondir {common} missing")
    return common, True


def _read_gitfile(path: str) -> str:
    text = read_text(path)
    if text is None:
        raise _BrokenRepo(f"cannot read {path}")
    first = text.lstrip("\ufeff").split("\n", 1)[0].strip()
    if not first.startswith("gitdir:"):
        raise _BrokenRepo(f"{path} is not a gitfile")
    target = first[len("gitdir:") :].strip()
    if not target:
        raise _BrokenRepo(f"{path} has an empty gitdir")
    git_dir = resolve_path(os.path.join(os.path.dirname(path), target))
    if not _is_file(os.path.join(git_dir, "HEAD")):
        raise _BrokenRepo(f"{git_dir} is not a git directory")
    return git_dir


def _looks_bare(path: str) -> bool:
    return (
        _is_file(os.path.join(path, "HEAD"))
        and _is_dir(os.path.join(path, "objects"))
        and _is_dir(os.path.join(path, "refs"))
    )


def _discover(start: str) -> _Repo | None:
    """Walk up from ``start`` (resolved) looking for a repository.

    Raises:
        _BrokenRepo: If a ``.git`` file is found but unusable.
    """
    current = start
    while True:
        dot_git = os.path.join(current, ".git")
        st = _stat(dot_git)
        if st is not None and stat.S_ISDIR(st.st_mode):
            if _is_file(os.path.join(dot_git, "HEAD")):
                git_dir = resolve_path(dot_git)
                common, linked = _common_dir(git_dir)
                return _Repo(current, git_dir, common, linked)
        elif st is not None and stat.S_ISREG(st.st_mode):
            git_dir = _read_gitfile(dot_git)
            common, linked = _common_dir(git_dir)
            return _Repo(current, git_dir, common, linked)
        if _looks_bare(current):
            common, linked = _common_dir(current)
            root = current
            if os.path.basename(current) == ".git" and not linked:
                root = os.path.dirname(current)
            return _Repo(root, current, common, linked)
        parent = os.path.dirname(current)
        if parent == current:
            return None
        current = parent


def _main_root(common_dir: str, config: GitConfig) -> str:
    """Main worktree root: core.worktree, parent of ``.git``, else the dir."""
    if config.worktree:
        return resolve_path(os.path.join(common_dir, config.worktree))
    if os.path.basename(common_dir) == ".git":
        return os.path.dirname(common_dir)
    return common_dir


def _folder_name(path: str) -> str:
    return os.path.basename(path.rstrip(os.sep))


def _folder_space(path: str) -> Space:
    name = sanitise_name(_folder_name(path))
    tag = f"dir_{name}__{_sha16(path)}"
    return Space(tag=tag, kind="dir", name=name, derived_from=f"folder {path}", root=path)


def _repo_space(repo: _Repo, config: GitConfig, environ: Mapping[str, str]) -> Space:
    main_root = _main_root(repo.common_dir, config)
    fallback_name = strip_dot_git(_folder_name(main_root), os.sep)
    normalised: str | None = None
    picked = pick_remote(config.remotes)
    if picked is not None:
        try:
            normalised = normalise_remote(picked[1], base=main_root)
        except ValueError:
            normalised = None
    if normalised is not None:
        raw_name = remote_basename(normalised) or fallback_name
        seed = normalised
        derived = f"git remote {normalised}"
    else:
        raw_name = fallback_name
        seed = f"path:{main_root}"
        derived = f"git repository without remote at {main_root}"
    if repo.linked and _truthy(environ.get(ENV_ISOLATE_WORKTREES)):
        seed = f"{seed}\nworktree:{repo.worktree_root}"
        derived = f"{derived}, worktree {repo.worktree_root} ({ENV_ISOLATE_WORKTREES})"
    name = sanitise_name(raw_name)
    return Space(
        tag=f"repo_{name}__{_sha16(seed)}",
        kind="repo",
        name=name,
        derived_from=derived,
        root=repo.worktree_root,
    )


def derive_space(
    cwd: str | os.PathLike[str],
    *,
    environ: Mapping[str, str] | None = None,
) -> Space:
    """Derive the memory space for a working directory.

    The rule (the BLI Memory spec:
    ``repo_<name>__<sha256(normalised remote)[0:16]>``), first match wins:

    1. ``BLI_MEMORY_CONTAINER_TAG`` non-empty after stripping: the tag,
       verbatim (validated by :func:`validate_tag`), kind ``"forced"``.
    2. Inside a git repository (found by walking up from ``cwd`` to the
       filesystem root, reading ``.git`` directories, ``.git`` files
       (``gitdir: <path>``) and ``commondir``) whose config has a remote
       (``origin`` if present, else the first in config order):
       ``repo_<name>__<sha256(normalise_remote(url))[0:16]>`` where
       ``<name>`` is the last path component of the normalised remote. Every
       worktree, subfolder and the main checkout share it. With
       ``BLI_MEMORY_ISOLATE_WORKTREES`` truthy (1/true/yes/on) a *linked*
       worktree instead uses the seed
       ``<normalised remote> + "\\nworktree:" + <worktree root>``.
    3. Inside a git repository without a usable remote:
       ``repo_<name>__<sha256("path:" + main worktree root)[0:16]>`` with
       ``<name>`` the main worktree root's basename (isolated worktrees append
       ``"\\nworktree:" + <worktree root>`` as in 2.). The main worktree root is
       ``core.worktree`` if set, else the parent of a common dir named
       ``.git``, else the common dir itself (bare repositories, separate git
       dirs).
    4. Otherwise (also when ``cwd`` is not an existing directory, a ``.git``
       file is broken, or the config is unreadable):
       ``dir_<name>__<sha256(absolute resolved cwd)[0:16]>`` with ``<name>``
       the folder's basename.

    Names are sanitised by :func:`sanitise_name`. Paths are absolute and
    symlink-resolved.

    Args:
        cwd: The working directory.
        environ: Environment mapping; defaults to ``os.environ``.

    Returns:
        The derived :class:`Space`.

    Raises:
        ValueError: Only if ``BLI_MEMORY_CONTAINER_TAG`` is set but invalid.
    """
    env: Mapping[str, str] = os.environ if environ is None else environ
    forced = env.get(ENV_CONTAINER_TAG)
    if forced is not None and forced.strip():
        try:
            tag = validate_tag(forced)
        except ValueError as exc:  # validate_tag never repeats it: it may hold a pasted secret
            raise ValueError(f"{ENV_CONTAINER_TAG} is invalid: {exc}") from None
        return Space(tag=tag, kind="forced", name=tag, derived_from=ENV_CONTAINER_TAG, root=None)

    try:
        raw = os.fspath(cwd)
        if isinstance(raw, bytes):
            raw = os.fsdecode(raw)
    except (TypeError, ValueError):
        raw = str(cwd)
    path = resolve_path(raw)
    if not _is_dir(path):
        return _folder_space(path)
    try:
        repo = _discover(path)
    except _BrokenRepo:
        return _folder_space(path)
    except (OSError, ValueError, RuntimeError):  # pragma: no cover - paranoia
        return _folder_space(path)
    if repo is None:
        return _folder_space(path)
    config = read_config(repo.common_dir)
    if config is None:
        return _folder_space(path)
    return _repo_space(repo, config, env)
