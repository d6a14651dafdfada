"""The JSONL store's log cache (``core.folder.log_cache``): a session's log is never parsed into
memory twice. A file that moved on lets go of its old parse before the new one is built, and a bulk
reader (the message index) borrows a parse the cache keeps at the file's revision instead of making
its own."""

from __future__ import annotations

import asyncio
import weakref
from pathlib import Path
from typing import Any

import pytest

from core import JsonlSessionStore
from core.folder import log_cache
from tests.conftest import say_assistant, say_user


def _seed(root: Path) -> JsonlSessionStore:
    store = JsonlSessionStore(root)
    session = store.create("s", cwd="/w")
    say_user(session, "one")
    say_assistant(session, "two")
    store.close()
    return JsonlSessionStore(root)


def _parses(monkeypatch: pytest.MonkeyPatch) -> list[Any]:
    """Every parse the cache makes, with what the cache held of the file while it ran."""
    seen: list[Any] = []
    real = log_cache.load_log

    def counting(raw: bytes, path: Path, compression: Any) -> Any:
        seen.append(path)
        return real(raw, path, compression)

    monkeypatch.setattr(log_cache, "load_log", counting)
    return seen


def test_a_file_that_moved_on_lets_go_of_its_old_parse_before_the_new_one(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    reader = _seed(tmp_path)
    first = asyncio.run(reader.read_surface("s"))
    old = reader._logs._logs[reader.path_of("s")][1]  # type: ignore[union-attr]
    gone = weakref.ref(old)
    del old, first
    writer = JsonlSessionStore(tmp_path)
    session = writer.get("s")
    assert session is not None
    say_user(session, "three")
    writer.close()
    alive_during_parse: list[bool] = []
    real = log_cache.load_log

    def parse(raw: bytes, path: Path, compression: Any) -> Any:
        alive_during_parse.append(gone() is not None)
        return real(raw, path, compression)

    monkeypatch.setattr(log_cache, "load_log", parse)
    surface = asyncio.run(reader.read_surface("s"))
    assert alive_during_parse == [False]  # the old parse was released before the new one was built
    assert [event.data["content"][0]["text"] for event in surface.events] == ["one", "two", "three"]


def test_an_unchanged_file_is_parsed_once_and_the_indexer_borrows_that_parse(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    reader = _seed(tmp_path)
    parses = _parses(monkeypatch)
    surface = asyncio.run(reader.read_surface("s"))
    again = asyncio.run(reader.read_surface("s"))
    header = surface.session
    stored = reader.read_stored(header)
    assert len(parses) == 1  # read_surface twice and read_stored: one parse
    assert stored.surface == again and stored.title is None
    path = reader.path_of("s")
    assert path is not None and stored.revision == log_cache.file_revision(path)


def test_a_bulk_read_of_a_file_the_cache_does_not_hold_parses_it_and_keeps_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    reader = _seed(tmp_path)
    parses = _parses(monkeypatch)
    header = asyncio.run(reader.list_sessions())[0].header
    stored = reader.read_stored(header)
    assert len(parses) == 1 and reader._logs._logs == {}
    assert [event.data["content"][0]["text"] for event in stored.surface.events] == ["one", "two"]
    # A cached parse of an older revision is not lent: the file is read again.
    asyncio.run(reader.read_surface("s"))
    writer = JsonlSessionStore(tmp_path)
    session = writer.get("s")
    assert session is not None
    say_user(session, "three")
    writer.close()
    newer = reader.read_stored(header)
    assert len(parses) == 3 and len(newer.surface.events) == 3
