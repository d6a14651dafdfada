"""Tool calling in the agent loop, against a local OpenAI-compatible server that streams tool calls:
in one turn the model searches, references and reads a long session, then answers. The log is in
dsh's shapes (rc.8 loads it with the same surface and derived messages), the next request body is
the one rc.8's adapter sends for that log; bad arguments, Esc mid-tool and the step limit each end
as they should."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest
import zstandard

from core import AgentLoop, JsonlSessionStore, OpenAICompatibleModel, SessionReferenceService
from core.agent.session_tools import SessionTools
from core.agent.tool_steps import NOT_STARTED, OUTCOME_UNKNOWN
from core.agent.wire import wire_messages
from core.search.finder import SessionSearch
from tests.conftest import say_assistant, say_user, text
from tests.support.rc8 import NODE, dsh
from tests.test_agent import serve

CHUNKED = b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ntransfer-encoding: chunked\r\n\r\n"


def _piece(payload: bytes) -> bytes:
    return b"%x\r\n%s\r\n" % (len(payload), payload)


def _event(delta: dict[str, Any], finish: str | None = None) -> bytes:
    return f"data: {json.dumps({'choices': [{'index': 0, 'delta': delta, 'finish_reason': finish}]})}\n\n".encode()


def _call_pieces(call_id: str, name: str, arguments: str, index: int = 0) -> list[bytes]:
    """A tool call streamed as DeepSeek streams one: id and name first, the arguments in pieces."""
    first = {
        "tool_calls": [{"index": index, "id": call_id, "type": "function", "function": {"name": name, "arguments": ""}}]
    }
    pieces = [_event(first)]
    for start in range(0, len(arguments), 7):
        pieces.append(
            _event({"tool_calls": [{"index": index, "function": {"arguments": arguments[start : start + 7]}}]})
        )
    return pieces


Plan = list[tuple[str, str, str] | str]
"""What the scripted model does on each request: a tool call (id, name, arguments), or answer text."""


def scripted_server(plan: Plan, bodies: list[dict[str, Any]]) -> Any:
    async def handler(body: dict[str, Any], writer: asyncio.StreamWriter) -> None:
        bodies.append(body)
        step = plan[min(len(bodies) - 1, len(plan) - 1)]
        writer.write(CHUNKED)
        if isinstance(step, str):
            for word in step.split(" "):
                writer.write(_piece(_event({"content": word + " "})))
            writer.write(_piece(_event({}, "stop")))
        else:
            for piece in _call_pieces(*step):
                writer.write(_piece(piece))
            writer.write(_piece(_event({}, "tool_calls")))
        writer.write(_piece(b"data: [DONE]\n\n") + b"0\r\n\r\n")
        await writer.drain()

    return handler


def _store(root: Path) -> tuple[JsonlSessionStore, Any]:
    store = JsonlSessionStore(root)
    design = store.create("design", cwd="/work/app", created_at=3)
    for index in range(150):
        say_user(design, f"question {index}: " + "why a log? " * 40 + (" the wombat decision" if index == 75 else ""))
        say_assistant(design, f"answer {index}: " + "because fsync. " * 40)
    design.append("session/title", {"title": "Storage design", "messageSeqs": [0], "source": "user"})
    store.release("design")
    target = store.create("today", cwd="/work/app", created_at=4)
    return store, target


def _tools(store: JsonlSessionStore, target: Any) -> SessionTools:
    return SessionTools(SessionReferenceService(store), SessionSearch(None), target)


PLAN: Plan = [
    ("call_search", "search_sessions", '{"query": "storage"}'),
    ("call_reference", "reference_session", '{"session": "design"}'),
    ("call_read", "read_session", '{"session": "design", "from_message": 150, "to_message": 152}'),
    "The wombat decision was made in message 150.",
]


async def _turn(tmp_path: Path, plan: Plan, **loop_options: Any) -> tuple[Any, list[dict[str, Any]], JsonlSessionStore]:
    store, target = _store(tmp_path)
    bodies: list[dict[str, Any]] = []
    server, url, _ = await serve(scripted_server(plan, bodies))
    async with server:
        model = OpenAICompatibleModel(base_url=url, api_key="k", model="deepseek-chat", timeout=5)
        loop = AgentLoop(target, model, flush_interval=0.01, tools=_tools(store, target), **loop_options)
        await loop.followup([text("what did we decide about the log, the wombat thing?")])
        await asyncio.wait_for(loop.when_idle(), 30)
    return target, bodies, store


def _stored_rows(root: Path) -> str:
    raw = next(root.rglob("today/session.jsonl.zstd")).read_bytes()
    return zstandard.ZstdDecompressor().stream_reader(raw, read_across_frames=True).read().decode()


def _types(session: Any) -> list[str]:
    return [event.type for event in session.events if event.type != "assistant/chunk"]


async def test_in_one_turn_the_model_searches_references_reads_and_answers(tmp_path: Path) -> None:
    session, bodies, store = await _turn(tmp_path, PLAN)
    assert _types(session) == [
        "turn/start", "user/message",
        *["step/start", "assistant/message", "tool/call", "tool/result", "step/end"] * 3,
        "step/start", "assistant/message", "step/end", "turn/end", "session/title",
    ]  # fmt: skip
    assert session.events[-2].data == {"turn": 1, "reason": {"kind": "completed"}}
    calls = [event for event in session.events if event.type == "tool/call"]
    assert [(call.data["name"], call.data["step"]) for call in calls] == [
        ("search_sessions", 1), ("reference_session", 2), ("read_session", 3)
    ]  # fmt: skip
    results = [event for event in session.events if event.type == "tool/result"]
    for call, result in zip(calls, results, strict=True):
        assert result.source_event_seqs == [call.seq] and result.surface_op == "append"
        message = result.data["message"]
        assert message["role"] == "user" and message["source"] == {"kind": "tool", "callId": call.data["callId"]}
        (block,) = message["content"]
        assert block["type"] == "tool-result" and block["toolCallId"] == call.data["callId"] and not block["isError"]
    read = results[2].data["message"]["content"][0]["content"][0]["text"]
    assert "the wombat decision" in read and '"from":150' in read
    first = next(event for event in session.events if event.type == "assistant/message")
    assert first.data["content"] == [
        {"type": "tool-call", "id": "call_search", "name": "search_sessions", "arguments": '{"query": "storage"}'}
    ]
    # The tools were offered, and each next request carries the call and its result, as dsh sends them.
    assert [tool["function"]["name"] for tool in bodies[0]["tools"]] == [
        "search_sessions", "reference_session", "read_session"
    ]  # fmt: skip
    last = bodies[-1]["messages"]
    assert [message["role"] for message in last] == ["user", *["assistant", "tool"] * 3]
    assert last[1]["tool_calls"] == [
        {
            "id": "call_search",
            "type": "function",
            "function": {"name": "search_sessions", "arguments": '{"query": "storage"}'},
        }
    ]
    assert last[6] == {"role": "tool", "tool_call_id": "call_read", "content": read}
    answer = [event for event in session.events if event.type == "assistant/message"][-1]
    assert answer.data["content"] == [text("The wombat decision was made in message 150. ")]
    store.close()
    assert '"type":"tool-call-chunks"' in _stored_rows(tmp_path)  # packed as rc.8 packs them


async def test_a_bad_argument_is_an_error_result_and_the_turn_goes_on(tmp_path: Path) -> None:
    plan: Plan = [("call_bad", "read_session", '{"session": "design", "from_message": 99999}'), "Sorry, out of range."]
    session, _, store = await _turn(tmp_path, plan)
    (result,) = [event for event in session.events if event.type == "tool/result"]
    block = result.data["message"]["content"][0]
    assert block["isError"] is True and block["content"][0]["text"].endswith("(TOOL_OUT_OF_RANGE)")
    assert session.events[-2].data["reason"] == {"kind": "completed"}
    store.close()


async def test_the_step_limit_ends_a_turn_that_never_stops_calling(tmp_path: Path) -> None:
    plan: Plan = [("call_again", "search_sessions", '{"query": "log"}')]
    session, bodies, store = await _turn(tmp_path, plan, max_steps=3)
    assert len(bodies) == 3
    ending = session.events[-1].data["reason"]
    assert ending["kind"] == "error" and ending["code"] == "TURN_STEP_LIMIT"
    assert sum(event.type == "tool/result" for event in session.events) == 3  # every call has its result
    store.close()


async def test_escape_mid_tool_closes_the_step_as_dsh_closes_an_interrupted_one(tmp_path: Path) -> None:
    store, target = _store(tmp_path)
    started = asyncio.Event()

    async def hanging_listing() -> Any:
        started.set()
        await asyncio.sleep(3600)

    tools = SessionTools(SessionReferenceService(store), SessionSearch(None), target, listing=hanging_listing)
    two_calls = [
        _event({"tool_calls": [{"index": 0, "id": "call_a", "type": "function",
                                "function": {"name": "search_sessions", "arguments": '{"query": "x"}'}}]}),
        _event({"tool_calls": [{"index": 1, "id": "call_b", "type": "function",
                                "function": {"name": "read_session", "arguments": '{"session": "design"}'}}]}),
    ]  # fmt: skip

    async def handler(body: dict[str, Any], writer: asyncio.StreamWriter) -> None:
        writer.write(
            CHUNKED + b"".join(_piece(piece) for piece in two_calls) + _piece(b"data: [DONE]\n\n") + b"0\r\n\r\n"
        )
        await writer.drain()

    server, url, _ = await serve(handler)
    async with server:
        model = OpenAICompatibleModel(base_url=url, api_key="k", model="deepseek-chat", timeout=5)
        loop = AgentLoop(target, model, flush_interval=0.01, tools=tools)
        await loop.followup([text("go")])
        await asyncio.wait_for(started.wait(), 10)
        loop.cancel()
        await asyncio.wait_for(loop.when_idle(), 10)
    results = [event for event in target.events if event.type == "tool/result"]
    first, second = (result.data for result in results)
    assert first["error"] == {"name": "ToolOutcomeUnknownError", "code": "TOOL_OUTCOME_UNKNOWN"}
    assert first["message"]["content"][0]["content"][0]["text"] == OUTCOME_UNKNOWN
    assert second["error"] == {"name": "ToolNotStartedError", "code": "TOOL_NOT_STARTED"}
    assert second["message"]["content"][0]["content"][0]["text"] == NOT_STARTED
    call_a = next(event for event in target.events if event.type == "tool/call")
    assert results[0].source_event_seqs == [call_a.seq] and results[1].source_event_seqs is None
    assert _types(target)[-3:] == ["tool/result", "step/end", "turn/end"]
    assert target.events[-1].data["reason"] == {"kind": "aborted"}
    store.close()


@pytest.mark.skipif(NODE is None, reason="the dsh packages are not installed (make interop)")
async def test_rc8_reads_the_tool_turn_and_its_adapter_sends_the_same_next_request(tmp_path: Path) -> None:
    session, bodies, store = await _turn(tmp_path, PLAN)
    ours_derived = session.derive_messages()
    ours_nodes = [event.seq for event in session.surface()]
    store.close()
    loaded = dsh("load", root=str(tmp_path), compression="zstd", ids=["today"])["today"]
    assert loaded["inspect"]["ok"], loaded["inspect"]
    assert loaded["events"] == [event.to_wire() for event in session.events]
    surface = dsh("surface", root=str(tmp_path), compression="zstd", id="today")
    assert surface["nodes"] == ours_nodes
    # The same messages (dsh gives its messages ids; the content is the same).
    assert [{"role": m["role"], "content": m["content"]} for m in surface["derived"]] == ours_derived
    # What rc.8's DeepSeek adapter sends for that log is what we send (the last request was ours).
    theirs = dsh("serialize", messages=surface["derived"])
    assert theirs["messages"] == wire_messages(ours_derived)
    assert bodies[-1]["messages"] == wire_messages(ours_derived[:-1])  # (before the answer was added)


async def test_the_context_meter_counts_tool_results(tmp_path: Path) -> None:
    from core.agent.context import estimate_event

    session, _, store = await _turn(tmp_path, PLAN)
    results = [event for event in session.events if event.type == "tool/result"]
    assert all(estimate_event(event) > 0 for event in results)
    # A 64 KiB reference result weighs what its text weighs, as a prompt's reference does.
    assert estimate_event(results[1]) > 10_000
    store.close()


def test_tools_can_be_switched_off(tmp_path: Path) -> None:
    from core import EchoModel
    from core.agent.tool_steps import ToolSettings
    from core.settings import RunConfig, effective_settings, load_config
    from tui.app.sessionref_app import make_app

    path = tmp_path / "config.toml"
    path.write_text("[tools]\nenabled = false\n")
    assert effective_settings(load_config(str(path)), {}, {})["tools"] is False
    assert effective_settings(load_config(str(path)), {"tools": True}, {})["tools"] is True
    store = JsonlSessionStore(tmp_path / "store")
    app = make_app(store, EchoModel(), RunConfig(offer_tools=False), cwd="/w")
    assert app.workspace.agent.tools is None
    on = make_app(store, EchoModel(), RunConfig(tools=ToolSettings(read_bytes=4096, max_steps=2)), cwd="/w")
    agent = on.workspace.agent
    assert agent.tools is not None and agent.tools.read_bytes == 4096 and agent.max_steps == 2
    path.write_text("[tools]\nread_bytes = 8192\nmax_steps = 3\n")
    settings = effective_settings(load_config(str(path)), {}, {})
    assert (settings["tools"], settings["tool_read_bytes"], settings["max_steps"]) == (True, 8192, 3)
    store.close()
