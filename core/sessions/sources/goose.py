"""Goose's sessions (Block's ``goose``): its SQLite ``<data>/sessions/sessions.db``, read-only.

``<data>`` is ``$GOOSE_PATH_ROOT/data`` when that is set, else ``$XDG_DATA_HOME/goose``, else
``~/.local/share/goose``. Its tables, from Goose's ``session_manager.rs`` (schema version 9):
``sessions`` (``id``, ``name``, ``description`` in older rows, ``session_type`` ``user``, ``scheduled``,
``terminal``, ``specialist`` or ``hidden``, ``working_dir``, ``created_at`` as an ISO 8601 text) and
``messages`` (``session_id``, ``role`` ``user`` or ``assistant``, ``content_json`` a JSON list of
message contents tagged by ``type``: ``text``, ``image``, ``toolRequest``, ``toolResponse``,
``thinking``, ``systemNotification``...; ``created_timestamp`` epoch seconds; ``metadata_json``
``{"userVisible", "agentVisible"}``). Older versions kept one JSONL file a session, which Goose imports
into the database when it next starts: those files are not read.

Mapping, as Goose builds its model's context: the messages in order, those not ``agentVisible`` left
out. A compaction hides what it summarized from the model and adds its summary after it, visible to
the agent only: that summary is a checkpoint; the other messages for the agent only (a continuation
note, tool summaries, memory) are Goose's own context, not on the surface. A user message's ``text``
contents become a prompt, an assistant's an answer, a text meant for the user alone
(``annotations.audience`` without ``assistant``) left out. Tool requests and responses, thinking,
notifications, sub-agents' (``specialist``) and hidden sessions are not on the surface. The folder
is ``working_dir``; the title ``name`` (else ``description``), else the first prompt.

Read as ``sqlite_reads`` says; a ``content_json`` value over ``MAX_CONTENT_BYTES`` is read in slices,
its long texts cut (``oversized``). Goose could not be run here (no registry carries it): the format
was taken from its source.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

from core.sessions.models import SessionHeader, StoreProblem
from core.sessions.sources.files import (
    LATEST_MILLIS,
    ExternalSession,
    SurfaceBuilder,
    data_home,
    millis,
    prompt_title,
)
from core.sessions.sources.row_source import DatabaseSource, Listed

GOOSE_PREFIX = "goose:"
MAX_CONTENT_BYTES = 8 * 1024 * 1024
LISTED_TYPES = ("user", "scheduled", "terminal")

_COLUMNS = "SELECT name FROM pragma_table_info('sessions')"
_MESSAGES = """
SELECT CASE WHEN length(CAST(content_json AS BLOB)) > ? THEN NULL ELSE content_json END, role,
  created_timestamp, metadata_json, id
FROM messages WHERE session_id = ? ORDER BY id
"""


def goose_root() -> Path:
    """``$GOOSE_PATH_ROOT/data``, else ``$XDG_DATA_HOME/goose``, else ``~/.local/share/goose``."""
    rooted = os.environ.get("GOOSE_PATH_ROOT", "").strip()
    if rooted:
        return Path(rooted).expanduser() / "data"
    return data_home() / "goose"


def _created(value: object) -> int | None:
    """A ``sessions.created_at`` (``2026-12-07 19:10:54`` as SQLite writes it, UTC, or ISO 8601)."""
    if type(value) is not str:
        return None
    stamp = millis(value if value[-1:] == "Z" or "+" in value[10:] else value.replace(" ", "T") + "+00:00")
    return stamp if stamp is not None and 0 <= stamp < LATEST_MILLIS else None


def _seconds(value: object) -> int | None:
    if type(value) is not int or not 0 <= value * 1000 < LATEST_MILLIS:
        return None
    return value * 1000


def _for_agent(content: dict[str, object]) -> bool:
    """Whether a text is meant for the model (no ``audience``, or one that names the assistant)."""
    annotations = content.get("annotations")
    audience = annotations.get("audience") if type(annotations) is dict else None
    return type(audience) is not list or "assistant" in audience


def _visible(metadata: object) -> tuple[bool, bool]:
    """``(userVisible, agentVisible)`` of a message (both, when it says nothing)."""
    try:
        read = json.loads(metadata) if type(metadata) is str else None
    except (ValueError, RecursionError):
        read = None
    if type(read) is not dict:
        return True, True
    return read.get("userVisible") is not False, read.get("agentVisible") is not False


def texts_of_content(raw: object) -> list[str] | None:
    """A message's texts for the model from its ``content_json`` (``None``: not a list of contents)."""
    try:
        contents = json.loads(raw) if type(raw) is str else None
    except (ValueError, RecursionError):
        return None
    if type(contents) is not list:
        return None
    return [
        content["text"]
        for content in contents
        if type(content) is dict
        and content.get("type") == "text"
        and type(content.get("text")) is str
        and content["text"].strip()
        and _for_agent(content)
    ]


class GooseSource(DatabaseSource):
    """Goose's sessions: its ``sessions.db`` (see the module docstring)."""

    prefix = GOOSE_PREFIX
    name = "Goose"
    database_at = ("sessions", "sessions.db")

    def _list(self) -> tuple[list[Listed], list[StoreProblem]]:
        path = self._database.path
        if not self._present():
            return [], []
        try:
            columns = {name for (name,) in self._database.query(_COLUMNS)}
            kind = "s.session_type" if "session_type" in columns else "'user'"
            described = "s.description" if "description" in columns else "NULL"
            rows = self._database.query(
                f"SELECT s.id, s.name, {described}, {kind}, s.working_dir, s.created_at, count(m.id), max(m.id) "
                "FROM sessions s LEFT JOIN messages m ON m.session_id = s.id GROUP BY s.id"
            )
        except OSError as error:
            return [], [StoreProblem(path, str(error))]
        found: list[Listed] = []
        for session_id, name, description, kind, folder, created, count, last in rows:
            if type(session_id) is not str or not session_id or kind not in LISTED_TYPES:
                continue
            cwd = folder if type(folder) is str and folder.startswith("/") else None
            header = SessionHeader(id=self.prefix + session_id, created_at=_created(created) or 0, cwd=cwd)
            revision = (3, count if type(count) is int else 0, last if type(last) is int else 0, 0)
            title = next((t.strip() for t in (name, description) if type(t) is str and t.strip()), None)
            found.append(Listed(header, title, revision, session_id))
        return found, []

    def _load(self, entry: Listed) -> ExternalSession:
        rows = self._database.query(_MESSAGES, (MAX_CONTENT_BYTES, entry.where))
        builder = SurfaceBuilder()
        problems = 0
        first: str | None = None
        when = entry.header.created_at
        hidden = False
        for number, (raw, role, created, metadata, row) in enumerate(rows):
            if raw is None:  # (too long to take at once: read in slices, its long texts cut)
                raw = self._database.long_json("content_json", "FROM messages WHERE id = ?", (row,))
            texts = texts_of_content(raw)
            if texts is None:
                problems += 1
                continue
            user_sees, agent_sees = _visible(metadata)
            when = _seconds(created) or when
            text = "\n".join(texts)
            after_hidden, hidden = hidden, not agent_sees
            if not agent_sees or not text.strip():
                continue
            if not user_sees:
                # For the model alone: right after what a compaction hid from it, the compaction's
                # summary; elsewhere Goose's own context (a continuation, a tool summary, memory).
                if after_hidden:
                    builder.checkpoint(number, when, text)
            elif role == "user":
                builder.user(number, when, text)
                first = first or prompt_title(text)
            elif role == "assistant":
                builder.assistant(number, when, text)
        return ExternalSession(entry.header, builder.events, first, problems, len(rows) - 1 if rows else None)
