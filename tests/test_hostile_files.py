"""Hostile files in and around the store: symlinks, FIFOs, devices, endless lines and zstd bombs.

Nothing is written, truncated or created through a symlink; nothing blocks on a FIFO; every read
whose size comes from the data is bounded; every refusal has a code and ``doctor`` reports it.
"""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
import time
import tracemalloc
from pathlib import Path
from typing import Any

import pytest
import zstandard

from core import ClaudeCodeSource, CodexSource, JsonlSessionStore, SessionQueryError
from core.files import UNSAFE_PATH
from core.folder.doctor import diagnose, format_diagnosis
from core.search.body_index import BodyIndex
from core.search.index_values import INDEX_UNSAFE, IndexUnavailable
from tests.conftest import say_user


def written(root: Path, session_id: str = "s", cwd: str = "/p") -> Path:
    store = JsonlSessionStore(root)
    say_user(store.create(session_id, cwd=cwd), "hello")
    path = store.session_path(session_id, cwd)
    store.close()
    return path


def listing(root: Path) -> tuple[list[str], list[str]]:
    store = JsonlSessionStore(root)
    records = asyncio.run(store.list_sessions())
    problems = [problem.message for problem in store.problems]
    store.close()
    return [record.header.id for record in records], problems


# -- symlinks ------------------------------------------------------------------------------------------


def test_a_symlinked_session_file_is_never_read_written_or_repaired(tmp_path: Path) -> None:
    root = tmp_path / "store"
    path = written(root)
    victim = tmp_path / "victim.txt"
    victim.write_bytes(b"precious\n" * 3 + b"torn")  # would look like a torn tail to a repair
    path.unlink()
    path.symlink_to(victim)
    ids, problems = listing(root)
    assert ids == [] and any(UNSAFE_PATH in problem and "symbolic link" in problem for problem in problems)
    store = JsonlSessionStore(root)
    with pytest.raises(SessionQueryError) as refused:
        store.get("s")
    assert refused.value.code == UNSAFE_PATH
    with pytest.raises(SessionQueryError) as unreadable:
        asyncio.run(store.read_surface("s"))
    assert unreadable.value.code == UNSAFE_PATH
    store.close()
    assert victim.read_bytes() == b"precious\n" * 3 + b"torn"


def test_a_symlinked_project_folder_is_never_written_through(tmp_path: Path) -> None:
    root = tmp_path / "store"
    written(root, "first", "/p")
    outside = tmp_path / "outside"
    outside.mkdir()
    project = written(root, "other", "/q").parent.parent
    for child in sorted(project.rglob("*"), reverse=True):
        child.unlink() if child.is_file() else child.rmdir()
    project.rmdir()
    project.symlink_to(outside, target_is_directory=True)
    store = JsonlSessionStore(root)
    session = store.create("new", cwd="/q")
    with pytest.raises(SessionQueryError) as refused:
        say_user(session, "hi")
    assert refused.value.code == UNSAFE_PATH
    store.close()
    assert list(outside.iterdir()) == []
    ids, problems = listing(root)
    assert ids == ["first"] and any(UNSAFE_PATH in problem for problem in problems)


def test_the_index_never_follows_a_symlinked_shard_lock_or_folder(tmp_path: Path) -> None:
    target = tmp_path / "target.sqlite3"
    target.write_bytes(b"not yours")
    for name in ("shard-0.sqlite3", "shard-0.sqlite3.lock", "shard-1.sqlite3-wal"):
        folder = tmp_path / f"index-{name}"
        folder.mkdir()
        dangling = tmp_path / f"created-{name}"
        (folder / name).symlink_to(dangling if name.endswith(".lock") else target)
        index = BodyIndex(folder)
        with pytest.raises(IndexUnavailable) as refused:
            index.open()
        index.close()
        assert refused.value.code == INDEX_UNSAFE and "symbolic link" in refused.value.message
        assert not dangling.exists()
    (tmp_path / "elsewhere").mkdir()
    linked = tmp_path / "linked-index"
    linked.symlink_to(tmp_path / "elsewhere", target_is_directory=True)
    index = BodyIndex(linked)
    with pytest.raises(IndexUnavailable) as refused:
        index.open()
    index.close()
    assert refused.value.code == INDEX_UNSAFE and list((tmp_path / "elsewhere").iterdir()) == []
    assert target.read_bytes() == b"not yours"


def test_a_hard_link_in_the_index_folder_is_refused(tmp_path: Path) -> None:
    other = tmp_path / "someone.sqlite3"
    other.write_bytes(b"")
    (tmp_path / "index").mkdir()
    os.link(other, tmp_path / "index" / "shard-0.sqlite3")
    index = BodyIndex(tmp_path / "index")
    with pytest.raises(IndexUnavailable) as refused:
        index.open()
    index.close()
    assert refused.value.code == INDEX_UNSAFE and "hard link" in refused.value.message
    assert other.read_bytes() == b""


def test_a_foreign_sqlite_file_in_the_index_folder_is_replaced_not_converted(tmp_path: Path) -> None:
    import sqlite3

    (tmp_path / "index").mkdir()
    shard = tmp_path / "index" / "shard-0.sqlite3"
    foreign = sqlite3.connect(shard)
    foreign.execute("CREATE TABLE precious(x)")
    foreign.commit()
    foreign.close()
    index = BodyIndex(tmp_path / "index")
    index.open()  # not an index of ours: removed and rebuilt (it is only an index), never converted in place
    index.close()
    check = sqlite3.connect(shard)
    tables = {name for (name,) in check.execute("SELECT name FROM sqlite_master WHERE type='table'")}
    check.close()
    assert "precious" not in tables and "meta" in tables


# -- special files and unbounded reads ------------------------------------------------------------------


def test_a_fifo_where_a_session_file_belongs_never_blocks(tmp_path: Path) -> None:
    root = tmp_path / "store"
    path = written(root)
    path.unlink()
    os.mkfifo(path)
    started = time.monotonic()
    ids, problems = listing(root)
    assert ids == [] and any("FIFO" in problem and UNSAFE_PATH in problem for problem in problems)
    store = JsonlSessionStore(root)
    with pytest.raises(SessionQueryError) as refused:
        store.get("s")
    store.close()
    assert refused.value.code == UNSAFE_PATH
    diagnosis = diagnose(root)
    assert any(finding.kind == "unsafe_path" and finding.path == str(path) for finding in diagnosis.findings)
    assert diagnosis.attention
    assert time.monotonic() - started < 5


def test_get_on_a_folder_where_the_file_belongs_is_a_coded_error(tmp_path: Path) -> None:
    root = tmp_path / "store"
    path = written(root)
    path.unlink()
    path.mkdir()
    store = JsonlSessionStore(root)
    with pytest.raises(SessionQueryError) as refused:
        store.get("s")
    store.close()
    assert refused.value.code == UNSAFE_PATH and "folder" in refused.value.message


def test_the_cli_on_a_special_session_exits_4_without_a_traceback(tmp_path: Path) -> None:
    root = tmp_path / "store"
    path = written(root)
    path.unlink()
    os.mkfifo(path)
    done = subprocess.run(
        [sys.executable, "-m", "tui.cli", "--root", str(root), "--session", "s", "--no-external"],
        capture_output=True,
        text=True,
        timeout=30,
        cwd=Path(__file__).parent.parent,
        env={**os.environ, "HOME": str(tmp_path)},
    )
    assert done.returncode == 4, done.stderr
    assert UNSAFE_PATH in done.stderr and "Traceback" not in done.stderr


@pytest.mark.parametrize("compression", ["none", "zstd"])
def test_an_endless_first_line_is_read_no_further_than_the_header_limit(tmp_path: Path, compression: str) -> None:
    root = tmp_path / "store"
    store = JsonlSessionStore(root, compression=compression)  # type: ignore[arg-type]
    path = store.session_path("huge", "/p")
    store.close()
    path.parent.mkdir(parents=True)
    endless = b"x" * (64 << 20)  # 64 MiB without a newline (a zstd bomb when compressed)
    data = zstandard.ZstdCompressor().compress(endless) if compression == "zstd" else endless
    path.write_bytes(data)
    tracemalloc.start()
    started = time.monotonic()
    reader = JsonlSessionStore(root, compression=compression)  # type: ignore[arg-type]
    ids = [record.header.id for record in asyncio.run(reader.list_sessions())]
    problems = [problem.message for problem in reader.problems]
    reader.close()
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    assert ids == [] and any("256 KiB" in problem for problem in problems), problems
    assert peak < 8 << 20, peak  # a few MiB at most, never the 64 MiB
    assert time.monotonic() - started < 5


def test_other_tools_fifos_and_endless_lines_never_block_or_balloon(tmp_path: Path) -> None:
    projects = tmp_path / "claude" / "projects" / "-p"
    projects.mkdir(parents=True)
    os.mkfifo(projects / "11111111-1111-1111-1111-111111111111.jsonl")
    endless = b'{"type": "user", "x": "' + b"y" * (32 << 20)
    (projects / "22222222-2222-2222-2222-222222222222.jsonl").write_bytes(endless)
    (projects / "33333333-3333-3333-3333-333333333333.jsonl").symlink_to("/dev/zero")
    source = ClaudeCodeSource(tmp_path / "claude")
    tracemalloc.start()
    started = time.monotonic()
    records = asyncio.run(source.list_sessions())
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    assert records == []
    assert len(source.problems) == 3
    assert peak < 8 << 20, peak
    assert time.monotonic() - started < 5
    # Codex's rollouts, the same.
    day = tmp_path / "codex" / "sessions" / "2026" / "12" / "03"
    day.mkdir(parents=True)
    os.mkfifo(day / "rollout-2026-12-03T10-00-00-11111111-1111-1111-1111-111111111111.jsonl")
    (day / "rollout-2026-12-03T10-00-01-22222222-2222-2222-2222-222222222222.jsonl").write_bytes(endless)
    codex = CodexSource(tmp_path / "codex")
    tracemalloc.start()
    assert asyncio.run(codex.list_sessions()) == []
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    assert len(codex.problems) == 2 and peak < 8 << 20


def test_doctor_reports_symlinks_and_special_files_and_prints_names_escaped(tmp_path: Path) -> None:
    root = tmp_path / "store"
    path = written(root)
    (path.parent / "evil\x1b]52;c;aGk=\x07\u202e.jsonl").symlink_to("/etc/passwd")
    os.mkfifo(path.parent.parent / "pipe")
    (root / "linked").symlink_to(tmp_path, target_is_directory=True)
    diagnosis = diagnose(root)
    kinds = sorted(finding.path.rsplit("/", 1)[1] for finding in diagnosis.findings if finding.kind == "unsafe_path")
    assert kinds == sorted(["evil\x1b]52;c;aGk=\x07\u202e.jsonl", "pipe", "linked"])
    text = format_diagnosis(diagnosis)
    assert "\x1b" not in text and "\x07" not in text and "\u202e" not in text
    assert "evil\\x1b]52;c;aGk=\\x07\\u202e.jsonl" in text


# -- other agents' files of shapes no version of the tool writes -------------------------------------------


def _gemini_session(chats: Path, name: str, session_id: str, text: str, messages: object = None) -> Path:
    record = {"sessionId": session_id, "projectHash": "h", "startTime": "2026-12-01T10:00:00Z"}
    record["messages"] = messages if messages is not None else [{"id": "m1", "type": "user", "content": text}]
    path = chats / name
    path.write_text(json.dumps(record) + "\n")
    return path


def test_one_agent_file_of_an_unexpected_shape_hides_nothing_else(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from core import GeminiCliSource
    from core.errors import SESSION_QUERY_INVALID_SURFACE

    chats = tmp_path / "gemini" / "tmp" / "proj" / "chats"
    chats.mkdir(parents=True)
    _gemini_session(chats, "session-1.jsonl", "number", "", messages=5)  # "messages" a number
    _gemini_session(chats, "session-2.jsonl", "good", "the storage design")
    odd = _gemini_session(chats, "session-3.jsonl", "odd", "anything")
    # projects.json naming a folder by a key that is not text SQLite or a hash could take
    (tmp_path / "gemini" / "projects.json").write_text('{"projects": {"/work/\\ud800x": "proj"}}')
    source = GeminiCliSource(tmp_path / "gemini")
    ids = {record.header.id for record in source.listing()}
    assert {"gemini:good", "gemini:number"} <= ids
    assert source.session("gemini:good").title == "the storage design"
    # Any mapping failure (a shape the reader never met) is that file's problem, with a code.
    real_header, real_read = GeminiCliSource._header, GeminiCliSource._read

    def header(self: GeminiCliSource, path: Path) -> Any:
        if path == odd:
            raise TypeError("an unexpected shape")
        return real_header(self, path)

    monkeypatch.setattr(GeminiCliSource, "_header", header)
    fresh = GeminiCliSource(tmp_path / "gemini")
    ids = {record.header.id for record in fresh.listing()}
    assert "gemini:good" in ids and "gemini:odd" not in ids
    assert [problem.message for problem in fresh.problems if problem.path == odd] == [
        "unreadable: a record of an unexpected shape (TypeError)"
    ]

    def read(self: GeminiCliSource, path: Path, header: Any) -> Any:
        raise KeyError("an unexpected shape")

    monkeypatch.setattr(GeminiCliSource, "_read", read)
    with pytest.raises(SessionQueryError) as raised:
        fresh.session("gemini:good")
    assert raised.value.code == SESSION_QUERY_INVALID_SURFACE
    monkeypatch.setattr(GeminiCliSource, "_read", real_read)
    # The command line over that folder: the good session found, no traceback.
    (tmp_path / "store").mkdir()
    agents = ("claude", "codex", "qwen", "opencode", "kilo", "copilot")
    others = [f"--{agent}-root={tmp_path / 'none'}" for agent in agents]
    command = ["search", "storage", "--root", str(tmp_path / "store"), "--gemini-root", str(tmp_path / "gemini")]
    done = subprocess.run(
        [sys.executable, "-m", "tui.cli", *command, *others],
        capture_output=True,
        text=True,
        timeout=60,
        cwd=Path(__file__).parent.parent,
        env={**os.environ, "HOME": str(tmp_path)},
    )
    assert done.returncode == 0, done.stderr
    assert "gemini:good" in done.stdout and "Traceback" not in done.stderr


def test_a_gigabyte_line_costs_a_bounded_read_and_the_rest_is_read(tmp_path: Path) -> None:
    from core import GeminiCliSource
    from core.sessions.sources.files import LINE_BYTES

    chats = tmp_path / "gemini" / "tmp" / "proj" / "chats"
    chats.mkdir(parents=True)
    first = {"sessionId": "big", "projectHash": "h", "startTime": "2026-12-01T10:00:00Z"}
    later = {"$set": {}, "id": "m1", "type": "user", "content": "after the zeros"}
    path = chats / "session-1.jsonl"
    with path.open("wb") as handle:
        handle.write(json.dumps(first).encode() + b"\n")
        handle.write(b"\0" * (4 * LINE_BYTES) + b"\n")  # (sparse in spirit: 64 MiB of zeros, one line)
        handle.write(json.dumps(later).encode() + b"\n")
    source = GeminiCliSource(tmp_path / "gemini")
    assert [record.header.id for record in source.listing()] == ["gemini:big"]
    tracemalloc.start()
    session = source.session("gemini:big")
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    assert peak < 2 * LINE_BYTES + (8 << 20), peak  # one line's worth at most, not the file
    assert session.problems >= 1  # the endless line, skipped and counted
