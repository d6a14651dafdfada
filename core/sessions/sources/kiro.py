"""Kiro CLI's conversations (formerly Amazon Q Developer CLI): its SQLite ``data.sqlite3``, read-only.

The folder is Kiro CLI's data folder: ``$XDG_DATA_HOME/kiro-cli``, else ``~/.local/share/kiro-cli``
(macOS: ``~/Library/Application Support/kiro-cli``); where it has none, Amazon Q Developer CLI's
``amazon-q`` beside it. Its table, from the CLI's source (``crates/chat-cli/src/database``, migration
008): ``conversations_v2`` (``key`` the folder the conversation ran in, ``conversation_id``, ``value``
the conversation as JSON, ``created_at`` and ``updated_at`` epoch milliseconds); before that migration,
``conversations`` (``key``, ``value``), one conversation a folder. The conversation
(``cli/chat/conversation.rs``, ``message.rs``): ``history`` of ``{"user", "assistant"}`` entries,
``valid_history_range`` the part of it sent to the model, ``latest_summary`` ``[summary, metadata]``
after ``/compact``. A user message's ``content`` is ``{"Prompt": {"prompt"}}``,
``{"CancelledToolUses": {"prompt", …}}`` or ``{"ToolUseResults": …}``, with an RFC 3339 ``timestamp``
and the ``additional_context`` Kiro adds; an answer is ``{"Response": {"content"}}`` or ``{"ToolUse":
{"content", "tool_uses"}}``.

Mapping, as Kiro sends its model the conversation: after a ``/compact`` its summary (a checkpoint), then
the history's entries in the range it sends: a prompt (typed, never the context Kiro adds) and the
answer's text. Tool results, tool uses, images, the transcript (a copy for the screen) and the next
message not yet sent are not on the surface. The folder is the ``key``; the title the first prompt.

Read as ``sqlite_reads`` says; a conversation over ``MAX_CONVERSATION_BYTES`` is read in slices, its
long texts cut (``oversized``). Kiro CLI could not be run here (its installer downloads it from its
vendor): the format was taken from the open source of the CLI it continues.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

from core.sessions.models import SessionHeader, StoreProblem
from core.sessions.sources.files import ExternalSession, SurfaceBuilder, data_home, epoch_millis, millis, prompt_title
from core.sessions.sources.row_source import DatabaseSource, Listed

KIRO_PREFIX = "kiro:"
MAX_CONVERSATION_BYTES = 8 * 1024 * 1024

_TABLES = "SELECT name FROM sqlite_master WHERE type = 'table' AND name IN ('conversations_v2', 'conversations')"
_LISTED = {
    "conversations_v2": "SELECT key, conversation_id, created_at, updated_at, length(value) FROM conversations_v2",
    "conversations": "SELECT key, CASE WHEN json_valid(value) THEN json_extract(value, '$.conversation_id') END,"
    " NULL, NULL, length(value) FROM conversations",
}
_VALUE = {
    "conversations_v2": "FROM conversations_v2 WHERE key = ? AND conversation_id = ?",
    "conversations": "FROM conversations WHERE key = ? AND ? IS NOT NULL",
}


def kiro_root() -> Path:
    """Kiro CLI's data folder (``$XDG_DATA_HOME/kiro-cli``, else ``~/.local/share/kiro-cli``; macOS:
    ``~/Library/Application Support/kiro-cli``), else Amazon Q Developer CLI's ``amazon-q`` beside it."""
    if sys.platform == "darwin":
        base = Path.home() / "Library" / "Application Support"
    else:
        base = data_home()
    kiro = base / "kiro-cli"
    return kiro if kiro.is_dir() or not (base / "amazon-q").is_dir() else base / "amazon-q"


def _tagged(value: object) -> tuple[str, dict[str, Any]] | None:
    """An externally tagged Rust enum value (``{"Prompt": {...}}``): its variant and fields."""
    if type(value) is dict and len(value) == 1:
        ((variant, fields),) = value.items()
        if type(fields) is dict:
            return variant, fields
    return None


def prompt_of(user: object) -> tuple[str, int | None]:
    """The words a user message's person typed (``""``: a tool's results) and its time."""
    if type(user) is not dict:
        return "", None
    tagged = _tagged(user.get("content"))
    prompt = tagged[1].get("prompt") if tagged is not None and tagged[0] in ("Prompt", "CancelledToolUses") else None
    return (prompt if type(prompt) is str else ""), millis(user.get("timestamp"))


def answer_of(assistant: object) -> str:
    """An answer's text (``Response`` or ``ToolUse``)."""
    tagged = _tagged(assistant)
    content = tagged[1].get("content") if tagged is not None and tagged[0] in ("Response", "ToolUse") else None
    return content if type(content) is str else ""


def history_of(conversation: dict[str, Any]) -> list[Any]:
    """The entries of ``history`` Kiro sends its model (``valid_history_range``, when it is one)."""
    history = conversation.get("history")
    if type(history) is not list:
        return []
    bounds = conversation.get("valid_history_range")
    if (
        type(bounds) is list
        and len(bounds) == 2
        and all(type(b) is int for b in bounds)
        and 0 <= bounds[0] <= bounds[1]
    ):
        return history[bounds[0] : bounds[1]] if bounds[1] > 0 else history
    return history


def summary_of(conversation: dict[str, Any]) -> str | None:
    summary = conversation.get("latest_summary")
    text = summary[0] if type(summary) is list and summary else None
    return text if type(text) is str and text.strip() else None


class KiroSource(DatabaseSource):
    """Kiro CLI's conversations: its ``data.sqlite3`` (see the module docstring)."""

    prefix = KIRO_PREFIX
    name = "Kiro CLI"
    database_at = ("data.sqlite3",)

    def _list(self) -> tuple[list[Listed], list[StoreProblem]]:
        path = self._database.path
        if not self._present():
            return [], []
        try:
            tables = {name for (name,) in self._database.query(_TABLES)}
            table = "conversations_v2" if "conversations_v2" in tables else "conversations" if tables else None
            rows = self._database.query(_LISTED[table]) if table is not None else []
        except OSError as error:
            return [], [StoreProblem(path, str(error))]
        found: list[Listed] = []
        for folder, conversation_id, created, updated, size in rows:
            if type(folder) is not str or type(conversation_id) is not str or not conversation_id:
                continue
            native = conversation_id
            cwd = folder if folder.startswith("/") else None
            header = SessionHeader(id=self.prefix + native, created_at=epoch_millis(created) or 0, cwd=cwd)
            revision = (1, epoch_millis(updated) or 0, size if type(size) is int else 0, 0)
            found.append(Listed(header, None, revision, (table, folder, conversation_id)))
        return found, []

    def _load(self, entry: Listed) -> ExternalSession:
        table, folder, conversation_id = entry.where
        where = _VALUE[table]
        rows = self._database.query(
            f"SELECT CASE WHEN length(value) > ? THEN NULL ELSE value END, length(value) {where}",
            (MAX_CONVERSATION_BYTES, folder, conversation_id),
        )
        raw = rows[0][0] if rows else None
        if raw is None and rows:
            raw = self._database.long_json("value", where, (folder, conversation_id))
        conversation = json.loads(raw) if type(raw) is str else None
        if type(conversation) is not dict:
            raise ValueError("not a conversation Kiro CLI wrote")
        builder = SurfaceBuilder()
        when = entry.header.created_at
        summary = summary_of(conversation)
        if summary is not None:
            builder.checkpoint(0, when, summary)
        first: str | None = None
        history = history_of(conversation)
        for number, item in enumerate(history, 1):
            if type(item) is not dict:
                continue
            prompt, stamp = prompt_of(item.get("user"))
            when = stamp or when
            if prompt.strip():
                builder.user(2 * number - 1, when, prompt)
                first = first or prompt_title(prompt)
            answer = answer_of(item.get("assistant"))
            if answer.strip():
                builder.assistant(2 * number, when, answer)
        return ExternalSession(entry.header, builder.events, first, 0, 2 * len(history) if history else None)
