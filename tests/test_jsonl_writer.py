"""Writing the JSONL store (``core.folder.jsonl_writer``): failed writes leave the file as it was,
one creator, one writer per session across processes, SIGKILL at any moment, owner-only folders and
files.
"""

from __future__ import annotations

import errno
import os
import random
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

import core.folder.jsonl_store as jsonl_store
from core import JsonlSessionStore, SessionQueryError
from tests.conftest import say_assistant, say_user
from tests.support.jsonl_harness import file_of, reopen

WRITER = Path(__file__).parent / "support" / "jsonl_writer.py"
REPO = Path(__file__).parent.parent

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
