"""The durable JSONL store: layout, durability, crash footprints, corruption, locking (STORE.md)."""

from __future__ import annotations

import asyncio
import errno
import json
import os
import random
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
import zstandard
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import core.sessions.jsonl_store as jsonl_store
from core import JsonlSessionStore, MemorySessionStore, SessionQueryError
from core.sessions.jsonl_layout import encode_session_segment, project_key
from tests.conftest import compact, frame_offsets, say_assistant, say_user
from tests.strategies import js_strings

WRITER = Path(__file__).parent / "jsonl_writer.py"
REPO = Path(__file__).parent.parent


def file_of(store: JsonlSessionStore, session_id: str, cwd: str | None) -> Path:
    return store.session_path(session_id, cwd)


@pytest.fixture(params=["zstd", "none"])
def compression(request: pytest.FixtureRequest) -> str:
    return request.param


@pytest.fixture
def root(tmp_path: Path) -> Path:
    return tmp_path / "root"


def reopen(root: Path, compression: str) -> JsonlSessionStore:
    return JsonlSessionStore(root, compression=compression)  # type: ignore[arg-type]


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
        raw = b"".join(_frames(raw))
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


def _frames(raw: bytes) -> list[bytes]:
    out = []
    while raw:
        decompressor = zstandard.ZstdDecompressor().decompressobj()
        out.append(decompressor.decompress(raw))
        raw = decompressor.unused_data
    return out


def test_zstd_file_is_one_frame_for_the_header_and_one_per_batch(root: Path) -> None:
    store = reopen(root, "zstd")
    session = store.create("s")
    say_user(session, "a")
    session.append_batch([("turn/start", {"turn": 0}, None, None), ("turn/end", {"turn": 0}, None, None)])
    frames = _frames(file_of(store, "s", None).read_bytes())
    assert [frame.count(b"\n") for frame in frames] == [1, 1, 2]
    params = zstandard.get_frame_parameters(file_of(store, "s", None).read_bytes())
    assert params.has_checksum


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
    import asyncio

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


# --- crash footprints and corruption -----------------------------------------------------------------


def _three_batches(root: Path, compression: str) -> Path:
    store = reopen(root, compression)
    session = store.create("s", cwd="/p")
    say_user(session, "one")
    say_assistant(session, "two")
    say_user(session, "three")
    store.close()
    return file_of(store, "s", "/p")


def _tear_last_batch(path: Path, compression: str) -> None:
    """Cut the file inside its last batch, before that batch's line is complete."""
    raw = path.read_bytes()
    if compression == "zstd":
        start = frame_offsets(raw)[-1]
        path.write_bytes(raw[: start + 6])  # magic, frame header: no block of the batch survives
    else:
        path.write_bytes(raw[:-3])


async def test_torn_last_batch_loads_as_the_valid_prefix_and_is_not_modified(root: Path, compression: str) -> None:
    path = _three_batches(root, compression)
    _tear_last_batch(path, compression)
    before = (path.read_bytes(), path.stat().st_mtime_ns)
    surface = await reopen(root, compression).read_surface("s")
    assert [e.data["content"][0]["text"] for e in surface.events] == ["one", "two"]
    assert surface.captured_through_seq == 1
    assert (path.read_bytes(), path.stat().st_mtime_ns) == before


async def test_complete_lines_of_a_torn_zstd_frame_are_recovered_as_dsh_does(root: Path) -> None:
    path = _three_batches(root, "zstd")
    path.write_bytes(path.read_bytes()[:-3])  # only the frame's checksum is missing
    before = path.read_bytes()
    surface = await reopen(root, "zstd").read_surface("s")
    assert [e.data["content"][0]["text"] for e in surface.events] == ["one", "two", "three"]
    assert path.read_bytes() == before
    store = reopen(root, "zstd")
    session = store.get("s")  # the writer's repair: truncate the torn frame, write its lines again
    assert session is not None
    say_assistant(session, "four")
    store.close()
    assert len(frame_offsets(path.read_bytes())) == 5  # header, one, two, recovered three, four
    surface = await reopen(root, "zstd").read_surface("s")
    assert [e.data["content"][0]["text"] for e in surface.events] == ["one", "two", "three", "four"]


async def test_writer_reopening_after_a_crash_drops_the_torn_tail_and_continues(root: Path, compression: str) -> None:
    path = _three_batches(root, compression)
    _tear_last_batch(path, compression)
    store = reopen(root, compression)
    session = store.get("s")
    assert session is not None
    say_assistant(session, "four")
    store.close()
    surface = await reopen(root, compression).read_surface("s")
    assert [e.data["content"][0]["text"] for e in surface.events] == ["one", "two", "four"]


async def test_flipped_byte_before_the_tail_is_an_error_naming_file_and_offset(root: Path, compression: str) -> None:
    path = _three_batches(root, compression)
    raw = bytearray(path.read_bytes())
    if compression == "zstd":
        frames = frame_offsets(bytes(raw))
        target = frames[1] + (frames[2] - frames[1]) // 2
    else:
        target = raw.index(b'"two"')  # plain JSONL has no checksum: damage must break the JSON to be seen
    raw[target] ^= 0x5A
    path.write_bytes(bytes(raw))
    with pytest.raises(SessionQueryError) as caught:
        await reopen(root, compression).read_surface("s")
    assert caught.value.code == "SESSION_QUERY_CORRUPT_SESSION"
    assert str(path) in str(caught.value)
    assert "at byte" in str(caught.value)


async def test_one_corrupt_session_does_not_hide_the_other_99(root: Path) -> None:
    store = reopen(root, "zstd")
    for index in range(100):
        say_user(store.create(f"s{index:03}", cwd=f"/p/{index % 7}", created_at=index), f"hi {index}")
    store.close()
    broken = file_of(store, "s042", "/p/0")
    broken.write_bytes(b"\x00garbage" * 10)
    fresh = reopen(root, "zstd")
    records = await fresh.list_sessions()
    assert len(records) == 99
    assert "s042" not in {r.header.id for r in records}
    assert [problem.path for problem in fresh.problems] == [broken]
    assert records[0].header.id == "s099"


async def test_header_that_does_not_lead_back_to_its_path_is_reported(root: Path) -> None:
    store = reopen(root, "none")
    say_user(store.create("real", cwd="/a"), "x")
    store.close()
    moved = root / "--b--" / "real"
    moved.parent.mkdir()
    os.rename(root / "--a--" / "real", moved)
    fresh = reopen(root, "none")
    assert await fresh.list_sessions() == []
    assert "belongs at" in fresh.problems[0].message


async def test_wrong_encoding_and_flat_files_are_clear_errors(root: Path) -> None:
    store = reopen(root, "none")
    say_user(store.create("plain"), "x")
    store.close()
    (root / "_no-cwd" / "flat.jsonl").write_text("{}\n")
    zstd = reopen(root, "zstd")
    assert await zstd.list_sessions() == []
    messages = " | ".join(problem.message for problem in zstd.problems)
    plain = root / "_no-cwd" / "plain" / "session.jsonl"
    assert (
        f"{plain} is plain JSONL but this store was opened with compression 'zstd': open it with compression "
        "'none' (sessionref --compression none); sessionref import reads either"
    ) in messages
    assert [problem.code for problem in zstd.problems if problem.path == plain] == ["SESSION_QUERY_WRONG_ENCODING"]
    assert "flat session file" in messages
    with pytest.raises(SessionQueryError) as caught:
        await zstd.read_surface("plain")
    assert caught.value.code == "SESSION_QUERY_WRONG_ENCODING"


async def test_packed_chunk_rows_expand_and_a_malformed_one_is_an_error(root: Path) -> None:
    folder = root / "_no-cwd" / "packed"
    folder.mkdir(parents=True)
    rows = [
        {"type": "session", "version": 0, "id": "packed", "createdAt": 1, "delegationDepth": 0},
        {
            "type": "text-chunks",
            "seq0": 0,
            "time0": 100,
            "data": {"turn": 0, "step": 0, "index": 0, "dt": [5], "texts": ["Hel", "lo"]},
        },
        {
            "type": "tool-call-chunks",
            "seq0": 2,
            "time0": 200,
            "data": {"turn": 0, "step": 0, "index": 1, "id": "c", "name": "ls", "dt": [], "args": ["{}"]},
        },
    ]
    (folder / "session.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    store = reopen(root, "none")
    loaded = store.get("packed")
    assert loaded is not None
    assert [(e.seq, e.time, e.data["chunk"]) for e in loaded.events] == [
        (0, 100, {"type": "text-delta", "index": 0, "text": "Hel"}),
        (1, 105, {"type": "text-delta", "index": 0, "text": "lo"}),
        (2, 200, {"type": "tool-call-delta", "index": 1, "id": "c", "name": "ls", "argumentsDelta": "{}"}),
    ]
    store.close()
    header_bytes = len(json.dumps(rows[0])) + 1
    for texts, dts in ((["only one"], [5]), (["Hel", "lo"], [5, 7]), ([], [])):
        rows[1]["data"]["texts"], rows[1]["data"]["dt"] = texts, dts
        (folder / "session.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
        with pytest.raises(SessionQueryError, match="malformed text-chunks storage row") as caught:
            await reopen(root, "none").read_surface("packed")
        assert f"session.jsonl at byte {header_bytes}:" in str(caught.value)


# --- failures while writing ------------------------------------------------------------------------


@pytest.mark.parametrize("failing", ["write", "fsync"])
def test_failed_write_or_sync_leaves_the_file_byte_identical(
    root: Path, compression: str, failing: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    store = reopen(root, compression)
    session = store.create("s")
    say_user(session, "durable")
    path = file_of(store, "s", None)
    before = path.read_bytes()

    if failing == "write":
        real_write = os.write

        def half_then_full(fd: int, data: Any) -> int:
            real_write(fd, bytes(data[: len(data) // 2]))
            raise OSError(errno.ENOSPC, "No space left on device")

        monkeypatch.setattr(jsonl_store.os, "write", half_then_full)
    else:

        def no_sync(fd: int) -> None:
            raise OSError(errno.EIO, "Input/output error")

        monkeypatch.setattr(jsonl_store.os, "fsync", no_sync)
    with pytest.raises(SessionQueryError) as caught:
        say_assistant(session, "lost " * 100)
    monkeypatch.undo()
    assert caught.value.code == "SESSION_QUERY_WRITE_FAILED"
    assert path.read_bytes() == before
    assert len(session.events) == 1
    say_assistant(session, "after the disk recovered")
    store.close()
    assert [e.seq for e in reopen(root, compression).get("s").events] == [0, 1]  # type: ignore[union-attr]


def test_second_creator_of_the_same_id_fails_cleanly(root: Path) -> None:
    first, second = reopen(root, "zstd"), reopen(root, "zstd")
    a = first.create("same")
    b = second.create("same")
    say_user(a, "first wins")
    with pytest.raises(SessionQueryError) as caught:
        say_user(b, "second")
    assert caught.value.code in ("SESSION_QUERY_SESSION_EXISTS", "SESSION_QUERY_SESSION_LOCKED")
    assert [e.seq for e in a.events] == [0]
    first.close()
    assert len(reopen(root, "zstd").get("same").events) == 1  # type: ignore[union-attr]


def _spawn_writer(root: Path, compression: str, mode: str) -> subprocess.Popen[str]:
    env = dict(os.environ, PYTHONPATH=str(REPO))
    return subprocess.Popen(
        [sys.executable, str(WRITER), str(root), compression, mode], stdout=subprocess.PIPE, text=True, env=env
    )


def test_second_process_gets_a_clear_lock_error_and_the_first_is_unaffected(root: Path) -> None:
    store = reopen(root, "zstd")
    say_user(store.create("victim", cwd="/crash/test"), "exists")
    store.close()
    holder = _spawn_writer(root, "zstd", "hold")
    try:
        assert holder.stdout is not None
        assert holder.stdout.readline().strip() == "locked"
        with pytest.raises(SessionQueryError) as caught:
            reopen(root, "zstd").get("victim")
        assert caught.value.code == "SESSION_QUERY_SESSION_LOCKED"
        assert "open elsewhere" in str(caught.value)
        assert holder.poll() is None
    finally:
        holder.kill()
        holder.wait()
    assert reopen(root, "zstd").get("victim") is not None  # the lock died with its process


@pytest.mark.parametrize("compression_", ["zstd", "none"])
@pytest.mark.long
def test_sigkill_at_random_moments_loses_no_acknowledged_append(tmp_path: Path, compression_: str) -> None:
    rng = random.Random(20261202)
    for run in range(12):
        root = tmp_path / f"run{run}"
        acknowledged: list[int] = []
        for _round in range(2):  # a second writer resumes after the first crash
            writer = _spawn_writer(root, compression_, "loop")
            assert writer.stdout is not None
            deadline = time.monotonic() + rng.uniform(0.05, 0.4)
            first = writer.stdout.readline()  # the interpreter is up and appending
            if first:
                acknowledged.append(int(first))
            while time.monotonic() < deadline:
                line = writer.stdout.readline()
                if not line:
                    break
                acknowledged.append(int(line))
            writer.send_signal(signal.SIGKILL)
            acknowledged.extend(int(line) for line in writer.stdout.read().split())
            writer.wait()
        loaded = reopen(root, compression_).get("victim")
        assert loaded is not None
        seqs = [e.seq for e in loaded.events]
        assert seqs == list(range(len(seqs)))
        assert set(acknowledged) <= set(seqs)
        assert len(seqs) - max(acknowledged, default=-1) <= 2  # at most the unacknowledged in-flight batch


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


def test_store_folders_and_files_are_owner_only_whatever_the_umask(tmp_path: Path) -> None:
    from core.search.body_index import BodyIndex, index_path_beside

    old = os.umask(0o022)  # the usual umask: would give 755 folders and 644 files
    try:
        root = tmp_path / "new" / "store"
        store = JsonlSessionStore(root)
        say_user(store.create("private", cwd="/work/app"), "my API key is hunter2")
        say_user(store.create("no-cwd"), "and my customer list")
        path = store.session_path("private", "/work/app")
        assert (path.stat().st_mode & 0o777) == 0o600
        assert (path.parent.stat().st_mode & 0o777) == 0o700  # the session folder
        assert (path.parent.parent.stat().st_mode & 0o777) == 0o700  # the project folder
        assert (root.stat().st_mode & 0o777) == 0o700 and (root.parent.stat().st_mode & 0o777) == 0o700
        assert (store.session_path("no-cwd", None).stat().st_mode & 0o777) == 0o600
        store.close()
        index = BodyIndex(index_path_beside(root))
        index.open()
        index.sync([], lambda session_id: None)
        files = [p for p in index_path_beside(root).iterdir()]
        assert files and all((p.stat().st_mode & 0o777) == 0o600 for p in files), [oct(p.stat().st_mode) for p in files]
        assert (index_path_beside(root).stat().st_mode & 0o777) == 0o700
        index.close()
    finally:
        os.umask(old)


def test_an_existing_folder_keeps_its_mode(tmp_path: Path) -> None:
    tmp_path.chmod(0o755)
    store = JsonlSessionStore(tmp_path)
    say_user(store.create("x", cwd="/w"), "hi")
    store.close()
    assert (tmp_path.stat().st_mode & 0o777) == 0o755  # not ours to chmod: the CLI warns instead


def test_bytes_that_are_not_utf8_read_as_replacement_characters_as_dsh_reads_them(tmp_path: Path) -> None:
    """Differential fuzzing against rc.8: its reader decodes a damaged byte as U+FFFD and opens the
    log, so a log dsh opens opens here too (it used to be SESSION_QUERY_CORRUPT_SESSION)."""
    store = JsonlSessionStore(tmp_path, compression="none")
    say_user(store.create("bad-byte", cwd="/work/app"), "caf\u00e9 au lait")
    store.close()
    path = store.session_path("bad-byte", "/work/app")
    path.write_bytes(path.read_bytes().replace("é".encode(), b"\xe9"))  # Latin-1, not UTF-8
    surface = asyncio.run(JsonlSessionStore(tmp_path, compression="none").read_surface("bad-byte"))
    assert surface.events[0].data["content"][0]["text"] == "caf\ufffd au lait"


def test_a_reserved_zstd_frame_header_bit_is_damage_as_dsh_says(tmp_path: Path) -> None:
    store = JsonlSessionStore(tmp_path)
    session = store.create("flag", cwd="/work/app")
    say_user(session, "one")
    say_user(session, "two")
    store.close()
    path = store.session_path("flag", "/work/app")
    raw = bytearray(path.read_bytes())
    second = frame_offsets(bytes(raw))[1]
    raw[second + 4] |= 0x10  # the unused bit: zstd itself ignores it, dsh refuses the log
    path.write_bytes(bytes(raw))
    with pytest.raises(SessionQueryError) as caught:
        asyncio.run(JsonlSessionStore(tmp_path).read_surface("flag"))
    assert caught.value.code == "SESSION_QUERY_CORRUPT_SESSION"
    assert caught.value.offset == second + 4
    assert caught.value.detail == "reserved frame-header bit"


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
    from core.sessions.either_encoding import SESSION_QUERY_ENCODING_CONFLICT, EitherEncoding

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
