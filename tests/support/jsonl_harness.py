"""Helpers of the JSONL store tests: where a session's file is, reopening a store, frames, torn batches."""

from __future__ import annotations

from pathlib import Path

import zstandard

from core import JsonlSessionStore
from tests.conftest import frame_offsets, say_assistant, say_user


def file_of(store: JsonlSessionStore, session_id: str, cwd: str | None) -> Path:
    return store.session_path(session_id, cwd)


def reopen(root: Path, compression: str) -> JsonlSessionStore:
    return JsonlSessionStore(root, compression=compression)  # type: ignore[arg-type]


def zstd_frames(raw: bytes) -> list[bytes]:
    """The decompressed frames of a zstd session file, in order."""
    out = []
    while raw:
        decompressor = zstandard.ZstdDecompressor().decompressobj()
        out.append(decompressor.decompress(raw))
        raw = decompressor.unused_data
    return out


def three_batches(root: Path, compression: str) -> Path:
    """A session written in three batches; its file."""
    store = reopen(root, compression)
    session = store.create("s", cwd="/p")
    say_user(session, "one")
    say_assistant(session, "two")
    say_user(session, "three")
    store.close()
    return file_of(store, "s", "/p")


def tear_last_batch(path: Path, compression: str) -> None:
    """Cut the file inside its last batch, before that batch's line is complete."""
    raw = path.read_bytes()
    if compression == "zstd":
        start = frame_offsets(raw)[-1]
        path.write_bytes(raw[: start + 6])  # magic, frame header: no block of the batch survives
    else:
        path.write_bytes(raw[:-3])
