"""The agent loop and model backends (API.md "Agent loop and models", CONTRACT §8)."""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any

import pytest

from core import (
    AbortSignal,
    AgentLoop,
    EchoModel,
    JsonlSessionStore,
    ModelError,
    OpenAICompatibleModel,
    ReferenceInput,
    SessionReferenceService,
    derive_messages,
)
from core.agent.compaction import CompactionError
from tests.conftest import say_assistant, say_user, text


class ScriptedModel:
    """A model that streams given pieces, optionally waiting on an event between them."""

    name = "scripted"
    provider = "test"

    def __init__(self, pieces: list[str], *, gate: asyncio.Event | None = None, fail: ModelError | None = None) -> None:
        self.pieces = pieces
        self.gate = gate
        self.fail = fail
        self.seen: list[list[dict[str, Any]]] = []
        self.closed = 0

    async def stream(self, messages: list[dict[str, Any]], *, signal: AbortSignal) -> AsyncIterator[dict[str, Any]]:
        self.seen.append(messages)
        try:
            for index, piece in enumerate(self.pieces):
                if index and self.gate is not None:
                    await self.gate.wait()
                yield {"type": "text-delta", "index": 0, "text": piece}
            if self.fail is not None:
                raise self.fail
        finally:
            self.closed += 1


def types(session: Any) -> list[str]:
    return [event.type for event in session.events]


async def test_a_turn_writes_the_contract_event_sequence(store) -> None:
    session = store.create("chat")
    loop = AgentLoop(session, ScriptedModel(["Hel", "lo"]))
    await loop.followup([text("hi there")])
    await loop.when_idle()
    assert types(session) == [
        "turn/start",
        "user/message",
        "step/start",
        "assistant/chunk",
        "assistant/chunk",
        "assistant/message",
        "step/end",
        "turn/end",
        "session/title",
    ]
    events = session.events
    assert events[0].data == {"turn": 1, "trigger": {"kind": "message", "source": {"kind": "user"}}}
    assert events[5].data["content"] == [text("Hello")]
    assert events[5].data["provenance"] == {"provider": "test", "model": "scripted"}
    assert events[2].data == {"turn": 1, "step": 1}
    assert events[7].data == {"turn": 1, "reason": {"kind": "completed"}}
    assert events[8].data == {"title": "hi there", "messageSeqs": [1], "source": {"kind": "fallback"}}
    assert loop.status == "idle"


async def test_model_receives_baked_content_verbatim_never_the_envelope(store) -> None:
    source = store.create("source")
    say_user(source, "the secret plan")
    target = store.create("target")
    prepared = await SessionReferenceService(store).prepare(target, [text("use @source")], [ReferenceInput("source")])
    model = ScriptedModel(["ok"])
    loop = AgentLoop(target, model)
    await loop.followup(prepared.content, prepared.contexts)
    await loop.when_idle()
    (messages,) = model.seen
    assert messages == [{"role": "user", "content": target.events[1].data["content"]}]
    assert "envelope" not in json.dumps(messages)
    assert "the secret plan" in messages[0]["content"][0]["text"]
    title = target.title
    assert title is not None
    assert title.title == "use @source"  # never from the snapshot


async def test_followup_while_running_is_queued_for_the_next_turn(store) -> None:
    gate = asyncio.Event()
    session = store.create("chat")
    loop = AgentLoop(session, ScriptedModel(["a", "b"], gate=gate))
    await loop.followup([text("first")])
    await loop.followup([text("second")])
    assert loop.status == "running"
    gate.set()
    await loop.when_idle()
    starts = [e.data for e in session.events if e.type == "turn/start"]
    assert [s["turn"] for s in starts] == [1, 2]
    prompts = [e.data["content"][0]["text"] for e in session.events if e.type == "user/message"]
    assert prompts == ["first", "second"]


async def test_steering_while_streaming_is_recorded_after_the_step_and_answered(store) -> None:
    gate = asyncio.Event()
    session = store.create("chat")
    model = ScriptedModel(["part one", " part two"], gate=gate)
    loop = AgentLoop(session, model)
    await loop.followup([text("start")])
    await asyncio.sleep(0.01)
    await loop.steer([text("also mention X")])
    gate.set()
    await loop.when_idle()
    kinds = types(session)
    steer_at = kinds.index("steering/message")
    assert kinds[steer_at - 1] == "step/end"
    assert kinds[steer_at + 1] == "step/start"
    steering = session.events[steer_at]
    assert steering.data["turn"] == 1
    assert steering.surface_op == "append"
    assert kinds.count("turn/start") == 1
    assert [e.data["step"] for e in session.events if e.type == "step/start"] == [1, 2]
    assert model.seen[1][-2]["role"] == "assistant"
    assert model.seen[1][-1]["content"] == [text("also mention X")]


async def test_cancel_mid_stream_keeps_what_arrived_and_ends_aborted(store) -> None:
    gate = asyncio.Event()
    session = store.create("chat")
    model = ScriptedModel(["partial", " never"], gate=gate)
    loop = AgentLoop(session, model)
    await loop.followup([text("go")])
    await asyncio.sleep(0.01)
    loop.cancel()
    await asyncio.wait_for(loop.when_idle(), 30)  # the gate never opens: ending at all is not waiting for it
    message = next(e for e in session.events if e.type == "assistant/message")
    assert message.data["content"] == [text("partial")]
    assert session.events[-1].type == "turn/end"
    assert session.events[-1].data["reason"] == {"kind": "aborted"}
    assert session.title is None  # only a completed turn names the session
    assert model.closed == 1


async def test_model_error_ends_the_turn_with_code_and_message(store) -> None:
    session = store.create("chat")
    loop = AgentLoop(session, ScriptedModel(["so far"], fail=ModelError("boom (HTTP 500)", "MODEL_SERVER_ERROR")))
    await loop.followup([text("go")])
    await loop.when_idle()
    end = session.events[-1]
    assert end.data == {
        "turn": 1,
        "reason": {"kind": "error", "step": 1, "message": "boom (HTTP 500)", "code": "MODEL_SERVER_ERROR"},
    }
    assert next(e for e in session.events if e.type == "assistant/message").data["content"] == [text("so far")]


async def test_replay_from_disk_derives_the_same_history(tmp_path) -> None:
    store = JsonlSessionStore(tmp_path / "root")
    source = store.create("source", cwd="/p")
    say_user(source, "context to carry")
    say_assistant(source, "noted")
    target = store.create("target", cwd="/p")
    loop = AgentLoop(target, EchoModel())
    prepared = await SessionReferenceService(store).prepare(target, [text("recap @source")], [ReferenceInput("source")])
    await loop.followup(prepared.content, prepared.contexts)
    await loop.when_idle()
    live = target.derive_messages()
    store.close()
    reopened = JsonlSessionStore(tmp_path / "root").get("target")
    assert reopened is not None
    assert derive_messages(reopened.events) == live
    assert [e.to_wire() for e in reopened.events] == [e.to_wire() for e in target.events]


async def test_echo_model_describes_the_request_and_each_reference(store) -> None:
    source = store.create("source")
    for index in range(40):
        say_user(source, f"message {index} " + "x" * 400)
    target = store.create("target")
    service = SessionReferenceService(store, {"maxReferenceBytes": 4096})
    prepared = await service.prepare(target, [text("summarise @Source")], [ReferenceInput("source", "Source")])
    loop = AgentLoop(target, EchoModel())
    await loop.followup(prepared.content, prepared.contexts)
    await loop.when_idle()
    reply = next(e for e in target.events if e.type == "assistant/message").data["content"][0]["text"]
    kept = prepared.contexts[0].meta["references"][0]["retainedMessages"]
    assert reply.startswith("You asked: summarise @Source")
    assert f"**Source** (`source`): {kept} messages kept" in reply
    assert sum(1 for e in target.events if e.type == "assistant/chunk") >= 2


# --- OpenAI-compatible backend against a local SSE server -----------------------------------------


Handler = Callable[[dict[str, Any], asyncio.StreamWriter], Awaitable[None]]


async def serve(handler: Handler) -> tuple[asyncio.base_events.Server, str, list[dict[str, Any]]]:
    requests: list[dict[str, Any]] = []

    async def on_connect(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        head = await reader.readuntil(b"\r\n\r\n")
        length = next(
            int(line.split(b":", 1)[1]) for line in head.split(b"\r\n") if line.lower().startswith(b"content-length")
        )
        body = json.loads(await reader.readexactly(length))
        lines = head.split(b"\r\n")
        body["_auth"] = next((line.decode() for line in lines if line.lower().startswith(b"authorization")), "")
        requests.append(body)
        try:
            await handler(body, writer)
        finally:
            writer.close()

    server = await asyncio.start_server(on_connect, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    return server, f"http://127.0.0.1:{port}/v1", requests


def sse_response(events: list[str]) -> bytes:
    body = "".join(f"data: {event}\n\n" for event in events).encode()
    return b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ncontent-length: %d\r\n\r\n%s" % (len(body), body)


def chunk(textual: str) -> str:
    return json.dumps({"choices": [{"index": 0, "delta": {"content": textual}}]})


async def test_openai_stream_carries_baked_content_and_assembles_the_reply(store) -> None:
    async def handler(body: dict[str, Any], writer: asyncio.StreamWriter) -> None:
        usage = json.dumps({"choices": [], "usage": {"prompt_tokens": 12, "completion_tokens": 2}})
        writer.write(sse_response([chunk("Hi"), chunk(" you"), usage, "[DONE]"]))
        await writer.drain()

    server, url, requests = await serve(handler)
    async with server:
        session = store.create("chat")
        model = OpenAICompatibleModel(base_url=url, api_key="sk-test", model="deepseek-chat", timeout=5)
        loop = AgentLoop(session, model)
        await loop.followup([text("line one"), text("line two")])
        await loop.when_idle()
    (request,) = requests
    assert request["model"] == "deepseek-chat"
    assert request["stream"] is True
    # dsh's serializer concatenates a message's text blocks with no separator (CONTRACT §13).
    assert request["messages"] == [{"role": "user", "content": "line oneline two"}]
    assert request["_auth"].lower() == "authorization: bearer sk-test"
    message = next(e for e in session.events if e.type == "assistant/message")
    assert message.data["content"] == [text("Hi you")]
    assert message.data["usage"] == {"inputTokens": 12, "outputTokens": 2}  # dsh TokenUsage
    assert message.data["provenance"] == {"provider": "openai-compatible", "model": "deepseek-chat"}


def status_response(status: int, reason: str, extra: str = "") -> bytes:
    body = json.dumps({"error": {"message": f"{reason} from the test server"}}).encode()
    head = f"HTTP/1.1 {status} {reason}\r\ncontent-type: application/json\r\n{extra}"
    return f"{head}content-length: {len(body)}\r\n\r\n".encode() + body


@pytest.mark.parametrize(
    ("response", "code"),
    [
        (status_response(401, "Unauthorized"), "MODEL_UNAUTHORIZED"),
        (status_response(403, "Forbidden"), "MODEL_UNAUTHORIZED"),
        (status_response(429, "Too Many Requests", "retry-after: 7\r\n"), "MODEL_RATE_LIMITED"),
        (status_response(503, "Service Unavailable"), "MODEL_SERVER_ERROR"),
        (status_response(400, "Bad Request"), "MODEL_HTTP_ERROR"),
        (sse_response(["{not json"]), "MODEL_MALFORMED_STREAM"),
    ],
)
async def test_http_failures_map_to_stable_codes(response: bytes, code: str) -> None:
    async def handler(body: dict[str, Any], writer: asyncio.StreamWriter) -> None:
        writer.write(response)
        await writer.drain()

    server, url, _ = await serve(handler)
    async with server:
        model = OpenAICompatibleModel(base_url=url, api_key="sk-test", model="m", timeout=5)
        with pytest.raises(ModelError) as caught:
            async for _ in model.stream([{"role": "user", "content": [text("x")]}], signal=AbortSignal()):
                pass
    assert caught.value.code == code
    if code == "MODEL_RATE_LIMITED":
        assert caught.value.retry_after == 7
        assert "Retry after 7 s" in caught.value.message


async def test_timeout_connection_refused_and_missing_key() -> None:
    async def silent(body: dict[str, Any], writer: asyncio.StreamWriter) -> None:
        await asyncio.sleep(2)

    server, url, _ = await serve(silent)
    async with server:
        model = OpenAICompatibleModel(base_url=url, api_key="k", model="m", timeout=0.2)
        with pytest.raises(ModelError) as caught:
            async for _ in model.stream([], signal=AbortSignal()):
                pass
        assert caught.value.code == "MODEL_TIMEOUT"
    closed = OpenAICompatibleModel(base_url=url, api_key="k", model="m", timeout=2)  # the server is gone now
    with pytest.raises(ModelError) as caught:
        async for _ in closed.stream([], signal=AbortSignal()):
            pass
    assert caught.value.code == "MODEL_CONNECTION_FAILED"
    with pytest.raises(ModelError) as caught:
        async for _ in OpenAICompatibleModel(base_url=url, api_key=None, model="m").stream([], signal=AbortSignal()):
            pass
    assert caught.value.code == "MODEL_MISSING_API_KEY"


async def test_cancel_mid_stream_over_http_ends_aborted_promptly(store) -> None:
    async def slow(body: dict[str, Any], writer: asyncio.StreamWriter) -> None:
        writer.write(b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ntransfer-encoding: chunked\r\n\r\n")
        piece = f"data: {chunk('first')}\n\n".encode()
        writer.write(b"%x\r\n%s\r\n" % (len(piece), piece))
        await writer.drain()
        await asyncio.sleep(3)

    server, url, _ = await serve(slow)
    async with server:
        session = store.create("chat")
        loop = AgentLoop(session, OpenAICompatibleModel(base_url=url, api_key="k", model="m", timeout=5))
        await loop.followup([text("go")])
        for _ in range(100):
            if any(e.type == "assistant/chunk" for e in session.events):
                break
            await asyncio.sleep(0.01)
        started = time.perf_counter()
        loop.cancel()
        await loop.when_idle()
        assert time.perf_counter() - started < 0.5
    assert session.events[-1].data["reason"] == {"kind": "aborted"}
    assert next(e for e in session.events if e.type == "assistant/message").data["content"] == [text("first")]


def test_from_environment_prefers_deepseek_key(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "openai")
    monkeypatch.setenv("DEEPSEEK_API_KEY", "deepseek")
    model = OpenAICompatibleModel.from_environment()
    assert (model.base_url, model.name, model.api_key) == ("https://api.deepseek.com", "deepseek-chat", "deepseek")
    monkeypatch.delenv("DEEPSEEK_API_KEY")
    assert OpenAICompatibleModel.from_environment().api_key == "openai"


async def test_the_bytes_on_the_wire_are_the_baked_blocks_and_what_the_app_shows(store) -> None:
    from tui.services.preview_report import PreviewReport
    from tui.widgets.transcript_blocks import model_received

    source = store.create("source", cwd="/p")
    say_user(source, "remember <b>this</b>")
    say_assistant(source, "noted")
    service = SessionReferenceService(store)

    async def handler(body: dict[str, Any], writer: asyncio.StreamWriter) -> None:
        writer.write(sse_response([chunk("ok"), "[DONE]"]))
        await writer.drain()

    server, url, requests = await serve(handler)
    async with server:
        target = store.create("target", cwd="/p")
        content = [text("what did I say?")]
        prepared = await service.prepare(target, content, [ReferenceInput("source")])
        loop = AgentLoop(target, OpenAICompatibleModel(base_url=url, api_key="k", model="m", timeout=5))
        await loop.followup(prepared.content, prepared.contexts)
        await loop.when_idle()
    (request,) = requests
    (sent,) = request["messages"]
    prompt = next(e for e in target.events if e.type == "user/message")
    baked = "".join(block["text"] for block in prompt.data["content"])
    (context,) = prepared.contexts
    assert sent == {"role": "user", "content": baked}
    assert baked == context.content[0]["text"] + "\n\n## My request:\n" + "what did I say?"
    assert model_received(prompt.data) == baked
    report = PreviewReport(draft="what did I say?", max_references=3, contexts=list(prepared.contexts), content=content)
    assert report.model_visible_text() == baked


def test_wire_messages_follow_dsh_serializer_for_every_message_kind() -> None:
    from core.agent.wire import wire_messages

    history = [
        {"role": "system", "content": [text("be "), text("brief")]},
        {"role": "user", "content": [text("a"), text("b")]},
        {
            "role": "assistant",
            "content": [
                {"type": "reasoning", "text": "think"},
                {"type": "tool-call", "id": "c1", "name": "ls", "arguments": "{}"},
            ],
        },
        {
            "role": "user",
            "content": [
                {"type": "tool-result", "toolCallId": "c1", "content": [text("out")], "isError": False},
                {"type": "tool-result", "toolCallId": "c2", "content": [], "isError": True},
            ],
        },
        {"role": "user", "content": [text("after"), {"type": "tool-result", "toolCallId": "c3", "content": []}]},
        {"role": "assistant", "content": [text("x"), text("y")]},
        {"role": "user", "content": []},
    ]
    assert wire_messages(history, system="sys") == [
        {"role": "system", "content": "sys"},
        {"role": "system", "content": "be brief"},
        {"role": "user", "content": "ab"},
        {
            "role": "assistant",
            "content": "",
            "reasoning_content": "think",
            "tool_calls": [{"id": "c1", "type": "function", "function": {"name": "ls", "arguments": "{}"}}],
        },
        {"role": "tool", "tool_call_id": "c1", "content": "out"},
        {"role": "tool", "tool_call_id": "c2", "content": "(no output)"},
        {"role": "user", "content": "after"},
        {"role": "tool", "tool_call_id": "c3", "content": "(no output)"},
        {"role": "assistant", "content": "xy"},
        {"role": "user", "content": ""},
    ]


FAKE_KEY = "sk-FAKE-0123456789abcdefRECOGNISABLE"


@pytest.mark.parametrize("status", [401, 403, 429, 500, 400, 200])
async def test_the_api_key_never_reaches_an_error_even_when_the_server_echoes_it(status: int) -> None:
    import traceback

    async def echo(body: dict[str, Any], writer: asyncio.StreamWriter) -> None:
        said = f"bad request: {body['_auth']}"  # "authorization: Bearer <key>", as careless servers do
        if status == 200:  # a stream event that is not JSON and carries the key
            writer.write(sse_response([f"{{oops {said}"]))
        else:
            payload = json.dumps({"error": {"message": said}}).encode()
            head = f"HTTP/1.1 {status} X\r\ncontent-type: application/json\r\ncontent-length: {len(payload)}\r\n\r\n"
            writer.write(head.encode() + payload)
        await writer.drain()

    server, url, requests = await serve(echo)
    async with server:
        model = OpenAICompatibleModel(base_url=url, api_key=FAKE_KEY, model="m", timeout=5)
        with pytest.raises(ModelError) as caught:
            async for _ in model.stream([{"role": "user", "content": [text("x")]}], signal=AbortSignal()):
                pass
    assert FAKE_KEY in requests[0]["_auth"]  # it was sent, and echoed
    error = caught.value
    shown = "".join(traceback.format_exception(error))
    assert FAKE_KEY not in error.message and FAKE_KEY not in str(error) and FAKE_KEY not in repr(error)
    assert FAKE_KEY not in shown, shown
    assert error.code.startswith("MODEL_")


async def test_the_loop_and_its_session_tell_their_news_instead_of_being_polled(store) -> None:
    """``Session.appended`` hears every append (each streamed chunk too), ``AgentLoop.changed`` a
    turn's start and end with ``status`` already telling; a failing listener never stops the turn,
    and one that unsubscribed hears nothing more."""
    session = store.create("chat")
    gate = asyncio.Event()
    loop = AgentLoop(session, ScriptedModel(["Hel", "lo"], gate=gate))
    appended: list[str] = []
    statuses: list[str] = []
    unsubscribe = session.appended.subscribe(lambda events: appended.extend(event.type for event in events))
    loop.changed.subscribe(lambda _news: statuses.append(loop.status))

    def broken(_news: object) -> None:
        raise RuntimeError("a listener that fails")

    loop.changed.subscribe(broken)
    await loop.followup([text("hi there")])
    for _ in range(100):
        if "assistant/chunk" in appended:
            break
        await asyncio.sleep(0.01)
    assert appended[:4] == ["turn/start", "user/message", "step/start", "assistant/chunk"]
    assert statuses == ["running"]  # told the turn began, nothing since: no news, no change
    gate.set()
    await loop.when_idle()
    await asyncio.sleep(0)  # the task's end is told from its done callback
    assert statuses == ["running", "idle"]
    assert appended == types(session)  # every event, once, in order
    unsubscribe()
    say_user(session, "later")
    assert appended[-1] == "session/title"


def test_a_failed_compaction_is_taken_once(store) -> None:
    session = store.create("chat")
    loop = AgentLoop(session, ScriptedModel(["x"]))
    failure = CompactionError("the summary request failed", "COMPACTION_FAILED")
    loop.keeper.compaction_error = failure
    assert loop.compaction_error is failure
    assert loop.take_compaction_error() is failure
    assert loop.take_compaction_error() is None and loop.compaction_error is None
