"""Every reader of another agent's files against records of any shape: a valid session of each
agent's format with one value anywhere replaced by any JSON value (a number where a list belongs, a
list where text does, nulls, lone surrogates, deep nesting). Listing never fails, and a session is
read or refused with a code (``SessionQueryError``), never with another exception; what is read
projects as a conversation."""

from __future__ import annotations

import json
import shutil
import sqlite3
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import zstandard
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from core import SessionQueryError
from core.reference.projection import project_conversation
from core.sessions.sources.amp import AmpSource
from core.sessions.sources.claude import ClaudeCodeSource
from core.sessions.sources.cline import ClineSource
from core.sessions.sources.code_puppy import CodePuppySource
from core.sessions.sources.codebuddy import CodeBuddySource
from core.sessions.sources.codex import CodexSource
from core.sessions.sources.continue_cli import ContinueSource
from core.sessions.sources.copilot import CopilotCliSource
from core.sessions.sources.factory import FactorySource
from core.sessions.sources.gemini import GeminiCliSource
from core.sessions.sources.gptme import GptmeSource
from core.sessions.sources.kimi_cli import KimiCliSource, folder_key
from core.sessions.sources.kimi_code import KimiCodeSource
from core.sessions.sources.letta import LettaSource
from core.sessions.sources.mini_swe_agent import MiniSweAgentSource
from core.sessions.sources.nanocoder import NanocoderSource
from core.sessions.sources.open_interpreter import OpenInterpreterSource
from core.sessions.sources.openclaw import OpenClawSource
from core.sessions.sources.pi import OhMyPiSource, PiSource
from core.sessions.sources.qwen import QwenCodeSource
from core.sessions.sources.roo import ClineExtensionSource, KiloCodeSource, RooCodeSource
from core.sessions.sources.vibe import VibeSource
from tests.test_external import UUID, c_assistant, c_user, codex_line, codex_message, text
from tests.test_other_agents import SID, c_event, g_reply, g_user, gemini_header, q_record, q_text

JSON = st.recursive(
    st.none() | st.booleans() | st.integers(-(2**70), 2**70) | st.floats(allow_nan=False) | st.text(max_size=20)
    | st.sampled_from(["\ud800", "<s>", "2026-02-30T10:00:00Z", "+10000-01-01T00:00:00Z", "", "user", "assistant"]),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=8), inner, max_size=3),
    max_leaves=8,
)  # fmt: skip


def _claude(root: Path, records: list[Any]) -> Path:
    return root / "projects" / "-work-app" / f"{UUID}.jsonl"


def _codex(root: Path, records: list[Any]) -> Path:
    return root / "sessions" / "2025" / "07" / "02" / f"rollout-2025-07-02T09-00-00-{UUID}.jsonl"


def _gemini(root: Path, records: list[Any]) -> Path:
    return root / "tmp" / "proj" / "chats" / "session-2026-12-05T10-51-2b185404.jsonl"


def _qwen(root: Path, records: list[Any]) -> Path:
    return root / "projects" / "-work-qwen" / "chats" / f"{SID}.jsonl"


def _copilot(root: Path, records: list[Any]) -> Path:
    return root / "session-state" / SID / "events.jsonl"


def _pi(root: Path, records: list[Any]) -> Path:
    return root / "sessions" / "--work-pi--" / f"2026-12-06T16-01-21-542Z_{PI_ID}.jsonl"


PI_ID = "01a24c16-a285-7258-ac9f-5027617230e6"


def _cline(root: Path, records: list[Any]) -> Path:
    # (the messages document, written as its one line, beside the session's own file)
    folder = root / "data" / "sessions" / "1796573859929_fzqgz"
    folder.mkdir(parents=True, exist_ok=True)
    about = {"session_id": "1796573859929_fzqgz", "started_at": "2026-12-06T16:17:26.406Z", "cwd": "/work/cl"}
    (folder / "1796573859929_fzqgz.json").write_text(json.dumps(about))
    return folder / "1796573859929_fzqgz.messages.json"


def _continue(root: Path, records: list[Any]) -> Path:
    # (one JSON document, written as its one line)
    return root / "sessions" / "28ab63df-f623-41a0-a4b0-6276f0fb0313.json"


def _vibe(root: Path, records: list[Any]) -> Path:
    # (the context's one chunk, written as its one line, named by the manifest beside Vibe's other files)
    from tests.test_agent_vibe import DIGEST, write_store

    return write_store(root, []) / "chunks" / f"{DIGEST}.json"


def _openclaw(root: Path, records: list[Any]) -> Path:
    return root / "agents" / "main" / "sessions" / f"{PI_ID}.jsonl"


def _omp(root: Path, records: list[Any]) -> Path:
    return root / "sessions" / "-work-om-" / f"2026-12-07T18-02-43-083Z_{PI_ID}.jsonl"


def _kimi_code(root: Path, records: list[Any]) -> Path:
    folder = root / "sessions" / "wd_proj_100fe2736d70" / "session_df65c93d"
    (folder / "agents" / "main").mkdir(parents=True, exist_ok=True)
    state = {"id": "session_df65c93d", "version": 2, "cwd": "/work/kc", "createdAt": 1796666498170}
    (folder / "state.json").write_text(json.dumps(state))
    return folder / "agents" / "main" / "wire.jsonl"


def _kimi_cli(root: Path, records: list[Any]) -> Path:
    folder = root / "sessions" / folder_key("/work/ki") / "670e1f60-b474-486a-8daf-417182b7ba0f"
    folder.mkdir(parents=True, exist_ok=True)
    (root / "kimi.json").write_text(json.dumps({"work_dirs": [{"path": "/work/ki", "kaos": "local"}]}))
    turn = {"type": "TurnBegin", "payload": {"user_input": "first question"}}
    (folder / "wire.jsonl").write_text(json.dumps({"timestamp": 1796670044.19, "message": turn}) + "\n")
    return folder / "context.jsonl"


def _code_puppy(root: Path, records: list[Any]) -> Path:
    folder = root / "autosaves"
    folder.mkdir(parents=True, exist_ok=True)
    meta = {"session_name": "auto_session_1", "timestamp": "2026-12-07T19:25:03.517623", "scope_key": "/work/pu"}
    (folder / "auto_session_1_meta.json").write_text(json.dumps(meta))
    return folder / "auto_session_1.json"


def _roo(root: Path, records: list[Any]) -> Path:
    return root / "tasks" / "7b1f3c2a-1d4e-4f6a-9b8c-0d1e2f3a4b5c" / "ui_messages.json"


def _amp(root: Path, records: list[Any]) -> Path:
    return root / "threads" / "T-019b9d03-62e3-772f-9780-3e637f90eaec.json"


def _droid(root: Path, records: list[Any]) -> Path:
    return root / "sessions" / "-work-app" / "8f0c4d2e-6b1a-4c3d-9e5f-0a1b2c3d4e5f.jsonl"


def _interpreter(root: Path, records: list[Any]) -> Path:
    return root / "conversations" / "first_question__December_07_2026_20-11-45.json"


def _letta(root: Path, records: list[Any]) -> Path:
    folder = root / "conversations" / "Y29udmVyc2F0aW9uOmxvY2FsLWNvbnYtMQ"
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "conversation.json").write_text('{"id": "local-conv-1", "archived": false, "summary": null}')
    return folder / "messages.jsonl"


def _nanocoder(root: Path, records: list[Any]) -> Path:
    return root / "sessions" / "a1f4612e-5af1-4089-b6ae-51a2bb9a0975.json"


def _mini(root: Path, records: list[Any]) -> Path:
    return root / "django__django-1" / "django__django-1.traj.json"


def _codebuddy(root: Path, records: list[Any]) -> Path:
    return root / "projects" / "work-cb" / "68e9aa44-3330-40f8-a46e-891b3d63d571.jsonl"


def _gptme(root: Path, records: list[Any]) -> Path:
    folder = root / "2026-12-07-sprinting-blue-squid"
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "config.toml").write_text('[chat]\nworkspace = "/work/gp"\nname = "A title"\n')
    return folder / "conversation.jsonl"


def _kimi(kind: str, **fields: Any) -> dict[str, Any]:
    return {"type": kind, "agentId": "main", **fields, "time": 1796666498314}


def _pi_message(entry: str, parent: str | None, message: dict[str, Any]) -> dict[str, Any]:
    """A pi ``message`` entry, as pi 0.73.1 writes one."""
    return {"type": "message", "id": entry, "parentId": parent, "timestamp": "2026-12-06T16:01:21.572Z",
            "message": {**message, "timestamp": 1796572881569}}  # fmt: skip


READERS: dict[str, tuple[Callable[[Path], Any], Callable[[Path, list[Any]], Path], list[Any]]] = {
    "claude": (ClaudeCodeSource, _claude, [
        c_user("u1", None, "first question"),
        c_assistant("a1", "u1", [text("an answer"), {"type": "tool_use", "id": "t1", "name": "Bash", "input": {}}]),
        c_user("u2", "a1", [{"type": "tool_result", "tool_use_id": "t1", "content": "out"}]),
        {"type": "summary", "summary": "A title", "leafUuid": "u2"},
    ]),
    "codex": (CodexSource, _codex, [
        codex_line("session_meta", {"id": UUID, "timestamp": "2025-07-02T09:00:00.000Z", "cwd": "/work/app"}),
        codex_message("user", "first question", 1),
        codex_message("assistant", "an answer", 2),
        codex_line("event_msg", {"type": "user_message", "message": "first question"}, 3),
    ]),
    "gemini": (GeminiCliSource, _gemini, [
        {**gemini_header(), "messages": []},
        g_user("m1", [{"text": "first question"}]),
        g_reply("m2", "an answer"),
        {"$set": {"summary": "A title"}},
    ]),
    "qwen": (QwenCodeSource, _qwen, [
        q_record("r1", None, "user", message=q_text("user", "first question")),
        q_record("r2", "r1", "assistant", message=q_text("model", "an answer", thought="hmm")),
        q_record("r3", "r2", "system", subtype="chat_compression", systemPayload={"info": {}}),
    ]),
    "copilot": (CopilotCliSource, _copilot, [
        c_event("session.start", {"sessionId": SID, "startTime": "2026-12-05T11:03:47.051Z", "context": {"cwd": "/w"}}),
        c_event("user.message", {"content": "first question"}),
        c_event("assistant.message", {"content": "an answer", "toolRequests": []}),
        c_event("session.title_changed", {"title": "A title"}),
    ]),
    "cline": (ClineSource, _cline, [
        {"version": 1, "sessionId": "1796573859929_fzqgz", "messages": [
            {"id": "s", "role": "user", "content": [{"type": "text", "text": "summary"}], "ts": 1796573860040,
             "metadata": {"kind": "compaction_summary", "summary": "the summary"}},
            {"id": "u", "role": "user", "ts": 1796573860048,
             "content": [{"type": "text", "text": "<user_input mode=\"act\">first question</user_input>"}]},
            {"id": "a", "role": "assistant", "ts": 1796573860174, "content": [{"type": "text", "text": "an answer"},
             {"type": "tool_use", "id": "call_1", "name": "run_commands", "input": {"commands": ["ls"]}}]},
            {"id": "r", "role": "user", "content": [{"type": "tool_result", "tool_use_id": "call_1",
             "content": [{"query": "ls", "result": "out", "success": True}]}], "ts": 1796573860180},
        ]},
    ]),
    "continue": (ContinueSource, _continue, [
        {"sessionId": "28ab63df-f623-41a0-a4b0-6276f0fb0313", "title": "Untitled Session",
         "workspaceDirectory": "file:///work/cn", "history": [
            {"message": {"role": "assistant", "content": "the summary"}, "conversationSummary": "the summary"},
            {"message": {"role": "system", "content": "be brief"}, "contextItems": []},
            {"message": {"role": "user", "content": "first question"}, "contextItems": [], "editorState": "x"},
            {"message": {"role": "assistant", "content": [{"type": "text", "text": "an answer"}],
                         "toolCalls": [{"id": "call_1", "type": "function", "function": {"name": "List"}}]},
             "contextItems": [], "toolCallStates": [{"toolCallId": "call_1", "status": "done"}]},
            {"message": {"role": "thinking", "content": "hmm"}, "contextItems": []},
         ]},
    ]),
    "pi": (PiSource, _pi, [
        {"type": "session", "version": 3, "id": PI_ID, "timestamp": "2026-12-06T16:01:21.542Z", "cwd": "/work/pi"},
        _pi_message("u1", None, {"role": "user", "content": [{"type": "text", "text": "first question"}]}),
        _pi_message("a1", "u1", {"role": "assistant", "content": [
            {"type": "thinking", "thinking": "hmm"}, {"type": "text", "text": "an answer"},
            {"type": "toolCall", "id": "call_1", "name": "bash", "arguments": {"command": "ls"}}]}),
        _pi_message("t1", "a1", {"role": "toolResult", "toolCallId": "call_1", "toolName": "bash",
                                 "content": [{"type": "text", "text": "out"}], "isError": False}),
        {"type": "compaction", "id": "c1", "parentId": "t1", "timestamp": "2026-12-06T16:01:22.000Z",
         "summary": "what was said", "firstKeptEntryId": "u1", "tokensBefore": 8},
        {"type": "session_info", "id": "n1", "parentId": "c1", "timestamp": "2026-12-06T16:01:23.000Z",
         "name": "A title"},
    ]),
    "openclaw": (OpenClawSource, _openclaw, [
        {"type": "session", "version": 3, "id": PI_ID, "timestamp": "2026-04-02T10:00:00.000Z", "cwd": "/work/oc"},
        _pi_message("u0", None, {"role": "user", "content": "forgotten"}),
        _pi_message("u1", "u0", {"role": "user", "content": "first question", "__openclaw": {"senderIsOwner": True}}),
        _pi_message("a1", "u1", {"role": "assistant", "content": [{"type": "text", "text": "an answer"}]}),
        {"type": "reset", "id": "r1", "parentId": "a1", "reason": "new", "firstKeptEntryId": "u1"},
        {"type": "leaf", "id": "l1", "parentId": "r1", "targetId": "r1"},
        {"type": "custom", "customType": "openclaw:bootstrap-context:full", "id": "c1", "parentId": "l1", "data": {}},
    ]),
    "omp": (OhMyPiSource, _omp, [
        {"type": "title", "v": 1, "title": "A title", "updatedAt": "2026-12-07T18:02:43.083Z", "pad": "   "},
        {"type": "session", "version": 3, "id": PI_ID, "timestamp": "2026-12-07T18:02:43.083Z", "cwd": "/work/om"},
        _pi_message("u1", None, {"role": "user", "content": [{"type": "text", "text": "first question"}]}),
        _pi_message("a1", "u1", {"role": "assistant", "content": [{"type": "text", "text": "an answer"}]}),
    ]),
    "kimicode": (KimiCodeSource, _kimi_code, [
        _kimi("context.append_message", message={"role": "user", "content": [{"type": "text", "text": "x"}],
                                                 "origin": {"kind": "user"}}),
        _kimi("context.apply_compaction", summary={"role": "user", "content": [{"type": "text", "text": "sum"}]},
              count=1),
        _kimi("context.append_message", message={"role": "user", "origin": {"kind": "user"}, "toolCalls": [],
                                                 "content": [{"type": "text", "text": "first question"}]}),
        _kimi("context.append_message", message={"role": "user", "content": [{"type": "text", "text": "<r>"}],
                                                 "origin": {"kind": "injection"}}),
        _kimi("context.append_loop_event", event={"type": "content.part", "stepUuid": "s1",
                                                  "part": {"type": "text", "text": "an answer"}}),
        _kimi("context.undo", count=5),
    ]),
    "codepuppy": (CodePuppySource, _code_puppy, [
        {"format": 2, "encoding": "pydantic-ai-messages", "messages": [
            {"kind": "request", "timestamp": "2026-12-07T19:25:03.467364Z", "parts": [
                {"part_kind": "system-prompt", "content": "Summary of previous conversation:\n\nS"},
                {"part_kind": "user-prompt", "content": "first question", "timestamp": "2026-12-07T19:25:03.467130Z"}]},
            {"kind": "response", "parts": [
                {"part_kind": "text", "content": "an answer"},
                {"part_kind": "tool-call", "tool_name": "list_files", "args": {"directory": "."}}]},
            {"kind": "request", "parts": [{"part_kind": "tool-return", "tool_name": "list_files", "content": "out"}]},
        ]},
    ]),
    "roo": (RooCodeSource, _roo, [
        [{"ts": 1796670000000, "type": "say", "say": "text", "text": "first question"},
         {"ts": 1796670000001, "type": "say", "say": "api_req_started", "text": "{}"},
         {"ts": 1796670000002, "type": "ask", "ask": "tool", "text": "{}"},
         {"ts": 1796670000003, "type": "say", "say": "text", "text": "an answer"},
         {"ts": 1796670000004, "type": "say", "say": "user_feedback", "text": "more", "images": []}],
    ]),
    "clinevsc": (ClineExtensionSource, _roo, [
        [{"ts": 1796670000000, "type": "say", "say": "task", "text": "first question"},
         {"ts": 1796670000001, "type": "say", "say": "api_req_started", "text": "{}"},
         {"ts": 1796670000003, "type": "say", "say": "text", "text": "an answer"},
         {"ts": 1796670000004, "type": "say", "say": "completion_result", "text": "done"}],
    ]),
    "kilocode": (KiloCodeSource, _roo, [
        [{"ts": 1796670000000, "type": "say", "say": "text", "text": "first question"},
         {"ts": 1796670000003, "type": "say", "say": "text", "text": "an answer"},
         {"ts": 1796670000004, "type": "say", "say": "user_feedback", "text": "more"}],
    ]),
    "amp": (AmpSource, _amp, [
        {"id": "T-019b9d03", "title": "A title", "created": 1767865803494,
         "env": {"initial": {"trees": [{"uri": "file:///work/app"}]}},
         "messages": [
            {"role": "user", "messageId": 0, "content": [{"type": "text", "text": "first question"}]},
            {"role": "assistant", "messageId": 1, "content": [{"type": "text", "text": "an answer"},
                                                              {"type": "tool_use", "id": "t1", "name": "Bash"}]},
            {"role": "user", "messageId": 2, "content": [{"type": "tool_result", "toolUseID": "t1"}]},
         ]},
    ]),
    "droid": (FactorySource, _droid, [
        {"type": "session_start", "id": "8f0c4d2e", "title": "A title", "owner": "me", "cwd": "/work/app"},
        {"type": "message", "id": "m1", "timestamp": "2026-12-07T19:00:01.000Z",
         "message": {"role": "user", "content": [{"type": "text", "text": "first question"}]}},
        {"type": "message", "id": "m2", "timestamp": "2026-12-07T19:00:02.000Z",
         "message": {"role": "assistant", "content": [{"type": "text", "text": "an answer"}]}},
    ]),
    "interpreter": (OpenInterpreterSource, _interpreter, [
        [{"role": "user", "type": "message", "content": "first question"},
         {"role": "assistant", "type": "code", "format": "shell", "content": "ls"},
         {"role": "computer", "type": "console", "format": "output", "content": "out"},
         {"role": "assistant", "type": "message", "content": "an answer"}],
    ]),
    "letta": (LettaSource, _letta, [
        {"type": "session", "version": 3, "id": "local-conv-1", "timestamp": "2026-12-07T20:09:02.472Z", "cwd": "/w"},
        _pi_message("u1", None, {"role": "user", "content": [
            {"type": "text", "text": "<system-reminder>Device</system-reminder>"},
            {"type": "text", "text": "first question"}]}),
        _pi_message("a1", "u1", {"role": "assistant", "content": [{"type": "text", "text": "an answer"}]}),
    ]),
    "nanocoder": (NanocoderSource, _nanocoder, [
        {"id": "a1f4612e-5af1-4089-b6ae-51a2bb9a0975", "title": "A title", "createdAt": "2026-12-07T19:30:41.986Z",
         "lastAccessedAt": "2026-12-07T19:31:04.699Z", "messageCount": 4, "provider": "stub", "model": "m",
         "workingDirectory": "/work/nc", "messages": [
            {"role": "user", "content": "first question"},
            {"role": "assistant", "content": "", "tool_calls": [{"id": "c1", "function": {"name": "list_directory",
                                                                                          "arguments": {}}}]},
            {"role": "tool", "content": "out", "tool_call_id": "c1", "name": "list_directory"},
            {"role": "assistant", "content": "an answer"},
        ]},
    ]),
    "mini": (MiniSweAgentSource, _mini, [
        {"trajectory_format": "mini-swe-agent-1.1",
         "info": {"config": {"agent": {"instance_template": "Solve: {{task}}\n\nUse bash. {{system}}"}}},
         "messages": [
            {"role": "system", "content": "You are a helpful assistant"},
            {"role": "user", "content": "Solve: first question\n\nUse bash. Linux"},
            {"role": "assistant", "content": "an answer", "extra": {"response": {"created": 1796671662},
             "actions": [{"command": "ls", "tool_call_id": "c1"}]}},
            {"role": "tool", "content": "out", "tool_call_id": "c1", "extra": {"timestamp": 1796671662.6}},
            {"role": "user", "content": "No call.", "extra": {"interrupt_type": "FormatError"}},
            {"role": "exit", "content": "", "extra": {"exit_status": "Submitted"}},
        ]},
    ]),
    "codebuddy": (CodeBuddySource, _codebuddy, [
        {"id": "c2", "timestamp": 1796671228920, "type": "message", "role": "assistant",
         "content": [{"type": "output_text", "text": "the summary"}], "providerData": {"agent": "compact"}},
        {"id": "u1", "timestamp": 1796671228813, "type": "message", "role": "user", "cwd": "/work/cb",
         "content": [{"type": "input_text", "text": "first question"}], "providerData": {"agent": "cli"}},
        {"id": "c1", "parentId": "u1", "timestamp": 1796671241131, "type": "function_call", "name": "Glob",
         "arguments": "{}", "callId": "call_1"},
        {"id": "c1", "timestamp": 1796671228919, "type": "message", "role": "assistant", "status": "completed",
         "content": [{"type": "output_text", "text": "an answer", "providerData": {"annotations": []}}],
         "providerData": {"agent": "cli", "model": "stub-model"}},
        {"type": "ai-title", "aiTitle": "A title", "sessionId": "68e9aa44"},
    ]),
    "gptme": (GptmeSource, _gptme, [
        {"role": "system", "content": "You are gptme", "timestamp": "2026-12-07T19:04:49.031681", "hide": True},
        {"role": "user", "content": "first question", "timestamp": "2026-12-07T19:04:46.842705"},
        {"role": "assistant", "content": "an answer\n@shell(call_1): {\"command\": \"ls\"}",
         "timestamp": "2026-12-07T19:04:50.653820", "metadata": {"model": "local/stub-model"}},
        {"role": "system", "content": "out", "timestamp": "2026-12-07T19:05:20.006432", "call_id": "call_1"},
        {"role": "user", "content": "<system>No tool call detected.</system>", "timestamp": "2026-12-07T19:05:21"},
    ]),
    "kimi": (KimiCliSource, _kimi_cli, [
        {"role": "_system_prompt", "content": "You are Kimi Code CLI"},
        {"role": "user", "content": [{"type": "text", "text": "<system>Previous context has been compacted. Here is "
                                      "the compaction output:</system>"}, {"type": "text", "text": "sum"}]},
        {"role": "_checkpoint", "id": 0},
        {"role": "user", "content": "first question"},
        {"role": "_usage", "token_count": 5},
        {"role": "assistant", "content": [{"type": "think", "think": "hmm"}, {"type": "text", "text": "an answer"}],
         "tool_calls": [{"type": "function", "id": "c1", "function": {"name": "Glob", "arguments": "{}"}}]},
        {"role": "tool", "content": [{"type": "text", "text": "out"}], "tool_call_id": "c1"},
    ]),
    "vibe": (VibeSource, _vibe, [
        [{"message": {"content": [{"text": "<compaction_summary>the summary</compaction_summary>", "type": "text"}],
                      "role": "user"}, "source": "injection", "turn_index": 0},
         {"message": {"content": [{"text": "first question", "type": "text"}], "role": "user"}, "source": "history",
          "turn_index": 1},
         {"message": {"content": [{"text": "an answer", "type": "text"}, {"arguments": {"raw": "{}", "type": "json",
                      "value": {}}, "id": "call_1", "name": "bash", "type": "tool_call"}], "role": "assistant"},
          "source": "history", "turn_index": 1},
         {"message": {"content": [{"text": "out", "type": "text"}], "role": "tool", "tool_call_id": "call_1"},
          "source": "history", "turn_index": 1}],
    ]),
}  # fmt: skip


def _replace(data: st.DataObject, value: Any, depth: int = 0) -> Any:
    """``value`` with one value somewhere in it (maybe itself) replaced by any JSON value."""
    children = list(value) if isinstance(value, dict) else list(range(len(value))) if isinstance(value, list) else []
    if not children or depth > 4 or data.draw(st.booleans(), label="here"):
        return data.draw(JSON, label="replacement")
    key = data.draw(st.sampled_from(children), label="into")
    copy = dict(value) if isinstance(value, dict) else list(value)
    copy[key] = _replace(data, value[key], depth + 1)  # type: ignore[index]
    return copy


HOSTILE = [5, -1, 1.5, 10**30, True, None, "text", "", "\ud800", "+10000-01-01T00:00:00Z", [], [1], {}, {"a": 1}]
"""What each value of a valid record is replaced by in turn: every other JSON type, and odd ones."""


def _paths(value: Any, path: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    """Every place in a JSON value (the value itself first)."""
    found = [path]
    if isinstance(value, dict):
        for key, item in value.items():
            found += _paths(item, (*path, key))
    elif isinstance(value, list):
        for index, item in enumerate(value):
            found += _paths(item, (*path, index))
    return found


def _set(value: Any, path: tuple[Any, ...], replacement: Any) -> Any:
    if not path:
        return replacement
    copy = dict(value) if isinstance(value, dict) else list(value)
    copy[path[0]] = _set(value[path[0]], path[1:], replacement)
    return copy


def _list_and_read(source: Any, about: object = None) -> None:
    """List the source and read every session it lists: anything but a coded refusal fails the
    test, and what is read projects as a conversation."""
    refused: list[str] = []
    for record in source.listing():
        try:
            snapshot = source.surface(record.header.id)
            source.title(record.header.id)
        except SessionQueryError as error:
            refused.append(error.code)
            continue
        project_conversation(snapshot)
    assert all(code.startswith("SESSION_QUERY_") for code in refused), (refused, about)


def _read_all(agent: str, records: list[Any]) -> None:
    """Write ``records`` as the agent's session file, then list and read every session it holds:
    anything but a coded refusal fails the test."""
    make, where, _valid = READERS[agent]
    root = Path(tempfile.mkdtemp(prefix=f"hostile-{agent}-"))
    try:
        path = where(root, records)
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(b"".join(json.dumps(r).encode("utf-8", "surrogatepass") + b"\n" for r in records))
        _list_and_read(make(root))
    finally:
        shutil.rmtree(root, ignore_errors=True)


@pytest.mark.parametrize("agent", sorted(READERS))
def test_every_value_of_a_record_replaced_by_every_other_type_is_read_or_refused(agent: str) -> None:
    _make, _where, valid = READERS[agent]
    for at, record in enumerate(valid):
        for path in _paths(record):
            for replacement in HOSTILE:
                records = list(valid)
                records[at] = _set(record, path, replacement)
                _read_all(agent, records)


@pytest.mark.parametrize("agent", sorted(READERS))
@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_several_values_of_any_shape_at_once_are_read_or_refused(agent: str, data: st.DataObject) -> None:
    records = list(READERS[agent][2])
    for _ in range(data.draw(st.integers(1, 3), label="changes")):
        at = data.draw(st.integers(0, len(records) - 1), label="record")
        records[at] = _replace(data, records[at])
    _read_all(agent, records)


@pytest.mark.parametrize("agent", sorted(READERS))
def test_the_unchanged_session_of_each_format_is_read(agent: str, tmp_path: Path) -> None:
    # (what the test above changes: a session each reader lists and reads, else it would prove nothing)
    make, where, records = READERS[agent]
    path = where(tmp_path, records)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps(record) + "\n" for record in records))
    source = make(tmp_path)
    (record,) = source.listing()
    conversation = project_conversation(source.surface(record.header.id))
    texts = [item.text for item in conversation]
    assert "first question" in texts and texts.index("first question") + 1 == texts.index("an answer"), texts


def test_opencode_rows_of_any_type_are_read_or_refused(tmp_path: Path) -> None:
    # SQLite keeps any type in any column: each column of a session, message and part row in turn
    # holds text, a blob, a real, a null, a huge integer or JSON of another shape.
    from core.sessions.sources.opencode import OpenCodeSource
    from tests.test_other_agents import OpenCodeDb
    from tests.test_other_agents import text as part_text

    odd_values: list[Any] = ["noon", b"\x00\xff", 1.5, None, 2**62, -1, "[]", "5", '{"role": 5}', "\ud800"]
    columns = {
        "session": ["directory", "title", "time_created", "time_updated", "parent_id"],
        "message": ["time_created", "time_updated", "data"],
        "part": ["time_created", "data"],
    }
    number = 0
    for table, names in columns.items():
        for column in names:
            for value in odd_values:
                number += 1
                db = OpenCodeDb(tmp_path / f"case-{number}" / "opencode.db")
                db.session("ses_1", title="Fine")
                db.message("ses_1", "msg_1", {"role": "user"}, part_text("first question"))
                db.message("ses_1", "msg_2", {"role": "assistant"}, part_text("an answer"))
                stored = (
                    value.encode("utf-8", "surrogatepass") if isinstance(value, str) and "\ud800" in value else value
                )
                try:
                    db.connection.execute(f"UPDATE {table} SET {column} = ?", (stored,))
                except sqlite3.IntegrityError:  # (opencode's schema refuses it: no such row exists)
                    db.connection.close()
                    continue
                db.connection.commit()
                _list_and_read(OpenCodeSource(db.path.parent), (table, column, value))
                db.connection.close()


def test_openclaw_rows_of_any_type_are_read_or_refused(tmp_path: Path) -> None:
    # Each column of a transcript event in turn holds text, a blob, a real, a null, a huge integer,
    # JSON of another shape or a torn zstd frame; and the session tables' columns likewise.
    from tests.test_agent_openclaw import _database, _entries, _message

    odd_values: list[Any] = ["noon", b"\x00\xff", b"\x28\xb5\x2f\xfd\x00", 1.5, None, 2**62, -1, "[]", '{"type": 5}']
    columns = ["session_id", "seq", "event_json", "created_at", "event_zstd", "event_utf8_bytes"]
    number = 0
    for table, names in (("transcript_events", columns), ("session_nodes", ["current_session_id", "display_name"])):
        for column in names:
            for value in odd_values:
                number += 1
                db = _database(tmp_path / f"case-{number}" / "agents" / "main")
                _entries(
                    db, "s1", [_message("a", None, "user", "first question"), _message("b", "a", "assistant", "x")]
                )
                db.execute("INSERT INTO session_nodes VALUES ('agent:main:main', 's1', '{}', 0, NULL, 'T')")
                try:
                    db.execute(
                        f"UPDATE {table} SET {column} = ? WHERE rowid = (SELECT max(rowid) FROM {table})", (value,)
                    )
                except sqlite3.IntegrityError:  # (OpenClaw's schema refuses it: no such row exists)
                    db.close()
                    continue
                db.close()
                _list_and_read(OpenClawSource(tmp_path / f"case-{number}"), (table, column, value))


def test_llm_rows_of_any_type_are_read_or_refused(tmp_path: Path) -> None:
    # Each column of llm's threads, turns, messages, parts, fragments and older responses in turn
    # holds text, a blob, a real, a null, a huge integer or JSON of another shape.
    from core.sessions.sources.llm import LlmSource
    from tests.test_agent_llm import _response, _threads

    odd_values: list[Any] = ["noon", b"\x00\xff", 1.5, None, 2**62, -1, "[]", '{"text_ref": 5}', '{"text_ref": [5]}']
    columns = {
        "threads": ["id", "name", "tip_message_hash", "datetime_utc"],
        "turns": ["thread_id", "parent_message_hash", "tip_message_hash", "datetime_utc"],
        "messages": ["hash", "parent_hash", "role"],
        "parts": ["message_hash", "position", "type", "text", "payload"],
        "fragments": ["id", "content"],
        "responses": ["conversation_id", "prompt", "response", "datetime_utc"],
        "conversations": ["id", "name"],
    }
    number = 0
    for table, names in columns.items():
        for column in names:
            for value in odd_values:
                number += 1
                db = _threads(tmp_path / f"case-{number}")
                db.execute("INSERT INTO conversations VALUES ('01old', 'An older chat', 'm')")
                _response(db, "01r", "01old", "first question", "an answer", "2024-05-01T10:00:00")
                try:
                    db.execute(
                        f"UPDATE {table} SET {column} = ? WHERE rowid IN (SELECT rowid FROM {table} LIMIT 2)", (value,)
                    )
                except sqlite3.IntegrityError:
                    db.close()
                    continue
                db.close()
                _list_and_read(LlmSource(tmp_path / f"case-{number}"), (table, column, value))


def test_crush_rows_of_any_type_are_read_or_refused(tmp_path: Path) -> None:
    # Each column of Crush's sessions and messages in turn holds text, a blob, a real, a null, a huge
    # integer or JSON of another shape.
    from core.sessions.sources.crush import CrushSource
    from tests.test_agent_crush import Project, _projects, text

    odd_values: list[Any] = ["noon", b"\x00\xff", 1.5, None, 2**62, -1, "[]", '[{"type": "text", "data": 5}]', "{"]
    columns = {
        "sessions": ["id", "parent_session_id", "title", "created_at", "updated_at", "summary_message_id"],
        "messages": ["id", "session_id", "role", "parts", "created_at"],
    }
    number = 0
    for table, names in columns.items():
        for column in names:
            for value in odd_values:
                number += 1
                project = Project(tmp_path / f"case-{number}" / "app")
                project.session("s1", "A title")
                project.message("s1", "m1", "user", text("first question"))
                project.message("s1", "m2", "assistant", text("an answer"))
                project.db.execute("UPDATE sessions SET summary_message_id = 'm1'")
                try:
                    project.db.execute(f"UPDATE {table} SET {column} = ? WHERE rowid = 1", (value,))
                except sqlite3.IntegrityError:
                    project.db.close()
                    continue
                project.db.close()
                _projects(tmp_path / f"case-{number}" / "crush", project)
                _list_and_read(CrushSource(tmp_path / f"case-{number}" / "crush"), (table, column, value))


def test_goose_rows_of_any_type_are_read_or_refused(tmp_path: Path) -> None:
    # Each column of Goose's sessions and messages in turn holds text, a blob, a real, a null, a huge
    # integer or JSON of another shape.
    from core.sessions.sources.goose import GooseSource
    from tests.test_agent_goose import AGENT_ONLY, HIDDEN, Goose, text

    odd_values: list[Any] = ["noon", b"\x00\xff", 1.5, None, 2**62, -1, "[]", '[{"type": "text", "text": 5}]', "{"]
    columns = {
        "sessions": ["id", "name", "session_type", "working_dir", "created_at"],
        "messages": ["session_id", "role", "content_json", "created_timestamp", "metadata_json"],
    }
    number = 0
    for table, names in columns.items():
        for column in names:
            for value in odd_values:
                number += 1
                goose = Goose(tmp_path / f"case-{number}")
                goose.session("s1", "A title", "/work/app")
                goose.message("s1", "user", [text("first question")], HIDDEN)
                goose.message("s1", "user", [text("a summary")], AGENT_ONLY)
                goose.message("s1", "assistant", [text("an answer")])
                try:
                    goose.db.execute(f"UPDATE {table} SET {column} = ? WHERE rowid = 1", (value,))
                except sqlite3.IntegrityError:
                    goose.db.close()
                    continue
                goose.db.close()
                _list_and_read(GooseSource(tmp_path / f"case-{number}"), (table, column, value))


def test_cursor_values_of_any_type_are_read_or_refused(tmp_path: Path) -> None:
    # Each value of Cursor's key-value table (a chat's data, a message) in turn replaced by JSON of any
    # other shape, text that is not JSON, a blob or a number; and each field of them by every type.
    from core.sessions.sources.cursor import CursorSource
    from tests.test_agent_cursor import Cursor, bubble

    data = {"composerId": "c1", "name": "A title", "createdAt": 1796670000000, "lastUpdatedAt": 1796670060000,
            "fullConversationHeadersOnly": [{"bubbleId": "b0", "type": 1}, {"bubbleId": "b1", "type": 2}],
            "workspaceIdentifier": {"id": "1", "uri": {"fsPath": "/work/app"}}}  # fmt: skip
    valid = {"composerData:c1": data, "bubbleId:c1:b0": bubble(1, "first question"),
             "bubbleId:c1:b1": bubble(2, "an answer")}  # fmt: skip
    number = 0
    for key, value in valid.items():
        for path in _paths(value):
            for replacement in HOSTILE:
                number += 1
                cursor = Cursor(tmp_path / f"case-{number}")
                for other, stored in valid.items():
                    cursor.put(other, _set(value, path, replacement) if other == key else stored)
                cursor.db.close()
                _list_and_read(CursorSource(tmp_path / f"case-{number}"), (key, path, replacement))


def test_zed_rows_and_threads_of_any_shape_are_read_or_refused(tmp_path: Path) -> None:
    # Each column of Zed's threads table in turn holds a value of another type; then each field of a
    # stored thread (0.3.0 and 0.2.0) in turn holds every hostile value, compressed or not.
    from core.sessions.sources.zed import ZedSource
    from tests.test_agent_zed import Zed, agent, user

    odd_values: list[Any] = ["noon", b"\x00\xff", 1.5, None, 2**62, -1, "[]", "zstd", "json", "{"]
    messages = [user({"Text": "first question"}), agent({"Text": "an answer"}), "Resume"]
    number = 0
    for column in ("id", "summary", "updated_at", "data_type", "data", "parent_id", "folder_paths",
                   "folder_paths_order", "created_at"):  # fmt: skip
        for value in odd_values:
            number += 1
            zed = Zed(tmp_path / f"case-{number}")
            zed.save("t1", "A title", messages, folders=("/work/app",))
            try:
                zed.db.execute(f"UPDATE threads SET {column} = ? WHERE rowid = 1", (value,))
            except sqlite3.IntegrityError:
                zed.db.close()
                continue
            zed.db.close()
            _list_and_read(ZedSource(tmp_path / f"case-{number}"), (column, value))
    threads = [
        {"title": "T", "updated_at": "2026-12-07T19:00:00Z", "version": "0.3.0", "messages": messages},
        {"summary": "T", "updated_at": "2026-12-07T19:00:00Z", "version": "0.2.0",
         "messages": [{"id": 0, "role": "user", "segments": [{"type": "text", "text": "first question"}]}]},
    ]  # fmt: skip
    for thread in threads:
        for path in _paths(thread):
            for replacement in HOSTILE:
                number += 1
                zed = Zed(tmp_path / f"case-{number}")
                raw = json.dumps(_set(thread, path, replacement)).encode()
                packed = number % 2 == 0
                data = zstandard.ZstdCompressor().compress(raw) if packed else raw
                zed.db.execute(
                    "INSERT INTO threads (id, summary, updated_at, data_type, data) VALUES ('t1', 'T', ?, ?, ?)",
                    ("2026-12-07T19:00:00Z", "zstd" if packed else "json", data),
                )
                zed.db.close()
                _list_and_read(ZedSource(tmp_path / f"case-{number}"), (path, replacement))


def test_kiro_conversations_of_any_shape_are_read_or_refused(tmp_path: Path) -> None:
    # Each field of a stored conversation in turn holds every hostile value; each column of the row
    # a value of another type.
    from core.sessions.sources.kiro import KiroSource
    from tests.test_agent_kiro import Kiro, entry, prompt, results

    history = [entry(prompt("first question"), "let me look", tool=True), entry(results(), "an answer")]
    state = {"conversation_id": "c1", "history": history, "valid_history_range": [0, 2],
             "latest_summary": ["a summary", {}]}  # fmt: skip
    number = 0
    for path in _paths(state):
        for replacement in HOSTILE:
            number += 1
            kiro = Kiro(tmp_path / f"case-{number}")
            kiro.db.execute(
                "INSERT INTO conversations_v2 VALUES ('/w', 'c1', ?, 1, 2)",
                (json.dumps(_set(state, path, replacement)),),
            )
            kiro.db.close()
            _list_and_read(KiroSource(tmp_path / f"case-{number}"), (path, replacement))
    for column in ("key", "conversation_id", "value", "created_at", "updated_at"):
        for value in ["noon", b"\x00\xff", 1.5, None, 2**62, -1, "[]", "{"]:
            number += 1
            kiro = Kiro(tmp_path / f"case-{number}")
            kiro.save("/w", "c1", history)
            try:
                kiro.db.execute(f"UPDATE conversations_v2 SET {column} = ?", (value,))
            except sqlite3.IntegrityError:
                kiro.db.close()
                continue
            kiro.db.close()
            _list_and_read(KiroSource(tmp_path / f"case-{number}"), (column, value))
