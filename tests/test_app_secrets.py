"""The API key never leaves the process's memory: not into the store, the index, the screen (a
snapshot of it), the logs, the model view or the messages sent, even when the server echoes it."""

from __future__ import annotations

import asyncio
import contextlib
import io
import json
import logging
import sqlite3
from pathlib import Path
from typing import Any

import pytest
import zstandard

from core import OpenAICompatibleModel
from tests.support.app_harness import SIZE, open_app, settle, type_text, until
from tests.test_agent import FAKE_KEY, chunk, serve, sse_response
from tui.services.preview_report import PreviewReport


def _plain(data: bytes) -> bytes:
    """Bytes as stored, or decompressed when they are zstd (session frames, index text chunks)."""
    try:
        reader = zstandard.ZstdDecompressor().stream_reader(io.BytesIO(data), read_across_frames=True)
        return reader.read()
    except zstandard.ZstdError:
        return data


def every_byte_under(folder: Path) -> bytes:
    """Every file under ``folder`` in plain bytes: session logs decompressed, and every value of
    every table of the SQLite index files (its text chunks decompressed)."""
    out = []
    for path in sorted(folder.rglob("*")):
        if not path.is_file():
            continue
        raw = path.read_bytes()
        out.append(_plain(raw))
        if raw.startswith(b"SQLite format 3"):
            with contextlib.closing(sqlite3.connect(f"file:{path}?mode=ro", uri=True)) as db:
                tables = [row[0] for row in db.execute("select name from sqlite_master where type='table'")]
                for table in tables:
                    try:
                        rows = db.execute(f'select * from "{table}"').fetchall()
                    except sqlite3.OperationalError:  # FTS5 shadow tables that cannot be scanned
                        continue
                    for row in rows:
                        for value in row:
                            if isinstance(value, bytes):
                                out.append(_plain(value))
                            elif isinstance(value, str):
                                out.append(value.encode())
    return b"".join(out)


async def test_the_key_is_nowhere_but_in_the_authorization_header(
    demo_template: Path, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)  # httpx, httpcore, asyncio and everything else at their most verbose

    async def handler(body: dict[str, Any], writer: asyncio.StreamWriter) -> None:
        if len(requests) == 1:
            writer.write(sse_response([chunk("an answer"), "[DONE]"]))
        else:  # a careless server: the error repeats the request's header, key and all
            payload = json.dumps({"error": {"message": f"denied: {body['_auth']}"}}).encode()
            writer.write(b"HTTP/1.1 401 X\r\ncontent-length: %d\r\n\r\n%s" % (len(payload), payload))
        await writer.drain()

    server, url, requests = await serve(handler)
    model = OpenAICompatibleModel(base_url=url, api_key=FAKE_KEY, model="m", timeout=5)
    app, _store = open_app(demo_template, tmp_path / "store", model=model)
    async with server, app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await type_text(pilot, "compare @ret")
        await until(pilot, lambda: app.chat.picker.is_open and app.chat.picker.candidates)
        await pilot.press("tab")
        await pilot.press("enter")
        await until(pilot, lambda: app.workspace.agent.status == "idle" and len(requests) == 1)
        await until(pilot, lambda: any(e.type == "assistant/message" for e in app.workspace.session.events))
        await type_text(pilot, "again")
        await pilot.press("enter")
        await until(pilot, lambda: any("MODEL_UNAUTHORIZED" in n.message for n in app._notifications))
        shown = [n.message for n in app._notifications]
        screen = app.export_screenshot()
        preview = PreviewReport(draft="x", max_references=3, contexts=[], content=[]).model_visible_text()
    assert all(FAKE_KEY in request["_auth"] for request in requests)  # it was sent, both times
    assert any("Bearer ***" in message for message in shown), shown  # echoed, and masked
    for message in shown:
        assert FAKE_KEY not in message
    assert FAKE_KEY not in screen
    sent = json.dumps([{k: v for k, v in request.items() if k != "_auth"} for request in requests])
    assert "Retention" in sent  # the referenced snapshot went to the model...
    assert FAKE_KEY not in sent  # ...and the key was never part of what the model reads
    assert FAKE_KEY not in preview
    stored = every_byte_under(tmp_path / "store")  # sessions, body index, everything beside them
    assert b"MODEL_UNAUTHORIZED" in stored and b"an answer" in stored  # the check reads plain bytes
    assert FAKE_KEY.encode() not in stored
    assert caplog.records  # the logs were really captured
    assert FAKE_KEY not in caplog.text
    for record in caplog.records:
        assert FAKE_KEY not in repr(record.__dict__)
