"""Codex CLI's sessions: ``<root>/sessions/YYYY/MM/DD/rollout-*.jsonl``, read-only.

Two layouts: ``{timestamp, type, payload}`` lines (``session_meta``, ``response_item``, ``event_msg``,
``turn_context``; Codex 0.2x+ and Desktop) and the older bare lines (a first ``{id, timestamp,
instructions}`` line, then response items). Mapping: per role, messages come from response items
when the file has any of that role, else from ``event_msg`` (Desktop writes prompts only as events
and answers only as items); ``<user_instructions>``, ``<environment_context>`` and ``# AGENTS.md
instructions`` messages are the tool's boilerplate, not the user's; the title is the first prompt
(after "## My request for Codex:" when the IDE wrapped it).
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

from core.sessions.models import SessionHeader
from core.sessions.sources.files import (
    HEAD_BYTES,
    UUID_AT_END,
    ExternalSession,
    FileSource,
    SurfaceBuilder,
    json_lines,
    millis,
    prompt_title,
)

CODEX_PREFIX = "codex:"
_BOILERPLATE = ("<user_instructions", "<environment_context", "# AGENTS.md instructions for ")
"""Codex user messages that the tool wrote, not the user (instructions files, the environment)."""
_CWD_IN_CONTEXT = re.compile(r"<environment_context>.*?<cwd>([^<]+)</cwd>", re.DOTALL)


def codex_root() -> Path:
    """``CODEX_HOME``, else ``~/.codex``."""
    configured = os.environ.get("CODEX_HOME")
    return Path(configured) if configured else Path.home() / ".codex"


def _codex_text(content: Any) -> str:
    if isinstance(content, str):
        return content
    parts: list[str] = []
    if isinstance(content, list):
        for block in content:
            if (
                isinstance(block, Mapping)
                and block.get("type") in ("input_text", "output_text", "text")
                and isinstance(block.get("text"), str)
            ):
                parts.append(block["text"])
    return "\n".join(part for part in parts if part)


def _is_boilerplate(text: str) -> bool:
    return text.lstrip().startswith(_BOILERPLATE)


class CodexSource(FileSource):
    """Codex CLI's sessions: ``<root>/sessions/YYYY/MM/DD/rollout-*.jsonl`` (read-only)."""

    prefix = CODEX_PREFIX
    name = "Codex CLI"

    def _files(self) -> Iterator[str]:
        sessions = self.root / "sessions"
        for folder, _dirs, names in os.walk(sessions):
            for name in names:
                if name.startswith("rollout-") and name.endswith(".jsonl"):
                    yield os.path.join(folder, name)

    def _header(self, path: Path) -> SessionHeader | None:
        session_id: str | None = None
        created: int | None = None
        cwd: str | None = None
        readable = False
        for _number, record in json_lines(path, HEAD_BYTES):
            if not isinstance(record, Mapping):
                continue
            payload = record.get("payload")
            if record.get("type") == "session_meta" and isinstance(payload, Mapping):
                readable = True
                session_id = payload.get("id") if isinstance(payload.get("id"), str) else session_id
                created = millis(payload.get("timestamp")) or millis(record.get("timestamp"))
                cwd = payload.get("cwd") if isinstance(payload.get("cwd"), str) else None
                break
            if "payload" not in record and isinstance(record.get("id"), str) and "timestamp" in record:
                readable = True  # the older layout's first line
                session_id, created = record["id"], millis(record.get("timestamp"))
                continue
            if isinstance(record.get("type"), str):
                readable = True
                if created is None:
                    created = millis(record.get("timestamp"))
                if cwd is None and record.get("type") == "turn_context" and isinstance(payload, Mapping):
                    cwd = payload.get("cwd") if isinstance(payload.get("cwd"), str) else None
                if cwd is None and record.get("type") == "message" and record.get("role") == "user":
                    # The older layout names its folder only in the environment context it sends.
                    found = _CWD_IN_CONTEXT.search(_codex_text(record.get("content")))
                    cwd = found.group(1).strip() or None if found is not None else None
            if session_id is not None and cwd is not None:
                break
        if not readable:
            return None
        if session_id is None:
            match = UUID_AT_END.search(path.stem)
            session_id = match.group(1) if match else path.stem
        if created is None:
            created = path.stat().st_mtime_ns // 1_000_000
        return SessionHeader(id=self.prefix + session_id, created_at=created, cwd=cwd)

    def _read(self, path: Path, header: SessionHeader) -> ExternalSession:
        items: list[tuple[int, int, str, str]] = []  # (seq, time, role, text) from response items
        events: list[tuple[int, int, str, str]] = []  # the same from event_msg, used only without items
        problems = 0
        last_seq: int | None = None
        for number, record in json_lines(path):
            last_seq = number
            if not isinstance(record, Mapping):
                problems += 1
                continue
            time = millis(record.get("timestamp")) or header.created_at
            kind = record.get("type")
            payload = record.get("payload")
            if isinstance(payload, Mapping):
                if kind == "response_item":
                    self._item(payload, number, time, items)
                elif kind == "event_msg":
                    message = payload.get("message")
                    if isinstance(message, str) and message.strip():
                        if payload.get("type") == "user_message" and not _is_boilerplate(message):
                            events.append((number, time, "user", message))
                        elif payload.get("type") == "agent_message":
                            events.append((number, time, "assistant", message))
                elif kind not in ("session_meta", "turn_context", "compacted"):
                    problems += 1
            elif "payload" not in record and isinstance(kind, str):
                self._item(record, number, time, items)  # the older layout: bare response items
            elif not ("id" in record and "timestamp" in record) and "record_type" not in record:
                # (The older layout's ``{"record_type": "state"}`` lines carry nothing to show.)
                problems += 1
        # Each role from whichever record kind holds it: response items when they have that role
        # (event_msg then only repeats them), else event_msg (Codex Desktop 0.128 writes prompts
        # only as event_msg and answers only as response items). Never both: nothing is doubled.
        chosen = sorted(
            entry
            for role in ("user", "assistant")
            for entry in (items if any(item[2] == role for item in items) else events)
            if entry[2] == role
        )
        builder = SurfaceBuilder()
        title: str | None = None
        for seq, time, role, text in chosen:
            if role == "user":
                builder.user(seq, time, text)
                title = title or prompt_title(text)
            else:
                builder.assistant(seq, time, text)
        return ExternalSession(header, builder.events, title, problems, last_seq)

    @staticmethod
    def _item(item: Mapping[str, Any], seq: int, time: int, out: list[tuple[int, int, str, str]]) -> None:
        if item.get("type") != "message":
            return  # function calls and outputs, reasoning (summaries or encrypted), local shell
        role = item.get("role")
        text = _codex_text(item.get("content"))
        if not text.strip():
            return
        if role == "user" and not _is_boilerplate(text):
            out.append((seq, time, "user", text))
        elif role == "assistant":
            out.append((seq, time, "assistant", text))
