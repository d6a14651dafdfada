"""OpenHands's conversations (its CLI ``openhands`` on the OpenHands SDK):
``~/.openhands/conversations/<id>/``, read-only.

A conversation is a folder: ``base_state.json`` says what ran (``id``, ``workspace.working_dir``, the
agent), ``events/event-<index>-<event id>.json`` holds one event a file, in order of ``<index>``. Each
event has an ``id``, a ``timestamp`` (ISO 8601, the machine's local time, without an offset), a
``source`` (``user``, ``agent``, ``environment``) and a ``kind``. What the model is sent is built from
them as the SDK's ``View`` does: the events its model reads (``SystemPromptEvent``, ``MessageEvent``,
``ActionEvent``, the observations and errors) in order, and a ``Condensation`` drops the events it
names (``forgotten_event_ids``) and puts its ``summary`` at ``summary_offset`` in what is left.

Mapping: a ``MessageEvent``'s text (``llm_message.content``, its ``text`` blocks) becomes a prompt
when its role is ``user``, an answer when ``assistant``; the ``finish`` tool's message (the agent's
last word to the user) an answer too. After a condensation, what comes before its summary (the first
events it always keeps) and the summary are one compact checkpoint, as the model reads them. Tool calls
and their observations, thoughts and the system prompt are not on the surface. Times are the events';
the title is the first prompt.

Where OpenHands keeps them: ``$OPENHANDS_CONVERSATIONS_DIR``, else ``$OPENHANDS_PERSISTENCE_DIR``'s
``conversations`` (``~/.openhands`` by default). Either folder can be given.
"""

from __future__ import annotations

import json
import os
import re
import stat
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from core.sessions.models import SessionHeader
from core.sessions.sources.files import (
    ExternalSession,
    FileSource,
    SurfaceBuilder,
    local_millis,
    plain_folder,
    prompt_title,
    read_json_object,
    subfolders,
    text_of,
)

OPENHANDS_PREFIX = "openhands:"
EVENT_BYTES = 16 * 1024 * 1024
"""The largest event file read (a longer one, a tool's huge output say, is left out and counted)."""
SESSION_BYTES = 256 * 1024 * 1024
"""The most of a conversation's events read in all."""
STATE_BYTES = 4 * 1024 * 1024
"""The largest ``base_state.json`` read."""
_EVENT = re.compile(r"event-(\d{5,})-[0-9A-Fa-f-]{8,}\.json")
_FOLDER = re.compile(r"[0-9A-Za-z][0-9A-Za-z_-]{0,127}")
_READ = frozenset(
    {"SystemPromptEvent", "MessageEvent", "ActionEvent", "ObservationEvent", "UserRejectObservation", "AgentErrorEvent"}
)
"""The kinds of event its model reads (``LLMConvertibleEvent``s)."""


def openhands_root() -> Path:
    """Where OpenHands keeps its conversations (see the module docstring)."""
    conversations = os.environ.get("OPENHANDS_CONVERSATIONS_DIR", "").strip()
    if conversations:
        return Path(conversations).expanduser()
    persistence = os.environ.get("OPENHANDS_PERSISTENCE_DIR", "").strip()
    return (Path(persistence).expanduser() if persistence else Path.home() / ".openhands") / "conversations"


def _events(folder: Path) -> list[tuple[int, str]]:
    """The event files of a conversation, in order: (index, path); links and other kinds of file
    are not among them."""
    try:
        with os.scandir(folder) as entries:
            found = [
                (int(match.group(1)), entry.path)
                for entry in entries
                if (match := _EVENT.fullmatch(entry.name)) and entry.is_file(follow_symlinks=False)
            ]
    except OSError:
        return []
    return sorted(found)


def _read_event(path: str, limit: int) -> tuple[Any, int]:
    """One event file's JSON and its size, at most ``limit`` bytes of it, never through a link (a
    conversation holds a file an event: one open, one ``fstat`` and one read each).

    Raises:
        OSError: it cannot be opened, is not a regular file, or is larger than ``limit``.
        ValueError, RecursionError: it is not JSON.
    """
    fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
    try:
        status = os.fstat(fd)
        if not stat.S_ISREG(status.st_mode) or status.st_size > limit:
            raise OSError(f"not a regular file of at most {limit // (1024 * 1024)} MiB")
        raw = os.read(fd, status.st_size + 1)
    finally:
        os.close(fd)
    if len(raw) > status.st_size:
        raise OSError("grew while read")
    return json.loads(raw), len(raw)


class OpenHandsSource(FileSource):
    """OpenHands's conversations: ``~/.openhands/conversations/<id>/events/`` (read-only)."""

    prefix = OPENHANDS_PREFIX
    name = "OpenHands"
    follow_links = False

    def _conversations(self) -> Path:
        folder = self.root / "conversations"
        return folder if plain_folder(folder) else self.root

    def _files(self) -> Iterator[str]:
        """Each conversation's ``events`` folder (a new event adds a file to it: its revision)."""
        for folder in subfolders(self._conversations()):
            events = os.path.join(folder.path, "events")
            if _FOLDER.fullmatch(folder.name) and os.path.isdir(events) and not os.path.islink(events):
                yield events

    def _header(self, path: Path) -> SessionHeader | None:
        events = _events(path)
        if not events:
            return None  # (a conversation whose first event is not written yet)
        created = None
        try:
            first, _size = _read_event(events[0][1], EVENT_BYTES)
            created = local_millis(first.get("timestamp")) if type(first) is dict else None
        except (OSError, ValueError, RecursionError):
            pass
        if created is None:
            created = path.stat().st_mtime_ns // 1_000_000
        workspace = read_json_object(path.parent / "base_state.json", STATE_BYTES).get("workspace")
        cwd = workspace.get("working_dir") if type(workspace) is dict else None
        return SessionHeader(
            id=self.prefix + path.parent.name, created_at=created, cwd=cwd if type(cwd) is str and cwd else None
        )

    def _read(self, path: Path, header: SessionHeader) -> ExternalSession:
        view: list[tuple[int, dict[str, Any]]] = []  # (event number, event) as the model reads them
        summary: tuple[int, int, str] | None = None  # (the condensation's number, where in the view, text)
        problems = 0
        left = SESSION_BYTES
        events = _events(path)
        for number, (_index, file) in enumerate(events):
            try:
                event, size = _read_event(file, min(EVENT_BYTES, left))
                left -= size
            except OSError:
                if left < EVENT_BYTES:  # (the conversation's bound reached: the rest is not read)
                    problems += len(events) - number
                    break
                problems += 1
                continue
            except (ValueError, RecursionError):
                problems += 1
                continue
            kind = event.get("kind") if type(event) is dict else None
            if kind == "Condensation":
                forgotten = event.get("forgotten_event_ids")
                gone = {item for item in forgotten if type(item) is str} if type(forgotten) is list else set()
                view = [(at, kept) for at, kept in view if kept.get("id") not in gone]
                text, offset = event.get("summary"), event.get("summary_offset")
                if type(text) is str and type(offset) is int and offset >= 0:
                    summary = (number, min(offset, len(view)), text)
                elif summary is not None:
                    summary = (summary[0], min(summary[1], len(view)), summary[2])
            elif kind in _READ:
                view.append((number, event))
            elif type(event) is not dict:
                problems += 1
        # An event's seq is its number + 1: a checkpoint takes the seq just before the first event after it.
        builder = SurfaceBuilder()
        first_prompt: str | None = None
        start = 0
        if summary is not None:
            _condensed, offset, text = summary
            kept = [said for _number, event in view[:offset] if (said := _said(event)) is not None]
            pieces = [said_text for _role, said_text in kept] + [text]
            seq = view[offset][0] if offset < len(view) else len(events)
            when = local_millis(view[offset - 1][1].get("timestamp")) if offset else None
            builder.checkpoint(seq, when or header.created_at, "\n\n".join(piece for piece in pieces if piece))
            start = offset
        for number, event in view[start:]:
            said = _said(event)
            if said is None:
                continue
            role, text = said
            when = local_millis(event.get("timestamp")) or header.created_at
            if role == "user":
                builder.user(number + 1, when, text)
                first_prompt = first_prompt or prompt_title(text)
            else:
                builder.assistant(number + 1, when, text)
        return ExternalSession(header, builder.events, first_prompt, problems, len(events) if events else None)


def _said(event: dict[str, Any]) -> tuple[str, str] | None:
    """(``user`` or ``assistant``, text) of an event that says something, else ``None``."""
    kind = event.get("kind")
    if kind == "MessageEvent":
        message = event.get("llm_message")
        if type(message) is not dict:
            return None
        role, text = message.get("role"), text_of(message.get("content"))
        if (role == "user" or role == "assistant") and text.strip():
            return str(role), text
        return None
    if kind == "ActionEvent" and event.get("tool_name") == "finish":
        action = event.get("action")
        message = action.get("message") if type(action) is dict else None
        if type(message) is str and message.strip():
            return "assistant", message
    return None
