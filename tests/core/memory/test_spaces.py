"""Tests for bli_memory.core.memory.spaces (container-tag derivation).

Repositories are real: they are created with the ``git`` binary in
``tmp_path`` with an isolated environment (no global/system config, HOME in
``tmp_path``), and the results are cross-checked against ``git`` itself.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from bli_memory.core.memory.spaces import (
    ENV_CONTAINER_TAG,
    ENV_ISOLATE_WORKTREES,
    Space,
    derive_space,
    normalise_remote,
    sanitise_name,
    validate_tag,
)

pytestmark = pytest.mark.skipif(shutil.which("git") is None, reason="git binary not available")


def sha16(seed: str) -> str:
    return hashlib.sha256(seed.encode("utf-8")).hexdigest()[:16]


# --------------------------------------------------------------------------
# Helpers: real git, isolated from the user's configuration
# --------------------------------------------------------------------------


@pytest.fixture
def git_env(tmp_path: Path) -> dict[str, str]:
    home = tmp_path / "git-home"
    home.mkdir(exist_ok=True)
    return {
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "HOME": str(home),
        "XDG_CONFIG_HOME": str(home / ".config"),
        "GIT_CONFIG_GLOBAL": os.devnull,
        "GIT_CONFIG_NOSYSTEM": "1",
        "GIT_TERMINAL_PROMPT": "0",
        "LC_ALL": "C",
    }


class Git:
    def __init__(self, env: dict[str, str]) -> None:
        self.env = env

    def __call__(self, cwd: Path, *args: str) -> str:
        proc = subprocess.run(
            ["git", "-c", "user.name=t", "-c", "user.email=t@t", "-c", "protocol.file.allow=always", *args],
            cwd=cwd,
            env=self.env,
            capture_output=True,
            text=True,
            check=False,
        )
        assert proc.returncode == 0, f"git {args} failed: {proc.stderr}"
        return proc.stdout.strip()

    def init(self, path: Path, *remotes: tuple[str, str], commit: bool = True) -> Path:
        path.mkdir(parents=True, exist_ok=True)
        self(path, "init", "-q")
        for name, url in remotes:
            self(path, "remote", "add", name, url)
        if commit:
            self(path, "commit", "-q", "--allow-empty", "-m", "init")
        return path


@pytest.fixture
def git(git_env: dict[str, str]) -> Git:
    return Git(git_env)


def space(path: Path | str, **env: str) -> Space:
    """derive_space with an explicit environment (never the test runner's)."""
    return derive_space(path, environ=env)


ORIGIN = "git@github.com:Org/Proj.git"
ORIGIN_NORM = "github.com/org/proj"


@pytest.fixture
def checkout(tmp_path: Path, git: Git) -> dict[str, Path]:
    """A repo with a remote, a subfolder and a linked worktree."""
    main = git.init(tmp_path / "proj", ("origin", ORIGIN))
    sub = main / "src" / "pkg"
    sub.mkdir(parents=True)
    wt = tmp_path / "proj-feature"
    git(main, "worktree", "add", "-q", "-b", "feature", str(wt))
    wt_sub = wt / "deep" / "er"
    wt_sub.mkdir(parents=True)
    return {"main": main, "sub": sub, "wt": wt, "wt_sub": wt_sub}


# --------------------------------------------------------------------------
# Repository rule
# --------------------------------------------------------------------------


@pytest.mark.e2e
@pytest.mark.e2e
def test_main_subfolder_and_worktree_share_one_tag(checkout: dict[str, Path]) -> None:
    expected = f"repo_proj__{sha16(ORIGIN_NORM)}"
    spaces = {k: space(p) for k, p in checkout.items()}
    assert {s.tag for s in spaces.values()} == {expected}
    assert all(s.kind == "repo" and s.name == "proj" for s in spaces.values())
    assert all(s.derived_from == f"git remote {ORIGIN_NORM}" for s in spaces.values())
    assert spaces["main"].root == str(checkout["main"].resolve())
    assert spaces["sub"].root == str(checkout["main"].resolve())
    assert spaces["wt"].root == str(checkout["wt"].resolve())
    assert spaces["wt_sub"].root == str(checkout["wt"].resolve())


@pytest.mark.e2e
@pytest.mark.e2e
def test_documented_examples_are_pinned(tmp_path: Path, git: Git) -> None:
    """The literal tags quoted in docs/spaces.md (guards against seed changes)."""
    repo = git.init(tmp_path / "checkout", ("origin", "git@github.com:Org/Repo.git"))
    assert space(repo).tag == "repo_repo__4c06e3f1e1c41311"
    assert sha16("github.com/org/repo\nworktree:/home/me/repo-feature") == "36431cfa2ee336c9"
    assert sha16("path:/home/me/scratch") == "07a369a05c2e2eb7"
    assert sha16("/home/me/notes") == "f8ebe5589671474b"


@pytest.mark.e2e
@pytest.mark.e2e
@pytest.mark.parametrize("value", ["1", "true", "TRUE", "yes", "on", " On "])
def test_isolate_worktrees_gives_linked_worktree_its_own_tag(checkout: dict[str, Path], value: str) -> None:
    shared = f"repo_proj__{sha16(ORIGIN_NORM)}"
    env = {ENV_ISOLATE_WORKTREES: value}
    main, sub = space(checkout["main"], **env), space(checkout["sub"], **env)
    wt, wt_sub = space(checkout["wt"], **env), space(checkout["wt_sub"], **env)
    assert main.tag == sub.tag == shared
    wt_root = str(checkout["wt"].resolve())
    assert wt.tag == wt_sub.tag == f"repo_proj__{sha16(ORIGIN_NORM + chr(10) + 'worktree:' + wt_root)}"
    assert wt.tag != shared
    assert ENV_ISOLATE_WORKTREES in wt.derived_from and wt_root in wt.derived_from


@pytest.mark.e2e
@pytest.mark.e2e
@pytest.mark.parametrize("value", ["", "0", "false", "no", "off", "maybe"])
def test_isolate_worktrees_falsy_values_keep_sharing(checkout: dict[str, Path], value: str) -> None:
    env = {ENV_ISOLATE_WORKTREES: value}
    assert space(checkout["wt"], **env).tag == space(checkout["main"], **env).tag


@pytest.mark.e2e
@pytest.mark.e2e
def test_two_isolated_worktrees_differ(checkout: dict[str, Path], git: Git, tmp_path: Path) -> None:
    wt2 = tmp_path / "proj-other"
    git(checkout["main"], "worktree", "add", "-q", "-b", "other", str(wt2))
    env = {ENV_ISOLATE_WORKTREES: "1"}
    assert space(wt2, **env).tag != space(checkout["wt"], **env).tag
    assert space(wt2).tag == space(checkout["wt"]).tag


@pytest.mark.e2e
@pytest.mark.e2e
def test_same_name_other_remote_differs(tmp_path: Path, git: Git) -> None:
    a = git.init(tmp_path / "a" / "proj", ("origin", "git@github.com:org/proj.git"))
    b = git.init(tmp_path / "b" / "proj", ("origin", "git@github.com:fork/proj.git"))
    sa, sb = space(a), space(b)
    assert sa.name == sb.name == "proj"
    assert sa.tag != sb.tag


@pytest.mark.e2e
@pytest.mark.e2e
def test_same_remote_in_different_clones_and_url_forms_shares_tag(tmp_path: Path, git: Git) -> None:
    a = git.init(tmp_path / "one" / "checkout", ("origin", "git@github.com:Org/Proj.git"))
    b = git.init(tmp_path / "two" / "elsewhere", ("origin", "https://tok:x@GitHub.com/org/proj/"))
    assert space(a).tag == space(b).tag == f"repo_proj__{sha16(ORIGIN_NORM)}"


@pytest.mark.e2e
@pytest.mark.e2e
def test_name_comes_from_remote_not_folder(tmp_path: Path, git: Git) -> None:
    repo = git.init(tmp_path / "My Checkout", ("origin", "https://gitlab.example.com/Group/Sub/Cool_Lib.git"))
    s = space(repo)
    assert s.name == "cool_lib"
    assert s.tag == f"repo_cool_lib__{sha16('gitlab.example.com/group/sub/cool_lib')}"


@pytest.mark.e2e
@pytest.mark.e2e
def test_remote_without_path_falls_back_to_folder_name(tmp_path: Path, git: Git) -> None:
    repo = git.init(tmp_path / "Fancy Folder", ("origin", "https://example.com/"))
    s = space(repo)
    assert s.tag == f"repo_fancy-folder__{sha16('example.com')}"


@pytest.mark.e2e
@pytest.mark.e2e
def test_origin_preferred_over_earlier_remote(tmp_path: Path, git: Git) -> None:
    repo = git.init(
        tmp_path / "r",
        ("upstream", "git@github.com:up/r.git"),
        ("origin", "git@github.com:me/r.git"),
    )
    assert space(repo).derived_from == "git remote github.com/me/r"


@pytest.mark.e2e
@pytest.mark.e2e
def test_first_remote_in_config_order_without_origin(tmp_path: Path, git: Git) -> None:
    repo = git.init(
        tmp_path / "r",
        ("zeta", "git@github.com:zeta/r.git"),
        ("alpha", "git@github.com:alpha/r.git"),
    )
    assert space(repo).derived_from == "git remote github.com/zeta/r"


@pytest.mark.e2e
@pytest.mark.e2e
def test_remote_name_is_case_sensitive(tmp_path: Path, git: Git) -> None:
    repo = git.init(
        tmp_path / "r",
        ("first", "git@github.com:first/r.git"),
        ("Origin", "git@github.com:not-origin/r.git"),
    )
    assert space(repo).derived_from == "git remote github.com/first/r"


# --------------------------------------------------------------------------
# Repository without a remote
# --------------------------------------------------------------------------


@pytest.mark.e2e
@pytest.mark.e2e
def test_repo_without_remote_is_keyed_by_main_worktree_root(tmp_path: Path, git: Git) -> None:
    main = git.init(tmp_path / "Local Only")
    (main / "sub").mkdir()
    wt = tmp_path / "wt"
    git(main, "worktree", "add", "-q", "-b", "x", str(wt))
    root = str(main.resolve())
    expected = f"repo_local-only__{sha16('path:' + root)}"
    for p in (main, main / "sub", wt):
        s = space(p)
        assert (s.tag, s.kind, s.name) == (expected, "repo", "local-only")
        assert root in s.derived_from
    iso = space(wt, **{ENV_ISOLATE_WORKTREES: "1"})
    assert iso.tag == f"repo_local-only__{sha16('path:' + root + chr(10) + 'worktree:' + str(wt.resolve()))}"
    assert space(main, **{ENV_ISOLATE_WORKTREES: "1"}).tag == expected


@pytest.mark.e2e
@pytest.mark.e2e
def test_repo_without_commit_or_remote(tmp_path: Path, git: Git) -> None:
    repo = git.init(tmp_path / "fresh", commit=False)
    assert space(repo).tag == f"repo_fresh__{sha16('path:' + str(repo.resolve()))}"


@pytest.mark.e2e
@pytest.mark.e2e
def test_two_remoteless_repos_with_same_name_differ(tmp_path: Path, git: Git) -> None:
    a = git.init(tmp_path / "a" / "same")
    b = git.init(tmp_path / "b" / "same")
    assert space(a).tag != space(b).tag


# --------------------------------------------------------------------------
# Plain folders
# --------------------------------------------------------------------------


def test_plain_folder_gets_dir_tag(tmp_path: Path) -> None:
    folder = tmp_path / "Notes & Stuff"
    folder.mkdir()
    s = space(folder)
    resolved = str(folder.resolve())
    assert s == Space(
        tag=f"dir_notes-stuff__{sha16(resolved)}",
        kind="dir",
        name="notes-stuff",
        derived_from=f"folder {resolved}",
        root=resolved,
    )
    assert space(str(folder)).tag == s.tag  # same folder twice -> same tag


def test_folders_with_same_basename_differ(tmp_path: Path) -> None:
    a, b = tmp_path / "x" / "app", tmp_path / "y" / "app"
    a.mkdir(parents=True)
    b.mkdir(parents=True)
    sa, sb = space(a), space(b)
    assert sa.name == sb.name == "app"
    assert sa.tag != sb.tag


def test_symlinked_folder_resolves_to_same_tag(tmp_path: Path) -> None:
    real = tmp_path / "real"
    real.mkdir()
    link = tmp_path / "link"
    link.symlink_to(real, target_is_directory=True)
    assert space(link).tag == space(real).tag


def test_relative_cwd(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "rel").mkdir()
    monkeypatch.chdir(tmp_path)
    assert space("rel").tag == space(tmp_path / "rel").tag


@pytest.mark.e2e
@pytest.mark.e2e
def test_missing_cwd_is_a_plain_folder(tmp_path: Path, git: Git) -> None:
    missing = tmp_path / "gone" / "Away"
    s = space(missing)
    assert s.kind == "dir" and s.name == "away"
    assert s.tag == f"dir_away__{sha16(str(tmp_path.resolve() / 'gone' / 'Away'))}"
    # also inside a repository: a path that does not exist is not looked up
    repo = git.init(tmp_path / "repo", ("origin", ORIGIN))
    assert space(repo / "deleted").kind == "dir"


def test_filesystem_root() -> None:
    s = space("/")
    assert s.kind in {"dir", "repo"}
    if s.kind == "dir":
        assert s.tag == f"dir_root__{sha16('/')}"


# --------------------------------------------------------------------------
# Forced tag and validation
# --------------------------------------------------------------------------


@pytest.mark.e2e
@pytest.mark.e2e
def test_forced_tag_wins(checkout: dict[str, Path], tmp_path: Path) -> None:
    for p in (checkout["main"], checkout["wt"], tmp_path, tmp_path / "missing"):
        s = space(p, **{ENV_CONTAINER_TAG: "  team:shared-1.0  ", ENV_ISOLATE_WORKTREES: "1"})
        assert s == Space(
            tag="team:shared-1.0",
            kind="forced",
            name="team:shared-1.0",
            derived_from=ENV_CONTAINER_TAG,
            root=None,
        )


@pytest.mark.e2e
@pytest.mark.e2e
def test_blank_forced_tag_is_ignored(checkout: dict[str, Path]) -> None:
    assert space(checkout["main"], **{ENV_CONTAINER_TAG: "   "}).kind == "repo"


@pytest.mark.parametrize("bad", ["has space", "x" * 129, "tag/slash", "ünï", "a\nb", "semi;colon"])
def test_invalid_forced_tag_raises(tmp_path: Path, bad: str) -> None:
    with pytest.raises(ValueError, match=ENV_CONTAINER_TAG) as info:
        space(tmp_path, **{ENV_CONTAINER_TAG: bad})
    assert bad not in str(info.value)  # a mistyped tag may hold a pasted secret: never repeated


def test_default_environ_is_os_environ(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(ENV_CONTAINER_TAG, "from-env")
    assert derive_space(tmp_path).tag == "from-env"
    monkeypatch.delenv(ENV_CONTAINER_TAG)
    assert derive_space(tmp_path).kind == "dir"


@pytest.mark.parametrize(
    ("tag", "expected"),
    [
        ("a", "a"),
        ("  repo_x__0123456789abcdef\n", "repo_x__0123456789abcdef"),
        ("A.b:c-d_e", "A.b:c-d_e"),
        ("x" * 128, "x" * 128),
    ],
)
def test_validate_tag_accepts(tag: str, expected: str) -> None:
    assert validate_tag(tag) == expected


@pytest.mark.parametrize("tag", ["", "   ", "x" * 129, "a b", "a/b", "a\x00", "é", "a\nb", None, 12])
def test_validate_tag_rejects(tag: object) -> None:
    with pytest.raises(ValueError, match="container tag"):
        validate_tag(tag)  # type: ignore[arg-type]


@pytest.mark.parametrize(("tag", "why"), [
    ("password=walrus1", "character 9 is '='"),
    ("token ghp_" + "a" * 36, "character 6 is ' '"),
    ("x" * 129, "it has 129 characters"),
    ("   ", "it has 0 characters"),
])
def test_validate_tag_says_what_is_wrong_without_repeating_the_tag(tag: str, why: str) -> None:
    """A secret pasted where a tag goes (``--space``, ``containerTag``, the variable) is
    refused by a message that names the problem and never the value: it reaches stderr,
    the hooks' logs and ``cockpit doctor``."""
    with pytest.raises(ValueError) as info:
        validate_tag(tag)
    message = str(info.value)
    assert why in message
    assert not tag.strip() or tag.strip() not in message
    assert "walrus1" not in message and "ghp_" not in message


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        ("Proj", "proj"),
        ("My Project!!", "my-project"),
        ("--a--b--", "a-b"),
        ("a   b", "a-b"),
        ("Ünïcode Näme", "n-code-n-me"),
        ("dots.and_underscores", "dots.and_underscores"),
        ("", "root"),
        ("!!!", "root"),
        ("x" * 70, "x" * 64),
        ("a" * 63 + " b", "a" * 63),
    ],
)
def test_sanitise_name(raw: str, expected: str) -> None:
    assert sanitise_name(raw) == expected


@given(st.text(max_size=200))
def test_sanitise_name_always_tag_safe(raw: str) -> None:
    name = sanitise_name(raw)
    assert 1 <= len(name) <= 64
    assert validate_tag(f"repo_{name}__{'0' * 16}")
    assert not name.startswith("-") and not name.endswith("-") and "--" not in name


# --------------------------------------------------------------------------
# Remote normalisation vectors (mirrored in docs/spaces.md)
# --------------------------------------------------------------------------

SAME_REPO = [
    "git@github.com:Org/Repo.git",
    "git@github.com:org/repo",
    "github.com:Org/Repo.git",
    "ssh://git@github.com/Org/Repo.git",
    "ssh://git@github.com:22/Org/Repo.git",
    "ssh://git@github.com:022/Org/Repo.git",
    "git+ssh://git@github.com/Org/Repo.git",
    "ssh+git://git@github.com/Org/Repo",
    "ssh://git@github.com:Org/Repo.git",
    "https://github.com/Org/Repo",
    "https://github.com/Org/Repo.git",
    "https://user:token@GitHub.com/Org/Repo.git/",
    "https://GITHUB.COM:443/Org/Repo.git",
    "HTTPS://github.com//Org//Repo.git//",
    "http://github.com/Org/Repo.git",
    "http://github.com:80/Org/Repo",
    "git://github.com/Org/Repo.git",
    "git://github.com:9418/Org/Repo.git",
    "  https://github.com/Org/Repo.git \n",
    "https://github.com/Org/Repo/.git",
]


@pytest.mark.parametrize("url", SAME_REPO)
def test_forms_of_one_repo_normalise_identically(url: str) -> None:
    assert normalise_remote(url) == "github.com/org/repo"


@pytest.mark.parametrize(
    ("url", "expected"),
    [
        ("https://git.example.com:8443/Team/App.git", "git.example.com:8443/team/app"),
        ("ssh://git@git.example.com:2222/team/app.git", "git.example.com:2222/team/app"),
        ("ssh://git@git.example.com:7999/team/app.git", "git.example.com:7999/team/app"),
        ("https://gitlab.com/Group/Sub/Group/Proj.git", "gitlab.com/group/sub/group/proj"),
        ("https://dev.azure.com/Org/Proj/_git/Repo", "dev.azure.com/org/proj/_git/repo"),
        ("git@ssh.dev.azure.com:v3/Org/Proj/Repo", "ssh.dev.azure.com/v3/org/proj/repo"),
        ("ssh://git@GitHub.com/~User/Repo.git", "github.com/~user/repo"),
        ("host:~user/repo.git", "host/~user/repo"),
        ("user@host:/srv/git/repo.git", "host/srv/git/repo"),
        ("ssh://user@host/srv/git/repo.git", "host/srv/git/repo"),
        ("ssh://git@[::1]:2222/x.git", "[::1]:2222/x"),
        ("https://u:p@[2001:DB8::1]/A.git", "[2001:db8::1]/a"),
        ("git@[::1]:x.git", "[::1]/x"),
        ("[git@host:2222]:x.git", "host:2222/x"),
        ("[git@host:22]:x.git", "host/x"),
        ("https://github.com", "github.com"),
        ("https://github.com/", "github.com"),
        ("hg::https://Example.org/a//b/", "example.org/a/b"),
        ("persistent-https://Example.org/a.git", "example.org/a"),
        ("repo.git.git", "file://{base}/repo.git"),
    ],
)
def test_normalisation_vectors(url: str, expected: str, tmp_path: Path) -> None:
    base = tmp_path.resolve()
    assert normalise_remote(url, base=base) == expected.format(base=base)


def test_local_remotes(tmp_path: Path) -> None:
    base = (tmp_path / "work" / "main").resolve()
    base.mkdir(parents=True)
    (tmp_path / "srv" / "repo.git").mkdir(parents=True)
    srv = tmp_path.resolve() / "srv"
    want = f"file://{srv}/repo"
    assert normalise_remote(str(srv / "repo.git"), base=base) == want
    assert normalise_remote(str(srv / "repo.git") + "/", base=base) == want
    assert normalise_remote(f"file://{srv}/repo.git", base=base) == want
    assert normalise_remote(f"file://localhost{srv}/repo.git/", base=base) == want
    assert normalise_remote("../../srv/repo.git", base=base) == want
    assert normalise_remote(f"{srv}//repo.git", base=base) == want
    # a non-bare repository's .git directory is the same repository
    assert normalise_remote(f"{srv}/repo/.git", base=base) == want
    # symlinks are resolved; local paths keep their case
    (tmp_path / "alias").symlink_to(srv, target_is_directory=True)
    assert normalise_remote(str(tmp_path / "alias" / "repo.git"), base=base) == want
    assert normalise_remote("/Srv/Repo.git", base=base) == "file:///Srv/Repo"
    # file:// URLs are percent-decoded, like git does
    assert normalise_remote("file:///srv/a%20b.git", base=base) == "file:///srv/a b"
    assert normalise_remote("./other:thing", base=base) == f"file://{base}/other:thing"
    assert normalise_remote("C:\\repos\\x.git", base=base) in {"file:///C:/repos/x", "file://C:/repos/x"}


@pytest.mark.e2e
@pytest.mark.e2e
def test_tilde_is_expanded_like_git(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, git: Git) -> None:
    home = Path(git.env["HOME"])  # the same HOME for git and for us
    monkeypatch.setenv("HOME", str(home))
    up = git.init(home / "repos" / "up")
    assert normalise_remote("~/repos/up.git", base="/elsewhere") == f"file://{home.resolve()}/repos/up"
    # git really resolves ~ in a stored local remote: fetching from it works
    repo = git.init(tmp_path / "r", ("origin", "~/repos/up"), commit=False)
    git(repo, "fetch", "-q", "origin")
    assert space(repo).tag == f"repo_up__{sha16('file://' + str(up.resolve()))}"


def test_normalise_remote_default_base_is_cwd(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    assert normalise_remote("../up.git") == f"file://{tmp_path.resolve().parent}/up"


@pytest.mark.parametrize("url", ["", "   ", "hg::", "https://", "file://"])
def test_normalise_remote_rejects_empty(url: str) -> None:
    with pytest.raises(ValueError):
        normalise_remote(url)


@given(
    org=st.from_regex(r"[A-Za-z0-9][A-Za-z0-9-]{0,15}", fullmatch=True),
    repo=st.from_regex(r"[A-Za-z0-9_][A-Za-z0-9_.-]{0,20}", fullmatch=True).filter(
        lambda r: not r.lower().endswith(".git")
    ),
    user=st.from_regex(r"[a-z]{1,8}", fullmatch=True),
    token=st.from_regex(r"[A-Za-z0-9]{8,20}", fullmatch=True),
)
def test_url_forms_agree_and_hide_credentials(org: str, repo: str, user: str, token: str) -> None:
    forms = [
        f"git@GitHub.com:{org}/{repo}.git",
        f"ssh://git@github.com:22/{org}/{repo}",
        f"https://{user}:{token}@github.com/{org}/{repo}.git/",
        f"git://github.com/{org}/{repo}",
    ]
    assert {normalise_remote(u) for u in forms} == {f"github.com/{org.lower()}/{repo.lower()}"}


@pytest.mark.e2e
@pytest.mark.e2e
def test_credentials_never_reach_space(tmp_path: Path, git: Git) -> None:
    repo = git.init(tmp_path / "r", ("origin", "https://bob:s3cr3t-TOKEN@github.com/Org/R.git"))
    s = space(repo)
    assert "s3cr3t" not in repr(s).lower() and "bob" not in repr(s)


# --------------------------------------------------------------------------
# Cross-check against real git
# --------------------------------------------------------------------------


@pytest.mark.e2e
@pytest.mark.e2e
@pytest.mark.parametrize(
    "url",
    [
        "git@github.com:Org/Proj.git",
        "https://user:tok@GitLab.com/Group/Sub/Proj.git/",
        "ssh://git@example.com:2222/srv/proj.git",
        "../upstream.git",
        "/srv/mirror/proj.git",
    ],
)
def test_matches_git_remote_get_url(tmp_path: Path, git: Git, url: str) -> None:
    main = git.init(tmp_path / "clone", ("origin", url))
    (main / "a" / "b").mkdir(parents=True)
    wt = tmp_path / "wt"
    git(main, "worktree", "add", "-q", "-b", "w", str(wt))
    for cwd in (main, main / "a" / "b", wt):
        from_git = git(cwd, "remote", "get-url", "origin")
        top = git(cwd, "rev-parse", "--show-toplevel")
        common = Path(git(cwd, "rev-parse", "--path-format=absolute", "--git-common-dir"))
        main_root = common.parent
        norm = normalise_remote(from_git, base=main_root)
        name = sanitise_name(norm.rstrip("/").rpartition("/")[2])
        s = space(cwd)
        assert s.tag == f"repo_{name}__{sha16(norm)}"
        assert s.root == str(Path(top).resolve())


@pytest.mark.e2e
@pytest.mark.e2e
def test_first_remote_matches_git_remote_listing(tmp_path: Path, git: Git) -> None:
    repo = git.init(tmp_path / "r", ("b-remote", "https://h/b.git"), ("a-remote", "https://h/a.git"))
    first = git(repo, "config", "--get-regexp", r"^remote\..*\.url$").splitlines()[0].split()[1]
    assert space(repo).derived_from == f"git remote {normalise_remote(first)}"


TRICKY_CONFIGS = {
    "header-and-key-on-one-line": '[core]\n\tbare = false\n[remote "origin"] url = https://h/one.git\n',
    "quotes-comments": '[remote "origin"]\n\turl = "https://h/two.git" ; trailing comment\n',
    "continuation": '[remote "origin"]\n\turl = https://h/\\\nthree.git\n',
    "case-insensitive-names": '[REMOTE "origin"]\n\tURL = https://h/four.git\n',
    "legacy-dot-subsection": "[remote.origin]\n\turl = https://h/five.git\n",
    "first-url-wins": '[remote "origin"]\n\turl = https://h/six.git\n\turl = https://h/other.git\n',
    "split-sections": (
        '[remote "origin"]\n\tfetch = +refs/heads/*:refs/remotes/origin/*\n'
        '[branch "main"]\n\tremote = origin\n[remote "origin"]\n\turl = https://h/seven.git\n'
    ),
    "escaped-quote-in-subsection": (
        '[remote "we\\"ird"]\n\turl = https://h/wrong.git\n[remote "origin"]\n\turl = https://h/eight.git\n'
    ),
    "crlf-and-bom": '\ufeff[remote "origin"]\r\n\turl = https://h/nine.git\r\n',
    "hash-inside-quotes": '[remote "origin"]\n\turl = "https://h/ten#x.git"  # comment\n',
    "internal-spaces": '[remote "origin"]\n\turl =   https://h/eleven.git   \n',
}


@pytest.mark.e2e
@pytest.mark.e2e
@pytest.mark.parametrize("name", sorted(TRICKY_CONFIGS))
def test_config_parser_agrees_with_git(tmp_path: Path, git: Git, name: str) -> None:
    repo = git.init(tmp_path / "r", commit=False)
    config = repo / ".git" / "config"
    config.write_bytes(TRICKY_CONFIGS[name].encode("utf-8"))
    from_git = git(repo, "config", "--file", str(config), "--get-all", "remote.origin.url").splitlines()[0]
    assert space(repo).derived_from == f"git remote {normalise_remote(from_git)}"


# --------------------------------------------------------------------------
# .git files, submodules, broken repositories
# --------------------------------------------------------------------------


@pytest.mark.e2e
@pytest.mark.e2e
def test_real_submodule(tmp_path: Path, git: Git) -> None:
    upstream = git.init(tmp_path / "Upstream Lib", ("origin", "git@github.com:org/lib.git"))
    sup = git.init(tmp_path / "super", ("origin", "git@github.com:org/super.git"))
    git(sup, "submodule", "add", "-q", str(upstream), "libs/lib")
    sub = sup / "libs" / "lib"
    assert (sub / ".git").is_file()
    from_git = git(sub, "remote", "get-url", "origin")
    s = space(sub)
    norm = normalise_remote(from_git)
    assert norm == f"file://{upstream.resolve()}"
    assert s.tag == f"repo_upstream-lib__{sha16(norm)}"
    assert s.root == str(sub.resolve())
    assert space(sup).tag == f"repo_super__{sha16('github.com/org/super')}"
    assert space(sup / "libs").tag == space(sup).tag


@pytest.mark.e2e
@pytest.mark.e2e
def test_submodule_like_gitfile_relative_path(tmp_path: Path, git: Git) -> None:
    holder = git.init(tmp_path / "holder", ("origin", "git@github.com:org/mod.git"), commit=False)
    gitdir = tmp_path / "store" / "modules" / "mod"
    gitdir.parent.mkdir(parents=True)
    shutil.move(str(holder / ".git"), str(gitdir))
    checkout = tmp_path / "co" / "mod"
    checkout.mkdir(parents=True)
    (checkout / ".git").write_text("gitdir: ../../store/modules/mod\n")
    (checkout / "inner").mkdir()
    for p in (checkout, checkout / "inner"):
        s = space(p)
        assert s.tag == f"repo_mod__{sha16('github.com/org/mod')}"
        assert s.root == str(checkout.resolve())


@pytest.mark.e2e
@pytest.mark.e2e
def test_separate_git_dir_without_remote(tmp_path: Path, git: Git) -> None:
    work = tmp_path / "work"
    work.mkdir()
    (tmp_path / "gitdirs").mkdir()
    git(work, "init", "-q", "--separate-git-dir", str(tmp_path / "gitdirs" / "work.git"))
    git(work, "commit", "-q", "--allow-empty", "-m", "x")
    wt = tmp_path / "wt"
    git(work, "worktree", "add", "-q", "-b", "b", str(wt))
    s, w = space(work), space(wt)
    assert s.kind == w.kind == "repo"
    assert s.tag == w.tag
    assert s.name == "work"


@pytest.mark.e2e
@pytest.mark.e2e
def test_bare_repository_and_its_worktree(tmp_path: Path, git: Git) -> None:
    seed = git.init(tmp_path / "seed")
    bare = tmp_path / "proj.git"
    git(tmp_path, "clone", "-q", "--bare", str(seed), str(bare))
    git(bare, "remote", "set-url", "origin", "https://example.com/team/proj.git")
    wt = tmp_path / "wt"
    git(bare, "worktree", "add", "-q", "-b", "feature", str(wt))
    expected = f"repo_proj__{sha16('example.com/team/proj')}"
    assert space(bare).tag == space(bare / "refs").tag == space(wt).tag == expected


@pytest.mark.e2e
@pytest.mark.e2e
def test_inside_dot_git_directory(checkout: dict[str, Path]) -> None:
    assert space(checkout["main"] / ".git" / "refs").tag == space(checkout["main"]).tag


@pytest.mark.e2e
@pytest.mark.e2e
def test_garbage_config_does_not_raise(tmp_path: Path, git: Git) -> None:
    repo = git.init(tmp_path / "junk", ("origin", ORIGIN))
    (repo / ".git" / "config").write_bytes(b'\x00\xff\xfe[[[\n= =\n[remote "origin\n\turl = \\q\n' * 50)
    s = space(repo)
    assert s.kind == "repo"
    assert s.tag == f"repo_junk__{sha16('path:' + str(repo.resolve()))}"


@pytest.mark.e2e
@pytest.mark.e2e
def test_garbage_lines_around_valid_remote(tmp_path: Path, git: Git) -> None:
    repo = git.init(tmp_path / "r", commit=False)
    (repo / ".git" / "config").write_text(
        '!!! nonsense\n[core\n\turl = https://h/not-a-remote.git\n[remote "origin"]\n'
        '\tbad = "unterminated\n\turl = https://h/good.git\n\tx = a\\qb\n'
    )
    assert space(repo).derived_from == "git remote h/good"


@pytest.mark.e2e
@pytest.mark.e2e
def test_unreadable_config_falls_back_to_folder(tmp_path: Path, git: Git) -> None:
    repo = git.init(tmp_path / "r", ("origin", ORIGIN))
    config = repo / ".git" / "config"
    config.unlink()
    config.mkdir()  # reading a directory fails even as root
    (repo / "sub").mkdir()
    s = space(repo / "sub")
    assert s.kind == "dir"
    assert s.tag == f"dir_sub__{sha16(str((repo / 'sub').resolve()))}"


@pytest.mark.parametrize(
    "content",
    [b"", b"not a gitfile\n", b"gitdir:\n", b"gitdir: /does/not/exist\n", b"\xff\xfe\x00garbage"],
)
def test_broken_gitfile_falls_back_to_folder(tmp_path: Path, content: bytes) -> None:
    folder = tmp_path / "broken"
    folder.mkdir()
    (folder / ".git").write_bytes(content)
    assert space(folder).kind == "dir"


@pytest.mark.e2e
@pytest.mark.e2e
def test_gitfile_that_is_a_directory_named_dot_git_without_head_is_skipped(tmp_path: Path, git: Git) -> None:
    outer = git.init(tmp_path / "outer", ("origin", ORIGIN))
    inner = outer / "inner"
    (inner / ".git").mkdir(parents=True)  # not a repository: no HEAD
    assert space(inner).tag == space(outer).tag
    lonely = tmp_path / "lonely"
    (lonely / ".git").mkdir(parents=True)
    assert space(lonely).kind == "dir"


@pytest.mark.e2e
@pytest.mark.e2e
def test_broken_commondir_falls_back_to_folder(checkout: dict[str, Path]) -> None:
    gitfile = (checkout["wt"] / ".git").read_text().split(":", 1)[1].strip()
    (Path(gitfile) / "commondir").write_text("../../../nowhere\n")
    assert space(checkout["wt"]).kind == "dir"
    assert space(checkout["main"]).kind == "repo"


@pytest.mark.e2e
@pytest.mark.e2e
def test_empty_remote_url_is_ignored(tmp_path: Path, git: Git) -> None:
    repo = git.init(tmp_path / "r", commit=False)
    with (repo / ".git" / "config").open("a") as fh:
        fh.write('[remote "origin"]\n\turl =\n[remote "backup"]\n\turl = https://h/backup.git\n')
    assert space(repo).derived_from == "git remote h/backup"


@pytest.mark.e2e
@pytest.mark.e2e
def test_tags_are_always_valid(checkout: dict[str, Path], tmp_path: Path) -> None:
    for p in (*checkout.values(), tmp_path, tmp_path / "nope", Path("/")):
        tag = space(p).tag
        assert validate_tag(tag) == tag
