"""Where a session was handed: a note per hand-off.

A session of the store gets an event of its own log, ``sessionref/handoff``, marked ``ignorable`` (dsh
skips it; nothing of the conversation changes). Another tool's session, one a teammate owns, or one
another process is writing gets a line in sessionref's own file beside the store
(``.sessionref-handoffs.jsonl`` in a folder store's root; the user's state folder for a database
store): the other tool's files are never written.
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import platformdirs

from core.errors import SessionQueryError
from core.handoff.agents import AGENTS
from core.sessions import event_types as ev
from core.sessions.models import SessionEvent
from core.sessions.session import Session
from core.stores import SessionStore, hosted

HANDOFF_EVENT = ev.HANDOFF
SIDE_FILE = ".sessionref-handoffs.jsonl"
SIDE_LINE_BYTES = 64 * 1024
"""The longest line of the side file read (a note is a few hundred bytes)."""


@dataclass(frozen=True, slots=True)
class Handoff:
    """One hand-off of a session."""

    session_id: str
    to: str
    """The agent's name (``claude``, ``codex``…)."""
    goal: str
    at: int
    """When, in ms since the epoch."""
    headless: bool = False
    size: int = 0
    """The briefing's bytes."""

    @property
    def summary(self) -> str:
        """``handed to Codex CLI (headless): <goal>`` (raw text: the goal is data)."""
        agent = AGENTS.get(self.to)
        label = agent.label if agent is not None else self.to
        return f"handed to {label}{' (headless)' if self.headless else ''}: {self.goal}"

    def data(self) -> dict[str, Any]:
        """The note's JSON (the event's data; a side line adds ``sessionId``)."""
        return {"to": self.to, "goal": self.goal, "at": self.at, "headless": self.headless, "bytes": self.size}

    @classmethod
    def of(cls, session_id: str, data: Mapping[str, Any]) -> Handoff | None:
        """A note read back (``None`` when it is not one)."""
        to, goal, at = data.get("to"), data.get("goal"), data.get("at")
        if not isinstance(to, str) or not isinstance(goal, str) or type(at) is not int:
            return None
        size = data.get("bytes")
        return cls(session_id, to, goal, at, data.get("headless") is True, size if type(size) is int else 0)


def side_file(root: str | None, state_folder: str | None = None) -> str:
    """The side file: in a folder store's ``root``, else in ``state_folder`` (default: the user's
    state folder, ``~/.local/state/sessionref`` on Linux)."""
    if root is not None:
        return os.path.join(root, SIDE_FILE)
    if state_folder is None:
        state_folder = platformdirs.user_state_dir("sessionref", appauthor=False)
    return os.path.join(state_folder, SIDE_FILE)


def side_file_of(store: SessionStore) -> str | None:
    """The side file of ``store`` (``None`` for a memory store: its notes live only in its logs)."""
    location = hosted(store).location
    if location is None:
        return None
    return side_file(location.root)  # (a database's: in the user's state folder)


def record_handoff(
    store: SessionStore, handoff: Handoff, side: str | None, *, own: bool, writing: Session | None = None
) -> str:
    """Record ``handoff``: in the session's log when it is ``own`` (a session of ``store`` this user
    writes) and can be opened for writing (``writing``: the session when the caller writes it
    already), else as a line of ``side``. Where it went, in words.

    Raises:
        OSError: the side file cannot be written.
        SessionQueryError: no side file (a memory store) and the log cannot take the note.
    """
    if writing is not None and writing.id == handoff.session_id:
        writing.append(HANDOFF_EVENT, handoff.data(), ignorable=True)
        return "the session's log"
    if own:
        try:
            session = store.get(handoff.session_id)
        except SessionQueryError:
            session = None  # another process writes it (the app has it open): the side file
        if session is not None:
            try:
                session.append(HANDOFF_EVENT, handoff.data(), ignorable=True)
                return "the session's log"
            finally:
                store.release(handoff.session_id)
    if side is None:
        raise SessionQueryError(
            "the session cannot take the note, and this store keeps none beside it", "HANDOFF_NOT_NOTED"
        )
    os.makedirs(os.path.dirname(side), mode=0o700, exist_ok=True)
    line = json.dumps({"sessionId": handoff.session_id, **handoff.data()}, ensure_ascii=True) + "\n"
    descriptor = os.open(side, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
    try:
        os.write(descriptor, line.encode("ascii"))  # one write of one line: never half a record
    finally:
        os.close(descriptor)
    return side


def handoffs_in(events: list[SessionEvent], session_id: str) -> list[Handoff]:
    """The hand-offs a session's log records."""
    found = []
    for event in events:
        if event.type == HANDOFF_EVENT:
            handoff = Handoff.of(session_id, event.data)
            if handoff is not None:
                found.append(handoff)
    return found


def handoffs_beside(side: str, session_id: str | None = None) -> list[Handoff]:
    """The hand-offs the side file records (of ``session_id``, else of every session), oldest first;
    a line that is not a note is skipped."""
    found: list[Handoff] = []
    try:
        with open(side, "rb") as handle:
            for raw in handle:
                if len(raw) > SIDE_LINE_BYTES:
                    continue
                try:
                    data = json.loads(raw)
                except ValueError:
                    continue
                if not isinstance(data, dict) or not isinstance(data.get("sessionId"), str):
                    continue
                if session_id is not None and data["sessionId"] != session_id:
                    continue
                handoff = Handoff.of(data["sessionId"], data)
                if handoff is not None:
                    found.append(handoff)
    except OSError:
        return []
    return found


def now_ms() -> int:
    return time.time_ns() // 1_000_000
