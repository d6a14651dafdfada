"""Fuzz targets over files other programs write: dsh's JSONL / zstd session logs (read alone and
through a store, against the real logs dsh wrote as seeds) and Claude Code and Codex transcripts."""

from __future__ import annotations

import json
import os
import random
import shutil
import tempfile
from pathlib import Path
from typing import Any

import zstandard

from core import (
    SessionQueryError,
    project_conversation,
)
from core.folder import jsonl_codec
from core.folder.jsonl_codec import load_log
from core.folder.jsonl_store import JsonlSessionStore
from core.sessions.models import SessionEvent
from core.sessions.sources.aider import HISTORY_NAME, AiderSource
from core.sessions.sources.claude import ClaudeCodeSource
from core.sessions.sources.code_puppy import CodePuppySource
from core.sessions.sources.codebuddy import CodeBuddySource
from core.sessions.sources.codex import CodexSource
from core.sessions.sources.continue_cli import ContinueSource
from core.sessions.sources.gptme import GptmeSource
from core.sessions.sources.kimi_cli import KimiCliSource
from core.sessions.sources.kimi_code import KimiCodeSource
from core.sessions.sources.letta import LettaSource
from core.sessions.sources.mini_swe_agent import MiniSweAgentSource
from core.sessions.sources.nanocoder import NanocoderSource
from core.sessions.sources.openclaw import OpenClawSource
from core.sessions.sources.openhands import OpenHandsSource
from core.sessions.sources.pi import OhMyPiSource, PiSource
from core.sessions.sources.vibe import VibeSource
from fuzz.kit import check, outcome_of, rng_of, run_async
from tests.support.shared_fixtures import fixtures_root

REAL_LOGS = fixtures_root() / "dsh-real"
"""Seeds: the logs dsh wrote (none when the shared fixtures are not beside the checkout)."""


# -- the dsh JSONL / zstd reader ---------------------------------------------------------------------


def _events(log: Any) -> list[SessionEvent]:
    return list(log.events)


def _load(raw: bytes, compression: Any) -> tuple[str, Any]:
    try:
        return "ok", load_log(raw, Path("fuzz.jsonl"), compression)
    except SessionQueryError as error:
        return outcome_of(error), None


def _load_whole(raw: bytes, compression: Any) -> tuple[str, Any]:
    """``_load`` with every row decoded into dicts at load, as the reader did before it deferred
    each event's data (``event_envelopes``): what the deferring reader must agree with."""
    saved = jsonl_codec.envelopes
    jsonl_codec.envelopes = lambda content: None  # type: ignore[assignment]
    try:
        return _load(raw, compression)
    finally:
        jsonl_codec.envelopes = saved


def _same_reading(first: tuple[str, Any], second: tuple[str, Any], what: str) -> None:
    check(first[0] == second[0], f"{what}: {first[0]} against {second[0]}")
    if first[1] is not None:
        check(
            [event.to_wire() for event in first[1].events] == [event.to_wire() for event in second[1].events]
            and (first[1].surface_seqs, first[1].title) == (second[1].surface_seqs, second[1].title),
            f"{what}: different events",
        )


def _frames_of(lines: list[bytes], rng: random.Random) -> bytes:
    """Plain JSONL re-framed as dsh writes it: the header a frame of its own, then frames of one
    or more whole lines, each with a checksum."""
    compressor = zstandard.ZstdCompressor(level=1, write_checksum=True, write_content_size=rng.random() < 0.5)
    frames = [compressor.compress(lines[0])] if lines else []
    at = 1
    while at < len(lines):
        take = rng.randint(1, 4)
        frames.append(compressor.compress(b"".join(lines[at : at + take])))
        at += take
    return b"".join(frames)


def _is_prefix(shorter: list[SessionEvent], longer: list[SessionEvent]) -> bool:
    return len(shorter) <= len(longer) and all(a == b for a, b in zip(shorter, longer, strict=False))


def _through_store(raw: bytes, compression: Any, expected: Any) -> None:
    """The same file read through a real store on disk: listed and read, or a listed problem."""
    root = Path(tempfile.mkdtemp(prefix="sessionref-fuzz-", dir=_scratch()))
    try:
        store = JsonlSessionStore(root, compression=compression)
        try:
            path = store.session_path(expected.header.id, expected.header.cwd)
        except SessionQueryError as error:  # an id too long for a file name: refused, with its code
            outcome_of(error)
            return
        try:
            path.parent.mkdir(parents=True)
        except OSError:
            return  # an id or cwd the file system cannot hold (too long): the store refuses those itself
        path.write_bytes(raw)
        records = run_async(store.list_sessions())
        check([r.header.id for r in records] == [expected.header.id], f"listing {records!r} {store.problems!r}")
        surface = run_async(store.read_surface(expected.header.id))
        check(surface.session == expected.header, "the store read another header")
        check(len(surface.events) == len(expected.surface_seqs), "the store folded another surface")
        project_conversation(surface)
    finally:
        shutil.rmtree(root, ignore_errors=True)


_SCRATCH: str | None = None


def _scratch() -> str:
    global _SCRATCH
    if _SCRATCH is None:
        base = "/dev/shm" if os.path.isdir("/dev/shm") and os.access("/dev/shm", os.W_OK) else None
        _SCRATCH = tempfile.mkdtemp(prefix="sessionref-fuzz-", dir=base)
    return _SCRATCH


def dsh_log(data: bytes) -> str:
    """The session-file reader on (mutated) real dsh logs, plain and re-framed as zstd.

    - Plain and zstd framings of the same lines read the same (events, or the same error code).
    - A file cut at any byte reads as a prefix of the whole file's events, or as damaged; a byte
      flipped in a zstd frame is detected (its checksum) or leaves a prefix.
    - A readable file reads the same through a real store on disk (listing, surface).
    - Each reads as the reader that decodes every row at load reads it (the same events or error).
    """
    rng = rng_of(data)
    complete = data[: data.rfind(b"\n") + 1]
    plain_outcome, plain = _load(data, "none")
    _, whole = _load(complete, "none") if complete != data else (plain_outcome, plain)
    lines = [line + b"\n" for line in complete.split(b"\n")[:-1]]  # JSONL splits on \n only, not \r
    framed = _frames_of(lines, rng)
    zstd_outcome, zstd = _load(framed, "zstd")
    _same_reading((plain_outcome, plain), _load_whole(data, "none"), "plain, deferred and whole")
    _same_reading((zstd_outcome, zstd), _load_whole(framed, "zstd"), "zstd, deferred and whole")
    if whole is None:
        check(zstd is None, "a zstd re-framing reads where the plain lines do not")
        return plain_outcome
    check(zstd is not None, f"the plain lines read but their zstd framing is {zstd_outcome}")
    check(_events(zstd) == _events(whole), "plain and zstd framings read different events")
    check(zstd.header == whole.header and zstd.title == whole.title, "plain and zstd framings differ")

    cut = rng.randrange(len(data) + 1)
    _, part = _load(data[:cut], "none")
    check(part is None or _is_prefix(_events(part), _events(plain)), f"plain cut at {cut} is not a prefix")
    if framed:
        cut = rng.randrange(len(framed))
        _, part = _load(framed[:cut], "zstd")
        check(part is None or _is_prefix(_events(part), _events(zstd)), f"zstd cut at {cut} is not a prefix")
        flipped = bytearray(framed)
        at = rng.randrange(len(flipped))
        flipped[at] ^= 1 << rng.randrange(8)
        _, part = _load(bytes(flipped), "zstd")
        check(part is None or _is_prefix(_events(part), _events(zstd)), f"zstd bit flip at {at} went unnoticed")
    if rng.random() < 0.25:
        _through_store(framed, "zstd", zstd)
    return "ok"


_OWN_LOG = (
    b'{"type":"session","version":1,"id":"seed","createdAt":0,"cwd":"/w","delegationDepth":0}\n'
    b'{"type":"user/message","seq":0,"time":1,"data":{"content":[{"type":"text","text":"hi"}],'
    b'"source":{"kind":"user"}},"surfaceOp":"append"}\n'
)
"""A log of our own, the seed where the real ones are not beside the checkout."""


def _real_logs() -> list[bytes]:
    return [path.read_bytes() for path in sorted(REAL_LOGS.glob("*.jsonl"))] or [_OWN_LOG]


_LOG_TOKENS = [
    b'{"type":"session",',
    b'"seq":',
    b'"time":',
    b'"surfaceOp":"append"',
    b'"surfaceOp":{"op":"replace","start":0,"end":1}',
    b'"sourceEventSeqs":[0]',
    b'{"type":"text-chunks","seq0":',
    b'"dt":[',
    b'"delegationDepth":',
    b"\n",
    b"\\ud800",
    b"1e308",
    b"-0",
]


# -- Claude Code and Codex session files ------------------------------------------------------------


def external(data: bytes) -> str:
    """The same bytes as the session file of each agent whose sessions are JSON lines or documents
    (Claude Code, Codex, pi and oh-my-pi, an older OpenClaw file, Kimi Code, Kimi CLI, gptme, CodeBuddy,
    Code Puppy, mini-swe-agent, nanocoder, Letta Code, Open Interpreter, Amp, Factory Droid,
    Roo Code, Continue), an Aider chat
    history, a Mistral Vibe session's context and an OpenHands event: each lists, reads and projects,
    or is reported unreadable; the tools' files are never changed."""
    base = Path(tempfile.mkdtemp(prefix="sessionref-fuzz-", dir=_scratch()))
    try:
        claude = base / "claude" / "projects" / "-work-app" / "5b1f3c2a-7d4e-4f6a-9b8c-0d1e2f3a4b5c.jsonl"
        codex = base / "codex" / "sessions" / "2026" / "01" / "02" / "rollout-2026-01-02T03-04-05-c0de.jsonl"
        pi = base / "pi" / "sessions" / "--work-app--" / "2026-01-02T03-04-05-000Z_01a24c16-a285-7258.jsonl"
        continued = base / "continue" / "sessions" / "28ab63df-f623-41a0-a4b0-6276f0fb0313.json"
        outcomes = []
        omp = base / "omp" / "sessions" / "-work-app-" / "2026-01-02T03-04-05-000Z_01a24c16-a285-7258.jsonl"
        kimi = base / "kimi" / "sessions" / "wd_app_100fe2736d70" / "session_df65" / "agents" / "main" / "wire.jsonl"
        readers: list[tuple[Path, Any]] = [
            (claude, ClaudeCodeSource(base / "claude")),
            (codex, CodexSource(base / "codex")),
            (pi, PiSource(base / "pi")),
            (omp, OhMyPiSource(base / "omp")),
            (base / "openclaw" / "agents" / "main" / "sessions" / "01a24c16.jsonl", OpenClawSource(base / "openclaw")),
            (kimi, KimiCodeSource(base / "kimi")),
            (base / "kimicli" / "sessions" / "242b" / "670e" / "context.jsonl", KimiCliSource(base / "kimicli")),
            (base / "gptme" / "2026-12-07-blue-squid" / "conversation.jsonl", GptmeSource(base / "gptme")),
            (
                base / "cb" / "projects" / "w" / "68e9aa44-3330-40f8-a46e-891b3d63d571.jsonl",
                CodeBuddySource(base / "cb"),
            ),
            (continued, ContinueSource(base / "continue")),
            (base / "pu" / "autosaves" / "auto_session_1.json", CodePuppySource(base / "pu")),
            (base / "mini" / "last_mini_run.traj.json", MiniSweAgentSource(base / "mini")),
            (base / "nc" / "sessions" / "a1f4612e-5af1-4089-b6ae-51a2bb9a0975.json", NanocoderSource(base / "nc")),
            (
                base / "lt" / "conversations" / "Y29udmVyc2F0aW9uOmxvY2FsLWNvbnYtMQ" / "messages.jsonl",
                LettaSource(base / "lt"),
            ),
        ]
        for path, source in readers:
            path.parent.mkdir(parents=True)
            path.write_bytes(data)
            outcomes.append(_external_one(source, path, data))
        outcomes.append(_aider(base / "aider", data))
        vibe = _vibe_store(base / "vibe")
        vibe.write_bytes(data)
        outcomes.append(_external_one(VibeSource(base / "vibe"), vibe, data))
        event = _openhands_conversation(base / "openhands")
        event.write_bytes(data)
        outcomes.append(_external_one(OpenHandsSource(base / "openhands"), event, data))
        return "+".join(outcomes)
    finally:
        shutil.rmtree(base, ignore_errors=True)


VIBE_CHUNK = "5fbe14a3f3b925527f49e31f872e2088816e69591733665252de2cd7d357e5bc"


def _vibe_store(home: Path) -> Path:
    """A Mistral Vibe session folder as Vibe 3.0.2 publishes one; the path of its context's chunk."""
    folder = home / "logs" / "session" / "unified" / "e65c2abf-9651-9647-0da0-3b046f359384"
    (folder / "generations" / "0000000000000008").mkdir(parents=True)
    (folder / "chunks").mkdir()
    meta = {"session_id": folder.name, "start_time": "2026-12-06T16:33:10.808000+00:00",
            "environment": {"working_directory": "/work/app"}}  # fmt: skip
    (folder / "meta.json").write_text(json.dumps(meta))
    pointer = {"generation": "0000000000000008", "store_format": "mistral.vibe.unified-session-store/v1"}
    (folder / "CURRENT").write_text(json.dumps(pointer))
    manifest = {"checkpoint": {"chunks": [VIBE_CHUNK], "path": "checkpoint.json"}}
    (folder / "generations" / "0000000000000008" / "manifest.json").write_text(json.dumps(manifest))
    return folder / "chunks" / f"{VIBE_CHUNK}.json"


def _openhands_conversation(home: Path) -> Path:
    """An OpenHands conversation whose first event is its user's message; the path of its second."""
    folder = home / "conversations" / "16c67e46aadb478eaadad7ca8f1bf03a"
    (folder / "events").mkdir(parents=True)
    (folder / "base_state.json").write_text(json.dumps({"workspace": {"working_dir": "/work/app"}}))
    said = {"role": "user", "content": [{"type": "text", "text": "Why does it flake?"}]}
    first = {
        "id": "u1",
        "timestamp": "2026-01-02T03:04:05",
        "source": "user",
        "llm_message": said,
        "kind": "MessageEvent",
    }
    (folder / "events" / "event-00000-0000000a-0000.json").write_text(json.dumps(first))
    return folder / "events" / "event-00001-0000000b-0000.json"


def _aider(projects: Path, data: bytes) -> str:
    """The bytes as a project's Aider chat history (Markdown): every session it holds lists, reads
    and projects with its lines in order; the file is never changed."""
    path = projects / "app" / HISTORY_NAME
    path.parent.mkdir(parents=True)
    path.write_bytes(data)
    source = AiderSource(projects)
    records = source.listing()
    for record in records:
        surface = run_async(source.read_surface(record.header.id))
        run_async(source.read_title(record.header.id))
        seqs = [event.seq for event in surface.events]
        check(seqs == sorted(set(seqs)), "surface seqs are not increasing")
        project_conversation(surface)
    check(path.read_bytes() == data, "the tool's file was changed")
    return "ok" if records else "unreadable"


def _external_one(source: Any, path: Path, data: bytes) -> str:
    records = source.listing()
    if not records:
        check(bool(source.problems), "a file neither listed nor reported")
        return "unreadable"
    (record,) = records
    try:
        surface = run_async(source.read_surface(record.header.id))
        run_async(source.read_title(record.header.id))
    except SessionQueryError as error:
        return outcome_of(error)
    seqs = [event.seq for event in surface.events]
    check(seqs == sorted(set(seqs)), "surface seqs are not increasing")
    project_conversation(surface)
    check(path.read_bytes() == data, "the tool's file was changed")
    return "ok"


def _external_seeds() -> list[bytes]:
    def lines(records: list[dict[str, Any]]) -> bytes:
        return "".join(json.dumps(record) + "\n" for record in records).encode()

    common = {"sessionId": "5b1f3c2a", "cwd": "/work/app", "isSidechain": False}
    claude = lines(
        [
            {"type": "summary", "summary": "Flaky lock test", "leafUuid": "a2"},
            {**common, "type": "user", "uuid": "u1", "parentUuid": None, "timestamp": "2026-01-02T03:04:05.000Z",
             "message": {"role": "user", "content": "Why does it flake?"}},
            {**common, "type": "assistant", "uuid": "a1", "parentUuid": "u1", "timestamp": "2026-01-02T03:04:06Z",
             "message": {"role": "assistant", "content": [{"type": "thinking", "thinking": "hm"},
                                                           {"type": "tool_use", "id": "t", "name": "Read"}]}},
            {**common, "type": "user", "uuid": "r1", "parentUuid": "a1", "timestamp": "2026-01-02T03:04:07Z",
             "message": {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t", "content": "x"}]}},
            {**common, "type": "assistant", "uuid": "a2", "parentUuid": "r1", "timestamp": "2026-01-02T03:04:08Z",
             "message": {"role": "assistant", "content": [{"type": "text", "text": "The lock."}]}},
            {**common, "type": "system", "subtype": "compact_boundary", "uuid": "c1", "parentUuid": "a2",
             "timestamp": "2026-01-02T03:05:00Z", "content": "Conversation compacted"},
            {**common, "type": "user", "uuid": "s1", "parentUuid": "c1", "isCompactSummary": True,
             "timestamp": "2026-01-02T03:05:01Z", "message": {"role": "user", "content": "Summary: the lock."}},
        ]
    )  # fmt: skip
    codex = lines(
        [
            {"timestamp": "2026-01-02T03:04:05Z", "type": "session_meta",
             "payload": {"id": "c0de", "timestamp": "2026-01-02T03:04:05Z", "cwd": "/work/site"}},
            {"timestamp": "2026-01-02T03:04:06Z", "type": "response_item", "payload": {"type": "message",
             "role": "user", "content": [{"type": "input_text", "text": "<environment_context>x"}]}},
            {"timestamp": "2026-01-02T03:04:07Z", "type": "response_item", "payload": {"type": "message",
             "role": "user", "content": [{"type": "input_text", "text": "Lazy images"}]}},
            {"timestamp": "2026-01-02T03:04:08Z", "type": "response_item",
             "payload": {"type": "reasoning", "summary": [], "encrypted_content": "gAAA"}},
            {"timestamp": "2026-01-02T03:04:09Z", "type": "response_item", "payload": {"type": "function_call",
             "name": "shell", "arguments": "{}", "call_id": "c"}},
            {"timestamp": "2026-01-02T03:04:10Z", "type": "event_msg",
             "payload": {"type": "agent_message", "message": "Done."}},
            {"timestamp": "2026-01-02T03:04:11Z", "type": "response_item", "payload": {"type": "message",
             "role": "assistant", "content": [{"type": "output_text", "text": "Added loading=lazy."}]}},
            {"timestamp": "2026-01-02T03:04:12Z", "type": "compacted", "payload": {"message": "summary"}},
            {"id": "old-layout", "timestamp": "2025-01-01T00:00:00Z", "instructions": None},
        ]
    )  # fmt: skip
    pi = lines(
        [
            {"type": "session", "version": 3, "id": "01a24c16-a285-7258", "timestamp": "2026-01-02T03:04:05Z",
             "cwd": "/work/app"},
            {"type": "message", "id": "u1", "parentId": None, "timestamp": "2026-01-02T03:04:06Z",
             "message": {"role": "user", "content": [{"type": "text", "text": "Why does it flake?"}]}},
            {"type": "message", "id": "a1", "parentId": "u1", "timestamp": "2026-01-02T03:04:07Z",
             "message": {"role": "assistant", "content": [{"type": "thinking", "thinking": "hm"},
                                                          {"type": "toolCall", "id": "t", "name": "bash"}]}},
            {"type": "message", "id": "r1", "parentId": "a1", "timestamp": "2026-01-02T03:04:08Z",
             "message": {"role": "toolResult", "toolCallId": "t", "content": [{"type": "text", "text": "x"}]}},
            {"type": "compaction", "id": "c1", "parentId": "r1", "timestamp": "2026-01-02T03:05:00Z",
             "summary": "Summary: the lock.", "firstKeptEntryId": "a1"},
            {"type": "message", "id": "a2", "parentId": "c1", "timestamp": "2026-01-02T03:05:01Z",
             "message": {"role": "assistant", "content": [{"type": "text", "text": "The lock."}]}},
            {"type": "session_info", "id": "n1", "parentId": "a2", "timestamp": "2026-01-02T03:05:02Z", "name": "x"},
        ]
    )  # fmt: skip
    continued = json.dumps(
        {"sessionId": "28ab63df", "title": "Untitled Session", "workspaceDirectory": "file:///work/app", "history": [
            {"message": {"role": "assistant", "content": "Summary."}, "conversationSummary": "Summary."},
            {"message": {"role": "user", "content": [{"type": "text", "text": "Why does it flake?"}]}},
            {"message": {"role": "assistant", "content": "", "toolCalls": [{"id": "t"}]}, "toolCallStates": []},
            {"message": {"role": "tool", "content": "x", "toolCallId": "t"}},
            {"message": {"role": "assistant", "content": "The lock."}},
        ]}
    ).encode()  # fmt: skip
    aider = (
        b"\n# aider chat started at 2026-01-02 03:04:05\n\n> aider --model x  \n> Aider v0.86.2  \n\n"
        b"#### Why does it flake?  \n#### (two lines)  \n\nThe lock.\n\n#### A heading of the reply\n> a quote\n\n"
        b"> Tokens: 5 sent, 3 received.  \n\n# aider chat started at 2026-01-02 03:05:00\n\n"
        b"> Restored previous conversation history.  \n\n#### <blank>  \n\n#### more  \n\nYes.\n\n"
    )
    vibe = json.dumps(
        [
            {"message": {"role": "user", "content": [{"type": "text", "text": "<compaction_summary>S"}]},
             "source": "injection", "turn_index": 0},
            {"message": {"role": "user", "content": [{"type": "text", "text": "Why does it flake?"}]},
             "source": "history", "turn_index": 1},
            {"message": {"role": "assistant", "content": [{"type": "tool_call", "id": "t", "name": "bash"}]},
             "source": "history", "turn_index": 1},
            {"message": {"role": "tool", "content": [{"type": "text", "text": "x"}], "tool_call_id": "t"},
             "source": "history", "turn_index": 1},
            {"message": {"role": "assistant", "content": [{"type": "text", "text": "The lock."}]},
             "source": "history", "turn_index": 1},
        ]
    ).encode()  # fmt: skip
    kimi = lines(
        [
            {"role": "_system_prompt", "content": "You are Kimi Code CLI"},
            {"role": "_checkpoint", "id": 0},
            {"role": "user", "content": "Why does it flake?"},
            {"role": "assistant", "content": [{"type": "think", "think": "hm"}, {"type": "text", "text": "The lock."}]},
            {"role": "tool", "content": [{"type": "text", "text": "x"}], "tool_call_id": "t"},
            {"role": "_usage", "token_count": 8},
        ]
    )
    return [
        claude,
        codex,
        pi,
        continued,
        aider,
        vibe,
        kimi,
        claude + codex,
        claude[: len(claude) // 2],
        b"{}\n[]\nnull\n",
    ]


_EXTERNAL_TOKENS = [
    b'"parentUuid":',
    b'"uuid":',
    b'"type":"user"',
    b'"type":"assistant"',
    b'"isSidechain":true',
    b'"isMeta":true',
    b'"isCompactSummary":true',
    b'"type":"session_meta"',
    b'"type":"response_item"',
    b"# aider chat started at 2026-01-02 03:04:05\n",
    b"#### ",
    b"  \n",
    b"> Restored previous conversation history.  \n",
    b'"conversationSummary":',
    b'"history":[',
    b'"workspaceDirectory":"file:///x"',
    b'"type":"session"',
    b'"type":"message"',
    b'"type":"compaction"',
    b'"firstKeptEntryId":"u1"',
    b'"parentId":"a1"',
    b'"id":"u1"',
    b'"timestamp":"2026-13-45T99:99:99Z"',
    b'"timestamp":1e400',
    b'"cwd":"relative"',
    b'"cwd":""',
    b'"role":"user"',
    b'"role":"_checkpoint"',
    b"@shell(call_1): {",
    b"<system>Previous context has been compacted. Here is the compaction output:</system>",
    b"\\ud800",
]
