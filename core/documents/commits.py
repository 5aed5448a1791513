"""A repository's commit messages, read with git, newest first, and read again only from
where the last read stopped.

A commit message is often the only place a decision's reason is written ("switch the queue
to Dramatiq: Celery's prefetch lost jobs on deploy"). Merges are left out: their message
says which branch, not why. Standard library only (git itself is run as a process).
"""

from __future__ import annotations

import re
import subprocess
from dataclasses import dataclass
from pathlib import Path

__all__ = ["GIT", "GIT_ENV", "MAX_COMMITS", "Commit", "git_run", "head_commit", "is_ancestor", "read_commits",
           "web_address"]

#: Most commits read in one index run (the newest).
MAX_COMMITS = 10_000

_DATE = re.compile(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(?:Z|[+-]\d\d:\d\d)")


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


_SHA = re.compile(r"[0-9a-f]{40}(?:[0-9a-f]{24})?")


def is_ancestor(root: Path, sha: str) -> bool:
    """Whether the commit ``sha`` is in ``HEAD``'s history (False after a rewrite or a switch
    to a branch without it)."""
    if not _SHA.fullmatch(sha):
        return False
    return _git(root, "merge-base", "--is-ancestor", sha, "HEAD").returncode == 0


def read_commits(root: Path, *, since: str | None = None, limit: int = MAX_COMMITS) -> list[Commit]:
    """The commits of ``HEAD`` newer than ``since`` (all when ``since`` is None or no longer in
    the history, as after a rewrite), newest first, at most ``limit``; none in a repository
    with no commit yet.

    The log is read with NUL between fields and records, which no commit message can hold,
    and a record whose id is not a full commit id or whose date is not a date is dropped:
    a message cannot forge a commit of its own.

    Raises:
        ValueError: ``root`` is not in a git work tree, or git is missing.
    """
    if head_commit(root) is None:
        if _git(root, "rev-parse", "--git-dir").returncode != 0:
            raise ValueError(f"{root} is not in a git repository")
        return []  # no commit yet (an unborn HEAD)
    if since is not None and not is_ancestor(root, since):
        since = None  # rewritten away: the whole history
    span = [f"{since}..HEAD"] if since else ["HEAD"]
    done = _git(root, "log", "-z", "--no-merges", f"--max-count={int(limit)}",
                "--format=%H%x00%cI%x00%s%x00%b", *span, "--")
    if done.returncode != 0:
        raise ValueError(f"cannot read the git history: {done.stderr.decode(errors='replace').strip()[:200]}")
    fields = done.stdout.decode("utf-8", "replace").split("\0")
    out = []
    for i in range(0, len(fields) - 3, 4):
        sha, date, subject, body = fields[i:i + 4]
        sha = sha.strip()
        if _SHA.fullmatch(sha) and _DATE.fullmatch(date.strip()):
            out.append(Commit(sha=sha, date=date.strip(), subject=subject.strip(), body=body.strip()))
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
    where = normalise_remote(url.split("?", 1)[0].split("#", 1)[0])  # never a query's token
    host, _, path = where.partition("/")
    host = host.split(":")[0]
    if not path or not (host in WEB_HOSTS or host.startswith(("gitlab.", "github."))):
        return None
    return f"https://{host}/{path}"

