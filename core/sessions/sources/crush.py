"""Crush's sessions (Charm's ``crush``): each project's SQLite ``<project>/.crush/crush.db``, the
projects listed in ``projects.json``; read-only.

``projects.json`` is in Crush's data folder: ``$CRUSH_GLOBAL_DATA``, else ``$XDG_DATA_HOME/crush``, else
``~/.local/share/crush``. It lists ``{"projects": [{"path", "data_dir", "last_accessed"}]}``; a
project's ``data_dir`` (``.crush`` inside it, by default) holds ``crush.db``. Its tables, from Crush's
migrations: ``sessions`` (``id``, ``parent_session_id`` for a sub-agent's session, ``title``,
``message_count``, ``summary_message_id``, ``created_at`` and ``updated_at`` in epoch seconds) and
``messages`` (``session_id``, ``role`` ``user``/``assistant``/``tool``/``system``, ``parts`` a JSON list
of ``{"type", "data"}``: ``text`` with ``data.text``, ``reasoning``, ``tool_call``, ``tool_result``,
``finish``, ``image_url``, ``binary``, ``shell_command``; ``is_summary_message``; ``created_at``).

Mapping, as Crush builds its model's context: the messages by time; when the session has a summary
message, only it (as a checkpoint) and what follows; a user message's ``text`` parts become a prompt,
an assistant's an answer. Reasoning, tool calls and results, the user's shell commands, attachments and
sub-agents' sessions are not on the surface. The folder is the project's; the title the session's.

Read as ``sqlite_reads`` says; a ``parts`` value over ``MAX_PARTS_BYTES`` is read in slices, its long
texts cut (``oversized``).
Crush could not be run here (its npm package downloads its binary when installed): the format was
taken from its source (``internal/db/migrations``, ``internal/message``, ``internal/agent``).
"""

from __future__ import annotations

import json
import os
from pathlib import Path

from core.files import file_revision
from core.sessions.models import SessionHeader, StoreProblem
from core.sessions.sources.files import ExternalSession, SurfaceBuilder, data_home, prompt_title, read_json_object
from core.sessions.sources.row_source import Listed, RowSource
from core.sessions.sources.sqlite_reads import ReadOnlyDatabase

CRUSH_PREFIX = "crush:"
MAX_PARTS_BYTES = 8 * 1024 * 1024
PROJECTS_BYTES = 8 * 1024 * 1024
LATEST_SECONDS = 253_402_300_800

_COLUMNS = "SELECT name FROM pragma_table_info('sessions')"
_MESSAGES = """
SELECT id, role, CASE WHEN length(CAST(parts AS BLOB)) > ? THEN NULL ELSE parts END, created_at
FROM messages WHERE session_id = ? ORDER BY created_at, rowid
"""


def crush_root() -> Path:
    """``$CRUSH_GLOBAL_DATA``, else ``$XDG_DATA_HOME/crush``, else ``~/.local/share/crush``."""
    configured = os.environ.get("CRUSH_GLOBAL_DATA", "").strip()
    if configured:
        return Path(configured).expanduser()
    return data_home() / "crush"


def _millis(value: object) -> int | None:
    """Epoch milliseconds of a time column: seconds as Crush writes them (milliseconds, as its schema's
    comments say, read as such)."""
    if type(value) is not int or value < 0:
        return None
    stamp = value if value >= 100_000_000_000 else value * 1000
    return stamp if stamp < LATEST_SECONDS * 1000 else None


def texts_of_parts(raw: object) -> list[str]:
    """The ``text`` parts' texts of a message's ``parts`` JSON."""
    if type(raw) is not str:
        return []
    try:
        parts = json.loads(raw)
    except (ValueError, RecursionError):
        return []
    found = []
    for part in parts if type(parts) is list else []:
        data = part.get("data") if type(part) is dict and part.get("type") == "text" else None
        text = data.get("text") if type(data) is dict else None
        if type(text) is str and text.strip():
            found.append(text)
    return found


class CrushSource(RowSource):
    """Crush's sessions: the projects' databases (see the module docstring)."""

    prefix = CRUSH_PREFIX
    name = "Crush"

    def __init__(self, root: str | os.PathLike[str]) -> None:
        super().__init__(root)
        self._databases: dict[str, ReadOnlyDatabase] = {}

    def _projects(self) -> list[tuple[str, ReadOnlyDatabase]]:
        """Each project's folder and database (those whose database is a file, not a link)."""
        listed = read_json_object(self.root / "projects.json", PROJECTS_BYTES).get("projects")
        found: list[tuple[str, ReadOnlyDatabase]] = []
        for project in listed if type(listed) is list else []:
            path = project.get("path") if type(project) is dict else None
            data = project.get("data_dir") if type(project) is dict else None
            if type(path) is not str or not path.startswith("/"):
                continue
            folder = Path(path) / (data if type(data) is str and data else ".crush")
            database = folder / "crush.db"
            if os.path.islink(database) or not database.is_file():
                continue
            known = self._databases.get(str(database))
            if known is None:
                known = self._databases[str(database)] = ReadOnlyDatabase(database, self.name)
            found.append((path, known))
        return found

    def _stamp(self) -> object:
        try:
            listed: object = file_revision(self.root / "projects.json")
        except OSError:
            listed = None
        return (listed, tuple(database.stamp() for _path, database in self._projects()))

    def _list(self) -> tuple[list[Listed], list[StoreProblem]]:
        found: list[Listed] = []
        problems: list[StoreProblem] = []
        for cwd, database in self._projects():
            try:
                columns = {name for (name,) in database.query(_COLUMNS)}
                summary = "summary_message_id" if "summary_message_id" in columns else "NULL"
                rows = database.query(
                    f"SELECT id, parent_session_id, title, message_count, created_at, updated_at, {summary} "
                    "FROM sessions"
                )
            except OSError as error:
                problems.append(StoreProblem(database.path, str(error)))
                continue
            for session_id, parent, title, count, created, updated, summarized in rows:
                if type(session_id) is not str or not session_id or parent not in (None, ""):
                    continue
                header = SessionHeader(id=self.prefix + session_id, created_at=_millis(created) or 0, cwd=cwd)
                revision = (
                    2,
                    count if type(count) is int else 0,
                    updated if type(updated) is int else 0,
                    len(summarized) if type(summarized) is str else 0,
                )
                named = title.strip() if type(title) is str and title.strip() else None
                found.append(Listed(header, named, revision, (database, session_id, summarized)))
        return found, problems

    def _load(self, entry: Listed) -> ExternalSession:
        database, session_id, summarized = entry.where
        rows = database.query(_MESSAGES, (MAX_PARTS_BYTES, session_id))
        ids = [row[0] for row in rows]
        summary = ids.index(summarized) if type(summarized) is str and summarized in ids else None
        start = summary or 0
        builder = SurfaceBuilder()
        problems = 0
        first: str | None = None
        for number, (_id, role, parts, created) in enumerate(rows):
            if number < start:
                continue
            if parts is None:  # (too long to take at once: read in slices, its long texts cut)
                parts = database.long_json("parts", "FROM messages WHERE session_id = ? AND id = ?", (session_id, _id))
                if parts is None:
                    problems += 1
                    continue
            text = "\n".join(texts_of_parts(parts))
            when = _millis(created) or entry.header.created_at
            if number == summary:
                builder.checkpoint(number, when, text)
            elif not text.strip():
                continue
            elif role == "user":
                builder.user(number, when, text)
                first = first or prompt_title(text)
            elif role == "assistant":
                builder.assistant(number, when, text)
        return ExternalSession(entry.header, builder.events, first, problems, len(rows) - 1 if rows else None)
