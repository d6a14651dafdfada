"""Kimi Code's sessions (npm ``@moonshot-ai/kimi-code``):
``<home>/sessions/wd_<folder>_<hash>/session_<uuid>/agents/main/wire.jsonl`` beside the session's
``state.json``; read-only.

``state.json`` holds the session's ``id``, ``cwd``, ``createdAt`` (epoch milliseconds), ``title``
and ``archived``. ``wire.jsonl`` is the main agent's journal, one record per line: the durable
``context.*`` records are what Kimi Code replays to rebuild its model's context (``context.append_message``
with a ``message`` whose ``origin.kind`` is ``user`` for what was typed and ``injection`` for the
reminders it adds; ``context.append_loop_event`` with the model's ``content.part``s, tool calls and
results; ``context.apply_compaction`` with its ``summary``; ``context.clear``; ``context.undo`` of
``count`` prompts); the rest are observations (``turn.prompt``, ``llm.request``, usage...).

Mapping, as the replay does: typed prompts become prompts, the model's text parts (joined per step)
answers, a compaction's summary a checkpoint; ``context.clear`` starts the surface again, and an undo
takes back its prompts and what followed them. Injected reminders, thinking, tool calls and results,
and sub-agents' journals (``agents/<other>/``) are not on the surface. An undo replayed onto another
branch (``agent.switched``) is read as the plain undo it records. The title is ``state.json``'s, else
the first prompt on the surface; an archived session is not listed.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from core.sessions import event_types as ev
from core.sessions.models import SessionHeader
from core.sessions.sources.files import (
    ExternalSession,
    FileSource,
    NotListed,
    SurfaceBuilder,
    epoch_millis,
    json_lines,
    prompt_title,
    read_json_object,
    subfolders,
    text_of,
)

KIMI_CODE_PREFIX = "kimicode:"
STATE_BYTES = 1024 * 1024


def kimi_code_root() -> Path:
    """``$KIMI_CODE_HOME``, else ``~/.kimi-code``."""
    configured = os.environ.get("KIMI_CODE_HOME", "").strip()
    return Path(configured).expanduser() if configured else Path.home() / ".kimi-code"


def _summary(record: dict[str, Any]) -> str:
    """A compaction's text: its ``summary`` (text, or a message), else its ``contextSummary``."""
    summary = record.get("summary")
    if type(summary) is str:
        return summary
    context = record.get("contextSummary")
    if type(context) is str:
        return context
    if type(summary) is dict:
        return text_of(summary.get("content"))
    return ""


class _Answer:
    """The model's text parts of one step, joined as they arrive."""

    def __init__(self) -> None:
        self.step: object = None
        self.seq = 0
        self.time = 0
        self.parts: list[str] = []

    def flush(self, builder: SurfaceBuilder) -> None:
        text = "".join(self.parts)
        if text.strip():
            builder.assistant(self.seq, self.time, text)
        self.parts = []
        self.step = None


class KimiCodeSource(FileSource):
    """Kimi Code's sessions (see the module docstring)."""

    prefix = KIMI_CODE_PREFIX
    name = "Kimi Code"
    follow_links = False

    def _files(self) -> Iterator[str]:
        for workspace in subfolders(self.root / "sessions"):
            for session in subfolders(Path(workspace.path)):
                agents = os.path.join(session.path, "agents")
                main = os.path.join(agents, "main")
                wire = os.path.join(main, "wire.jsonl")
                if not (os.path.islink(agents) or os.path.islink(main)) and os.path.isfile(wire):
                    yield wire

    def _header(self, path: Path) -> SessionHeader | None:
        state = _state(path)
        if state.get("archived") is True:
            raise NotListed
        stated = state.get("id")
        session_id = stated if type(stated) is str and stated.strip() else _session_folder(path).name
        created = epoch_millis(state.get("createdAt"))
        if created is None:
            created = path.stat().st_mtime_ns // 1_000_000
        cwd = state.get("cwd")
        return SessionHeader(
            id=self.prefix + session_id, created_at=created, cwd=cwd if type(cwd) is str and cwd else None
        )

    def _read(self, path: Path, header: SessionHeader) -> ExternalSession:
        builder = SurfaceBuilder()
        answer = _Answer()
        problems = 0
        last_seq: int | None = None
        for number, record in json_lines(path, follow=False):
            last_seq = number
            if type(record) is not dict or type(record.get("type")) is not str:
                problems += 1
                continue
            kind = record["type"]
            when = epoch_millis(record.get("time")) or header.created_at
            if kind == "context.append_loop_event":
                event = record.get("event")
                part = event.get("part") if type(event) is dict and event.get("type") == "content.part" else None
                if type(part) is dict and part.get("type") == "text" and type(part.get("text")) is str:
                    step = event.get("stepUuid")  # type: ignore[union-attr]
                    if step != answer.step or not answer.parts:
                        answer.flush(builder)
                        answer.step, answer.seq, answer.time = step, number, when
                    answer.parts.append(part["text"])
                continue
            if not kind.startswith("context."):
                continue
            answer.flush(builder)
            if kind == "context.append_message":
                message = record.get("message")
                if type(message) is not dict:
                    continue
                origin = message.get("origin")
                typed = origin is None or (type(origin) is dict and origin.get("kind") == "user")
                text = text_of(message.get("content"))
                if message.get("role") == "user" and typed and text.strip():
                    builder.user(number, when, text)
                elif message.get("role") == "assistant" and text.strip():
                    builder.assistant(number, when, text)
            elif kind == "context.apply_compaction":
                builder.checkpoint(number, when, _summary(record))
            elif kind == "context.clear":
                builder.events = []
            elif kind == "context.undo" and type(record.get("count")) is int and record["count"] > 0:
                _undo(builder, record["count"])
        answer.flush(builder)
        title = _state(path).get("title")
        if type(title) is not str or not title.strip():
            prompts = (
                prompt_title(str(event.data["content"][0]["text"]))
                for event in builder.events
                if event.type == ev.USER_MESSAGE and event.data.get("source") == {"kind": "user"}
            )
            title = next((prompt for prompt in prompts if prompt), None)
        return ExternalSession(header, builder.events, title, problems, last_seq)


def _session_folder(wire: Path) -> Path:
    """``session_<uuid>/`` of its main agent's ``agents/main/wire.jsonl``."""
    return wire.parent.parent.parent


def _state(wire: Path) -> dict[str, Any]:
    """The session's ``state.json`` (empty when missing, unreadable or of another shape)."""
    return read_json_object(_session_folder(wire) / "state.json", STATE_BYTES)


def _undo(builder: SurfaceBuilder, count: int) -> None:
    """Take back the last ``count`` prompts and everything after them (a checkpoint stops it)."""
    events = builder.events
    for index in range(len(events) - 1, -1, -1):
        source = events[index].data.get("source")
        if events[index].type != ev.USER_MESSAGE:
            continue
        if source != {"kind": "user"}:
            break  # (a compaction's checkpoint: nothing before it is on the surface)
        count -= 1
        if count == 0:
            del events[index:]
            return
