"""Benchmarks of every other agent's source together: 10,000 sessions spread over every agent the
readers know (``AGENTS``: Claude Code, Codex, Gemini CLI... in each tool's own shapes; the twenty-two
after the first fourteen written by ``bench.agent_formats``), listed cold and warm, a picker keystroke
in the app over all of them, and one 1,000-message session of each reader's format read by a fresh
source.

Files are written once into a temp folder cached across runs.
"""

from __future__ import annotations

import asyncio
import json
import sqlite3
import sys
import tempfile
from pathlib import Path

from bench import agent_formats as formats
from bench import agent_shapes as shapes
from bench.app import print_latencies, type_mentions
from bench.external import _claude_records, _codex_records, _write
from bench.timing import median_seconds
from core import EchoModel, MemorySessionStore
from core.sessions.sources.aider import AiderSource
from core.sessions.sources.claude import ClaudeCodeSource
from core.sessions.sources.cline import ClineSource
from core.sessions.sources.codex import CodexSource
from core.sessions.sources.continue_cli import ContinueSource
from core.sessions.sources.copilot import CopilotCliSource
from core.sessions.sources.gemini import GeminiCliSource
from core.sessions.sources.hermes import HermesSource
from core.sessions.sources.merged import ExternalSource
from core.sessions.sources.opencode import KiloSource, OpenCodeSource
from core.sessions.sources.openhands import OpenHandsSource
from core.sessions.sources.pi import PiSource
from core.sessions.sources.qwen import QwenCodeSource
from core.sessions.sources.registry import AGENTS
from core.sessions.sources.vibe import VibeSource

AGENTS_BY_KEY = {agent.key: agent for agent in AGENTS}

TOTAL = 10_000
KINDS = 14 + len(formats.WRITERS)
_ROOT = Path(tempfile.gettempdir()) / "sessionref-bench-agents-v9"
LONG_MESSAGES = 1_000
PROJECT = "/home/user/project-0"


def _stamp(index: int, turn: int = 0) -> str:
    return f"2025-08-{1 + index % 28:02}T10:{turn % 60:02}:{index % 60:02}.000Z"


def _gemini(index: int, turns: int) -> list[dict[str, object]]:
    records: list[dict[str, object]] = [
        {"sessionId": f"gm-{index:06d}", "projectHash": "0" * 64, "startTime": _stamp(index), "kind": "main"}
    ]
    for turn in range(turns):
        records.append(
            {
                "id": f"u{turn}",
                "timestamp": _stamp(index, turn),
                "type": "user",
                "content": [{"text": f"question {turn}: " + "why does it fail? " * 10}],
            }
        )
        records.append(
            {
                "id": f"r{turn}",
                "timestamp": _stamp(index, turn),
                "type": "gemini",
                "content": "because of the lock. " * 20,
                "thoughts": [],
            }
        )
        records.append({"$set": {"lastUpdated": _stamp(index, turn)}})
    return records


def _qwen(index: int, turns: int) -> list[dict[str, object]]:
    records: list[dict[str, object]] = []
    parent = None
    for turn in range(turns):
        for kind, role, text in (
            ("user", "user", f"question {turn}: " + "refactor the parser " * 10),
            ("assistant", "model", "done. " * 40),
        ):
            uuid = f"{kind[0]}{turn}"
            records.append(
                {
                    "uuid": uuid,
                    "parentUuid": parent,
                    "sessionId": f"qw-{index:06d}",
                    "timestamp": _stamp(index, turn),
                    "type": kind,
                    "cwd": f"/home/user/project-{index % 40}",
                    "provenance": "real_user" if kind == "user" else "assistant_output",
                    "message": {"role": role, "parts": [{"text": text}]},
                }
            )
            parent = uuid
    return records


def _copilot(index: int, turns: int) -> list[dict[str, object]]:
    records: list[dict[str, object]] = [
        {
            "type": "session.start",
            "timestamp": _stamp(index),
            "data": {
                "sessionId": f"cp-{index:06d}",
                "startTime": _stamp(index),
                "context": {"cwd": f"/home/user/project-{index % 40}"},
            },
        }
    ]
    for turn in range(turns):
        records.append(
            {
                "type": "user.message",
                "timestamp": _stamp(index, turn),
                "data": {"content": f"task {turn}: " + "write the tests " * 10},
            }
        )
        records.append(
            {
                "type": "assistant.message",
                "timestamp": _stamp(index, turn),
                "data": {"content": "written. " * 40, "toolRequests": []},
            }
        )
    return records


SCHEMA = """
CREATE TABLE session (id text PRIMARY KEY, project_id text NOT NULL, parent_id text, slug text NOT NULL,
  directory text NOT NULL, title text NOT NULL, version text NOT NULL, time_created integer NOT NULL,
  time_updated integer NOT NULL);
CREATE TABLE message (id text PRIMARY KEY, session_id text NOT NULL, time_created integer NOT NULL,
  time_updated integer NOT NULL, data text NOT NULL);
CREATE TABLE part (id text PRIMARY KEY, message_id text NOT NULL, session_id text NOT NULL,
  time_created integer NOT NULL, time_updated integer NOT NULL, data text NOT NULL);
CREATE INDEX message_session_time_created_id_idx ON message (session_id, time_created, id);
CREATE INDEX part_message_id_id_idx ON part (message_id, id);
CREATE INDEX part_session_idx ON part (session_id);
"""


def _database(path: Path, sessions: list[tuple[str, int]]) -> None:
    """An opencode database (its schema, WAL mode) with ``(id, messages)`` sessions."""
    path.parent.mkdir(parents=True, exist_ok=True)
    connection = sqlite3.connect(path)
    connection.execute("PRAGMA journal_mode=WAL")
    connection.executescript(SCHEMA)
    clock = 1_750_000_000_000
    for number, (sid, messages) in enumerate(sessions):
        connection.execute(
            "INSERT INTO session VALUES (?, 'global', NULL, 'slug', ?, ?, '1.18.33', ?, ?)",
            (sid, f"/home/user/project-{number % 40}", f"opencode session {number}", clock, clock),
        )
        for message in range(messages):
            clock += 1
            mid = f"msg_{sid}_{message:05d}"
            role = "user" if message % 2 == 0 else "assistant"
            connection.execute(
                "INSERT INTO message VALUES (?, ?, ?, ?, ?)", (mid, sid, clock, clock, json.dumps({"role": role}))
            )
            parts = [
                {"type": "step-start"},
                {"type": "text", "text": f"message {message}: " + "plan the release " * 12},
                {"type": "step-finish", "reason": "stop"},
            ]
            for p, part in enumerate(parts):
                connection.execute(
                    "INSERT INTO part VALUES (?, ?, ?, ?, ?, ?)",
                    (f"prt_{mid}_{p}", mid, sid, clock, clock, json.dumps(part)),
                )
    connection.commit()
    connection.close()


def seed(root: Path = _ROOT) -> dict[str, Path]:
    """Every agent's root, 10,000 sessions in all, and a database with one 1,000-message session."""
    names = (
        "claude",
        "codex",
        "gemini",
        "qwen",
        "copilot",
        "opencode",
        "kilo",
        "pi",
        "continue",
        "cline",
        "hermes",
        "aider",
        "vibe",
        "openhands",
        *formats.WRITERS,
    )
    roots = {name: root / name for name in (*names, "long")} | {f"long-{name}": root / f"long-{name}" for name in names}
    if (root / ".complete").exists():
        return roots
    per = TOTAL // KINDS + 1
    for index in range(per):
        project = f"-home-user-project-{index % 40}"
        uuid = f"{index:08x}-0000-4000-8000-000000000000"
        _write(roots["claude"] / "projects" / project / f"{uuid}.jsonl", _claude_records(index, 2))
        day = f"{1 + index % 28:02}"
        name = f"rollout-2025-07-{day}T09-00-00-{index:08x}-1111-4000-8000-000000000000.jsonl"
        _write(roots["codex"] / "sessions" / "2025" / "07" / day / name, _codex_records(index, 3))
        folder = roots["gemini"] / "tmp" / f"project-{index % 40}"
        _write(folder / "chats" / f"session-2025-08-01T10-00-{index:08x}.jsonl", _gemini(index, 3))
        (folder / ".project_root").write_text(f"/home/user/project-{index % 40}")
        _write(roots["qwen"] / "projects" / project / "chats" / f"qw-{index:06d}.jsonl", _qwen(index, 3))
        _write(roots["copilot"] / "session-state" / f"cp-{index:06d}" / "events.jsonl", _copilot(index, 3))
        shapes.pi_session(roots["pi"], index, 3)
        shapes.cline_session(roots["cline"], index, 3)
        shapes.vibe_session(roots["vibe"], index, 3)
        shapes.openhands_conversation(roots["openhands"], index, 3)
    for key, write in formats.WRITERS.items():
        write(roots[key], range(per), 3)
        write(roots[f"long-{key}"], range(1), LONG_MESSAGES // 2)
    shapes.continue_sessions(roots["continue"], range(per), 3)
    shapes.hermes_database(roots["hermes"], range(per), 3)
    for project in range(40):  # (about as many runs in all, each a session)
        shapes.aider_project(roots["aider"], project, -(-per // 40), 3)
    _database(roots["opencode"] / "opencode.db", [(f"ses_oc{index:06d}", 6) for index in range(per)])
    _database(roots["kilo"] / "kilo.db", [(f"ses_kl{index:06d}", 6) for index in range(TOTAL - (KINDS - 1) * per)])
    _database(roots["long"] / "opencode.db", [("ses_long", LONG_MESSAGES)])
    # One 1,000-message session of each format (500 turns: a prompt and an answer each).
    turns = LONG_MESSAGES // 2
    _write(
        roots["long-claude"] / "projects" / "-p" / f"{0:08x}-0000-4000-8000-000000000000.jsonl",
        _claude_records(0, LONG_MESSAGES // 3),  # (a text answer and a closing text a turn: three messages)
    )
    rollout = "rollout-2025-07-01T09-00-00-00000000-1111-4000-8000-000000000000.jsonl"
    _write(roots["long-codex"] / "sessions" / "2025" / "07" / "01" / rollout, _codex_records(0, turns))
    _write(roots["long-gemini"] / "tmp" / "p" / "chats" / "session-2025-08-01T10-00-00000000.jsonl", _gemini(0, turns))
    _write(roots["long-qwen"] / "projects" / "-p" / "chats" / "qw-000000.jsonl", _qwen(0, turns))
    _write(roots["long-copilot"] / "session-state" / "cp-000000" / "events.jsonl", _copilot(0, turns))
    _database(roots["long-opencode"] / "opencode.db", [("ses_long", LONG_MESSAGES)])
    _database(roots["long-kilo"] / "kilo.db", [("ses_long", LONG_MESSAGES)])
    shapes.pi_session(roots["long-pi"], 0, turns)
    shapes.continue_sessions(roots["long-continue"], range(1), turns)
    shapes.cline_session(roots["long-cline"], 0, turns)
    shapes.hermes_database(roots["long-hermes"], range(1), turns)
    shapes.aider_project(roots["long-aider"], 0, 1, turns)
    shapes.vibe_session(roots["long-vibe"], 0, turns)
    shapes.openhands_conversation(roots["long-openhands"], 0, turns)
    (root / ".complete").write_text("ok")
    return roots


def sources(roots: dict[str, Path], prefix: str = "") -> list[ExternalSource]:
    """Every agent's source over its root (``prefix``: the roots named ``<prefix><agent>``)."""
    return [
        ClaudeCodeSource(roots[prefix + "claude"]),
        CodexSource(roots[prefix + "codex"]),
        GeminiCliSource(roots[prefix + "gemini"]),
        QwenCodeSource(roots[prefix + "qwen"]),
        CopilotCliSource(roots[prefix + "copilot"]),
        OpenCodeSource(roots[prefix + "opencode"], database=roots[prefix + "opencode"] / "opencode.db"),
        KiloSource(roots[prefix + "kilo"]),
        PiSource(roots[prefix + "pi"]),
        ContinueSource(roots[prefix + "continue"]),
        ClineSource(roots[prefix + "cline"]),
        HermesSource(roots[prefix + "hermes"]),
        AiderSource(roots[prefix + "aider"]),
        VibeSource(roots[prefix + "vibe"]),
        OpenHandsSource(roots[prefix + "openhands"]),
        *(
            AGENTS_BY_KEY[key].reader(formats.ROOTS.get(key, Path)(roots[prefix + key]))  # type: ignore[call-arg]
            for key in formats.WRITERS
        ),
    ]


async def _keystrokes(roots: dict[str, Path], rounds: int) -> list[float]:
    from core.settings import RunConfig
    from tui.app.sessionref_app import make_app

    # The message index in a file, as beside a folder store (a memory store's is in memory, where a
    # batch of the first build keeps a search waiting up to its commit interval).
    index = Path(tempfile.mkdtemp(prefix="sessionref-bench-agents-index-"))
    app = make_app(
        MemorySessionStore(),
        EchoModel(),
        RunConfig(sources=tuple(sources(roots))),
        cwd=PROJECT,
        refresh_interval=3600,
        cursor_blink=False,
        index_path=index / "index",
    )
    async with app.run_test(size=(120, 40)) as pilot:
        await asyncio.wait_for(app.workspace.catalog_loaded.wait(), 120)
        await type_mentions(app, pilot, ["project-1"] * rounds)
    return app.trace.picker_latencies


def main(repeats: int = 5) -> None:
    roots = seed()
    print(f"\n## Every other agent: {TOTAL:,} sessions over {KINDS} agents' formats, {TOTAL // KINDS + 1:,} each")
    counted: list[int] = []
    cold = median_seconds(lambda: counted.append(sum(len(source.listing()) for source in sources(roots))), repeats)
    warm_sources = sources(roots)
    for source in warm_sources:
        source.listing()
    warm = median_seconds(lambda: [source.listing() for source in warm_sources], repeats)
    print(f"  cold listing of {counted[-1]:,} (fresh sources):  {cold * 1000:7.0f} ms   (target: 100,000 in <= 5 s)")
    print(f"  warm listing (nothing changed):          {warm * 1000:7.1f} ms")
    print("  picker in the app over all of them: key received -> picker painted")
    print_latencies(asyncio.run(_keystrokes(roots, max(3, repeats))), indent="    ")

    print(f"  a {LONG_MESSAGES:,}-message session read by a fresh source, each format (target <= 50 ms):")
    for index, name in enumerate(source.name for source in sources(roots, "long-")):
        counted: list[int] = []

        def read_long(index: int = index, counted: list[int] = counted) -> None:
            source = sources(roots, "long-")[index]  # nothing cached
            (record,) = source.listing()
            counted.append(len(source.surface(record.header.id).events))

        read = median_seconds(read_long, max(repeats, 5))
        assert abs(counted[-1] - LONG_MESSAGES) <= 2, (name, counted[-1])
        print(f"    {name:<20} {read * 1000:6.1f} ms  ({counted[-1]:,} messages)")


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 5)
