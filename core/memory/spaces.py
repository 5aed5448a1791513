"""Derive the memory *space* (container tag) for a working directory.

Every memory lives in a space named by a container tag. The rule comes from
the BLI Memory spec: ``repo_<name>__<sha256(normalised remote)[0:16]>`` for a
git repository, ``dir_<name>__<sha256(absolute resolved path)[0:16]>`` for a
plain folder, and ``BLI_MEMORY_CONTAINER_TAG`` overrides both. The full rule,
the remote normalisation and test vectors are documented in
``docs/spaces.md``.

This module runs inside a hook process on every prompt, so it uses the
standard library only and never spawns ``git``: it reads ``.git`` files,
``commondir`` and ``config`` directly. Apart from the ``ValueError`` for an
invalid forced tag, :func:`derive_space` never raises; anything unreadable
falls back to a weaker rule.
"""

from __future__ import annotations

import hashlib
import os
import re
import stat
from collections.abc import Iterator, Mapping
from dataclasses import dataclass

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

_TAG_RE = re.compile(r"[A-Za-z0-9_.:-]{1,128}")
_NAME_BAD_RE = re.compile(r"[^a-z0-9._-]+")
_DASHES_RE = re.compile(r"-{2,}")
_SCHEME_RE = re.compile(r"([A-Za-z][A-Za-z0-9+.-]*)://")
_HELPER_RE = re.compile(r"[A-Za-z][A-Za-z0-9+.-]*::")
_DRIVE_RE = re.compile(r"[A-Za-z]:[\\/]")
_PERCENT_RE = re.compile(r"(?:%[0-9A-Fa-f]{2})+")
_TRUTHY = frozenset({"1", "true", "yes", "on"})
_DEFAULT_PORTS = frozenset({"22", "80", "443", "9418"})
_NAME_MAX = 64
_HASH_LEN = 16
_MAX_READ = 1 << 20  # never read more than 1 MiB of any git file


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


def validate_tag(tag: str) -> str:
    """Validate a container tag and return it stripped.

    A valid tag is 1 to 128 characters from ``[A-Za-z0-9_.:-]`` after
    stripping surrounding whitespace. Used for ``BLI_MEMORY_CONTAINER_TAG`` and
    for the ``containerTag`` argument of the MCP tools.

    Args:
        tag: The candidate tag.

    Returns:
        The stripped tag.

    Raises:
        ValueError: If ``tag`` is not a string or is not a valid tag.
    """
    if not isinstance(tag, str):
        raise ValueError(f"container tag must be a string, got {type(tag).__name__}")
    stripped = tag.strip()
    if not _TAG_RE.fullmatch(stripped):
        raise ValueError(f"invalid container tag {tag!r}: must be 1-128 characters from [A-Za-z0-9_.:-]")
    return stripped


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
# Remote normalisation
# --------------------------------------------------------------------------


def _unquote(text: str) -> str:
    """Percent-decode (UTF-8) like ``urllib.parse.unquote``, without importing it."""
    return _PERCENT_RE.sub(
        lambda m: bytes.fromhex(m.group(0).replace("%", "")).decode("utf-8", "replace"), text
    )


def _resolve(path: str) -> str:
    """Absolute, symlink-resolved path; never raises."""
    try:
        return os.path.realpath(path)
    except (OSError, ValueError, RuntimeError):
        try:
            return os.path.normpath(os.path.abspath(path))
        except (OSError, ValueError):
            return os.path.normpath(path)


def _strip_dot_git(path: str, sep: str = "/") -> str:
    """Strip trailing separators, one ``.git`` suffix, then separators again."""
    path = path.rstrip(sep)
    if path.endswith(".git"):
        path = path[:-4]
    return path.rstrip(sep)


def _normalise_local(path: str, base: str | None) -> str:
    if _DRIVE_RE.match(path) and os.name != "nt":
        # A Windows drive path seen on POSIX: cannot be resolved here.
        resolved = path.replace("\\", "/")
    else:
        if path.startswith("~"):
            path = os.path.expanduser(path)  # git expands ~ and ~user too
        if not os.path.isabs(path):
            if base is None:
                try:
                    base = os.getcwd()
                except OSError:
                    base = os.sep
            path = os.path.join(base, path)
        resolved = _resolve(path)
        if os.sep != "/":
            resolved = resolved.replace(os.sep, "/")
    resolved = re.sub(r"/{2,}", "/", resolved)
    stripped = _strip_dot_git(resolved) or "/"
    if not stripped.startswith("/"):
        stripped = "/" + stripped
    return "file://" + stripped


def _split_host_port(hostport: str) -> tuple[str, str, str]:
    """Split ``[user@]host[:port]`` into (host, port, extra path).

    ``extra path`` is non-empty when the text after ``:`` is not a port
    (``ssh://git@host:Org/Repo`` written by mistake): it is then treated as
    the first path segment.
    """
    if not hostport.startswith("["):
        hostport = hostport.rpartition("@")[2]
    if hostport.startswith("["):
        end = hostport.find("]")
        if end != -1:
            inner = hostport[1:end].rpartition("@")[2]
            rest = hostport[end + 1 :]
            if inner.count(":") >= 2:  # IPv6 literal
                host = f"[{inner.lower()}]"
                port = rest[1:] if rest.startswith(":") else ""
            else:  # git's "[host:port]" form
                host, _, port = inner.partition(":")
                host = host.lower()
            if port and not port.isdigit():
                return host, "", port
            return host, port, ""
    host, _, port = hostport.partition(":")
    host = host.lower()
    if port and not port.isdigit():
        return host, "", port
    return host, port, ""


def _join_host_path(host: str, port: str, path: str) -> str:
    if port and port.lstrip("0") and port.lstrip("0") not in _DEFAULT_PORTS:
        host = f"{host}:{port.lstrip('0')}"
    segments = [s for s in path.replace("\\", "/").split("/") if s]
    clean = _strip_dot_git("/".join(segments).lower())
    if not host:
        return clean
    return f"{host}/{clean}" if clean else host


def _scp_split(url: str) -> tuple[str, str] | None:
    """Split git's scp-like syntax ``[user@]host:path``; None if local path."""
    colon = url.find(":")
    bracket = url.find("[")
    if bracket != -1 and (colon == -1 or bracket < colon):
        end = url.find("]", bracket)
        colon = url.find(":", end + 1) if end != -1 else -1
    if colon <= 0:
        return None
    slash = url.find("/")
    if slash != -1 and slash < colon:
        return None
    if _DRIVE_RE.match(url):
        return None
    return url[:colon], url[colon + 1 :]


def normalise_remote(url: str, *, base: str | os.PathLike[str] | None = None) -> str:
    """Normalise a git remote URL to a stable identity string.

    The result seeds the repository tag (the BLI Memory spec:
    ``repo_<name>__<sha256(normalised remote)[0:16]>``). Rules:

    * ``<helper>::<address>`` (remote helpers) -> normalise ``<address>``.
    * Network remotes (``scheme://`` with any scheme other than ``file``,
      and scp-like ``[user@]host:path``) become ``host[:port]/path``: the
      scheme and any user/credentials are dropped, the host is lowercased,
      ports 22/80/443/9418 are dropped (other ports kept, leading zeros
      removed), the path is lowercased (GitHub/GitLab/Bitbucket paths are
      case-insensitive), empty segments are removed (collapsing ``//`` and
      leading/trailing ``/``) and one trailing ``.git`` is stripped.
    * Local remotes (``file://`` URLs, absolute or relative paths, Windows
      drive paths) become ``file://`` + the absolute, symlink-resolved path
      with trailing ``/`` and one ``.git`` suffix stripped, case preserved.
      ``file://`` URLs are percent-decoded and ``file://localhost/`` is
      accepted, as git does. ``~``/``~user`` are expanded (as git does) and
      other relative paths are resolved against ``base``.

    Examples:
        ``git@github.com:Org/Repo.git``, ``ssh://git@github.com:22/Org/Repo.git``
        and ``https://user:token@GitHub.com/Org/Repo.git/`` all give
        ``github.com/org/repo``; ``/srv/git/repo.git`` gives
        ``file:///srv/git/repo``.

    Args:
        url: The remote URL as written in git config.
        base: Directory that relative local paths are resolved against
            (defaults to the process working directory). :func:`derive_space`
            passes the main worktree root.

    Returns:
        The normalised remote; never contains credentials.

    Raises:
        ValueError: If ``url`` is empty or normalises to an empty string.
    """
    text = url.strip()
    while _HELPER_RE.match(text):
        text = text.split("::", 1)[1].strip()
    if not text:
        raise ValueError(f"cannot normalise empty remote URL {url!r}")
    base_str = os.fspath(base) if base is not None else None

    match = _SCHEME_RE.match(text)
    if match:
        scheme = match.group(1).lower()
        rest = text[match.end() :]
        if scheme == "file":
            path = _unquote(rest)
            if path.lower().startswith("localhost/"):
                path = path[len("localhost") :]
            if path.startswith("/") or _DRIVE_RE.match(path):
                result = _normalise_local(path, base_str)
            else:  # file://otherhost/path: not resolvable, keep as is
                result = "file://" + _strip_dot_git(re.sub(r"/{2,}", "/", path))
        else:
            authority, _, path = rest.partition("/")
            host, port, extra = _split_host_port(authority)
            result = _join_host_path(host, port, f"{extra}/{path}")
    else:
        scp = _scp_split(text)
        if scp is None:
            result = _normalise_local(text, base_str)
        else:
            host, port, extra = _split_host_port(scp[0])
            result = _join_host_path(host, port, f"{extra}/{scp[1]}")
    if not result or result == "file://":
        raise ValueError(f"remote URL {url!r} normalises to an empty identity")
    return result


def _remote_basename(normalised: str) -> str:
    """Last path component of a normalised remote ('' if it has no path)."""
    if normalised.startswith("file://"):
        path = normalised[len("file://") :]
    else:
        _, _, path = normalised.partition("/")
    return path.rstrip("/").rpartition("/")[2]


# --------------------------------------------------------------------------
# Tolerant git-config parser
# --------------------------------------------------------------------------


def _is_key_char(c: str) -> bool:
    return c.isascii() and (c.isalnum() or c == "-")


def _parse_value(text: str, i: int) -> tuple[str | None, int]:
    """Parse a config value starting at ``i``; returns (value|None, eol index)."""
    n = len(text)
    out: list[str] = []
    quote = comment = False
    spaces = 0
    while i < n:
        c = text[i]
        i += 1
        if c == "\n":
            return (None if quote else "".join(out)), i
        if comment:
            continue
        if c.isspace() and not quote:
            if out:
                spaces += 1
            continue
        if not quote and c in "#;":
            comment = True
            continue
        out.append(" " * spaces)
        spaces = 0
        if c == "\\":
            nxt = text[i] if i < n else "\n"
            i += 1
            if nxt == "\n":
                continue
            esc = {"t": "\t", "b": "\b", "n": "\n", "\\": "\\", '"': '"'}.get(nxt)
            if esc is None:
                return None, _eol(text, i)
            out.append(esc)
            continue
        if c == '"':
            quote = not quote
            continue
        out.append(c)
    return (None if quote else "".join(out)), i


def _parse_header(text: str, i: int) -> tuple[str, str | None, int] | None:
    """Parse ``[section]`` / ``[section "sub"]`` / ``[section.sub]`` at ``i``."""
    n = len(text)
    i += 1
    start = i
    while i < n and (_is_key_char(text[i]) or text[i] == "."):
        i += 1
    name = text[start:i].lower()
    if not name or i >= n:
        return None
    if text[i] == "]":
        section, dot, sub = name.partition(".")
        return section, (sub if dot else None), i + 1
    if text[i] not in " \t" or "." in name:
        return None
    while i < n and text[i] in " \t":
        i += 1
    if i >= n or text[i] != '"':
        return None
    i += 1
    sub_chars: list[str] = []
    while i < n:
        c = text[i]
        i += 1
        if c == "\n":
            return None
        if c == '"':
            if i < n and text[i] == "]":
                return name, "".join(sub_chars), i + 1
            return None
        if c == "\\":
            if i >= n or text[i] == "\n":
                return None
            c = text[i]
            i += 1
        sub_chars.append(c)
    return None


def _eol(text: str, i: int) -> int:
    j = text.find("\n", i)
    return len(text) if j == -1 else j + 1


def _iter_config(text: str) -> Iterator[tuple[str, str | None, str, str | None]]:
    """Yield ``(section, subsection, key, value)`` from git-config text.

    Follows git's syntax (case-insensitive section and key names,
    case-sensitive quoted subsections, ``[a.b]`` legacy subsections, quoting,
    escapes, ``#``/``;`` comments, ``\\`` line continuations, keys on the
    header line, a bare key meaning ``None``/true). Unlike git it never fails:
    a malformed line is skipped. ``include``/``includeIf`` are not followed.
    """
    text = text.replace("\r\n", "\n").lstrip("\ufeff")
    n = len(text)
    i = 0
    section: str | None = None
    subsection: str | None = None
    while i < n:
        c = text[i]
        if c.isspace():
            i += 1
        elif c in "#;":
            i = _eol(text, i)
        elif c == "[":
            header = _parse_header(text, i)
            if header is None:
                section = subsection = None
                i = _eol(text, i)
            else:
                section, subsection, i = header
        elif c.isascii() and c.isalpha():
            j = i
            while j < n and _is_key_char(text[j]):
                j += 1
            key = text[i:j].lower()
            while j < n and text[j] in " \t":
                j += 1
            value: str | None
            if j >= n or text[j] == "\n":
                value, i, ok = None, j, True
            elif text[j] == "=":
                value, i = _parse_value(text, j + 1)
                ok = value is not None
            else:
                value, i, ok = None, _eol(text, j), False
            if ok and section is not None:
                yield section, subsection, key, value
        else:
            i = _eol(text, i)


def _read_text(path: str) -> str | None:
    """Read at most 1 MiB of a file as text; None if unreadable."""
    try:
        with open(path, "rb") as fh:
            data = fh.read(_MAX_READ)
    except (OSError, ValueError):
        return None
    return data.decode("utf-8", "replace")


class _Config:
    """What we need from a git config (plain class: cheaper to define than a dataclass)."""

    __slots__ = ("remotes", "worktree")

    def __init__(self, remotes: dict[str, str], worktree: str | None) -> None:
        self.remotes = remotes  # remote name -> first non-empty url, config order
        self.worktree = worktree  # core.worktree


def _read_config(common_dir: str) -> _Config | None:
    text = _read_text(os.path.join(common_dir, "config"))
    if text is None:
        return None
    remotes: dict[str, str] = {}
    worktree: str | None = None
    for section, sub, key, value in _iter_config(text):
        if section == "remote" and sub is not None and key == "url":
            if value and value.strip() and sub not in remotes:
                remotes[sub] = value.strip()
        elif section == "core" and sub is None and key == "worktree":
            worktree = value
    return _Config(remotes, worktree)


def _pick_remote(remotes: Mapping[str, str]) -> tuple[str, str] | None:
    """``origin`` if it has a url, else the first remote in config order."""
    if "origin" in remotes:
        return "origin", remotes["origin"]
    for name, url in remotes.items():
        return name, url
    return None


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
    text = _read_text(os.path.join(git_dir, "commondir"))
    if text is None or not text.strip():
        return git_dir, False
    target = text.strip()
    common = _resolve(os.path.join(git_dir, target))
    if not _is_dir(common):
        raise _BrokenRepo(f"commondir {common} missing")
    return common, True


def _read_gitfile(path: str) -> str:
    text = _read_text(path)
    if text is None:
        raise _BrokenRepo(f"cannot read {path}")
    first = text.lstrip("\ufeff").split("\n", 1)[0].strip()
    if not first.startswith("gitdir:"):
        raise _BrokenRepo(f"{path} is not a gitfile")
    target = first[len("gitdir:") :].strip()
    if not target:
        raise _BrokenRepo(f"{path} has an empty gitdir")
    git_dir = _resolve(os.path.join(os.path.dirname(path), target))
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
                git_dir = _resolve(dot_git)
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


def _main_root(common_dir: str, config: _Config) -> str:
    """Main worktree root: core.worktree, parent of ``.git``, else the dir."""
    if config.worktree:
        return _resolve(os.path.join(common_dir, config.worktree))
    if os.path.basename(common_dir) == ".git":
        return os.path.dirname(common_dir)
    return common_dir


def _folder_name(path: str) -> str:
    return os.path.basename(path.rstrip(os.sep))


def _folder_space(path: str) -> Space:
    name = sanitise_name(_folder_name(path))
    tag = f"dir_{name}__{_sha16(path)}"
    return Space(tag=tag, kind="dir", name=name, derived_from=f"folder {path}", root=path)


def _repo_space(repo: _Repo, config: _Config, environ: Mapping[str, str]) -> Space:
    main_root = _main_root(repo.common_dir, config)
    fallback_name = _strip_dot_git(_folder_name(main_root), os.sep)
    normalised: str | None = None
    picked = _pick_remote(config.remotes)
    if picked is not None:
        try:
            normalised = normalise_remote(picked[1], base=main_root)
        except ValueError:
            normalised = None
    if normalised is not None:
        raw_name = _remote_basename(normalised) or fallback_name
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
        except ValueError as exc:
            raise ValueError(f"{ENV_CONTAINER_TAG}: {exc}") from None
        return Space(tag=tag, kind="forced", name=tag, derived_from=ENV_CONTAINER_TAG, root=None)

    try:
        raw = os.fspath(cwd)
        if isinstance(raw, bytes):
            raw = os.fsdecode(raw)
    except (TypeError, ValueError):
        raw = str(cwd)
    path = _resolve(raw)
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
    config = _read_config(repo.common_dir)
    if config is None:
        return _folder_space(path)
    return _repo_space(repo, config, env)
