"""Qwen Code's sessions: ``<root>/projects/<sanitized cwd>/chats/<session id>.jsonl``, read-only.

One JSON record per line, linked by ``uuid`` / ``parentUuid`` as Claude Code's are, with ``cwd``,
``timestamp`` and a Gemini-style ``message`` (``{role, parts}``): ``user`` records (``provenance``
``real_user`` for what the user typed), ``assistant`` records (text, ``thought`` and
``functionCall`` parts), ``tool_result`` records, and ``system`` records (telemetry, snapshots, a
``chat_compression`` checkpoint, a ``custom_title``).

Mapping: the branch that ends in the newest record, root first; a user record's text parts become a
prompt (text Qwen Code injects, ``<system-reminder>`` blocks and the like, is left out), an
assistant record's text parts (not its thoughts) an answer, a ``chat_compression`` record's
compressed history a compact checkpoint; tool calls and results and every other system record are
not on the surface. The title is the newest ``custom_title``, else the first prompt.
"""

from __future__ import annotations

import os
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

from core.sessions.models import SessionHeader
from core.sessions.sources.files import (
    ASSISTANT,
    CHECKPOINT,
    HEAD_BYTES,
    SKIP,
    USER,
    ExternalSession,
    FileSource,
    LinkedRecord,
    SurfaceBuilder,
    chats_files,
    json_lines,
    millis,
    newest_branch,
    prompt_title,
)

QWEN_PREFIX = "qwen:"


def qwen_root() -> Path:
    """``$QWEN_RUNTIME_DIR``, else ``$QWEN_HOME``, else ``~/.qwen`` (where Qwen Code keeps projects)."""
    for variable in ("QWEN_RUNTIME_DIR", "QWEN_HOME"):
        configured = os.environ.get(variable)
        if configured:
            return Path(configured).expanduser()
    return Path.home() / ".qwen"


def _parts_text(message: Any, *, thoughts: bool = False) -> str:
    """The text parts of a ``{role, parts}`` message, joined (thought parts only when asked)."""
    parts = message.get("parts") if type(message) is dict else None
    if type(parts) is not list:
        return ""
    return "".join(
        part["text"]
        for part in parts
        if type(part) is dict and type(part.get("text")) is str and (thoughts or part.get("thought") is not True)
    )


def _compressed_text(payload: Any) -> str:
    """The summary text of a ``chat_compression`` record (its compressed history's text)."""
    history = payload.get("compressedHistory") if type(payload) is dict else None
    if type(history) is not list:
        return ""
    texts = [_parts_text(content) for content in history]
    return "\n\n".join(text for text in texts if text.strip())


class QwenCodeSource(FileSource):
    """Qwen Code's sessions: ``<root>/projects/<sanitized cwd>/chats/<id>.jsonl`` (read-only)."""

    prefix = QWEN_PREFIX
    name = "Qwen Code"
    follow_links = False

    def _files(self) -> Iterator[str]:
        return chats_files(self.root / "projects", lambda name: name.endswith(".jsonl"))

    def _header(self, path: Path) -> SessionHeader | None:
        created: int | None = None
        cwd: str | None = None
        session_id: str | None = None
        for _number, record in json_lines(path, HEAD_BYTES, follow=False):
            if not isinstance(record, Mapping) or not isinstance(record.get("uuid"), str):
                continue
            if session_id is None and isinstance(record.get("sessionId"), str) and record["sessionId"]:
                session_id = record["sessionId"]
            if created is None:
                created = millis(record.get("timestamp"))
            if cwd is None and isinstance(record.get("cwd"), str) and record["cwd"]:
                cwd = record["cwd"]
            if created is not None and cwd is not None and session_id is not None:
                break
        if session_id is None:
            return None
        if created is None:
            created = path.stat().st_mtime_ns // 1_000_000
        return SessionHeader(id=self.prefix + session_id, created_at=created, cwd=cwd)

    def _read(self, path: Path, header: SessionHeader) -> ExternalSession:
        records: dict[str, LinkedRecord] = {}
        order: list[str] = []
        titles: list[tuple[str, str]] = []
        problems = 0
        last_seq: int | None = None
        for number, record in json_lines(path, follow=False):
            last_seq = number
            if type(record) is not dict:
                problems += 1
                continue
            uuid = record.get("uuid")
            if type(uuid) is not str:
                continue
            parent = record.get("parentUuid")
            kind = record.get("type")
            role, text = SKIP, ""
            if kind == "user" and record.get("provenance", "real_user") == "real_user":
                role, text = USER, _parts_text(record.get("message"))
            elif kind == "assistant":
                role, text = ASSISTANT, _parts_text(record.get("message"))
            elif kind == "system" and record.get("subtype") == "chat_compression":
                role, text = CHECKPOINT, _compressed_text(record.get("systemPayload"))
            elif kind == "system" and record.get("subtype") == "custom_title":
                payload = record.get("systemPayload")
                title = payload.get("customTitle") if type(payload) is dict else None
                if type(title) is str and title.strip():
                    titles.append((uuid, title.strip()))
            if role == USER and text.lstrip().startswith("<"):
                role = SKIP  # text Qwen Code injects in the user's turn (reminders, notifications)
            when = millis(record.get("timestamp")) if text else None
            records[uuid] = (
                number,
                parent if type(parent) is str else None,
                role if text.strip() else SKIP,
                text,
                when,
            )
            order.append(uuid)
        chain = newest_branch(records, order)
        builder = SurfaceBuilder()
        first_prompt: str | None = None
        for uuid in chain:
            number, _parent, role, text, time = records[uuid]
            when = time if time is not None else header.created_at
            if role == USER:
                builder.user(number, when, text)
                first_prompt = first_prompt or prompt_title(text)
            elif role == ASSISTANT:
                builder.assistant(number, when, text)
            elif role == CHECKPOINT:
                builder.checkpoint(number, when, text)
        title = titles[-1][1] if titles else first_prompt
        return ExternalSession(header, builder.events, title, problems, last_seq)
