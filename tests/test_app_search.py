"""The `@` picker's title and message search in the real app, on a real store with its body index.

What a user sees: title matches marked in the row, body matches with a snippet line, the indexing
note while message search is not ready, and a picker that keeps working (titles, ids, cwds) and
never offers a session that is gone when the index is deleted, damaged, full or shared.
"""

from __future__ import annotations

import os
import shutil
import threading
import time
from pathlib import Path
from typing import Any

import pytest

import core.search.index_keeper as index_keeper
import core.search.shard_writes as shard_writes
import tui.app as app_module
from core import INDEX_FILE_NAME, EchoModel, JsonlSessionStore
from core.search.index_values import INDEX_DISK_FULL
from tests.conftest import say_user
from tests.support.app_harness import SIZE, fixed_clock, open_app, open_picker, picker_ids, settle, type_text, until
from tui.app.sessionref_app import SessionRefApp
from tui.cli.demo import DEMO_PROJECT
from tui.widgets.sidebar import SessionSidebar


def rows_of(app: SessionRefApp) -> list[tuple[str, bool, str]]:
    """(text, is detail line, marked text) of every picker row."""
    match = app.chat.picker.part("match")  # the theme's match mark
    return [
        (row.text.rstrip(), row.detail, "".join(s.text for s in row.segments if s.style == match))
        for row in app.chat.picker.rows
    ]


def row_of(app: SessionRefApp, session_id: str) -> tuple[tuple[str, bool, str], tuple[str, bool, str] | None]:
    """The candidate row of ``session_id`` and the detail line under it (if any)."""
    rows = app.chat.picker.rows
    at = next(i for i, row in enumerate(rows) if row.candidate and row.candidate.session_id == session_id)
    shown = rows_of(app)
    detail = shown[at + 1] if at + 1 < len(rows) and rows[at + 1].detail else None
    return shown[at], detail


async def search_settled(pilot: Any, query: str, *, fresh: bool = True) -> None:
    """Type ``@query`` (into an emptied prompt unless ``fresh`` is false) and wait for the complete
    answer (the full body search after the first)."""
    app = pilot.app
    if fresh:
        await clear_prompt(pilot)
    await open_picker(pilot, query)
    try:
        await until(pilot, lambda: app.chat.picker.note != "Searching more messages…")
    except AssertionError as error:
        status = app.workspace.body_index.status if app.workspace.body_index else None
        raise AssertionError(f"@{query}: {app.chat.picker.note!r}, index {status}") from error


async def clear_prompt(pilot: Any) -> None:
    app = pilot.app
    app.chat.prompt.load_text("")
    await until(pilot, lambda: not app.chat.picker.is_open)


# -- what the rows show ------------------------------------------------------------------------------


async def test_a_title_match_is_listed_with_the_title_marked(app: SessionRefApp) -> None:
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await search_settled(pilot, "sto")
        assert picker_ids(app)[0] == "design-notes"  # "Storage design": the title, not the id
        (text, detail, marked), under = row_of(app, "design-notes")
        assert text.startswith("Storage design") and not detail and marked == "Sto"
        assert under is None  # the row itself shows why


async def test_a_body_only_match_shows_a_snippet_with_the_match_marked(app: SessionRefApp) -> None:
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await search_settled(pilot, "FSYNC")
        assert picker_ids(app) == ["design-notes"]
        (text, _, marked), under = row_of(app, "design-notes")
        assert text.startswith("Storage design") and marked == ""
        assert under is not None
        snippet, is_detail, snippet_marked = under
        assert is_detail and snippet.lstrip().startswith("ai: ") and "frame and fsync" in snippet
        assert snippet_marked == "fsync"  # case-insensitive, marked as written
        assert app.chat.picker.note is None


async def test_title_matches_come_before_body_matches_in_the_same_group(app: SessionRefApp) -> None:
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        # Listing order is design-notes, retention-work, load-test-log; only the last has "log" in
        # its id; design-notes says "a log"; "the retention algorithm" was compacted away.
        await search_settled(pilot, "log")
        assert picker_ids(app) == ["load-test-log", "design-notes"]  # the algorithm was compacted away
        assert row_of(app, "load-test-log")[1] is not None  # why: "id load-test-log" (the title hides it)
        assert "corrupting a log" in str(row_of(app, "design-notes")[1])


async def test_the_word_being_typed_matches_as_a_prefix_from_two_letters(app: SessionRefApp) -> None:
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await open_picker(pilot, "f")
        assert app.chat.picker.note == "Type 2+ characters to search messages too"
        await search_settled(pilot, "fs")  # "fsync", said in Storage design, as it is typed
        assert picker_ids(app) == ["design-notes"]
        assert "fsync" in str(row_of(app, "design-notes")[1])


async def test_a_body_only_word_is_referenced_and_baked_into_the_prompt(demo_template: Path, tmp_path: Path) -> None:
    app, store = open_app(demo_template, tmp_path / "store")
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await type_text(pilot, "what did we say about ")
        await search_settled(pilot, "fsync", fresh=False)
        await pilot.press("tab", "enter")
        await until(pilot, lambda: app.trace.sent == 1 and app.workspace.agent.status == "idle")
    store.close()
    surface = (await JsonlSessionStore(tmp_path / "store").read_surface("today")).events
    prompt = next(event for event in surface if event.type == "user/message")
    typed = prompt.data["envelope"]["displayContent"][0]["text"]
    assert typed == "what did we say about @Storage design "
    context = prompt.data["content"][0]["text"]
    assert '"sessionId":"design-notes"' in context and "frame and fsync" in context


async def test_without_body_search_only_titles_ids_and_cwds_match(demo_template: Path, tmp_path: Path) -> None:
    from core import SearchConfig
    from core.settings import RunConfig

    shutil.copytree(demo_template, tmp_path / "store")
    store = JsonlSessionStore(tmp_path / "store", clock=fixed_clock)
    app = app_module.make_app(
        store, EchoModel(), RunConfig(search=SearchConfig(body_search=False)), session_id="today",
        cwd=DEMO_PROJECT, clock=fixed_clock, cursor_blink=False, refresh_interval=3600,
    )  # fmt: skip
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        assert app.workspace.body_index is None
        await search_settled(pilot, "fsync")
        assert picker_ids(app) == []
        await search_settled(pilot, "sto")
        assert picker_ids(app)[0] == "design-notes"
    assert not (tmp_path / "store" / INDEX_FILE_NAME).exists()
    store.close()


# -- indexing in progress ----------------------------------------------------------------------------


async def test_while_indexing_the_picker_says_so_and_keeps_matching_titles(
    demo_template: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(shard_writes, "COMMIT_INTERVAL", 0.0)  # every session's progress shows
    app, _store = open_app(demo_template, tmp_path / "store")
    gate = threading.Event()
    read = app.workspace.catalog.read_indexed

    def slow_read(session_id: str) -> Any:
        if session_id == "website-redesign":  # the last one (elsewhere) waits for the test
            gate.wait(10)
        return read(session_id)

    monkeypatch.setattr(app.workspace.catalog, "read_indexed", slow_read)
    async with app.run_test(size=SIZE) as pilot:
        await until(pilot, app.workspace.catalog_loaded.is_set)
        index = app.workspace.body_index
        assert index is not None
        await until(pilot, lambda: index.status.state == "building" and index.status.indexed > 0)
        sidebar = app.chat.query_one(SessionSidebar)
        await until(pilot, lambda: "indexing" in str(sidebar.border_subtitle))
        assert str(sidebar.border_subtitle).endswith("%")
        await search_settled(pilot, "sto")
        assert picker_ids(app)[0] == "design-notes"  # titles work meanwhile
        note = app.chat.picker.note
        assert note is not None and note.startswith("Messages: indexing… ")
        assert note.endswith(f"of {index.status.total} sessions searchable")
        gate.set()
        await settle(pilot)
        await pilot.press("escape")
        await search_settled(pilot, "landing")  # the last session's message, now searchable
        assert picker_ids(app) == ["website-redesign"]
        assert app.chat.picker.note is None
        assert str(sidebar.border_subtitle).isdigit()


async def test_a_first_build_runs_in_the_builder_process_and_the_app_follows_it(
    demo_template: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(index_keeper, "BUILDER_THRESHOLD", 1)
    monkeypatch.setattr(index_keeper, "BUILDER_POLL", 0.05)
    app, _store = open_app(demo_template, tmp_path / "store")
    async with app.run_test(size=SIZE) as pilot:
        await until(pilot, lambda: app.indexer.builder is not None, timeout=10)
        await until(pilot, lambda: app.indexer.builder is None, timeout=30)  # it finished
        await settle(pilot)
        assert (
            app.workspace.body_index is not None and app.workspace.body_index.writable
        )  # and the app took the index over
        await search_settled(pilot, "fsync")
        assert picker_ids(app) == ["design-notes"]


# -- other processes ---------------------------------------------------------------------------------


async def test_a_message_another_process_appends_is_found_within_the_refresh_interval(
    demo_template: Path, tmp_path: Path
) -> None:
    app, _store = open_app(demo_template, tmp_path / "store", refresh_interval=0.2)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        index = app.workspace.body_index
        assert index is not None
        other = JsonlSessionStore(tmp_path / "store", clock=fixed_clock)
        say_user(other.get("website-redesign"), "Add a narwhal to the hero image.")
        other.close()
        appended = time.monotonic()

        def indexed() -> bool:
            return any("narwhal" in text for _role, text in index.messages("website-redesign"))

        # Nobody types, so the periodic re-listing (every 0.2 s) picks it up by itself.
        await until(pilot, indexed, timeout=3)
        waited = time.monotonic() - appended
        await search_settled(pilot, "narwhal")
        assert picker_ids(app) == ["website-redesign"]
        _row, under = row_of(app, "website-redesign")
        assert under is not None and "you: Add a narwhal to the hero image." in under[0]
        assert waited < 3


async def test_a_second_instance_searches_the_index_the_first_keeps(demo_template: Path, tmp_path: Path) -> None:
    first, _store = open_app(demo_template, tmp_path / "store")
    async with first.run_test(size=SIZE) as pilot:
        await settle(pilot)
        store = JsonlSessionStore(tmp_path / "store", clock=fixed_clock)
        second = app_module.make_app(
            store, EchoModel(), cwd=DEMO_PROJECT, clock=fixed_clock, cursor_blink=False,
            refresh_interval=3600,
        )  # fmt: skip
        async with second.run_test(size=SIZE) as other:
            await settle(other)
            assert second.workspace.body_index is not None and not second.workspace.body_index.writable
            await search_settled(other, "fsync")
            assert picker_ids(second) == ["design-notes"]
            assert second.chat.picker.note is None
        store.close()
        await search_settled(pilot, "fsync")
        assert picker_ids(first) == ["design-notes"]


# -- damage ------------------------------------------------------------------------------------------


def _index_folder(app: SessionRefApp) -> Path:
    index = app.workspace.body_index
    assert index is not None and index.path is not None
    return Path(index.path)


async def _found_again(pilot: Any, query: str, expected: list[str]) -> None:
    app = pilot.app
    for _ in range(50):
        app.refresh_catalog(force=True)
        await settle(pilot)
        await search_settled(pilot, query)
        if picker_ids(app) == expected and app.chat.picker.note is None:
            return
        await pilot.press("escape")
        await pilot.pause(0.1)
    raise AssertionError(f"{query!r}: {picker_ids(app)} {app.chat.picker.note!r}")


async def test_deleting_the_index_while_the_app_runs_rebuilds_it(app: SessionRefApp) -> None:
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        folder = _index_folder(app)
        shutil.rmtree(folder)
        await search_settled(pilot, "sto")
        assert picker_ids(app)[0] == "design-notes"  # titles never depend on the index
        await pilot.press("escape")
        await _found_again(pilot, "fsync", ["design-notes"])
        assert any(folder.glob("shard-*.sqlite3"))


async def test_a_corrupted_index_while_the_app_runs_is_rebuilt(app: SessionRefApp) -> None:
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        for shard in _index_folder(app).glob("shard-*.sqlite3"):
            size = shard.stat().st_size
            with shard.open("r+b") as file:
                file.write(os.urandom(min(size, 8192)))
        await search_settled(pilot, "sto")
        assert picker_ids(app)[0] == "design-notes"
        await pilot.press("escape")
        await _found_again(pilot, "fsync", ["design-notes"])


async def test_a_full_disk_turns_message_search_off_and_it_comes_back(
    demo_template: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    original = shard_writes.WriteBatch.commit
    full = True

    def commit(self: Any) -> None:
        if full and self.active:
            raise shard_writes.sqlite3.OperationalError("database or disk is full")
        original(self)

    monkeypatch.setattr(shard_writes.WriteBatch, "commit", commit)
    monkeypatch.setattr(index_keeper, "INDEX_RETRY", 3600.0)
    app, _store = open_app(demo_template, tmp_path / "store")
    async with app.run_test(size=SIZE) as pilot:
        await until(pilot, app.workspace.catalog_loaded.is_set)
        index = app.workspace.body_index
        assert index is not None
        await until(pilot, lambda: index.status.state == "failed" and not app.indexer.running)
        assert index.status.code == INDEX_DISK_FULL
        sidebar = app.chat.query_one(SessionSidebar)
        # The keeper posts its news from its own thread: the subtitle follows once the app has read it.
        await until(pilot, lambda: str(sidebar.border_subtitle).endswith("message search off"))
        await search_settled(pilot, "sto")
        assert picker_ids(app)[0] == "design-notes"  # the picker keeps working on titles
        note = app.chat.picker.note
        assert note == "Messages: 0 of 7 searchable; indexing stopped, disk full (SEARCH_INDEX_DISK_FULL)"
        await pilot.press("escape")
        full = False  # room again: a re-listing after the retry interval tries again
        monkeypatch.setattr(index_keeper, "INDEX_RETRY", 0.0)
        await _found_again(pilot, "fsync", ["design-notes"])


async def test_a_session_removed_from_disk_is_never_offered_again(app: SessionRefApp, tmp_path: Path) -> None:
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await search_settled(pilot, "landing")
        assert picker_ids(app) == ["website-redesign"]
        await pilot.press("escape")
        store = JsonlSessionStore(tmp_path / "store")
        shutil.rmtree(store.session_path("website-redesign", "/home/demo/projects/website").parent)
        store.close()
        app.refresh_catalog(force=True)
        await until(pilot, lambda: not app.workspace.catalog.has("website-redesign"))
        await settle(pilot)
        await search_settled(pilot, "landing")
        assert picker_ids(app) == []
        index = app.workspace.body_index
        assert index is not None and "website-redesign" not in index.titles()
        await pilot.press("escape")
        await search_settled(pilot, "web")
        assert "website-redesign" not in picker_ids(app)


def sidebar_ids(app: SessionRefApp) -> list[str]:
    sidebar = app.chat.query_one("#sidebar", SessionSidebar)
    return [row.header.id for row in sidebar.rows if row.header is not None]


async def test_the_sidebar_filter_lists_what_the_search_finds(app: SessionRefApp) -> None:
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        sidebar = app.chat.query_one("#sidebar", SessionSidebar)
        everyone = sidebar_ids(app)
        assert len(everyone) > 3
        sidebar.focus()
        await pilot.press("slash")
        assert sidebar.border_title == "Sessions / ▏"
        await type_text(pilot, "corrupting crash")
        await until(pilot, lambda: sidebar_ids(app) == ["design-notes"])
        assert sidebar.border_title == "Sessions / corrupting crash▏"
        await pilot.press("enter")  # the list takes the keys again; the filter stays
        assert sidebar.border_title == "Sessions / corrupting crash"
        assert sidebar.highlighted_id == "design-notes"
        await pilot.press("escape")  # every session again
        await until(pilot, lambda: sidebar_ids(app) == everyone)
        assert sidebar.border_title == "Sessions"
        await pilot.press("slash")
        await type_text(pilot, "[b]x")  # what is typed is text, never markup
        assert sidebar.border_title == "Sessions / \\[b]x▏"
        await pilot.press("escape")
