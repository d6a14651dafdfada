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

import psycopg
import pytest

from core.sessions.pg_store import PostgresSessionStore


def postgres_bin() -> Path | None:
    """The folder of the newest installed PostgreSQL's programs (``initdb``, ``pg_ctl``)."""
    found = sorted(glob.glob("/usr/lib/postgresql/*/bin/initdb"), key=lambda path: int(path.split("/")[4]))
    return Path(found[-1]).parent if found else None


def _as_owner(command: list[str], owner: str | None) -> list[str]:
    return command if owner is None else ["runuser", "-u", owner, "--", *command]


@contextmanager
def throwaway_cluster() -> Iterator[str]:
    """A running cluster; yields the connection string of its ``postgres`` superuser."""
    binaries = postgres_bin()
    if binaries is None:
        reason = "PostgreSQL is not installed (apt-get install postgresql)"
        if os.environ.get("SESSIONREF_REQUIRE_POSTGRES") == "1":
            pytest.fail(reason)
        pytest.skip(reason)
    owner = "nobody" if os.geteuid() == 0 else None
    folder = Path(tempfile.mkdtemp(prefix="sessionref-pg-"))
    data, socket = folder / "data", folder / "socket"
    socket.mkdir()
    if owner is not None:
        entry = pwd.getpwnam(owner)
        for path in (folder, socket):
            os.chown(path, entry.pw_uid, entry.pw_gid)
    quiet = {"stdout": subprocess.DEVNULL, "stderr": subprocess.PIPE, "check": True, "cwd": folder}
    subprocess.run(
        _as_owner([str(binaries / "initdb"), "-D", str(data), "-U", "postgres", "--auth=trust", "-E", "UTF8"], owner),
        **quiet,  # type: ignore[arg-type]
    )
    options = f"-k {socket} -c listen_addresses='' -c fsync=off -c max_connections=200"
    start = [str(binaries / "pg_ctl"), "-D", str(data), "-o", options, "-l", str(folder / "log"), "-w", "start"]
    subprocess.run(_as_owner(start, owner), **quiet)  # type: ignore[arg-type]
    try:
        yield f"host={socket} user=postgres dbname=postgres"
    finally:
        stop = [str(binaries / "pg_ctl"), "-D", str(data), "-m", "immediate", "-w", "stop"]
        subprocess.run(_as_owner(stop, owner), **{**quiet, "check": False})  # type: ignore[arg-type]
        shutil.rmtree(folder, ignore_errors=True)


_numbers = itertools.count()


@pytest.fixture(scope="session")
def cluster() -> Iterator[str]:
    """One throwaway cluster for the whole test run."""
    with throwaway_cluster() as conninfo:
        yield conninfo


@pytest.fixture
def database(cluster: str) -> str:
    """A fresh database of its own for each test; its connection string."""
    name = f"t{os.getpid()}_{next(_numbers)}"
    with psycopg.connect(cluster, autocommit=True) as admin:
        admin.execute(f"CREATE DATABASE {name}")  # type: ignore[arg-type]
    return cluster.replace("dbname=postgres", f"dbname={name}")


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
    PostgresSessionStore(database).close()  # the administrator creates the schema

    def as_(who: str) -> str:
        return database.replace("user=postgres", f"user={names[who]}")

    return Team(database, as_("alice"), as_("bob"), as_("carol"), names["devs"])
