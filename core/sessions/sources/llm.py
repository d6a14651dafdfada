"""llm's conversations (PyPI ``llm``, Simon Willison's command-line tool): its SQLite ``logs.db``,
read-only.

``logs.db`` is in llm's folder: ``$LLM_USER_PATH``, else ``$XDG_CONFIG_HOME/io.datasette.llm``, else
``~/.config/io.datasette.llm``. It holds two generations of tables, both read:

- Since 0.36, a content-addressed message store: ``threads`` (``id``, ``name``, ``tip_message_hash``,
  ``forked_from``, ``datetime_utc``) names each conversation's newest message; ``messages`` (``hash``,
  ``parent_hash``, ``role``) link each message to the one before it; ``parts`` (``message_hash``,
  ``position``, ``type``, ``text``, ``payload``) hold its text, or, for text that borrows a fragment,
  a ``text_ref`` list in ``payload`` of literals and ``fragments`` ids; ``turns`` (``thread_id``,
  ``parent_message_hash``, ``tip_message_hash``, ``datetime_utc``) say which messages one model call
  added, and when. A fork is a second thread whose chain shares the first's messages.
- Before: ``conversations`` (``id``, ``name``) and ``responses`` (``conversation_id``, ``prompt``,
  ``response``, ``datetime_utc``), one row a prompt and its answer. llm leaves these rows in place and
  reads a conversation from its thread when it has one (a thread's id is its conversation's), so a
  conversation is read from its thread when there is one, else from its responses.

Mapping: a conversation is a session; the chain that ends at its thread's tip, oldest first: a user
message's text parts become a prompt, an assistant's an answer; a message takes the time of the turn
that added it. Older conversations: each response's ``prompt`` and ``response``. System prompts,
reasoning, tool calls and results and attachments are not on the surface. llm keeps no folder: a
session has none. The title is the conversation's ``name`` (llm's first words of the first prompt).

Read as ``sqlite_reads`` says: read-only (llm keeps a rollback journal), nothing made beside the
database, busy as busy; a text over ``MAX_TEXT_BYTES`` is left out and counted.
"""

from __future__ import annotations

import json
import os
import zlib
from datetime import UTC, datetime
from pathlib import Path

from core.sessions import event_types as ev
from core.sessions.models import SessionHeader, StoreProblem
from core.sessions.sources.files import LATEST_MILLIS, ExternalSession, SurfaceBuilder, config_home, prompt_title
from core.sessions.sources.row_source import DatabaseSource, Listed

LLM_PREFIX = "llm:"
MAX_TEXT_BYTES = 8 * 1024 * 1024
"""The largest text, part payload or fragment read."""
MAX_CHAIN = 100_000
"""The longest chain of messages followed from a tip."""

_TABLES = "SELECT name FROM sqlite_master WHERE type IN ('table', 'view')"
_THREADS = """
SELECT t.id, t.name, t.tip_message_hash, t.datetime_utc, count(u.id), max(u.id), min(u.datetime_utc)
FROM threads t LEFT JOIN turns u ON u.thread_id = t.id
WHERE t.tip_message_hash IS NOT NULL GROUP BY t.id
"""
_CONVERSATIONS = """
SELECT c.id, c.name, count(r.id), max(r.id), min(r.datetime_utc)
FROM conversations c JOIN responses r ON r.conversation_id = c.id
{unthreaded} GROUP BY c.id
"""
_CHAIN = """
WITH RECURSIVE chain(hash, parent, role) AS (
  SELECT hash, parent_hash, role FROM messages WHERE hash = ?
  UNION
  SELECT m.hash, m.parent_hash, m.role FROM messages m JOIN chain c ON m.hash = c.parent
)
SELECT c.hash, c.parent, c.role, p.type,
  CASE WHEN length(CAST(p.text AS BLOB)) > ? THEN NULL ELSE p.text END,
  CASE WHEN length(CAST(p.payload AS BLOB)) > ? THEN NULL ELSE p.payload END,
  length(CAST(p.text AS BLOB)) > ? OR length(CAST(p.payload AS BLOB)) > ?
FROM chain c LEFT JOIN parts p ON p.message_hash = c.hash
ORDER BY c.hash, p.position
"""
_TURNS = "SELECT parent_message_hash, tip_message_hash, datetime_utc FROM turns WHERE thread_id = ? ORDER BY id"
_FRAGMENTS = "SELECT id, CASE WHEN length(CAST(content AS BLOB)) > ? THEN NULL ELSE content END FROM fragments"
_RESPONSES = """
SELECT CASE WHEN length(CAST(prompt AS BLOB)) > ? THEN NULL ELSE prompt END,
  CASE WHEN length(CAST(response AS BLOB)) > ? THEN NULL ELSE response END, datetime_utc
FROM responses WHERE conversation_id = ? {unthreaded} ORDER BY id
"""


def llm_root() -> Path:
    """``$LLM_USER_PATH``, else ``$XDG_CONFIG_HOME/io.datasette.llm``, else ``~/.config/io.datasette.llm``
    (where llm keeps ``logs.db``)."""
    configured = os.environ.get("LLM_USER_PATH", "").strip()
    if configured:
        return Path(configured).expanduser()
    return config_home() / "io.datasette.llm"


def _utc(value: object) -> int | None:
    """Epoch milliseconds of a ``datetime_utc`` column: ISO 8601, UTC whether or not it says so (older
    versions wrote it without an offset)."""
    if type(value) is not str or not value:
        return None
    try:
        parsed = datetime.fromisoformat(value)
        stamp = int((parsed if parsed.tzinfo else parsed.replace(tzinfo=UTC)).timestamp() * 1000)
    except (ValueError, OverflowError, OSError):
        return None
    return stamp if 0 <= stamp < LATEST_MILLIS else None


def _key(value: object) -> int:
    """A stable number for a text column (a revision's part)."""
    return zlib.crc32(value.encode("utf-8", "surrogatepass")) if type(value) is str else 0


def _name(value: object) -> str | None:
    return value.strip() if type(value) is str and value.strip() else None


class LlmSource(DatabaseSource):
    """llm's conversations: its ``logs.db`` (see the module docstring)."""

    prefix = LLM_PREFIX
    name = "llm"
    database_at = ("logs.db",)

    def _list(self) -> tuple[list[Listed], list[StoreProblem]]:
        if not self._present():
            return [], []
        try:
            tables = {name for (name,) in self._database.query(_TABLES)}
            found: list[Listed] = []
            threaded = {"threads", "turns", "messages", "parts"} <= tables
            if threaded:
                for thread, name, tip, started, turns, newest, first in self._database.query(_THREADS):
                    if type(thread) is not str or not thread:
                        continue
                    created = _utc(first) or _utc(started) or 0
                    revision = (1, turns if type(turns) is int else 0, _key(tip), _key(newest))
                    header = SessionHeader(id=self.prefix + thread, created_at=created, cwd=None)
                    found.append(Listed(header, _name(name), revision, ("thread", thread, tip)))
            if {"conversations", "responses"} <= tables:
                unthreaded = (
                    "WHERE c.id NOT IN (SELECT id FROM threads) AND r.id NOT IN (SELECT id FROM turns)"
                    if threaded
                    else ""
                )
                for conversation, name, count, newest, first in self._database.query(
                    _CONVERSATIONS.format(unthreaded=unthreaded)
                ):
                    if type(conversation) is not str or not conversation:
                        continue
                    revision = (2, count if type(count) is int else 0, _key(newest), 0)
                    header = SessionHeader(id=self.prefix + conversation, created_at=_utc(first) or 0, cwd=None)
                    found.append(Listed(header, _name(name), revision, ("responses", conversation, threaded)))
        except OSError as error:
            return [], [StoreProblem(self._database.path, str(error))]
        return found, []

    def _load(self, entry: Listed) -> ExternalSession:
        kind, key, more = entry.where
        if kind == "responses":
            return self._responses(entry.header, key, more)
        return self._thread(entry.header, key, more)

    def _thread(self, header: SessionHeader, thread: str, tip: object) -> ExternalSession:
        big = MAX_TEXT_BYTES
        problems = 0
        found: dict[object, tuple[object, object, list[str | int]]] = {}
        # (UNION: a message met again, as in a loop of hostile rows, ends the walk.)
        for hash_, parent, role, kind, text, payload, too_big in self._database.query(
            _CHAIN, (tip, big, big, big, big)
        ):
            pieces = found.setdefault(hash_, (parent, role, []))[2]
            if too_big:
                problems += 1
            elif kind == "text" and type(text) is str:
                pieces.append(text)
            elif kind == "text":
                ref = _text_ref(payload)
                problems += ref is None
                pieces.extend(ref or [])
        order: list[object] = []
        seen: set[object] = set()
        current: object = tip
        while current in found and current not in seen and len(order) < MAX_CHAIN:
            seen.add(current)
            order.append(current)
            current = found[current][0]
        order.reverse()
        times = self._times(thread, order)
        wanted = {piece for key in order for piece in found[key][2] if type(piece) is int}
        fragments = self._fragments(wanted)
        builder = SurfaceBuilder()
        for seq, key in enumerate(order, 1):
            _parent, role, pieces = found[key]
            text = "".join(piece if isinstance(piece, str) else fragments.get(piece, "") for piece in pieces)
            when = times.get(key, header.created_at)
            if text.strip() and role == "user":
                builder.user(seq, when, text)
            elif text.strip() and role == "assistant":
                builder.assistant(seq, when, text)
        return ExternalSession(header, builder.events, _first_prompt(builder), problems, len(order) or None)

    def _times(self, thread: str, order: list[object]) -> dict[object, int]:
        """Each message's time: that of the first turn that holds it (a turn's messages run from its
        parent, the prompt or tool result it was given, to its tip, what the model said)."""
        where = {hash_: index for index, hash_ in enumerate(order)}
        times: dict[object, int] = {}
        for parent, tip, when in self._database.query(_TURNS, (thread,)):
            stamp = _utc(when)
            end = where.get(tip)
            if stamp is None or end is None:
                continue
            for hash_ in order[where.get(parent, 0) : end + 1]:
                times.setdefault(hash_, stamp)
        return times

    def _fragments(self, wanted: set[int]) -> dict[int, str]:
        """The fragments a chain's texts borrow (in batches of 500 ids)."""
        found: dict[int, str] = {}
        ids = sorted(wanted)
        for start in range(0, len(ids), 500):
            batch = ids[start : start + 500]
            sql = f"{_FRAGMENTS} WHERE id IN ({', '.join('?' * len(batch))})"
            for key, content in self._database.query(sql, (MAX_TEXT_BYTES, *batch)):
                if type(key) is int and type(content) is str:
                    found[key] = content
        return found

    def _responses(self, header: SessionHeader, conversation: str, threaded: bool) -> ExternalSession:
        unthreaded = "AND id NOT IN (SELECT id FROM turns)" if threaded else ""
        rows = self._database.query(
            _RESPONSES.format(unthreaded=unthreaded), (MAX_TEXT_BYTES, MAX_TEXT_BYTES, conversation)
        )
        builder = SurfaceBuilder()
        problems = 0
        when = header.created_at
        for number, (prompt, response, stamp) in enumerate(rows):
            when = _utc(stamp) or when
            if type(prompt) is not str or type(response) is not str:
                problems += 1
            if type(prompt) is str and prompt.strip():
                builder.user(2 * number, when, prompt)
            if type(response) is str and response.strip():
                builder.assistant(2 * number + 1, when, response)
        return ExternalSession(header, builder.events, _first_prompt(builder), problems, 2 * len(rows) or None)


def _first_prompt(builder: SurfaceBuilder) -> str | None:
    """The title of a conversation llm did not name: its first prompt's first words."""
    for event in builder.events:
        if event.type == ev.USER_MESSAGE:
            title = prompt_title(str(event.data["content"][0]["text"]))
            if title:
                return title
    return None


def _text_ref(payload: object) -> list[str | int] | None:
    """A text part's pieces from its payload's ``text_ref``: literals, and fragment ids."""
    if type(payload) is not str:
        return None
    try:
        pieces = json.loads(payload).get("text_ref")
    except (ValueError, RecursionError, AttributeError):
        return None
    if type(pieces) is not list:
        return None
    found: list[str | int] = []
    for piece in pieces:
        literal = piece.get("literal") if type(piece) is dict else None
        fragment = piece.get("fragment") if type(piece) is dict else None
        if type(literal) is str:
            found.append(literal)
        elif type(fragment) is int:
            found.append(fragment)
        else:
            return None
    return found
