"""A repository's commit messages, read with git, newest first, and read again only from
where the last read stopped.

A commit message is often the only place a decision's reason is written ("switch the queue
to Dramatiq: Celery's prefetch lost jobs on deploy"). Merges are left out: their message
says which branch, not why. Standard library only (git itself is run as a process).
"""

from __future__ import annotations

import subprocess
from dataclasses import dataclass
from pathlib import Path

__all__ = ["GIT", "GIT_ENV", "MAX_COMMITS", "Commit", "git_run", "head_commit", "read_commits", "web_address"]

#: Most commits read in one index run (the newest).
MAX_COMMITS = 10_000

_FIELD, _RECORD = "\x1f", "\x1e"


@dataclass(frozen=True)
class Commit:
    """One commit message.

    Attributes:
        sha: The full id (40 hex digits).
        date: The committer date, ISO 8601 with its offset.
        subject: The first line.
        body: The rest, stripped (may be empty).
    """

    sha: str
    date: str
    subject: str
    body: str

    @property
    def short(self) -> str:
        """The first 12 hex digits, as a match shows the commit."""
        return self.sha[:12]


#: What every git run of the documents wing starts with: no file system monitor process, no
#: signature checks (``log.showSignature`` would run gpg per commit), no pager, no prompt.
GIT = ("git", "-c", "core.fsmonitor=false", "-c", "log.showSignature=false", "--no-pager")

#: The environment of those runs: never ask for credentials.
GIT_ENV = {"GIT_TERMINAL_PROMPT": "0", "GIT_OPTIONAL_LOCKS": "0"}


def git_run(root: Path, *args: str, timeout: float = 300) -> subprocess.CompletedProcess[bytes]:
    """Run ``git -C root ARGS`` as :data:`GIT` does, output captured.

    Raises:
        OSError: git cannot be started.
        subprocess.TimeoutExpired: it ran longer than ``timeout`` seconds.
    """
    import os

    return subprocess.run([*GIT, "-C", str(root), *args], capture_output=True, timeout=timeout, check=False,
                          env={**os.environ, **GIT_ENV})


def _git(root: Path, *args: str) -> subprocess.CompletedProcess[bytes]:
    try:
        return git_run(root, *args)
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise ValueError(f"cannot read the git history: {exc}") from None


def read_commits(root: Path, *, since: str | None = None, limit: int = MAX_COMMITS) -> list[Commit]:
    """The commits of ``HEAD`` newer than ``since`` (all when ``since`` is None or is no
    longer in the history, as after a rewrite), newest first, at most ``limit``.

    Raises:
        ValueError: ``root`` is not in a git work tree, or git is missing.
    """
    if since is not None and _git(root, "merge-base", "--is-ancestor", since, "HEAD").returncode != 0:
        since = None
    span = [f"{since}..HEAD"] if since else ["HEAD"]
    done = _git(root, "log", "--no-merges", f"--max-count={int(limit)}",
                f"--format=%H{_FIELD}%cI{_FIELD}%s{_FIELD}%b{_RECORD}", *span, "--")
    if done.returncode != 0:
        message = done.stderr.decode(errors="replace").strip()
        if "does not have any commits" in message or "unknown revision" in message:
            return []  # a repository with no commit yet
        raise ValueError(f"cannot read the git history: {message[:200]}")
    out = []
    for record in done.stdout.decode("utf-8", "replace").split(_RECORD):
        fields = record.strip("\n").split(_FIELD)
        if len(fields) == 4 and len(fields[0]) >= 40:
            out.append(Commit(sha=fields[0], date=fields[1], subject=fields[2].strip(),
                              body=fields[3].strip()))
    return out


def head_commit(root: Path) -> str | None:
    """The full id of ``HEAD``, or None (no commit yet, or not a repository)."""
    done = _git(root, "rev-parse", "--verify", "-q", "HEAD")
    return done.stdout.decode().strip() or None if done.returncode == 0 else None


#: Hosts whose web pages show a file at a commit (``/blob/``, GitLab's ``/-/blob/``) and a
#: commit (``/commit/``).
WEB_HOSTS = ("github.com", "gitlab.com", "codeberg.org", "bitbucket.org")


def web_address(root: Path) -> str | None:
    """``https://host/owner/repo`` of the repository's ``origin`` (else first remote) when it is
    on a known web host (:data:`WEB_HOSTS`, or a host named ``gitlab.*``/``github.*``), else
    None. Credentials in the remote never reach the address."""
    from bli_memory.core.memory.git_remotes import normalise_remote

    done = _git(root, "remote")
    names = done.stdout.decode().split() if done.returncode == 0 else []
    if not names:
        return None
    name = "origin" if "origin" in names else names[0]
    url = _git(root, "remote", "get-url", name).stdout.decode().strip()
    if not url:
        return None
    where = normalise_remote(url)
    host, _, path = where.partition("/")
    host = host.split(":")[0]
    if not path or not (host in WEB_HOSTS or host.startswith(("gitlab.", "github."))):
        return None
    return f"https://{host}/{path}"

