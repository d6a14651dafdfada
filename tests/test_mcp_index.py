"""``sessionref mcp`` keeps the message index of the store it serves, as the app does: on a store the
app never opened, a word said in a session is found within seconds (a search before the index is
ready says so); a session written while it runs is found at the next search; and the app and the
server keeping one store's index at once leave it whole, with every session in it once."""

from __future__ import annotations

import asyncio
import json
import sqlite3
import time
from pathlib import Path
from typing import Any

import pytest

from core import EchoModel, JsonlSessionStore, index_path_beside
from core.search.index_chunks import CHUNK_BITS
from tests.conftest import say_assistant, say_user
from tests.support.app_harness import SIZE, until
from tests.test_mcp_wire import _Server
from tests.test_session_tools import frame_text
from tui.app.sessionref_app import make_app


def _write(root: Path, count: int, *, first: int = 0) -> None:
    store = JsonlSessionStore(root)
    for number in range(first, first + count):
        session = store.create(f"s{number:04d}", cwd=f"/work/p{number % 7}", created_at=number)
        say_user(session, f"question {number}: what did we decide about marker{number:04d}x?")
        say_assistant(session, "an answer that every session gives " * 5)
    store.close()


def _search(server: _Server, request_id: str, query: str) -> dict[str, Any]:
    call = {"name": "search_sessions", "arguments": {"query": query}}
    server.send(json.dumps({"jsonrpc": "2.0", "id": request_id, "method": "tools/call", "params": call}))
    answer = server.answer(30.0)
    assert answer["id"] == request_id and not answer["result"]["isError"], answer
    return dict(json.loads(frame_text(answer["result"]["content"][0]["text"], "session-search-results")))


def _found_by_word(server: _Server, number: int, seconds: float) -> tuple[float, list[dict[str, Any]]]:
    """Search for the word only session ``number`` said until it is found; the seconds it took and
    every answer before."""
    began = time.monotonic()
    answers: list[dict[str, Any]] = []
    while time.monotonic() - began < seconds:
        found = _search(server, f"find-{number}-{len(answers)}", f"marker{number:04d}x")
        answers.append(found)
        if [hit["session"] for hit in found["sessions"]] == [f"s{number:04d}"]:
            return time.monotonic() - began, answers
        time.sleep(0.2)
    raise AssertionError(f"marker{number:04d}x was not found in {seconds} s: {answers[-1]}")


def test_on_a_store_the_app_never_opened_the_server_finds_what_was_said(tmp_path: Path) -> None:
    root = tmp_path / "store"
    _write(root, 40)
    assert not index_path_beside(root).exists()
    server = _Server(root)
    try:
        seconds, answers = _found_by_word(server, 17, 20.0)
        found = answers[-1]["sessions"][0]
        said = found["messages"][0]
        assert said["role"] == "user" and "**marker0017x**" in said["text"]
        # Any answer before the index was ready said so.
        for earlier in answers[:-1]:
            assert earlier["note"].startswith("message search is not ready yet"), earlier
        assert seconds < 20.0 and index_path_beside(root).is_dir()  # the app's own index, beside the store
        # A session another program writes while the server runs is found at the next search.
        _write(root, 1, first=40)
        assert [hit["session"] for hit in _search(server, "new", "marker0040x")["sessions"]] == ["s0040"]
    finally:
        stderr = server.close()
    assert "Traceback" not in stderr


def _shard_rows(root: Path) -> tuple[list[str], int, list[str]]:
    """Every session id the index holds (all shards), its chunk rows, and each shard's integrity check."""
    ids: list[str] = []
    chunks = 0
    checks: list[str] = []
    for path in sorted(index_path_beside(root).glob("shard-*.sqlite3")):
        connection = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
        try:
            checks.append(connection.execute("PRAGMA integrity_check").fetchone()[0])
            keys = dict(connection.execute("SELECT key, id FROM sessions").fetchall())
            ids += keys.values()
            for (rowid,) in connection.execute("SELECT rowid FROM chunks"):
                assert rowid >> CHUNK_BITS in keys, f"a chunk of no session in {path.name}"
                chunks += 1
        finally:
            connection.close()
    return ids, chunks, checks


@pytest.mark.long
async def test_the_app_and_the_server_keep_one_index_at_once(tmp_path: Path) -> None:
    """Both start on a fresh store big enough for a builder process each would start: one writes,
    the other follows; each finds every session by what was said in it; the index holds each once."""
    root = tmp_path / "store"
    count = 240
    _write(root, count)
    server = await asyncio.to_thread(_Server, root)  # begins indexing at once (a builder process)
    store = JsonlSessionStore(root)
    app = make_app(store, EchoModel(), session_id="s0000", cursor_blink=False, refresh_interval=0.5)
    try:
        async with app.run_test(size=SIZE) as pilot:
            index = app.workspace.body_index
            assert index is not None
            await until(pilot, lambda: index.status.complete and index.status.total >= count, timeout=90)
            for number in (1, 120, count - 1):
                await asyncio.to_thread(_found_by_word, server, number, 30.0)
            # A session written while both run: each finds it.
            await asyncio.to_thread(_write, root, 1, first=count)
            await asyncio.to_thread(_found_by_word, server, count, 30.0)
            app.refresh_catalog(force=True)
            await until(pilot, lambda: index.status.complete and index.status.total >= count + 1, timeout=30)
            app.exit()
    finally:
        stderr = await asyncio.to_thread(server.close)
        app.close_index()
        store.close()
    assert "Traceback" not in stderr
    ids, chunks, checks = _shard_rows(root)
    assert checks == ["ok", "ok"]
    assert sorted(ids) == [f"s{number:04d}" for number in range(count + 1)]  # each session once
    assert chunks == count + 1  # one chunk each (two short messages), none left over or doubled
