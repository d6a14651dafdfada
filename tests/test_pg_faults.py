"""Faults of the PostgreSQL store on a real server of its own: a restart in the middle of a reply, a
commit whose answer never came, a writer killed mid-append."""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

import pytest

from core.database.store import PostgresSessionStore
from core.errors import SessionQueryError
from core.sessions.session import Session
from tests.conftest import say_user
from tests.support.pg_cluster import running_cluster

REPO = Path(__file__).resolve().parent.parent


def _chunk(turn: int, text: str) -> tuple[str, dict[str, object], None, None]:
    return ("assistant/chunk", {"turn": turn, "step": 0, "chunk": {"type": "text-delta", "index": 0, "text": text}},
            None, None)  # fmt: skip


def _stream(session: Session, turn: int, words: list[str]) -> None:
    """What the agent loop writes for a reply: step start, buffered chunks flushed now and then,
    then the message and the step's end in one batch."""
    session.append("step/start", {"turn": turn, "step": 0})
    for number, word in enumerate(words):
        session.append_batch([_chunk(turn, word)], buffered=True)
        if number % 3 == 2:
            session.flush()
    message = {"turn": turn, "step": 0, "content": [{"type": "text", "text": "".join(words)}]}
    session.append_batch(
        [("assistant/message", message, "append", None), ("step/end", {"turn": turn, "step": 0}, None, None)]
    )


def _wait(predicate, timeout: float = 20.0) -> None:  # type: ignore[no-untyped-def]
    deadline = time.monotonic() + timeout
    while not predicate():
        assert time.monotonic() < deadline, "condition not met in time"
        time.sleep(0.05)


async def test_a_restart_mid_reply_keeps_what_arrived_writes_it_once_and_the_store_says_so() -> None:
    with running_cluster() as server:
        store = PostgresSessionStore(server.conninfo)
        session = store.create("reply", cwd="/w")
        say_user(session, "tell me a story")
        _stream(session, 0, ["once ", "upon ", "a "])
        server.stop("immediate")  # a crash: every connection is cut
        _stream(session, 0, ["time ", "there ", "was ", "a ", "store"])  # the reply goes on
        say_user(session, "and then?")
        assert store.unavailable is not None and "reconnecting" in store.unavailable
        assert store.waiting > 0
        with pytest.raises(SessionQueryError) as caught:  # reading says so, with its code, and returns
            await store.list_sessions()
        assert caught.value.code == "SESSION_QUERY_DATABASE_UNAVAILABLE"
        server.start()
        _wait(lambda: store.waiting == 0 and store.unavailable is None)
        say_user(session, "after the restart")  # writing goes straight on
        expected = [event.to_wire() for event in session.events]
        store.close()
        reader = PostgresSessionStore(server.conninfo)
        _header, events = reader.read_log("reply")
        assert [event.to_wire() for event in events] == expected  # every event, once, in order
        assert [record.header.id for record in await reader.list_sessions()] == ["reply"]
        reader.close()


def test_a_batch_whose_commit_went_through_unconfirmed_is_not_written_twice() -> None:
    with running_cluster() as server:
        store = PostgresSessionStore(server.conninfo)
        session = store.create("once", cwd="/w")
        say_user(session, "first")
        writers = store._writers  # the outbox: a batch the database already has waits again
        writer = writers._writers["once"]
        say_user(session, "second")
        from core.database.writers import _Batch

        writer.outbox.append(_Batch([session.events[-1].to_wire()], None))
        assert writers.flush_waiting() and writers.waiting == 0
        say_user(session, "third")
        store.close()
        reader = PostgresSessionStore(server.conninfo)
        _header, events = reader.read_log("once")
        assert [event.seq for event in events] == [0, 1, 2]
        reader.close()


def test_a_writer_killed_mid_append_leaves_nothing_behind() -> None:
    with running_cluster() as server:
        store = PostgresSessionStore(server.conninfo)
        say_user(store.create("victim", cwd="/w"), "kept")
        store.close()
        script = (
            "import os, sys\n"
            "from core.database.store import PostgresSessionStore\n"
            "store = PostgresSessionStore(sys.argv[1])\n"
            "session = store.get('victim')\n"
            "connection = store._writers._writers['victim'].connection\n"
            "transaction = connection.transaction(); transaction.__enter__()\n"
            'connection.execute("INSERT INTO sessionref.sessionref_rows (session_id, first_seq, last_seq, row) '
            "VALUES ('victim', 1, 1, '{}')\")\n"
            "print('inserted', flush=True)\n"
            "os.kill(os.getpid(), 9)\n"
        )
        killed = subprocess.run(
            [sys.executable, "-c", script, server.conninfo], cwd=REPO, capture_output=True, text=True, timeout=60
        )
        assert "inserted" in killed.stdout and killed.returncode == -9
        reader = PostgresSessionStore(server.conninfo)
        _header, events = reader.read_log("victim")
        assert [event.seq for event in events] == [0]  # nothing of the batch
        session = reader.get("victim")  # and its lock died with it
        assert session is not None
        say_user(session, "next")
        reader.close()
