"""A teammate owns their rows and can write anything into them with plain SQL, bypassing sessionref.
What alice's sessionref then reads of them is bounded and coded like a damaged file: the listing,
the sidebar, the picker, the preview, search and export all go on, and what is shown is escaped."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import psycopg
import pytest

from core import EchoModel, ReferenceInput, SessionReferenceError, SessionReferenceService
from core.database.reading import MAX_ROW_BYTES
from core.database.store import PostgresSessionStore
from core.database.transfer import export_jsonl
from core.errors import SessionQueryError
from tests.conftest import say_assistant, say_user
from tests.support.app_harness import HOME, SIZE, fixed_clock, settle, until
from tests.support.pg_cluster import Team, cluster, database, team
from tui.app.sessionref_app import make_app
from tui.widgets.sidebar import SessionSidebar

__all__ = ["cluster", "database", "team"]  # the fixtures

CWD = "/work/team"
HOSTILE_TITLE = "\x1b]52;c;c2VjcmV0\x07[@click=app.quit]Quit[/] \u202eevil"
"""OSC 52 (set the clipboard), Textual markup that would run an action, a bidi override."""


def _session(store: PostgresSessionStore, session_id: str, words: str) -> None:
    session = store.create(session_id, cwd=CWD)
    say_user(session, words)
    say_assistant(session, f"answer to {words}")


def _bob_plants(team: Team) -> int:
    """bob writes a good session and six bad ones (through sessionref, then around it), all shared."""
    bob = PostgresSessionStore(team.bob)
    for session_id in ("good", "not-json", "huge-row", "other-id", "huge-header", "wrong-seq", "titled"):
        _session(bob, session_id, f"the quokka plan of {session_id}")
        bob.share(session_id, team.team)
    bob.close()
    with psycopg.connect(team.bob, autocommit=True) as sql:

        def add(session_id: str, first: int, row: str) -> None:
            sql.execute(
                "INSERT INTO sessionref.sessionref_rows (session_id, first_seq, last_seq, row) VALUES (%s, %s, %s, %s)",
                (session_id, first, first, row),
            )

        add("not-json", 2, "{this is not json")
        huge = json.dumps({"type": "user/message", "seq": 2, "time": 1, "surfaceOp": "append",
                           "data": {"content": [{"type": "text", "text": "x" * MAX_ROW_BYTES}],
                                    "source": {"kind": "user"}}})  # fmt: skip
        add("huge-row", 2, huge)
        header = sql.execute("SELECT header FROM sessionref.sessionref_sessions WHERE id = 'other-id'").fetchone()
        assert header is not None
        sql.execute(
            "UPDATE sessionref.sessionref_sessions SET header = %s WHERE id = 'other-id'",
            (header[0].replace('"id":"other-id"', '"id":"good"'),),
        )
        sql.execute(
            "UPDATE sessionref.sessionref_sessions SET header = %s WHERE id = 'huge-header'",
            ('{"type":"session","id":"huge-header","pad":"' + "p" * 300_000 + '"}',),
        )
        add("wrong-seq", 5, json.dumps({"type": "user/message", "seq": 9, "time": 1, "surfaceOp": "append",
                                        "data": {"content": [{"type": "text", "text": "nine"}],
                                                 "source": {"kind": "user"}}}))  # fmt: skip
        sql.execute("UPDATE sessionref.sessionref_sessions SET title = %s WHERE id = 'titled'", (HOSTILE_TITLE * 500,))
        # A message-index row whose body is not in the log, and one of megabytes.
        sql.execute(
            "INSERT INTO sessionref.sessionref_messages (session_id, position, role, body, folded) VALUES "
            "('titled', 50, 'user', %s, %s), ('titled', 51, 'user', %s, %s)",
            (
                "planted narwhal words",
                "planted narwhal words",
                "y" * 5_000_000 + " narwhal",
                "y" * 5_000_000 + " narwhal",
            ),
        )
    return len(huge)


def test_a_teammates_hostile_rows_list_read_search_and_export_as_damage_with_codes(team: Team, tmp_path: Path) -> None:
    huge = _bob_plants(team)
    alice = PostgresSessionStore(team.alice)
    records = asyncio.run(alice.list_sessions())
    listed = sorted(record.header.id for record in records)
    assert listed == ["good", "huge-row", "not-json", "titled", "wrong-seq"]  # the headers that are headers
    problems = {problem.path.name: (problem.code, problem.message) for problem in alice.problems}
    assert set(problems) == {'postgresql:"other-id"', 'postgresql:"huge-header"'}
    assert problems['postgresql:"other-id"'] == (
        "SESSION_QUERY_CORRUPT_SESSION",
        'postgresql:"other-id": its header names another session ("good")',
    )
    assert problems['postgresql:"huge-header"'][0] == "SESSION_QUERY_CORRUPT_SESSION"
    assert "over the 262,144 a header is read" in problems['postgresql:"huge-header"'][1]
    # The listing again (nothing changed): the same, no error, the bad rows not read again as new.
    assert asyncio.run(alice.list_sessions()) is records

    def refused(session_id: str) -> SessionQueryError:
        try:
            asyncio.run(alice.read_surface(session_id))
        except SessionQueryError as error:
            return error
        raise AssertionError(f"{session_id} read")

    assert refused("not-json").code == "SESSION_QUERY_CORRUPT_SESSION"
    too_large = refused("huge-row")
    assert too_large.code == "SESSION_QUERY_ROW_TOO_LARGE"
    assert f"its row at seq 2 is {huge:,} bytes, over the {MAX_ROW_BYTES:,} a row is read" in too_large.message
    assert (
        refused("wrong-seq").message
        == 'postgresql:"wrong-seq": its row at seq 5 holds other seqs (written around sessionref)'
    )
    assert asyncio.run(alice.read_surface("good")).events[0].data["content"][0]["text"] == "the quokka plan of good"
    # A reference to a damaged one is READ_FAILED, with the read's words; the good one prepares.
    target = alice.create("alice-today", cwd=CWD)
    service = SessionReferenceService(alice)
    text = [{"type": "text", "text": "compare"}]
    with pytest.raises(SessionReferenceError) as caught:
        asyncio.run(service.prepare(target, text, [ReferenceInput("huge-row")]))
    assert caught.value.code == "SESSION_REFERENCE_READ_FAILED"
    prepared = asyncio.run(service.prepare(target, text, [ReferenceInput("good")]))
    assert "the quokka plan of good" in prepared.contexts[0].content[0]["text"]
    # Search: the planted message-index rows are found (they are bob's), each snippet a line, never megabytes.
    index = alice.message_index()
    found = index.candidates("narwhal")
    assert found == {"titled": [51]}
    snippet = index.verify("titled", [51], "narwhal")
    assert snippet is not None and "narwhal" in snippet.text and len(snippet.text) < 200
    index.close()
    # Export: the good ones are written, each damaged one is named with its code.
    report = export_jsonl(alice, tmp_path / "out")
    assert report.copied == 3  # good, titled, and alice-today (created, not written yet: its header)
    left_out = sorted(problem.split(":")[0] for problem in report.problems)
    assert left_out == ['"huge-row"', '"not-json"', '"wrong-seq"']
    alice.close()


async def test_the_app_lists_the_damage_and_shows_a_hostile_title_as_text(team: Team) -> None:
    _bob_plants(team)
    store = PostgresSessionStore(team.alice, clock=fixed_clock)
    mine = store.create("alice-today", cwd=CWD)
    mine.append("session/title", {"title": "Today", "messageSeqs": [], "source": "user"})
    store.release("alice-today")
    app = make_app(store, EchoModel(), cwd=CWD, session_id="alice-today", clock=fixed_clock, home=HOME,
                   cursor_blink=False, refresh_interval=3600)  # fmt: skip
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        sidebar = app.chat.query_one(SessionSidebar)

        def rows() -> list[str]:
            return [sidebar.row_text(i) for i in range(len(sidebar.rows))]

        await until(pilot, lambda: any("Unreadable" in row for row in rows()))
        shown = "\n".join(rows())
        assert "other-id" in shown and "huge-header" in shown
        assert "\x1b" not in shown and "\u202e" not in shown and "\x07" not in shown
        assert "\\x1b]52;c;c2VjcmV0\\x07" in shown  # the title as text, escaped (the row elides the rest)
        assert app.is_running  # no markup ran, no action quit the app
        # The screen as a terminal would get it: no escape sequence from the data.
        exported = app.export_screenshot()
        assert "]52;" not in exported.replace("\\x1b]52;", "")
    store.close()
