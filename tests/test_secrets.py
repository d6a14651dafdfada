"""The API key never leaves memory: refused up front when it cannot be a header, masked in every
spelling a server or a library could echo it in, and every backend failure ends the turn cleanly."""

from __future__ import annotations

import asyncio
import json
import traceback
from typing import Any
from urllib.parse import quote

import pytest

from core import AbortSignal, AgentLoop, ModelError, OpenAICompatibleModel
from core.agent.openai_model import MODEL_INVALID_API_KEY, secret_forms
from tests.conftest import text
from tests.test_agent import serve

KEY = "sk-FAKE-0123456789abcdefRECOGNISABLE"


def spellings(key: str) -> list[str]:
    return [form for form in secret_forms(key) if len(form) >= 8]


async def drain(model: OpenAICompatibleModel) -> None:
    async for _ in model.stream([{"role": "user", "content": [text("x")]}], signal=AbortSignal()):
        pass


@pytest.mark.parametrize(
    ("key", "why"),
    [
        (KEY + "\r", "line break"),
        (KEY + "\n", "line break"),
        ("sk-FAKE-ключ-0123456789", "not ASCII"),
        (KEY[:10] + "\x00" + KEY[10:], "control character"),
        (" " + KEY, "starts or ends with a space"),
    ],
)
async def test_a_key_that_cannot_be_a_header_is_refused_before_any_request(key: str, why: str) -> None:
    async def never(body: dict[str, Any], writer: asyncio.StreamWriter) -> None:
        raise AssertionError("no request may be made")

    server, url, requests = await serve(never)
    async with server:
        model = OpenAICompatibleModel(base_url=url, api_key=key, model="m", timeout=5)
        model.key_source = "MY_KEY"
        with pytest.raises(ModelError) as caught:
            await drain(model)
    assert not requests
    error = caught.value
    assert error.code == MODEL_INVALID_API_KEY and why in error.message and "MY_KEY" in error.message
    shown = "".join(traceback.format_exception(error)) + repr(error)
    assert not any(form in shown for form in spellings(key))


@pytest.mark.parametrize("spelling", ["raw", "json", "repr", "percent", "escaped"])
async def test_a_server_echoing_the_key_in_any_spelling_has_it_masked(spelling: str) -> None:
    key = KEY + "/+=\"\\'"  # valid in a header, spelt differently by JSON, repr, URLs and escapes
    forms = {
        "raw": key,
        "json": json.dumps(key)[1:-1],
        "repr": repr(key)[1:-1],
        "percent": quote(key, safe=""),
        "escaped": key.encode("unicode_escape").decode(),
    }
    assert len({forms["raw"], forms["json"], forms["percent"]}) == 3

    async def echo(body: dict[str, Any], writer: asyncio.StreamWriter) -> None:
        payload = json.dumps({"error": {"message": f"bad key {forms[spelling]} [/]"}}).encode()
        head = f"HTTP/1.1 401 X\r\ncontent-type: application/json\r\ncontent-length: {len(payload)}\r\n\r\n"
        writer.write(head.encode() + payload)
        await writer.drain()

    server, url, _ = await serve(echo)
    async with server:
        model = OpenAICompatibleModel(base_url=url, api_key=key, model="m", timeout=5)
        with pytest.raises(ModelError) as caught:
            await drain(model)
    shown = "".join(traceback.format_exception(caught.value)) + repr(caught.value)
    assert "bad key *** [/]" in caught.value.message
    assert not any(form in shown for form in spellings(key)), shown
    assert "RECOGNISABLE" not in shown


async def test_any_exception_of_a_backend_ends_the_turn_with_a_model_code(store) -> None:
    class Broken:
        name = "broken"
        provider = "test"

        async def stream(self, messages: Any, *, signal: Any, max_tokens: int | None = None) -> Any:
            yield {"type": "text-delta", "index": 0, "text": "half"}
            raise UnicodeEncodeError("ascii", "ключ", 0, 1, "ordinal not in range(128)")

    session = store.create("s")
    loop = AgentLoop(session, Broken())
    await loop.followup([text("hi")])
    await loop.when_idle()
    end = session.events[-1] if session.events[-1].type == "turn/end" else session.events[-2]
    assert end.type == "turn/end" and end.data["reason"]["kind"] == "error"
    assert end.data["reason"]["code"] == "MODEL_FAILED" and "UnicodeEncodeError" in end.data["reason"]["message"]
    assert loop.status == "idle"


async def test_a_bad_key_in_the_loop_ends_the_turn_and_the_log_never_holds_it(tmp_path) -> None:
    from core import JsonlSessionStore

    store = JsonlSessionStore(tmp_path)
    session = store.create("s")
    loop = AgentLoop(session, OpenAICompatibleModel(base_url="http://127.0.0.1:9", api_key=KEY + "\r", model="m"))
    await loop.followup([text("hi")])
    await loop.when_idle()
    assert session.events[-1].data["reason"]["code"] == MODEL_INVALID_API_KEY
    store.close()
    raw = b"".join(path.read_bytes() for path in tmp_path.rglob("session.jsonl*"))
    import zstandard

    plain = zstandard.ZstdDecompressor().decompressobj().decompress(raw)
    assert KEY.encode() not in plain and b"RECOGNISABLE" not in plain
