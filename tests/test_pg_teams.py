"""Teams in the PostgreSQL store, enforced by the database (row-level security), with several real
roles: you see your own sessions and those shared with your teams, write only your own, and an id
you may not see reads exactly as one that does not exist."""

from __future__ import annotations

import asyncio
import inspect
import threading
import time
from collections.abc import Callable
from typing import Any

import psycopg
import pytest

from core.database.store import PostgresSessionStore
from core.database.watch import NotifyWatcher
from core.errors import SessionQueryError
from tests.conftest import say_assistant, say_user
from tests.support.pg_cluster import Team, cluster, database, team
from tui.cli.command import main as cli_main

__all__ = ["cluster", "database", "team"]  # the fixtures


def _write(conninfo: str, session_id: str, text: str, title: str | None = None) -> None:
    store = PostgresSessionStore(conninfo)
    session = store.create(session_id, cwd="/work/shared")
    say_user(session, text)
    say_assistant(session, f"answer to {text}")
    if title is not None:
        session.append("session/title", {"title": title, "messageSeqs": [0], "source": "user"})
    store.close()


async def _error(call: Callable[[], Any]) -> SessionQueryError:
    """The error a store call (plain or coroutine) raises."""
    try:
        result = call()
        if inspect.isawaitable(result):
            await result
    except SessionQueryError as error:
        return error
    raise AssertionError("no SessionQueryError was raised")


async def test_a_session_is_its_owners_until_shared_with_a_team(team: Team) -> None:
    _write(team.alice, "plan", "the secret plan", title="Secret plan")
    alice, bob, carol = (PostgresSessionStore(who) for who in (team.alice, team.bob, team.carol))
    assert [r.header.id for r in await alice.list_sessions()] == ["plan"]
    assert (await alice.list_sessions())[0].owner is None  # your own session carries no owner
    for outsider in (bob, carol):
        assert await outsider.list_sessions() == []
        assert (await _error(lambda s=outsider: s.read_surface("plan"))).code == "SESSION_QUERY_SESSION_NOT_FOUND"
        assert (await _error(lambda s=outsider: s.read_title("plan"))).code == "SESSION_QUERY_SESSION_NOT_FOUND"
        assert outsider.get("plan") is None

    assert alice.share("plan", team.team) is True
    assert alice.share("plan", team.team) is False  # already shared
    assert alice.shared_with("plan") == [team.team]
    [record] = await bob.list_sessions()
    assert record.header.id == "plan" and record.owner == team.alice.split("user=")[1].split()[0]
    surface = await bob.read_surface("plan")
    assert surface.events[0].data["content"] == [{"type": "text", "text": "the secret plan"}]
    title = await bob.read_title("plan")
    assert title is not None and title.title == "Secret plan"
    assert await carol.list_sessions() == []  # not in the team

    # Shared is read-only: bob can neither write, share, nor delete it.
    assert (await _error(lambda: bob.get("plan"))).code == "SESSION_QUERY_NOT_OWNER"
    assert (await _error(lambda: bob.share("plan", team.team))).code == "SESSION_QUERY_NOT_OWNER"
    assert (await _error(lambda: bob.delete("plan"))).code == "SESSION_QUERY_NOT_OWNER"

    assert alice.unshare("plan", team.team) is True
    assert await bob.list_sessions() == []
    assert (await _error(lambda: bob.read_surface("plan"))).code == "SESSION_QUERY_SESSION_NOT_FOUND"
    for store in (alice, bob, carol):
        store.close()


async def test_an_id_you_may_not_see_reads_exactly_as_one_that_does_not_exist(team: Team) -> None:
    _write(team.alice, "hidden", "not for carol")
    carol = PostgresSessionStore(team.carol)
    for reader in (carol.read_surface, carol.read_title):
        hidden, absent = await _error(lambda r=reader: r("hidden")), await _error(lambda r=reader: r("absent"))
        assert (hidden.code, hidden.message.replace("hidden", "ID")) == (
            absent.code,
            absent.message.replace("absent", "ID"),
        )
    for call in (carol.read_log, carol.shared_with, carol.delete):
        hidden, absent = await _error(lambda c=call: c("hidden")), await _error(lambda c=call: c("absent"))
        assert hidden.code == absent.code == "SESSION_QUERY_SESSION_NOT_FOUND"
    assert (await _error(lambda: carol.share("hidden", "pg_monitor"))).code == "SESSION_QUERY_SESSION_NOT_FOUND"
    carol.close()


def test_the_database_refuses_what_the_app_would_never_do(team: Team) -> None:
    """Row-level security, not the app: bob's own SQL cannot read, write, share or take over."""
    _write(team.alice, "mine", "alice's words")
    alice_role = team.alice.split("user=")[1].split()[0]
    with psycopg.connect(team.bob, autocommit=True) as bob:
        for table in ("sessionref_sessions", "sessionref_rows", "sessionref_shares"):
            assert bob.execute(f"SELECT count(*) FROM sessionref.{table}").fetchone() == (0,)  # type: ignore[arg-type]
        assert bob.execute("UPDATE sessionref.sessionref_sessions SET owner = current_user").rowcount == 0
        assert bob.execute("DELETE FROM sessionref.sessionref_rows").rowcount == 0
        assert bob.execute("DELETE FROM sessionref.sessionref_sessions").rowcount == 0
        refused = [
            ("INSERT INTO sessionref.sessionref_rows (session_id, first_seq, last_seq, row) "
             "VALUES ('mine', 5, 5, '{}')", ()),
            ("INSERT INTO sessionref.sessionref_shares (session_id, grantee, owner) "
             "VALUES ('mine', (SELECT oid FROM pg_roles WHERE rolname = current_user), %s)", (alice_role,)),
            ("INSERT INTO sessionref.sessionref_sessions (id, header, created_at, owner) VALUES ('fake', '{}', 1, %s)",
             (alice_role,)),
        ]  # fmt: skip
        for statement, parameters in refused:
            with pytest.raises(psycopg.errors.InsufficientPrivilege):
                bob.execute(statement, parameters)  # type: ignore[arg-type]
    with psycopg.connect(team.alice, autocommit=True) as alice:
        assert alice.execute("SELECT count(*) FROM sessionref.sessionref_rows").fetchone() == (2,)
        assert alice.execute("SELECT owner FROM sessionref.sessionref_sessions").fetchall() == [(alice_role,)]


async def test_hostile_ids_and_team_names_change_nothing_and_leak_nothing(team: Team) -> None:
    _write(team.alice, "kept", "kept words")
    alice = PostgresSessionStore(team.alice)
    hostile = ["'; DROP TABLE sessionref_shares; --", "%", "_", "\\", "kept%", "k_pt", "x" * 1_000_000, "\x00"]
    for name in hostile:
        error = await _error(lambda n=name: alice.share("kept", n))
        assert error.code in ("SESSION_QUERY_UNKNOWN_TEAM", "SESSION_QUERY_DATABASE_UNAVAILABLE")
        error = await _error(lambda n=name: alice.read_surface(n))
        assert error.code in ("SESSION_QUERY_SESSION_NOT_FOUND", "SESSION_QUERY_DATABASE_UNAVAILABLE")
    assert alice.shared_with("kept") == []
    assert [r.header.id for r in await alice.list_sessions()] == ["kept"]
    alice.close()


def test_another_machine_writing_is_heard_within_a_second_and_the_payload_says_nothing(team: Team) -> None:
    alice = PostgresSessionStore(team.alice)
    session = alice.create("live", cwd="/w")
    say_user(session, "first")
    alice.share("live", team.team)
    heard: list[float] = []
    ready = threading.Event()

    def on_change(paths: set[str] | None) -> None:
        assert paths is None  # nothing about what changed
        heard.append(time.monotonic())
        ready.set()

    watcher = NotifyWatcher(team.bob, on_change)
    assert watcher.start()
    assert ready.wait(5)  # "look at everything" once listening
    heard.clear()
    written = time.monotonic()
    for number in range(20):  # a streamed reply: many batches, one report (or a few)
        say_assistant(session, f"part {number}")
    deadline = time.monotonic() + 3
    while not heard and time.monotonic() < deadline:
        time.sleep(0.01)
    assert heard and heard[0] - written < 1.0
    time.sleep(0.4)
    assert len(heard) <= 4
    with psycopg.connect(team.carol, autocommit=True) as carol:
        carol.execute("LISTEN sessionref_changed")
        say_user(session, "a secret to carol")
        payloads = [notice.payload for notice in carol.notifies(timeout=1, stop_after=1)]
    assert payloads == [""]  # carol hears that something changed, never which session
    watcher.stop()
    alice.close()


async def test_a_password_never_shows_in_an_error(team: Team) -> None:
    host = team.admin.split("host=")[1].split()[0]
    url = f"postgresql://nobody_here:s3cret-Pa55@/no_such_db?host={host}"
    error = await _error(lambda: PostgresSessionStore(url))
    assert error.code == "SESSION_QUERY_DATABASE_UNAVAILABLE"
    assert "s3cret" not in str(error) and "s3cret" not in repr(error)
    watcher = NotifyWatcher(url, lambda _paths: None)
    assert not watcher.start()
    assert watcher.failure is not None and "s3cret" not in watcher.failure


def test_the_app_on_an_unreachable_database_exits_3_without_the_password(
    team: Team, capsys: pytest.CaptureFixture[str], tmp_path: Any
) -> None:
    host = team.admin.split("host=")[1].split()[0]
    url = f"postgresql://nobody_here:s3cret-Pa55@/no_such_db?host={host}"
    config = tmp_path / "config.toml"
    config.write_text("")
    assert cli_main(["--store", url, "--config", str(config)]) == 3
    error = capsys.readouterr().err
    assert "cannot use the session database" in error and "SESSION_QUERY_DATABASE_UNAVAILABLE" in error
    assert "s3cret" not in error
    assert cli_main(["config", "--store", url, "--config", str(config)]) == 0
    shown = capsys.readouterr().out
    assert "postgresql://nobody_here:***@" in shown and "s3cret" not in shown
    config.write_text(f'[store]\nurl = "{url}"\n')
    with pytest.raises(SystemExit) as exited:
        cli_main(["config", "--config", str(config)])
    assert exited.value.code == 2
    refused = capsys.readouterr().err
    assert "a password does not belong in the config file" in refused and "s3cret" not in refused


def test_sharing_from_the_command_line(team: Team, capsys: pytest.CaptureFixture[str]) -> None:
    _write(team.alice, "cli-shared", "words")
    assert cli_main(["share", "cli-shared", "--with", team.team, "--store", team.alice]) == 0
    assert f"cli-shared shared with {team.team}; shared with: {team.team}" in capsys.readouterr().out
    assert cli_main(["share", "cli-shared", "--with", team.team, "--store", team.alice]) == 0
    assert "was already shared with" in capsys.readouterr().out
    # Not bob's to share; no such team; no such session: refused (1), each with its code.
    assert cli_main(["share", "cli-shared", "--with", team.team, "--store", team.bob]) == 1
    assert "SESSION_QUERY_NOT_OWNER" in capsys.readouterr().err
    assert cli_main(["share", "cli-shared", "--with", "no_such_team", "--store", team.alice]) == 1
    assert "SESSION_QUERY_UNKNOWN_TEAM" in capsys.readouterr().err
    assert cli_main(["unshare", "nope\x1b[2J", "--with", team.team, "--store", team.alice]) == 1
    err = capsys.readouterr().err
    assert "SESSION_QUERY_SESSION_NOT_FOUND" in err and "\x1b" not in err  # data never reaches the terminal raw
    assert cli_main(["unshare", "cli-shared", "--with", team.team, "--store", team.alice]) == 0
    assert "no longer shared with" in capsys.readouterr().out


def test_a_session_holding_secrets_is_not_shared_unless_allowed(team: Team, capsys: pytest.CaptureFixture[str]) -> None:
    key = "ghp_" + "Zq8vLm3NpR5tXw7Yb9Cd1Ef4Gh6Jk2Mn0PqRs"
    store = PostgresSessionStore(team.alice)
    session = store.create("leaky-share", cwd="/w")
    say_user(session, "the CI token is " + key)
    say_assistant(session, "Rotate it.")
    say_user(session, "and the db: postgresql://app:Xy7pQ2vLm9nR@db.internal/prod")
    store.release("leaky-share")
    store.close()
    assert cli_main(["share", "leaky-share", "--with", team.team, "--store", team.alice]) == 1
    err = capsys.readouterr().err
    assert "SESSION_SHARE_HOLDS_SECRETS" in err and "github-token (message 0)" in err
    assert "url-password (message 2)" in err and key not in err and "Xy7pQ2vLm9nR" not in err
    bob = PostgresSessionStore(team.bob)
    listed = asyncio.run(bob.list_sessions())
    assert "leaky-share" not in {record.header.id for record in listed}  # nothing was shared
    bob.close()
    assert cli_main(["share", "leaky-share", "--with", team.team, "--store", team.alice, "--allow-secrets"]) == 0
    assert f"leaky-share shared with {team.team}" in capsys.readouterr().out
    # The team store's doctor names it too, without a value.
    assert cli_main(["doctor", "--no-external", "--store", team.alice, "--secrets"]) == 1
    out = capsys.readouterr().out
    assert "warning: secrets: leaky-share: 2 secrets: github-token (message 0), url-password (message 2)" in out
    assert key not in out


async def test_the_listing_follows_every_change_and_costs_nothing_when_there_is_none(team: Team) -> None:
    _write(team.alice, "a1", "one")
    _write(team.alice, "a2", "two")
    alice, bob = PostgresSessionStore(team.alice), PostgresSessionStore(team.bob)
    alice.share("a1", team.team)
    first = await bob.list_sessions()
    assert [r.header.id for r in first] == ["a1"]
    assert await bob.list_sessions() is first  # nothing changed: the same list, nothing fetched
    # A swap (one shared, the other unshared) keeps the count: the listing still sees both changes.
    alice.share("a2", team.team)
    alice.unshare("a1", team.team)
    assert [r.header.id for r in await bob.list_sessions()] == ["a2"]
    # Deleted and created again with the same id in another folder: the new header is listed.
    alice.delete("a2")
    again = alice.create("a2", cwd="/elsewhere")
    say_user(again, "again")
    alice.share("a2", team.team)
    [record] = await bob.list_sessions()
    assert record.header.cwd == "/elsewhere"
    # Appends show as new revisions (what the catalog re-reads titles by).
    before = bob.listed_revision(record.header)
    say_user(again, "more")
    await bob.list_sessions()
    assert bob.listed_revision(record.header) != before
    alice.close()
    bob.close()
