"""sessionref's reference engine and request body against the real DeepSeek Harness code (npm
0.1.0-rc.8): the snapshot bytes and stats, the reference errors' codes and messages, URIs and
mentions, the DeepSeek request body, the pinned Node and packages.

Skips without the packages (see tests/test_interop.py), unless ``SESSIONREF_REQUIRE_INTEROP=1``.
"""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import subprocess
from typing import Any

import pytest

from core import (
    MemorySessionStore,
    OpenAICompatibleModel,
    SessionReferenceError,
    SessionReferenceService,
)
from core.abort import AbortController
from core.agent.wire import wire_messages
from tests.conftest import compact, text
from tests.support.rc8 import INTEROP, NODE, dsh, rc8_snapshots
from tests.test_interop import ODD_IDS

if NODE is None:
    if os.environ.get("SESSIONREF_REQUIRE_INTEROP") == "1":
        raise RuntimeError("SESSIONREF_REQUIRE_INTEROP=1 but tests/interop has no node_modules: run make interop")
    pytestmark = pytest.mark.skip(reason="the dsh packages are not installed (make interop needs Node.js and npm)")


# --- the reference engine: the snapshot bytes ---------------------------------------------------------


async def _sources() -> tuple[MemorySessionStore, dict[str, Any]]:
    store = MemorySessionStore(clock=iter(range(10**12, 10**12 + 10**6)).__next__)
    specs = {
        "short": ["hi <b>", "hello"],
        "long": ["x" * 5_000, "y" * 3_000 + "😀" * 500, "界" * 2_000, "tail"],
        "many": [f"message {i} " + "z" * (i * 37 % 400) for i in range(120)],
    }
    for session_id, texts in specs.items():
        session = store.create(session_id, cwd="/work/alpha" if session_id != "many" else None)
        for index, words in enumerate(texts):
            role = "user/message" if index % 2 == 0 else "assistant/message"
            data: dict[str, Any] = (
                {"content": [text(words)], "source": {"kind": "user"}}
                if role == "user/message"
                else {"turn": 1, "step": 1, "content": [text(words)], "provenance": {"provider": "p", "model": "m"}}
            )
            session.append(role, data, surface_op="append")
        if session_id == "long":
            compact(session, "checkpoint " + "c" * 900)
            session.append(
                "user/message", {"content": [text("after")], "source": {"kind": "user"}}, surface_op="append"
            )
    return store, await rc8_snapshots(store, list(specs))


@pytest.mark.parametrize("budget", [65_536, 4_000, 1_500, 400, 120])
async def test_prepared_snapshot_text_and_stats_are_byte_identical_to_dsh(budget: int) -> None:
    store, snapshots = await _sources()
    target = store.create("target", cwd="/work/alpha")
    references = [{"sessionId": "long", "label": "The [long] one"}, {"sessionId": "short"}, {"sessionId": "many"}]
    theirs = dsh(
        "prepare", target="target", references=references, snapshots=snapshots, config={"maxReferenceBytes": budget}
    )
    service = SessionReferenceService(store, {"maxReferenceBytes": budget})
    if not theirs["ok"]:
        with pytest.raises(SessionReferenceError) as caught:
            await service.prepare(target, [text("q")], references)
        assert (caught.value.code, str(caught.value)) == (theirs["code"], theirs["message"])
        return
    prepared = await service.prepare(target, [text("q")], references)
    (context,) = prepared.contexts
    assert context.content[0]["text"] == theirs["text"]
    assert context.meta["references"] == theirs["references"]  # type: ignore[index]


@pytest.mark.parametrize(
    "references",
    [
        [{"sessionId": "target"}],
        [{"sessionId": "a"}, {"sessionId": "b"}, {"sessionId": "c"}, {"sessionId": "d"}],
        [{"sessionId": 3}],
        [{"sessionId": "missing"}],
    ],
)
async def test_reference_errors_have_dsh_codes_and_messages(references: list[Any]) -> None:
    store, snapshots = await _sources()
    target = store.create("target")
    theirs = dsh("prepare", target="target", references=references, snapshots=snapshots, config={})
    with pytest.raises(SessionReferenceError) as caught:
        await SessionReferenceService(store).prepare(target, [text("q")], references, AbortController().signal)
    assert not theirs["ok"]
    assert caught.value.code == theirs["code"]
    if caught.value.code != "SESSION_REFERENCE_READ_FAILED":  # the store's own not-found wording differs
        assert str(caught.value) == theirs["message"]


def test_uris_and_mentions_match_dsh() -> None:
    ids = [*ODD_IDS, "", "\ud800 lone", "line\nbreak", "]\\["]
    texts = [
        "see dsh-session:InNvdXJjZSI.",
        "see dsh-session:IiJ",
        "what is a dsh-session: URI?",
        "@[a \\] b](dsh-session:InNvdXJjZSI) and dsh-session:IiI",
        "@[bad](dsh-session:%%%)",
    ]
    from core import encode_session_reference_uri, parse_session_reference_text

    theirs = dsh("uri", ids=ids, texts=texts)
    assert [encode_session_reference_uri(session_id) for session_id in ids] == theirs["uris"]
    for sample, expected in zip(texts, theirs["parsed"], strict=True):
        if not expected["ok"]:
            with pytest.raises(SessionReferenceError) as caught:
                parse_session_reference_text(sample)
            assert caught.value.code == expected["code"]
            continue
        parsed = parse_session_reference_text(sample)
        assert parsed.text == expected["value"]["text"]
        assert [ref.to_wire() for ref in parsed.references] == expected["value"]["references"]


# --- the request body a DeepSeek model receives --------------------------------------------------------


HISTORY: list[dict[str, Any]] = [
    {"role": "user", "content": [text("## Referenced sessions\n..."), text("\n\n## My request:\n"), text("what now?")]},
    {
        "role": "assistant",
        "content": [
            {"type": "reasoning", "text": "hmm"},
            text("Let me look."),
            {"type": "tool-call", "id": "c1", "name": "ls", "arguments": "{}"},
        ],
    },
    {
        "role": "user",
        "content": [{"type": "tool-result", "toolCallId": "c1", "content": [text("a.py")], "isError": False}],
    },
    {"role": "user", "content": [{"type": "tool-result", "toolCallId": "c2", "content": [], "isError": True}]},
    {"role": "assistant", "content": []},
    {"role": "user", "content": [text("one"), text("two")]},
]


def test_wire_messages_equal_what_dsh_deepseek_adapter_sends() -> None:
    body = dsh("serialize", messages=HISTORY, system="be brief")
    assert wire_messages(HISTORY, system="be brief") == body["messages"]


async def test_our_request_body_equals_dsh_request_body() -> None:
    bodies: list[dict[str, Any]] = []

    async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        head = await reader.readuntil(b"\r\n\r\n")
        length = next(
            int(line.split(b":")[1]) for line in head.split(b"\r\n") if line.lower().startswith(b"content-length")
        )
        bodies.append(json.loads(await reader.readexactly(length)))
        writer.write(b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\n\r\ndata: [DONE]\n\n")
        await writer.drain()
        writer.close()

    server = await asyncio.start_server(handle, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    async with server:
        model = OpenAICompatibleModel(base_url=f"http://127.0.0.1:{port}", api_key="k", model="deepseek-chat")
        async for _ in model.stream(HISTORY, signal=AbortController().signal):
            pass
    theirs = dsh("serialize", messages=HISTORY)
    assert bodies == [theirs]


def test_node_and_packages_are_the_pinned_ones() -> None:
    assert NODE is not None
    version = subprocess.run([NODE, "--version"], capture_output=True, text=True, check=True).stdout.strip()
    assert version.startswith("v22."), version
    lock = json.loads((INTEROP / "package-lock.json").read_text())
    assert lock["packages"]["node_modules/@deepseek-ai/dsh-session-persistence-jsonl"]["version"] == "0.1.0-rc.8"
    assert shutil.which("npm") is not None or os.environ.get("SESSIONREF_REQUIRE_INTEROP") != "1"
