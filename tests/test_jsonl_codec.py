"""Reading the JSONL store's bytes (``core.folder.jsonl_codec``): frames, crash footprints,
corruption reported with file and offset, packed chunk rows, bytes dsh reads as it reads them.
"""

from __future__ import annotations

import asyncio
import json
import os
from pathlib import Path

import pytest
import zstandard

from core import JsonlSessionStore, SessionQueryError
from tests.conftest import frame_offsets, say_assistant, say_user
from tests.support.jsonl_harness import file_of, reopen, tear_last_batch, three_batches, zstd_frames


def test_zstd_file_is_one_frame_for_the_header_and_one_per_batch(root: Path) -> None:
    store = reopen(root, "zstd")
    session = store.create("s")
    say_user(session, "a")
    session.append_batch([("turn/start", {"turn": 0}, None, None), ("turn/end", {"turn": 0}, None, None)])
    frames = zstd_frames(file_of(store, "s", None).read_bytes())
    assert [frame.count(b"\n") for frame in frames] == [1, 1, 2]
    params = zstandard.get_frame_parameters(file_of(store, "s", None).read_bytes())
    assert params.has_checksum


async def test_torn_last_batch_loads_as_the_valid_prefix_and_is_not_modified(root: Path, compression: str) -> None:
    path = three_batches(root, compression)
    tear_last_batch(path, compression)
    before = (path.read_bytes(), path.stat().st_mtime_ns)
    surface = await reopen(root, compression).read_surface("s")
    assert [e.data["content"][0]["text"] for e in surface.events] == ["one", "two"]
    assert surface.captured_through_seq == 1
    assert (path.read_bytes(), path.stat().st_mtime_ns) == before


async def test_complete_lines_of_a_torn_zstd_frame_are_recovered_as_dsh_does(root: Path) -> None:
    path = three_batches(root, "zstd")
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
    path = three_batches(root, compression)
    tear_last_batch(path, compression)
    store = reopen(root, compression)
    session = store.get("s")
    assert session is not None
    say_assistant(session, "four")
    store.close()
    surface = await reopen(root, compression).read_surface("s")
    assert [e.data["content"][0]["text"] for e in surface.events] == ["one", "two", "four"]


async def test_flipped_byte_before_the_tail_is_an_error_naming_file_and_offset(root: Path, compression: str) -> None:
    path = three_batches(root, compression)
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
