"""Git remotes and git config, read without running ``git``: the inputs of a space's name.

:func:`normalise_remote` turns any remote URL git accepts (scp-like ``git@host:path``,
``ssh://``, ``https://`` with credentials, ``file://`` and local paths, helpers such as
``codecommit::``) into one canonical string, so every clone of a repository hashes to the
same space; the rule and its test vectors are in ``docs/spaces.md``.
:func:`read_config` is a tolerant git-config parser that keeps what a space needs (each
remote's first URL, ``core.worktree``). The derivation rule itself is
:mod:`bli_memory.core.memory.spaces`. Standard library only; nothing here raises on a
malformed file.
"""

from __future__ import annotations

import os
import re
import stat
from collections.abc import Iterator, Mapping

__all__ = [
    "GitConfig",
    "normalise_remote",
    "pick_remote",
    "read_config",
    "read_text",
    "remote_basename",
    "resolve_path",
    "strip_dot_git",
]

_SCHEME_RE = re.compile(r"([A-Za-z][A-Za-z0-9+.-]*)://")
_HELPER_RE = re.compile(r"[A-Za-z][A-Za-z0-9+.-]*::")
_DRIVE_RE = re.compile(r"[A-Za-z]:[\\/]")
_PERCENT_RE = re.compile(r"(?:%[0-9A-Fa-f]{2})+")
_DEFAULT_PORTS = frozenset({"22", "80", "443", "9418"})
_MAX_READ = 1 << 20  # never read more than 1 MiB of any git file

# --------------------------------------------------------------------------
# Remote normalisation
# --------------------------------------------------------------------------


def _unquote(text: str) -> str:
    """Percent-decode (UTF-8) like ``urllib.parse.unquote``, without importing it."""
    return _PERCENT_RE.sub(
        lambda m: bytes.fromhex(m.group(0).replace("%", "")).decode("utf-8", "replace"), text
    )


def resolve_path(path: str) -> str:
    """Absolute, symlink-resolved path; never raises."""
    try:
        return os.path.realpath(path)
    except (OSError, ValueError, RuntimeError):
        try:
            return os.path.normpath(os.path.abspath(path))
        except (OSError, ValueError):
            return os.path.normpath(path)


def strip_dot_git(path: str, sep: str = "/") -> str:
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
        resolved = resolve_path(path)
        if os.sep != "/":
            resolved = resolved.replace(os.sep, "/")
    resolved = re.sub(r"/{2,}", "/", resolved)
    stripped = strip_dot_git(resolved) or "/"
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
    clean = strip_dot_git("/".join(segments).lower())
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
                result = "file://" + strip_dot_git(re.sub(r"/{2,}", "/", path))
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


def remote_basename(normalised: str) -> str:
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


def read_text(path: str) -> str | None:
    """At most 1 MiB of a regular file, as text; None if it is not one or cannot be read.

    Only a regular file is read. A FIFO at a git path (``mkfifo .git/config``) would make
    a plain ``open`` wait for a writer that never comes, and with it the hook, the MCP
    server and the daemon's connection; a device such as ``/dev/zero`` never ends. So the
    path is checked with ``stat`` first, opened with ``O_NONBLOCK`` (an open that never
    waits, should the path be swapped after the check) and checked again on the open
    descriptor before a bounded read.
    """
    flags = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_NOCTTY", 0)
    try:
        if not stat.S_ISREG(os.stat(path).st_mode):
            return None
        fd = os.open(path, flags)
    except (OSError, ValueError):
        return None
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            return None
        chunks: list[bytes] = []
        left = _MAX_READ
        while left > 0:
            chunk = os.read(fd, left)
            if not chunk:
                break
            chunks.append(chunk)
            left -= len(chunk)
    except OSError:
        return None
    finally:
        os.close(fd)
    return b"".join(chunks).decode("utf-8", "replace")


class GitConfig:
    """What we need from a git config (plain class: cheaper to define than a dataclass).

    Attributes:
        remotes: Remote name -> its first non-empty url, in config order.
        worktree: ``core.worktree``, or None.
    """

    __slots__ = ("remotes", "worktree")

    def __init__(self, remotes: dict[str, str], worktree: str | None) -> None:
        self.remotes = remotes  # remote name -> first non-empty url, config order
        self.worktree = worktree  # core.worktree


def read_config(common_dir: str) -> GitConfig | None:
    """The remotes and ``core.worktree`` of ``<common_dir>/config``; None if it is unreadable.

    Each remote keeps its first non-empty ``url``, in config order; a malformed line is
    skipped, never raised.
    """
    text = read_text(os.path.join(common_dir, "config"))
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
    return GitConfig(remotes, worktree)


def pick_remote(remotes: Mapping[str, str]) -> tuple[str, str] | None:
    """``origin`` if it has a url, else the first remote in config order."""
    if "origin" in remotes:
        return "origin", remotes["origin"]
    for name, url in remotes.items():
        return name, url
    return None
