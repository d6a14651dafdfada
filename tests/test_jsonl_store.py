"""The durable JSONL store (``core.folder.jsonl_store``): layout, round trips, listing, revisions,
read-only reads, folders in either encoding (STORE.md).
"""

from __future__ import annotations

import asyncio
import json
import os
import shutil
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from core import JsonlSessionStore, MemorySessionStore, SessionQueryError
from core.folder.jsonl_layout import encode_session_segment, project_key
from tests.conftest import compact, say_assistant, say_user
from tests.support.jsonl_harness import file_of, reopen, zstd_frames
from tests.support.strategies import js_strings

# --- layout ----------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("session_id", "segment"),
    [
        ("abc-1.2_3", "abc-1.2_3"),
        (".", "~002E"),
        ("..", "~002E~002E"),
        ("a/b", "a~002Fb"),
        ("~", "~007E"),
        ("nul\x00nl\n", "nul~0000nl~000A"),
        ("😀", "~D83D~DE00"),
        ("\ud800", "~D800"),
        ("界", "~754C"),
    ],
)
def test_session_id_segment_encoding(session_id: str, segment: str) -> None:
    assert encode_session_segment(session_id) == segment


@pytest.mark.parametrize(
    ("cwd", "key"),
    [
        (None, "_no-cwd"),
        ("/home/me/proj", "--home-me-proj--"),
        ("C:\\Users\\me", "--C-Users-me--"),
        ("//server//share:/x", "--server-share-x--"),
        ("/", "--root--"),
        ("/tmp/界 x", "--tmp-~754C~0020x--"),
    ],
)
def test_project_key(cwd: str | None, key: str) -> None:
    assert project_key(cwd) == key


def test_project_key_keeps_251_characters() -> None:
    assert project_key("/" + "a" * 400) == "--" + "a" * 251 + "--"


def test_empty_and_overlong_ids_get_clear_errors(root: Path) -> None:
    store = reopen(root, "zstd")
    with pytest.raises(SessionQueryError) as caught:
        store.create("")
    assert caught.value.code == "SESSION_QUERY_INVALID_ID"
    with pytest.raises(SessionQueryError, match="too long to store"):
        store.create("界" * 60)


def test_first_append_materialises_header_and_event_lines(root: Path, compression: str) -> None:
    store = reopen(root, compression)
    session = store.create("s/1", cwd="/home/me/proj", created_at=5)
    path = file_of(store, "s/1", "/home/me/proj")
    assert not path.exists()
    say_user(session, "hello")
    assert path == root / "--home-me-proj--" / "s~002F1" / (
        "session.jsonl.zstd" if compression == "zstd" else "session.jsonl"
    )
    raw = path.read_bytes()
    if compression == "zstd":
        raw = b"".join(zstd_frames(raw))
    lines = raw.decode().splitlines()
    assert json.loads(lines[0]) == {
        "type": "session",
        "version": 0,
        "id": "s/1",
        "createdAt": 5,
        "cwd": "/home/me/proj",
        "delegationDepth": 0,
    }
    assert (
        lines[0] == '{"type":"session","version":0,"id":"s/1","createdAt":5,"cwd":"/home/me/proj","delegationDepth":0}'
    )
    event = json.loads(lines[1])
    assert list(event) == ["type", "seq", "time", "data", "surfaceOp"]
    assert [p.name for p in path.parent.iterdir()] == [path.name]  # no temporary file left behind


# --- round trip ------------------------------------------------------------------------------------


def _populate(store: Any, actions: list[tuple[str, str]]) -> None:
    session = store.create('weird/"id"\n😀\ud800', cwd="C:\\work\\x")
    for kind, body in actions:
        if kind == "user":
            say_user(session, body)
        elif kind == "assistant":
            say_assistant(session, body)
        elif kind == "title":
            session.append("session/title", {"title": body, "messageSeqs": [], "source": "user"})
        elif kind == "compact" and session.surface():
            compact(session, body)
        else:
            session.append("note", {"body": body, "n": [1, 2.5, None, True]})


@settings(max_examples=40, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.lists(st.tuples(st.sampled_from(["user", "assistant", "title", "compact", "note"]), js_strings), max_size=15))
def test_everything_memory_accepts_survives_write_and_reopen(
    tmp_path_factory: pytest.TempPathFactory, actions: list[tuple[str, str]]
) -> None:

    for compression in ("zstd", "none"):
        root = tmp_path_factory.mktemp("rt")
        memory = MemorySessionStore(clock=lambda: 42)
        durable = JsonlSessionStore(root, compression=compression, clock=lambda: 42)  # type: ignore[arg-type]
        _populate(memory, actions)
        _populate(durable, actions)
        durable.close()
        fresh = reopen(root, compression)
        session_id = 'weird/"id"\n😀\ud800'
        expected = memory.get(session_id)
        assert expected is not None
        if not expected.events:
            assert asyncio.run(fresh.list_sessions()) == []
            continue
        loaded = fresh.get(session_id)
        assert loaded is not None
        assert [e.to_wire() for e in loaded.events] == [e.to_wire() for e in expected.events]
        assert loaded.header == expected.header
        surface = asyncio.run(reopen(root, compression).read_surface(session_id))
        assert [e.to_wire() for e in surface.events] == [e.to_wire() for e in expected.surface()]
        assert asyncio.run(reopen(root, compression).read_title(session_id)) == expected.title
        assert loaded.derive_messages() == expected.derive_messages()
        fresh.close()


# --- listing and caching ---------------------------------------------------------------------------


async def test_sessions_written_by_another_process_appear_on_the_next_listing(root: Path) -> None:
    reader = reopen(root, "zstd")
    assert await reader.list_sessions() == []
    writer = reopen(root, "zstd")
    session = writer.create("late", cwd="/x")
    say_user(session, "hello")
    assert [r.header.id for r in await reader.list_sessions()] == ["late"]
    assert (await reader.read_surface("late")).captured_through_seq == 0
    say_assistant(session, "more")
    assert (await reader.read_surface("late")).captured_through_seq == 1  # the revision changed
    session.append("session/title", {"title": "Named", "messageSeqs": [0], "source": "user"})
    assert (await reader.read_title("late")).title == "Named"  # type: ignore[union-attr]
    writer.close()


async def test_created_but_empty_session_is_listed_live_but_not_persisted(root: Path) -> None:
    store = reopen(root, "zstd")
    store.create("draft")
    (record,) = await store.list_sessions()
    assert (record.live, record.persisted) == (True, False)
    assert await reopen(root, "zstd").list_sessions() == []


async def test_delete_removes_the_session_folder(root: Path) -> None:
    store = reopen(root, "none")
    say_user(store.create("gone", cwd="/p"), "x")
    store.delete("gone")
    assert not (root / "--p--" / "gone").exists()
    assert store.get("gone") is None


@pytest.mark.parametrize("compression", ["zstd", "none"])
async def test_written_revision_is_what_another_process_lists(tmp_path: Path, compression: str) -> None:
    writer = JsonlSessionStore(tmp_path, compression=compression)
    session = writer.create("w", cwd="/work/app")
    assert writer.written_revision("w") is None  # no file yet
    say_user(session, "one")
    reader = JsonlSessionStore(tmp_path, compression=compression)
    records = await reader.list_sessions()
    assert writer.written_revision("w") == reader.listed_revision(records[0].header)
    say_assistant(session, "two")
    records = await reader.list_sessions()
    assert writer.written_revision("w") == reader.listed_revision(records[0].header)
    assert reader.written_revision("w") is None  # only the writer knows one
    writer.close()
    reader.close()


def test_read_log_gives_every_event_without_taking_the_write_lock(tmp_path: Path) -> None:
    from core.sessions.surface import fold_surface

    writer = JsonlSessionStore(tmp_path)
    session = writer.create("s", cwd="/p")
    say_user(session, "one")
    say_user(session, "two")
    compact(session, "both")
    reader = JsonlSessionStore(tmp_path)
    header, events = reader.read_log("s")  # the writer still holds the lock
    assert header.id == "s" and [event.seq for event in events] == list(range(len(session.events)))
    assert [event.to_wire() for event in events] == [event.to_wire() for event in session.events]
    assert [event.seq for event in fold_surface(events)] == [event.seq for event in session.surface()]
    assert writer.read_log("s")[1] == list(session.events)  # its own sessions from memory
    with pytest.raises(SessionQueryError) as missing:
        reader.read_log("nope")
    assert missing.value.code == "SESSION_QUERY_SESSION_NOT_FOUND"
    writer.close()
    reader.close()


def test_either_encoding_reads_a_mixed_folder_and_names_a_conflicting_twin(tmp_path: Path) -> None:
    from core.folder.either_encoding import SESSION_QUERY_ENCODING_CONFLICT, EitherEncoding

    for compression, names in (("none", ["p0", "p1", "twin"]), ("zstd", ["z0", "twin"])):
        store = JsonlSessionStore(tmp_path / compression, compression=compression)
        for name in names:
            say_user(store.create(name, cwd="/w", created_at=len(name)), f"{name} in {compression}")
            (tmp_path / "--w--" / name).mkdir(parents=True, exist_ok=True)
            path = store.session_path(name, "/w")
            os.replace(path, tmp_path / "--w--" / name / path.name)
        store.close()
    (tmp_path / "--w--" / "flat.jsonl").write_text("{}\n")
    for compression in ("none", "zstd"):
        shutil.rmtree(tmp_path / compression)
    reader = EitherEncoding(tmp_path)
    listed = reader.list_sessions()
    assert sorted((entry.record.header.id, entry.compression) for entry in listed) == [
        ("p0", "none"),
        ("p1", "none"),
        ("z0", "zstd"),
    ]
    assert reader.read_log("p1")[1][0].data["content"][0]["text"] == "p1 in none"
    assert reader.read_log("z0")[1][0].data["content"][0]["text"] == "z0 in zstd"
    # twin holds other words in each file: left out, both paths named; the flat file stays a problem.
    assert [problem.code for problem in reader.problems] == [None, SESSION_QUERY_ENCODING_CONFLICT]
    assert "both" in reader.problems[1].message and "session.jsonl.zstd and" in reader.problems[1].message
    with pytest.raises(SessionQueryError) as caught:
        reader.read_log("twin")
    assert caught.value.code == "SESSION_QUERY_SESSION_NOT_FOUND"
    with pytest.raises(SessionQueryError) as caught:
        reader.find("twin")
    assert caught.value.code == SESSION_QUERY_ENCODING_CONFLICT
    found = reader.find("p0")
    assert found is not None and found[0].id == "p0"
    assert reader.find("absent") is None
    reader.close()
