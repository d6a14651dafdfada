"""``PostgresSessionStore`` on a real PostgreSQL server (a throwaway cluster): the JSONL store's
behaviour, kept by the database."""

from __future__ import annotations

import itertools
import json
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import psycopg
import pytest

from core import JsonlSessionStore
from core.database.legacy_schema import LEGACY_STEPS
from core.database.setup import initialize_database
from core.database.store import SCHEMA_VERSION, PostgresSessionStore
from core.errors import SessionQueryError
from tests.conftest import compact, say_assistant, say_user
from tests.support.pg_cluster import cluster, database, fresh_database

__all__ = ["cluster", "database"]  # the fixtures

REPO = Path(__file__).resolve().parent.parent


def _clock() -> Any:
    return itertools.count(1_700_000_000_000, 7).__next__


def _converse(store: Any) -> None:
    """The same conversation in any store: prompts, answers, a streamed (packed) reply, a title, a
    compaction, two sessions in two folders and one without."""
    first = store.create("first", cwd="/w/a")
    say_user(first, "hello <b> 界 😀")
    say_assistant(first, "hi")
    chunks = [("assistant/chunk", {"turn": 1, "step": 0, "chunk": {"type": "text-delta", "index": 0, "text": w}})
              for w in ("one ", "two ", "three")]  # fmt: skip
    first.append_batch([(kind, data, None, None) for kind, data in chunks])
    first.append("session/title", {"title": "A title", "messageSeqs": [0], "source": "user"})
    compact(first, "summary of it all")
    say_user(first, "after the checkpoint")
    second = store.create("second", cwd="/w/b")
    say_user(second, "another")
    say_user(store.create("third"), "no folder")


async def test_the_same_conversation_reads_the_same_as_in_the_jsonl_store(database: str, tmp_path: Path) -> None:
    jsonl = JsonlSessionStore(tmp_path, clock=_clock())
    _converse(jsonl)
    jsonl.close()
    writer = PostgresSessionStore(database, clock=_clock())
    _converse(writer)
    writer.close()
    jsonl, store = JsonlSessionStore(tmp_path), PostgresSessionStore(database)
    assert [r.header for r in await store.list_sessions()] == [r.header for r in await jsonl.list_sessions()]
    for session_id in ("first", "second", "third"):
        assert await store.read_surface(session_id) == await jsonl.read_surface(session_id)
        assert await store.read_title(session_id) == await jsonl.read_title(session_id)
        header, events = store.read_log(session_id)
        assert (header, [e.to_wire() for e in events]) == (
            jsonl.read_log(session_id)[0],
            [e.to_wire() for e in jsonl.read_log(session_id)[1]],
        )
    # The rows are the JSONL rows: a packed chunk row included, byte for byte.
    with psycopg.connect(database) as connection:
        rows = [row for (row,) in connection.execute(
            "SELECT row FROM sessionref.sessionref_rows WHERE session_id = 'first' ORDER BY first_seq"
        )]  # fmt: skip
    lines = (tmp_path / "--w-a--" / "first" / "session.jsonl.zstd").exists()
    assert lines and any('"type":"text-chunks"' in row for row in rows)
    store.close()
    jsonl.close()


def test_one_writer_per_session_from_any_process(database: str) -> None:
    store = PostgresSessionStore(database)
    say_user(store.create("shared", cwd="/w"), "mine")
    other = PostgresSessionStore(database)
    with pytest.raises(SessionQueryError) as caught:
        other.get("shared")
    assert caught.value.code == "SESSION_QUERY_SESSION_LOCKED"
    store.release("shared")
    session = other.get("shared")
    assert session is not None and len(session.events) == 1
    other.close()
    # A writer killed mid-session: its lock dies with its connection.
    script = (
        "import os, sys; from core.database.store import PostgresSessionStore;"
        "s = PostgresSessionStore(sys.argv[1]); s.get('shared'); print('locked', flush=True); os.kill(os.getpid(), 9)"
    )
    done = subprocess.run([sys.executable, "-c", script, database], capture_output=True, text=True, cwd=REPO)
    assert done.stdout == "locked\n" and done.returncode == -9
    reopened, refusals = None, []
    for _ in range(50):
        try:
            reopened = store.get("shared")
            break
        except SessionQueryError as error:  # the server notices the dead connection at once, or very soon
            refusals.append(error.code)
            time.sleep(0.1)
    assert set(refusals) <= {"SESSION_QUERY_SESSION_LOCKED"}
    assert reopened is not None and [event.seq for event in reopened.events] == [0]
    store.close()


def test_a_batch_is_all_or_nothing_and_seqs_only_increase_in_the_database(database: str) -> None:
    store = PostgresSessionStore(database)
    session = store.create("s", cwd="/w")
    say_user(session, "one")
    # The database itself refuses a row that does not follow the last seq, and rows of one
    # statement that do not follow each other.
    for values in ("('s', -3, -3, '{}')", "('s', 1, 2, '{}'), ('s', 2, 2, '{}')"):
        with psycopg.connect(database) as connection, pytest.raises(psycopg.errors.CheckViolation):
            connection.execute(
                f"INSERT INTO sessionref.sessionref_rows (session_id, first_seq, last_seq, row) VALUES {values}"  # type: ignore[arg-type]
            )
    # A batch whose second row the database refuses leaves nothing of the batch.
    with psycopg.connect(database, autocommit=True) as connection:
        connection.execute(
            "CREATE FUNCTION refuse() RETURNS trigger AS $$ BEGIN IF NEW.first_seq = 2 THEN "
            "RAISE EXCEPTION 'refused'; END IF; RETURN NEW; END; $$ LANGUAGE plpgsql"
        )
        connection.execute(
            "CREATE TRIGGER refuse BEFORE INSERT ON sessionref.sessionref_rows FOR EACH ROW EXECUTE FUNCTION refuse()"
        )
    prompts = [{"content": [{"type": "text", "text": w}], "source": {"kind": "user"}} for w in ("two", "three")]
    with pytest.raises(SessionQueryError) as caught:
        session.append_batch([("user/message", data, "append", None) for data in prompts])
    assert caught.value.code == "SESSION_QUERY_WRITE_FAILED" and "refused" in str(caught.value)
    reader = PostgresSessionStore(database)
    _header, events = reader.read_log("s")
    assert [event.seq for event in events] == [0]
    reader.close()
    store.close()


def test_the_schema_is_versioned_and_a_newer_one_is_refused(database: str) -> None:
    store = PostgresSessionStore(database)
    assert store.schema_version == SCHEMA_VERSION
    store.close()
    PostgresSessionStore(database).close()  # opening again changes nothing
    initialize_database(database)  # neither does a second db init
    with psycopg.connect(database, autocommit=True) as connection:
        assert connection.execute("SELECT version FROM sessionref.sessionref_schema").fetchall() == [(SCHEMA_VERSION,)]
        connection.execute("INSERT INTO sessionref.sessionref_schema (version) VALUES (%s)", (SCHEMA_VERSION + 1,))
    with pytest.raises(SessionQueryError) as caught:
        PostgresSessionStore(database)
    assert caught.value.code == "SESSION_QUERY_SCHEMA_TOO_NEW"
    assert f"schema version {SCHEMA_VERSION + 1}" in str(caught.value)
    with pytest.raises(SessionQueryError) as caught:
        initialize_database(database)  # never a downgrade
    assert caught.value.code == "SESSION_QUERY_SCHEMA_TOO_NEW"


async def test_a_version_1_database_is_migrated_with_its_sessions_kept(cluster: str, tmp_path: Path) -> None:
    """A database an earlier sessionref set up in public (version 1: its first user created it),
    refused by the app until the administrator's db init moves it into its own schema."""
    database = cluster.replace("dbname=postgres", f"dbname={fresh_database(cluster)}")
    with psycopg.connect(database, autocommit=True) as connection:
        connection.execute("CREATE TABLE sessionref_schema (version integer NOT NULL)")
        connection.execute(LEGACY_STEPS[1])
        connection.execute("INSERT INTO sessionref_schema (version) VALUES (1)")
        connection.execute(
            "INSERT INTO sessionref_sessions (id, header, cwd, created_at) VALUES (%s, %s, %s, %s)",
            ("old", '{"type":"session","id":"old","createdAt":5,"cwd":"/w","version":0,"delegationDepth":0}', "/w", 5),
        )
        data = {"content": [{"type": "text", "text": "kept"}], "source": {"kind": "user"}}
        row = {"type": "user/message", "seq": 0, "time": 6, "data": data, "surfaceOp": "append"}
        connection.execute(
            "INSERT INTO sessionref_rows (session_id, first_seq, last_seq, row) VALUES ('old', 0, 0, %s)",
            (json.dumps(row),),
        )
    with pytest.raises(SessionQueryError) as caught:
        PostgresSessionStore(database)
    assert caught.value.code == "SESSION_QUERY_SCHEMA_OUTDATED"
    assert str(caught.value) == (
        "the database has sessionref schema version 1 in public; an administrator migrates it once to version "
        f"{SCHEMA_VERSION} with sessionref db init --store URL"
    )
    initialize_database(database)
    with psycopg.connect(database, autocommit=True) as connection:
        left = connection.execute(
            "SELECT count(*) FROM pg_catalog.pg_class WHERE relnamespace = 'public'::regnamespace "
            "AND relname LIKE 'sessionref%%'"
        ).fetchone()
        assert left == (0,)  # everything moved into the sessionref schema
    store = PostgresSessionStore(database)
    assert store.schema_version == SCHEMA_VERSION
    [record] = await store.list_sessions()
    assert record.header.id == "old" and record.owner is None  # the first user (here postgres) still owns it
    assert [event.data for event in (await store.read_surface("old")).events] == [row["data"]]
    # What was written before message search existed is searchable once migrated.
    index = store.message_index()
    assert index.candidates("kept") == {"old": [0]}
    index.close()
    session = store.get("old")
    assert session is not None
    say_user(session, "and more")
    store.close()


async def test_missing_sessions_and_hostile_ids_change_nothing(database: str) -> None:
    store = PostgresSessionStore(database)
    hostile = ["'; DROP TABLE sessionref_rows; --", "%_\\", "a\nb", "界😀", "x" * 10_000]
    for session_id in hostile:
        say_user(store.create(session_id, cwd="/w"), session_id)
    for session_id in hostile:
        snapshot = await store.read_surface(session_id)
        assert snapshot.session.id == session_id
        assert snapshot.events[0].data["content"][0]["text"] == session_id
    with pytest.raises(SessionQueryError) as caught:
        await store.read_surface("nobody")
    assert caught.value.code == "SESSION_QUERY_SESSION_NOT_FOUND"
    assert store.get("nobody") is None
    with pytest.raises(SessionQueryError) as caught:
        store.create(hostile[0])
    assert caught.value.code == "SESSION_QUERY_SESSION_EXISTS"
    store.close()


def test_the_password_never_appears_in_an_error(cluster: str) -> None:
    with pytest.raises(SessionQueryError) as caught:
        PostgresSessionStore(cluster.replace("dbname=postgres", "dbname=absent") + " password=hunter2-secret")
    assert caught.value.code == "SESSION_QUERY_DATABASE_UNAVAILABLE"
    assert "hunter2" not in str(caught.value)


def test_a_lock_taken_for_nothing_is_free_at_once(database: str) -> None:
    """``get`` of an absent session locks, finds nothing and lets go: a writer right after it (here
    another store, many times over) never finds the lock still held."""
    looker, writer = PostgresSessionStore(database), PostgresSessionStore(database)
    for number in range(20):
        assert looker.get(f"n{number}") is None
        say_user(writer.create(f"n{number}", cwd="/w"), "right after")
        writer.release(f"n{number}")
        session = looker.get(f"n{number}")
        assert session is not None
        looker.release(f"n{number}")
        assert writer.get(f"n{number}") is not None
        writer.release(f"n{number}")
    looker.close()
    writer.close()
