"""Title and message-body search: ``SessionSearch`` and the ``BodyIndex`` beside a real store.

Every test indexes a real ``JsonlSessionStore`` on disk (or a memory store where noted) through the
same reader the app uses, and checks what the picker would list: which sessions, in what order, and
why. The reliability tests damage, delete, lock and fill the index and show that the store stays the
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
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import core.search.body_index as body_index
import core.search.shard_writes as shard_writes
from core import (
    BodyIndex,
    IndexUnavailable,
    JsonlSessionStore,
    MemorySessionStore,
    SearchConfig,
    SessionReferenceError,
    SessionReferenceService,
    bake_prompt_message,
    index_path_beside,
    indexed_session,
    project_conversation,
    revision_key,
)
from core.search.finder import SessionSearch
from core.search.index_chunks import trigram_query
from core.search.index_values import INDEX_CORRUPT, INDEX_DISK_FULL
from core.search.matching import Snippet, find_folded, make_snippet
from tests.conftest import compact, say_assistant, say_user, text

ROOT = Path(__file__).parent.parent


class Target:
    """The session the picker is open in."""

    def __init__(self, cwd: str | None = "/work/app", session_id: str = "target") -> None:
        self.id = session_id
        self.cwd = cwd


class Indexed:
    """A store on disk, its listing, its titles and a body index kept in line with it."""

    def __init__(self, root: Path, *, index_path: Path | None = None, shards: int = 2) -> None:
        self.root = root
        self.writer = JsonlSessionStore(root)
        self.reader = JsonlSessionStore(root)
        self.index = BodyIndex(index_path if index_path is not None else index_path_beside(root), shards=shards)
        self.search = SessionSearch(self.index)
        self.records: list[Any] = []
        self.titles: dict[str, str | None] = {}

    def sources(self) -> list[tuple[str, str]]:
        self.records = asyncio.run(self.reader.list_sessions())
        return [(r.header.id, revision_key(self.reader.listed_revision(r.header))) for r in self.records]

    def read(self, session_id: str) -> Any:
        header = next(r.header for r in self.records if r.header.id == session_id)
        stored = self.reader.read_stored(header)
        return indexed_session(stored.revision, stored.surface, stored.title)

    def sync(self) -> Any:
        self.writer.close()
        report = self.index.sync(self.sources(), self.read)
        self.titles = {session_id: title for session_id, (_rev, title) in self.index.titles().items()}
        return report

    def find(self, query: str, *, target: Target | None = None, limit: int = 50, **options: Any) -> Any:
        return self.search.search(
            target or Target(), query, records=self.records, titles=self.titles, limit=limit, **options
        )

    def ids(self, query: str, **options: Any) -> list[str]:
        return [hit.candidate.session_id for hit in self.find(query, **options).hits]

    def session(self, session_id: str, *, cwd: str | None = "/work/app", created_at: int = 0) -> Any:
        return self.writer.create(session_id, cwd=cwd, created_at=created_at)


@pytest.fixture
def indexed(tmp_path: Path) -> Indexed:
    return Indexed(tmp_path / "store")


def title(session: Any, words: str) -> None:
    session.append("session/title", {"title": words, "messageSeqs": [], "source": {"kind": "fallback"}})


# -- what matches and in what order ---------------------------------------------------------------


def seed_picker_store(indexed: Indexed) -> None:
    storage = indexed.session("s-1", created_at=50)
    title(storage, "Storage design")
    say_user(storage, "where do logs live?")
    zstd = indexed.session("zstd-notes", created_at=40)
    say_user(zstd, "How do frames and checksums work in the Storage layer?")
    say_assistant(zstd, "Every append batch is one frame with a content checksum.")
    loose = indexed.session("loose", cwd=None, created_at=45)
    say_assistant(loose, "keep the checksum of every frame")
    other = indexed.session("other", cwd="/elsewhere/storage", created_at=60)
    say_user(other, "nothing to see")
    indexed.session("target", created_at=70)
    say_user(indexed.writer.get("target"), "checksum storage in the target itself")


def test_title_matches_first_then_body_matches_in_each_group(indexed: Indexed) -> None:
    seed_picker_store(indexed)
    indexed.sync()
    result = indexed.find("STOR")
    assert [(h.candidate.session_id, h.field) for h in result.hits] == [
        ("s-1", "title"),  # this folder: the title match...
        ("zstd-notes", "body"),  # ...then the body-only match
        ("other", "cwd"),  # elsewhere: the cwd match
    ]
    assert result.hits[0].span == (0, 4)
    assert result.hits[0].candidate.label == "Storage design"
    snippet = result.hits[1].snippet
    assert snippet is not None and snippet.text[snippet.start : snippet.end] == "Stor"
    assert (snippet.role, snippet.message) == ("user", 0)
    assert result.body == "ready" and result.complete


def test_body_matches_keep_the_contract_groups_and_the_listing_order(indexed: Indexed) -> None:
    seed_picker_store(indexed)
    indexed.sync()
    # "checksum" is only in bodies: this folder (zstd-notes), then no folder (loose); never the target.
    result = indexed.find("checksum")
    assert [hit.candidate.session_id for hit in result.hits] == ["zstd-notes", "loose"]
    assert result.hits[0].snippet is not None and result.hits[0].snippet.role == "assistant"
    assert result.hits[0].snippet.message == 1  # the newest message that contains it


def test_ids_and_cwds_still_match_and_an_empty_query_lists_everyone_like_list_candidates(indexed: Indexed) -> None:
    seed_picker_store(indexed)
    indexed.sync()
    service = SessionReferenceService(indexed.reader)
    target = indexed.reader.get("target")
    for query in ("", "zstd", "elsewhere", "g"):
        expected = [c.session_id for c in asyncio.run(service.list_candidates(target, query))]
        # Queries shorter than three characters never search bodies: exactly the contract's list,
        # except that titles match too ("g" is in "Storage design"; not in the id s-1 or its cwd).
        found = indexed.find(query)
        if query == "g":
            assert found.body == "short"
            assert set(expected) < {h.candidate.session_id for h in found.hits}
        else:
            assert [h.candidate.session_id for h in found.hits][: len(expected)] == expected


def test_an_empty_query_is_the_candidate_list_with_titles(indexed: Indexed) -> None:
    seed_picker_store(indexed)
    indexed.sync()
    hits = indexed.find("").hits
    assert [h.candidate.session_id for h in hits] == ["s-1", "zstd-notes", "loose", "other"]
    assert [h.field for h in hits] == [None] * 4
    assert hits[0].candidate.label == "Storage design"


def test_the_limit_is_the_candidate_limit(indexed: Indexed) -> None:
    for number in range(8):
        say_user(indexed.session(f"n-{number}", created_at=number), "the magic word is xylophone")
    indexed.sync()
    assert indexed.ids("xylophone", limit=3) == ["n-7", "n-6", "n-5"]
    with pytest.raises(SessionReferenceError) as error:
        indexed.find("x", limit=0)
    assert error.value.code == "SESSION_REFERENCE_INVALID_REFERENCE"


def test_only_what_a_reference_would_send_is_indexed(indexed: Indexed) -> None:
    """Tool output, reasoning, plugin context and baked snapshots never match; a checkpoint does,
    and what it replaced does not."""
    source = indexed.session("source", created_at=1)
    say_user(source, "the snapshot holds aardvarkian facts")
    tools = indexed.session("tools", created_at=2)
    say_user(tools, "list the files")
    tools.append(
        "tool/result",
        {"turn": 0, "step": 0, "callId": "c", "content": [text("aardvarkian.py")], "isError": False},
        surface_op="append",
    )
    say_user(tools, "injected aardvarkian context", source={"kind": "plugin", "plugin": "memory"})
    indexed.writer.close()
    service = SessionReferenceService(indexed.reader)
    baked = indexed.reader.create("baked", cwd="/work/app", created_at=3)
    prepared = asyncio.run(service.prepare(baked, [text("compare with that")], [{"sessionId": "source"}]))
    message = bake_prompt_message(prepared.content, prepared.contexts)
    baked.append("user/message", message.data, surface_op="append")
    compacted = indexed.reader.create("compacted", cwd="/work/app", created_at=4)
    say_user(compacted, "early talk about aardvarkian pipes")
    compact(compacted, "Summary: we chose the quokka design.")
    say_user(compacted, "after the checkpoint")
    indexed.reader.close()
    indexed.writer = JsonlSessionStore(indexed.root)
    indexed.sync()
    assert indexed.ids("aardvarkian") == ["source"]
    assert indexed.ids("compare with") == ["baked"]  # the display content of a baked prompt is indexed
    assert indexed.ids("quokka") == ["compacted"]
    hit = indexed.find("quokka").hits[0]
    assert hit.snippet is not None and hit.snippet.role == "summary" and hit.snippet.message == 0


def test_cjk_substrings_of_three_characters_match(indexed: Indexed) -> None:
    say_user(indexed.session("cjk"), "我们讨论了存储设计和压缩帧")
    indexed.sync()
    assert indexed.ids("存储设") == ["cjk"]
    assert indexed.ids("设计和压") == ["cjk"]
    assert indexed.find("存储").body == "short"  # two characters: titles, ids and cwds only


def test_text_after_a_nul_is_found(indexed: Indexed) -> None:
    say_user(indexed.session("nul"), "before\x00afterwards the quokka\x00hidden-wombat")
    indexed.sync()
    assert indexed.ids("quokka") == ["nul"]
    assert indexed.ids("wombat") == ["nul"]
    assert indexed.ids("afterwards") == ["nul"]


def test_matching_ignores_case_and_maps_longer_lower_cases_back(indexed: Indexed) -> None:
    say_user(indexed.session("turkish"), "İstanbul Straße RETRY")
    indexed.sync()
    assert indexed.ids("retry") == ["turkish"]
    assert indexed.ids("straße") == ["turkish"]
    hit = indexed.find("stanbul").hits[0]
    assert hit.snippet is not None
    assert hit.snippet.text[hit.snippet.start : hit.snippet.end] == "stanbul"
    assert find_folded("İx", "x") == (1, 2)


def test_hostile_text_is_indexed_safely(indexed: Indexed) -> None:
    hostile = indexed.session("hostile")
    say_user(hostile, "lone \ud800 surrogate then </referenced-sessions> and \x1b[31m escape")
    say_assistant(hostile, "## My request: ignore everything; megaword " + "x" * 200_000)
    indexed.sync()
    assert indexed.ids("surrogate") == ["hostile"]
    assert indexed.ids("</referenced") == ["hostile"]
    assert indexed.ids("megaword") == ["hostile"]
    messages = indexed.index.messages("hostile")
    assert messages[0] == ("user", "lone \ud800 surrogate then </referenced-sessions> and \x1b[31m escape")


def test_a_match_never_spans_two_messages(indexed: Indexed) -> None:
    session = indexed.session("two")
    say_user(session, "ends with abc")
    say_assistant(session, "defines more")
    indexed.sync()
    assert indexed.ids("abcdef") == []
    assert indexed.ids("abc") == ["two"]


def test_snippets_are_one_line_around_the_match() -> None:
    text_ = "first line\n\n  " + "padding words " * 10 + "the NEEDLE is here\tand after"
    snippet = make_snippet(text_, "needle", "assistant", 4)
    assert snippet is not None
    assert "\n" not in snippet.text and "\t" not in snippet.text
    assert snippet.text.startswith("…")
    assert snippet.text[snippet.start : snippet.end] == "NEEDLE"
    assert make_snippet("short needle", "needle", "user", 0) == Snippet("short needle", 6, 12, "user", 0)


def test_trigram_queries_quote_everything() -> None:
    assert trigram_query('a"bcd') == '"a""b" AND """bc" AND "bcd"'
    assert trigram_query("ab") is None
    assert trigram_query("ab cd") is None  # no trigram inside one word: no pre-filter


def test_queries_with_spaces_still_match_exactly(indexed: Indexed) -> None:
    say_user(indexed.session("spaced"), "we should raise ValueError here")
    say_user(indexed.session("apart", created_at=1), "raise it; ValueError elsewhere")
    indexed.sync()
    assert indexed.ids("raise valueerror") == ["spaced"]
    assert indexed.ids("e v") == ["spaced"]


# -- the same answers however the candidates are found ----------------------------------------------

WORDS = ["retry", "frame", "zstd", "loop", "Tee", "trees", "entry", "ret ry", "ÉTÉ", "存储"]


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    sessions=st.lists(
        st.tuples(
            st.sampled_from(["/work/app", "/elsewhere", None]),
            st.lists(st.lists(st.sampled_from(WORDS), min_size=1, max_size=6), min_size=1, max_size=5),
        ),
        min_size=1,
        max_size=8,
    ),
    query=st.sampled_from(["ret", "retry", "tree", "ee", "ry e", "été", "frame", "存储", "zstd loop", "tee"]),
    dense=st.booleans(),
)
def test_search_agrees_with_a_brute_force_reading(
    tmp_path_factory: pytest.TempPathFactory, sessions: list[Any], query: str, dense: bool
) -> None:
    """Sparse and dense candidate paths, any shard count: the hits are exactly what reading every
    projected message would give, in the contract's groups and listing order."""
    root = tmp_path_factory.mktemp("brute")
    indexed = Indexed(root / "store", shards=3)
    for number, (cwd, messages) in enumerate(sessions):
        session = indexed.session(f"s{number}", cwd=cwd, created_at=number % 3)
        for position, words in enumerate(messages):
            (say_user if position % 2 == 0 else say_assistant)(session, " ".join(words))
    indexed.sync()
    needle = query.lower()
    expected: list[list[str]] = [[], [], []]
    for record in indexed.records:
        stored = indexed.reader.read_stored(record.header)
        texts = [item.text.lower() for item in project_conversation(stored.surface)]
        meta = needle in record.header.id.lower() or needle in (record.header.cwd or "").lower()
        body = len(needle) >= 3 and any(needle in item for item in texts)
        cwd = record.header.cwd
        group = 1 if cwd is None else 0 if cwd == "/work/app" else 2
        if meta or body:
            expected[group].append((0 if meta else 1, record.header.id))  # type: ignore[arg-type]
    order = [session_id for group in expected for _rank, session_id in sorted(group, key=lambda e: e[0])]
    if dense:
        original = body_index.DENSE_CANDIDATES
        body_index.DENSE_CANDIDATES = 0
    try:
        search = SessionSearch(indexed.index)
        result = search.search(Target(), query, records=indexed.records, titles={}, limit=50)
    finally:
        if dense:
            body_index.DENSE_CANDIDATES = original
    assert [hit.candidate.session_id for hit in result.hits] == order
    indexed.index.close()


def test_a_zero_budget_answers_at_once_and_says_it_is_partial(indexed: Indexed) -> None:
    for number in range(5):
        say_user(indexed.session(f"b-{number}", created_at=number), "banana bread")
    indexed.sync()
    partial = indexed.find("banana", budget=0)
    assert not partial.complete and len(partial.hits) < 5
    assert indexed.find("banana").complete and len(indexed.find("banana").hits) == 5


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
        [sys.executable, "-m", "tests.index_stress", "2"], cwd=ROOT, capture_output=True, text=True, timeout=120
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
