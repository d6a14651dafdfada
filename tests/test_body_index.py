"""Keeping the ``BodyIndex`` current and reliable (``core.search.body_index``, its shards, the builder
process).

The reliability tests damage, delete, lock and fill the index and show that the store stays the
truth.
"""

from __future__ import annotations

import asyncio
import os
import shutil
import sqlite3
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

import core.search.shard_writes as shard_writes
from core import (
    BodyIndex,
    IndexUnavailable,
    JsonlSessionStore,
    MemorySessionStore,
    SearchConfig,
    SessionReferenceError,
    index_path_beside,
    indexed_session,
)
from core.search.finder import SessionSearch
from core.search.index_values import INDEX_CORRUPT, INDEX_DISK_FULL
from tests.conftest import say_assistant, say_user
from tests.support.indexed_store import Indexed, Target, title

ROOT = Path(__file__).parent.parent

# -- keeping it current -------------------------------------------------------------------------------


def test_an_append_reindexes_only_that_session_and_only_its_last_chunk(indexed: Indexed) -> None:
    long = indexed.session("long")
    for number in range(40):
        say_user(long, f"message {number} " + "filler text " * 60)  # ~30 KiB: several chunks
    say_user(indexed.session("other", created_at=1), "untouched")
    indexed.sync()
    shard = indexed.index.shard_of("long")
    chunks_before = shard.reads.query("SELECT rowid, digest FROM chunks")
    indexed.writer = JsonlSessionStore(indexed.root)
    say_assistant(indexed.writer.get("long"), "the answer is wombat")
    report = indexed.sync()
    assert (report.indexed, report.removed) == (1, 0)
    assert indexed.ids("wombat") == ["long"]
    chunks_after = dict(shard.reads.query("SELECT rowid, digest FROM chunks"))
    changed = [rowid for rowid, digest in chunks_before if chunks_after.get(rowid) != digest]
    assert len(changed) <= 1  # only the last chunk took the new message
    assert indexed.sync().indexed == 0  # nothing changed since


def test_a_removed_session_is_never_offered_and_leaves_the_index(indexed: Indexed) -> None:
    say_user(indexed.session("keep"), "penguin facts")
    say_user(indexed.session("gone", created_at=1), "penguin rumours")
    indexed.sync()
    assert indexed.ids("penguin") == ["gone", "keep"]
    shutil.rmtree(indexed.reader.session_path("gone", "/work/app").parent)
    indexed.sources()  # the listing no longer has it; the index still does
    assert indexed.ids("penguin") == ["keep"]
    report = indexed.sync()
    assert report.removed == 1
    assert "gone" not in indexed.index.titles()


def test_titles_come_back_from_the_index(indexed: Indexed) -> None:
    title(indexed.session("titled"), "Quarterly planning")
    indexed.sync()
    reopened = BodyIndex(index_path_beside(indexed.root))
    reopened.open()
    assert reopened.titles()["titled"][1] == "Quarterly planning"
    reopened.close()


def test_a_memory_store_is_indexed_in_memory() -> None:
    store = MemorySessionStore()
    session = store.create("mem", cwd="/work/app")
    say_user(session, "platypus")
    index = BodyIndex(None)
    records = asyncio.run(store.list_sessions())

    def read(session_id: str) -> Any:
        surface = asyncio.run(store.read_surface(session_id))
        return indexed_session(("live", 1), surface, None)

    index.sync([(r.header.id, "1") for r in records], read)
    hits = SessionSearch(index).search(Target(), "platypus", records=records, titles={}, limit=5).hits
    assert [hit.candidate.session_id for hit in hits] == ["mem"]


def test_body_search_can_be_switched_off(indexed: Indexed) -> None:
    say_user(indexed.session("body"), "narwhal")
    indexed.sync()
    off = SessionSearch(indexed.index, {"bodySearch": False})
    result = off.search(Target(), "narwhal", records=indexed.records, titles={}, limit=5)
    assert (result.hits, result.body) == ([], "off")
    assert SearchConfig.model_validate({"body_search": False}).body_search is False
    for bad in ({"bodysearch": True}, {"bodySearch": "yes"}, []):
        with pytest.raises(SessionReferenceError) as error:
            SearchConfig.model_validate(bad)
        assert error.value.code == "SESSION_REFERENCE_INVALID_CONFIG"


# -- reliability -----------------------------------------------------------------------------------------


def test_a_deleted_index_is_rebuilt_by_the_next_sync(indexed: Indexed) -> None:
    say_user(indexed.session("a"), "okapi")
    indexed.sync()
    shutil.rmtree(index_path_beside(indexed.root))
    report = indexed.sync()
    assert report.indexed == 1
    assert indexed.ids("okapi") == ["a"]
    assert (index_path_beside(indexed.root) / "shard-0.sqlite3").exists()


@pytest.mark.parametrize("damage", ["garbage", "truncated-header"])
def test_a_damaged_index_fails_searches_cleanly_and_is_rebuilt(indexed: Indexed, damage: str) -> None:
    for number in range(6):
        say_user(indexed.session(f"c-{number}", created_at=number), f"capybara number {number}")
    indexed.sync()
    indexed.index.checkpoint()
    for shard in indexed.index.shards:
        assert shard.path is not None
        with open(shard.path, "r+b") as handle:
            if damage == "garbage":
                handle.write(os.urandom(os.path.getsize(shard.path)))
            else:
                handle.write(b"\x00" * 100)
    # A search either still answers from cached pages or says the index is unavailable: never a crash.
    result = indexed.find("capybara")
    assert result.body in ("ready", "unavailable")
    if result.body == "unavailable":
        assert result.status is not None and result.status.code in (INDEX_CORRUPT, "SEARCH_INDEX_FAILED")
    report = indexed.sync()
    assert report.indexed == 6
    assert len(indexed.ids("capybara")) == 6


def test_an_outdated_index_is_rebuilt(indexed: Indexed) -> None:
    say_user(indexed.session("old"), "axolotl")
    indexed.sync()
    indexed.index.close()
    for shard in BodyIndex(index_path_beside(indexed.root)).shards:
        assert shard.path is not None
        connection = sqlite3.connect(shard.path)
        connection.execute("UPDATE meta SET value = '0' WHERE key = 'schema'")
        connection.commit()
        connection.close()
    indexed.index = BodyIndex(index_path_beside(indexed.root))
    indexed.search = SessionSearch(indexed.index)
    assert indexed.sync().indexed == 1
    assert indexed.ids("axolotl") == ["old"]


def test_a_second_instance_reads_the_index_and_takes_over_when_the_first_exits(indexed: Indexed) -> None:
    say_user(indexed.session("first"), "wombat burrow")
    indexed.sync()
    second = Indexed(indexed.root)
    second.writer.close()
    report = second.index.sync(second.sources(), second.read)
    assert report.indexed == 0  # the first instance owns the files
    assert not second.index.writable and second.index.status.state == "read-only"
    second.titles = {}
    assert second.ids("wombat") == ["first"]  # it searches the first instance's copy
    indexed.writer = JsonlSessionStore(indexed.root)
    say_user(indexed.writer.get("first"), "new aardwolf")
    indexed.writer.close()
    indexed.index.close()  # the first instance exits
    report = second.index.sync(second.sources(), second.read)
    assert second.index.writable and report.indexed == 1
    assert second.ids("aardwolf") == ["first"]


def test_a_full_disk_stops_indexing_cleanly_and_indexing_resumes_later(indexed: Indexed) -> None:
    for number in range(30):
        noise = " ".join(os.urandom(4).hex() for _ in range(600))  # incompressible, many trigrams
        say_user(indexed.session(f"d-{number:02}", created_at=number), f"dugong {number} {noise}")
    indexed.writer.close()
    sources = indexed.sources()
    indexed.index.open()
    for shard in indexed.index.shards:
        assert shard.files.writer is not None
        pages = shard.files.writer.execute("PRAGMA page_count").fetchone()[0]
        shard.files.writer.execute(f"PRAGMA max_page_count = {pages + 6}")  # SQLite's SQLITE_FULL, for real
    with pytest.raises(IndexUnavailable) as error:
        indexed.index.sync(sources, indexed.read)
    assert error.value.code == INDEX_DISK_FULL
    status = indexed.index.status
    assert status.state == "failed" and status.code == INDEX_DISK_FULL
    assert status.indexed < 30
    # What was committed is whole: every indexed session is searchable in full.
    indexed.titles = {}
    found = indexed.ids("dugong")
    assert len(found) == status.indexed
    for shard in indexed.index.shards:
        assert shard.files.writer is not None
        shard.files.writer.execute("PRAGMA max_page_count = 1073741823")  # room again
    assert indexed.index.sync(sources, indexed.read).indexed == 30 - status.indexed
    assert len(indexed.ids("dugong")) == 30


def test_a_writer_failing_at_its_last_commit_does_not_hang_the_sync(
    indexed: Indexed, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The last commit of a shard comes after it took the end mark from its queue; a full disk
    # there once left the writer thread waiting for a second end mark forever.
    for number in range(6):
        say_user(indexed.session(f"l-{number}", created_at=number), f"lemur {number}")
    indexed.writer.close()
    sources = indexed.sources()
    indexed.index.open()
    original = shard_writes.WriteBatch.commit

    def commit(self: Any) -> None:
        if self.active:
            raise sqlite3.OperationalError("database or disk is full")
        original(self)

    monkeypatch.setattr(shard_writes, "COMMIT_INTERVAL", 3600.0)  # so the only commit is the last one
    monkeypatch.setattr(shard_writes.WriteBatch, "commit", commit)
    with pytest.raises(IndexUnavailable) as error:
        indexed.index.sync(sources, indexed.read)
    assert error.value.code == INDEX_DISK_FULL
    monkeypatch.setattr(shard_writes.WriteBatch, "commit", original)
    assert indexed.index.sync(sources, indexed.read).indexed == 6
    indexed.titles = {}
    assert len(indexed.ids("lemur")) == 6


def test_closing_and_interrupting_while_another_thread_searches_never_crashes() -> None:
    # The app reopens the index (a builder finished, a file was replaced) while its search thread
    # reads and a keystroke interrupts: that once closed a connection under a running read.
    done = subprocess.run(
        [sys.executable, "-m", "tests.support.index_stress", "2"], cwd=ROOT, capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, f"exit {done.returncode}: {done.stderr[-2000:]}"
    searches, reopens = (int(word) for word in done.stdout.split()[1::2])
    assert searches > 10 and reopens > 10


def test_an_unreadable_session_is_skipped_and_counted(indexed: Indexed) -> None:
    say_user(indexed.session("fine"), "koala")
    say_user(indexed.session("broken", created_at=1), "koala too")
    indexed.writer.close()
    path = indexed.reader.session_path("broken", "/work/app")
    raw = path.read_bytes()
    sources = indexed.sources()
    path.write_bytes(raw[:-8] + b"garbage!" + b"x" * 64)  # a damaged frame, not a torn tail
    report = indexed.index.sync(sources, indexed.read)
    assert report.unreadable == 1 and report.indexed == 2
    indexed.titles = {}
    assert indexed.ids("koala") == ["fine"]


def test_search_interrupts_cleanly(indexed: Indexed) -> None:
    say_user(indexed.session("x"), "interruptible")
    indexed.sync()
    indexed.index.interrupt()  # nothing running: harmless
    assert indexed.ids("interruptible") == ["x"]


# -- the builder process -----------------------------------------------------------------------------


def test_the_builder_process_builds_the_index_and_a_second_one_steps_aside(indexed: Indexed) -> None:
    for number in range(12):
        say_user(indexed.session(f"p-{number}", created_at=number), f"pangolin {number}")
    indexed.writer.close()
    command = [sys.executable, "-m", "core.search.builder", str(indexed.root), "--first-cwd", "/work/app"]
    done = subprocess.run(command, cwd=ROOT, capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    indexed.sources()
    indexed.index.open()
    assert indexed.index.pending(indexed.sources()) == 0
    assert len(indexed.ids("pangolin")) == 12
    # While this instance holds the writer locks, another builder has nothing to do.
    again = subprocess.run(command, cwd=ROOT, capture_output=True, text=True, timeout=60)
    assert again.returncode == 0 and again.stderr == ""


def test_the_builder_reports_an_unusable_index_with_a_code(tmp_path: Path) -> None:
    store = tmp_path / "store"
    store.mkdir()
    blocker = tmp_path / "not-a-folder"
    blocker.write_text("a file where the index folder should be")
    command = [sys.executable, "-m", "core.search.builder", str(store), "--index", str(blocker)]
    done = subprocess.run(command, cwd=ROOT, capture_output=True, text=True, timeout=60)
    assert done.returncode == 4
    assert "SEARCH_INDEX_" in done.stderr and "Traceback" not in done.stderr
