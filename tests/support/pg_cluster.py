"""A throwaway PostgreSQL cluster for the tests: ``initdb`` in a temporary folder, a server that
listens only on a Unix socket there, stopped and removed afterwards.

PostgreSQL refuses to run as root, so when the tests run as root the cluster belongs to ``nobody``.
Without PostgreSQL (Debian's ``postgresql`` package) the tests that need it skip with the reason,
unless ``SESSIONREF_REQUIRE_POSTGRES=1`` (``.ci/run`` sets it): then they fail.
"""

from __future__ import annotations

import glob
import itertools
import os
import pwd
import shutil
import subprocess
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import psycopg
import pytest

from core.database.setup import initialize_database
from core.database.store import PostgresSessionStore


def postgres_bin() -> Path | None:
    """The folder of the newest installed PostgreSQL's programs (``initdb``, ``pg_ctl``)."""
    found = sorted(glob.glob("/usr/lib/postgresql/*/bin/initdb"), key=lambda path: int(path.split("/")[4]))
    return Path(found[-1]).parent if found else None


def _as_owner(command: list[str], owner: str | None) -> list[str]:
    return command if owner is None else ["runuser", "-u", owner, "--", *command]


class Cluster:
    """A throwaway cluster's server, which a test may stop and start again (a restart)."""

    def __init__(self, binaries: Path, folder: Path, owner: str | None, durable: bool = False) -> None:
        self.binaries, self.folder, self.owner, self.durable = binaries, folder, owner, durable
        self.data, self.socket = folder / "data", folder / "socket"
        self.conninfo = f"host={self.socket} user=postgres dbname=postgres"

    def _pg_ctl(self, *arguments: str, check: bool = True) -> None:
        command = [str(self.binaries / "pg_ctl"), "-D", str(self.data), *arguments]
        subprocess.run(
            _as_owner(command, self.owner),
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            check=check,
            cwd=self.folder,
        )

    def start(self) -> None:
        # Tests run without fsync (faster, nothing to keep); a benchmark's server is durable.
        durability = "" if self.durable else " -c fsync=off"
        options = f"-k {self.socket} -c listen_addresses=''{durability} -c max_connections=200"
        self._pg_ctl("-o", options, "-l", str(self.folder / "log"), "-w", "start")

    def stop(self, mode: str = "immediate") -> None:
        """Stop the server: ``immediate`` is a crash (connections cut, no checkpoint), ``fast`` a clean stop."""
        self._pg_ctl("-m", mode, "-w", "stop", check=False)


@contextmanager
def running_cluster(durable: bool = False, initialized: bool = True) -> Iterator[Cluster]:
    """A running cluster of its own (``initdb`` in a temporary folder), removed afterwards;
    ``durable`` keeps ``fsync`` on (as a real server runs); ``initialized``: its ``postgres``
    database has the store's schema (``sessionref db init``, as its superuser)."""
    binaries = postgres_bin()
    if binaries is None:
        reason = "PostgreSQL is not installed (apt-get install postgresql)"
        if os.environ.get("SESSIONREF_REQUIRE_POSTGRES") == "1":
            pytest.fail(reason)
        pytest.skip(reason)
    owner = "nobody" if os.geteuid() == 0 else None
    folder = Path(tempfile.mkdtemp(prefix="sessionref-pg-"))
    (folder / "socket").mkdir()
    if owner is not None:
        entry = pwd.getpwnam(owner)
        for path in (folder, folder / "socket"):
            os.chown(path, entry.pw_uid, entry.pw_gid)
    initdb = [str(binaries / "initdb"), "-D", str(folder / "data"), "-U", "postgres", "--auth=trust", "-E", "UTF8"]
    subprocess.run(_as_owner(initdb, owner), stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, check=True, cwd=folder)
    cluster = Cluster(binaries, folder, owner, durable)
    cluster.start()
    try:
        if initialized:
            initialize_database(cluster.conninfo)
        yield cluster
    finally:
        cluster.stop()
        shutil.rmtree(folder, ignore_errors=True)


@contextmanager
def throwaway_cluster() -> Iterator[str]:
    """A running cluster; yields the connection string of its ``postgres`` superuser."""
    with running_cluster(initialized=False) as cluster:
        yield cluster.conninfo


_numbers = itertools.count()


def fresh_database(cluster: str) -> str:
    """A new, empty database in the cluster (no sessionref schema); its name."""
    name = f"t{os.getpid()}_{next(_numbers)}"
    with psycopg.connect(cluster, autocommit=True) as admin:
        admin.execute(f"CREATE DATABASE {name}")  # type: ignore[arg-type]
    return name


@pytest.fixture(scope="session")
def cluster() -> Iterator[str]:
    """One throwaway cluster for the whole test run."""
    with throwaway_cluster() as conninfo:
        yield conninfo


@pytest.fixture
def database(cluster: str, monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    """A fresh database of its own for each test, its schema made by the administrator
    (``sessionref db init``); its connection string, as the superuser. Every store the test opened
    is closed afterwards, even when the test failed half way (a store left to the garbage collector
    would stop its pool's threads from one of them)."""
    name = fresh_database(cluster)
    initialize_database(cluster.replace("dbname=postgres", f"dbname={name}"))
    opened: list[PostgresSessionStore] = []
    original = PostgresSessionStore.__init__

    def tracked(self: PostgresSessionStore, *args: Any, **kwargs: Any) -> None:
        original(self, *args, **kwargs)
        opened.append(self)

    monkeypatch.setattr(PostgresSessionStore, "__init__", tracked)
    yield cluster.replace("dbname=postgres", f"dbname={name}")
    for store in opened:
        store.close()


@dataclass
class Team:
    """Three people and a team (database roles): alice and bob are in it, carol is not."""

    admin: str
    alice: str
    bob: str
    carol: str
    team: str


@pytest.fixture
def team(database: str) -> Team:
    prefix = database.split("dbname=")[1]
    names = {who: f"{prefix}_{who}" for who in ("alice", "bob", "carol", "devs")}
    with psycopg.connect(database, autocommit=True) as admin:
        for who in ("alice", "bob", "carol"):
            admin.execute(f"CREATE ROLE {names[who]} LOGIN")  # type: ignore[arg-type]
        admin.execute(f"CREATE ROLE {names['devs']} NOLOGIN")  # type: ignore[arg-type]
        admin.execute(f"GRANT {names['devs']} TO {names['alice']}, {names['bob']}")  # type: ignore[arg-type]

    def as_(who: str) -> str:
        return database.replace("user=postgres", f"user={names[who]}")

    return Team(database, as_("alice"), as_("bob"), as_("carol"), names["devs"])
