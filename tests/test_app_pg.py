"""The real app on a real PostgreSQL store, as bob: alice's session shared with their team is listed
with her name, found, previewed and referenced; her unshared one never appears anywhere (sidebar,
picker, message search); sessions she writes while the app runs appear by notification."""

from __future__ import annotations

import time
from typing import Any

from core import EchoModel
from core.database.store import PostgresSessionStore
from tests.conftest import say_assistant, say_user
from tests.support.app_harness import HOME, SIZE, fixed_clock, open_picker, picker_ids, settle, type_text, until
from tests.support.pg_cluster import Team, cluster, database, running_cluster, team
from tui.app.sessionref_app import SessionRefApp, make_app
from tui.services.text import owner_badge
from tui.widgets.sidebar import SessionSidebar

__all__ = ["cluster", "database", "team"]  # the fixtures

CWD = "/home/demo/projects/sessionref"


def _alice_writes(team: Team) -> None:
    alice = PostgresSessionStore(team.alice, clock=fixed_clock)
    shared = alice.create("shared-plan", cwd=CWD, created_at=fixed_clock() - 120_000)
    say_user(shared, "what is the wombat strategy?")
    say_assistant(shared, "the wombat strategy is to cache the listing")
    shared.append("session/title", {"title": "Shared plan", "messageSeqs": [0], "source": "user"})
    alice.share("shared-plan", team.team)
    private = alice.create("private-notes", cwd=CWD, created_at=fixed_clock() - 60_000)
    say_user(private, "the hidden otter is my secret")
    private.append("session/title", {"title": "Private notes", "messageSeqs": [0], "source": "user"})
    alice.close()


def _bobs_app(team: Team) -> tuple[SessionRefApp, PostgresSessionStore]:
    store = PostgresSessionStore(team.bob, clock=fixed_clock)
    mine = store.create("bob-today", cwd=CWD, created_at=fixed_clock() - 30_000)
    mine.append("session/title", {"title": "Today", "messageSeqs": [], "source": "user"})
    store.release("bob-today")
    app = make_app(
        store, EchoModel(), cwd=CWD, session_id="bob-today", clock=fixed_clock, home=HOME, cursor_blink=False,
        refresh_interval=3600,
    )  # fmt: skip
    return app, store


def _sidebar_rows(app: SessionRefApp) -> list[str]:
    sidebar = app.chat.query_one(SessionSidebar)
    return [sidebar.row_text(i) for i in range(len(sidebar.rows))]


async def test_a_teammates_shared_session_is_listed_found_and_referenced_an_unshared_one_never_appears(
    team: Team,
) -> None:
    _alice_writes(team)
    app, store = _bobs_app(team)
    alice = team.alice.split("user=")[1].split()[0]
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await until(pilot, lambda: any("Shared plan" in row for row in _sidebar_rows(app)))
        rows = _sidebar_rows(app)
        [shared_row] = [row for row in rows if "Shared plan" in row]
        assert shared_row.startswith(f"  {owner_badge(alice)} Shared plan")  # the owner's name, as a badge
        assert not any("Private" in row or "private-notes" in row for row in rows)

        await open_picker(pilot)
        assert picker_ids(app) == ["shared-plan"]  # (the target itself is never a candidate)
        await pilot.press("escape", "backspace")
        await open_picker(pilot, "otter")  # said only in the unshared session
        await pilot.pause(0.3)
        assert picker_ids(app) == []
        await pilot.press("escape")
        for _ in range(len("@otter")):
            await pilot.press("backspace")

        notes: list[Any] = []
        original = app.notify
        app.notify = lambda message, **kwargs: notes.append(message) or original(message, **kwargs)  # type: ignore[method-assign]
        app.chat.switch_to("shared-plan")
        await pilot.pause()
        assert app.workspace.session.id == "bob-today" and "read-only here" in notes[-1]

        await type_text(pilot, "summarise ")
        await open_picker(pilot, "wombat")  # said only in alice's shared session
        await until(pilot, lambda: picker_ids(app) == ["shared-plan"])
        await pilot.press("tab", "enter")
        await until(pilot, lambda: app.trace.sent == 1 and app.workspace.agent.status == "idle")
    store.close()
    with PostgresSessionStore(team.bob) as reader:
        _header, events = reader.read_log("bob-today")
    prompt = next(event for event in events if event.type == "user/message")
    assert prompt.data["envelope"]["prefixContexts"][0]["meta"]["references"][0]["sessionId"] == "shared-plan"
    context = prompt.data["content"][0]["text"]
    assert "the wombat strategy is to cache the listing" in context and "otter" not in context


async def test_sessions_a_teammate_shares_while_the_app_runs_appear_and_unsharing_removes_them(team: Team) -> None:
    app, store = _bobs_app(team)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await until(pilot, lambda: app.watcher is not None and app.watcher.failure is None)
        alice = PostgresSessionStore(team.alice, clock=fixed_clock)
        fresh = alice.create("fresh", cwd=CWD)
        say_user(fresh, "a new idea")
        fresh.append("session/title", {"title": "Fresh idea", "messageSeqs": [0], "source": "user"})
        started = time.monotonic()
        alice.share("fresh", team.team)
        await until(pilot, lambda: any("Fresh idea" in row for row in _sidebar_rows(app)), timeout=5)
        assert time.monotonic() - started < 2.0  # heard, not polled (the app's poll is an hour here)
        alice.unshare("fresh", team.team)
        await until(pilot, lambda: not any("Fresh idea" in row for row in _sidebar_rows(app)), timeout=5)
        alice.close()
    store.close()


async def test_the_app_keeps_chatting_through_a_database_restart_and_says_so() -> None:
    with running_cluster() as server:
        store = PostgresSessionStore(server.conninfo, clock=fixed_clock)
        say_user(store.create("first", cwd=CWD), "before")
        store.release("first")
        app = make_app(
            store, EchoModel(), cwd=CWD, session_id="first", clock=fixed_clock, home=HOME, cursor_blink=False,
            refresh_interval=0.2,
        )  # fmt: skip
        notes: list[tuple[str, str]] = []
        async with app.run_test(size=SIZE) as pilot:
            await settle(pilot)
            original = app.notify
            app.notify = lambda message, **kwargs: (
                notes.append((kwargs.get("title", ""), message))
                or original(  # type: ignore[method-assign]
                    message, **kwargs
                )
            )
            server.stop("immediate")
            await type_text(pilot, "while it is down")
            await pilot.press("enter")
            await until(pilot, lambda: app.trace.sent == 1 and app.workspace.agent.status == "idle", timeout=20)
            await until(pilot, lambda: any(title == "Session database unreachable" for title, _ in notes), timeout=20)
            assert "wait to be written" in next(m for t, m in notes if t == "Session database unreachable")
            server.start()
            await until(pilot, lambda: any(title == "Session database back" for title, _ in notes), timeout=30)
            expected = [event.to_wire() for event in app.workspace.session.events]
        store.close()
        reader = PostgresSessionStore(server.conninfo)
        _header, events = reader.read_log("first")
        assert [event.to_wire() for event in events] == expected
        assert any(event.type == "assistant/message" for event in events[2:])  # the reply made while it was down
        reader.close()
