"""GitHub Copilot CLI's sessions: ``<root>/session-state/<id>/events.jsonl`` beside its
``workspace.yaml``, read-only.

``events.jsonl`` holds one event per line (``type``, ``data``, ``id``, ``parentId``,
``timestamp``; a sub-agent's events carry ``agentId``): ``session.start`` (``sessionId``,
``startTime``, ``context.cwd``; ``session.resume`` on a resume), ``user.message`` (``content``: what
the user typed; ``transformedContent``: what the model got, with Copilot's own preamble;
``source`` for a prompt Copilot itself sends, a skill's or another agent's),
``assistant.message`` (``content`` and its ``toolRequests``), ``tool.execution_*``,
``session.compaction_complete`` (``summaryContent``), ``session.title_changed`` and many more.
``workspace.yaml`` repeats the id, the folder (``cwd``), a ``name`` and ``created_at``.

Mapping: what the user typed becomes a prompt, the main agent's text an answer, a successful
compaction's summary a compact checkpoint; tool calls and results, reasoning, system messages,
sub-agents' events and prompts Copilot sends itself are left out. The title is the newest
``session.title_changed``, else ``workspace.yaml``'s ``name``, else the first prompt.
"""

from __future__ import annotations

import os
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

import yaml

from core.files import open_regular
from core.sessions.models import SessionHeader
from core.sessions.sources.files import (
    HEAD_BYTES,
    ExternalSession,
    FileSource,
    SurfaceBuilder,
    json_lines,
    millis,
    prompt_title,
    subfolders,
)

COPILOT_PREFIX = "copilot:"
WORKSPACE_BYTES = 256 * 1024
"""The most of a ``workspace.yaml`` read."""


def copilot_root() -> Path:
    """``$COPILOT_HOME``, else ``~/.copilot`` (as Copilot CLI finds its own folder)."""
    configured = os.environ.get("COPILOT_HOME")
    return Path(configured) if configured else Path.home() / ".copilot"


def read_workspace(folder: Path) -> Mapping[str, Any]:
    """A session folder's ``workspace.yaml`` as a mapping (empty when missing or not a mapping)."""
    try:
        with os.fdopen(open_regular(folder / "workspace.yaml", follow=False), "rb") as handle:
            raw = handle.read(WORKSPACE_BYTES)
        value = yaml.safe_load(raw.decode("utf-8", "replace"))
    except (
        OSError,
        yaml.YAMLError,
        RecursionError,
        ValueError,
        TypeError,
        OverflowError,
    ):  # (a date that does not exist)
        return {}
    return value if isinstance(value, dict) else {}


def _text(value: Any) -> str:
    return value if isinstance(value, str) else ""


def _object(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


class CopilotCliSource(FileSource):
    """GitHub Copilot CLI's sessions: ``<root>/session-state/<id>/events.jsonl`` (read-only)."""

    prefix = COPILOT_PREFIX
    name = "GitHub Copilot CLI"
    follow_links = False

    def _files(self) -> Iterator[str]:
        for folder in subfolders(self.root / "session-state"):
            if not folder.name.startswith("."):
                yield os.path.join(folder.path, "events.jsonl")

    def _header(self, path: Path) -> SessionHeader | None:
        workspace = read_workspace(path.parent)
        session_id = workspace.get("id") if isinstance(workspace.get("id"), str) else None
        cwd = workspace.get("cwd") if isinstance(workspace.get("cwd"), str) and workspace.get("cwd") else None
        created = millis(workspace.get("created_at")) if isinstance(workspace.get("created_at"), str) else None
        for _number, event in json_lines(path, HEAD_BYTES, follow=False):
            if session_id is not None and cwd is not None and created is not None:
                break
            if not isinstance(event, dict) or event.get("type") != "session.start":
                continue
            data = _object(event.get("data"))
            if session_id is None and isinstance(data.get("sessionId"), str):
                session_id = data["sessionId"]
            context = _object(data.get("context"))
            if cwd is None and isinstance(context.get("cwd"), str) and context["cwd"]:
                cwd = context["cwd"]
            if created is None:
                created = millis(data.get("startTime")) or millis(event.get("timestamp"))
        if not session_id:
            return None
        if created is None:
            created = path.stat().st_mtime_ns // 1_000_000
        return SessionHeader(id=self.prefix + session_id, created_at=created, cwd=cwd)

    def _read(self, path: Path, header: SessionHeader) -> ExternalSession:
        builder = SurfaceBuilder()
        first_prompt: str | None = None
        title: str | None = None
        problems = 0
        last_seq: int | None = None
        for number, event in json_lines(path, follow=False):
            last_seq = number
            if type(event) is not dict or type(event.get("type")) is not str:
                problems += 1
                continue
            if event.get("agentId") is not None:
                continue  # a sub-agent's work, part of its parent's turn
            kind = event["type"]
            data = _object(event.get("data"))
            when = millis(event.get("timestamp")) or header.created_at
            if kind == "user.message":
                text = _text(data.get("content"))
                if data.get("source") not in (None, "user") or not text.strip():
                    continue  # a prompt Copilot sends itself (a skill's, another agent's)
                builder.user(number, when, text)
                first_prompt = first_prompt or prompt_title(text)
            elif kind == "assistant.message":
                text = _text(data.get("content"))
                if text.strip():
                    builder.assistant(number, when, text)
            elif kind == "session.compaction_complete":
                summary = _text(data.get("summaryContent"))
                if data.get("success") is True and summary.strip():
                    builder.checkpoint(number, when, summary)
            elif kind == "session.title_changed":
                named = _text(data.get("title")).strip()
                title = named or title
        if title is None:
            title = _text(read_workspace(path.parent).get("name")).strip() or first_prompt
        return ExternalSession(header, builder.events, title, problems, last_seq)
