"""The model's session tools: search sessions, reference one, read past a reference's cut.

A reference is a snapshot cut to its byte budget: for a long session the model sees the head, the
newest messages and "N messages omitted", and nothing brings the middle back. These tools let the
model look for itself, over exactly what the `@` picker sees (the same listing, search and
``prepare``; never the session being written; a session the role may not see reads as missing):

- ``search_sessions(query, limit)``: titles, ids, cwds and message bodies, ranked as the picker ranks
  them, each hit with its matching snippet;
- ``reference_session(session)``: one session's snapshot as ``prepare`` builds it, the same bytes as a
  reference in the prompt (budget and truncation notice included), after lines outside its frame
  saying how many messages the session has and which positions the snapshot kept, omitted and cut;
- ``read_session(session, from_message, to_message)``: a page of a session's projected conversation,
  at most ``read_bytes`` a call, inside the same untrusted frame and escaping as a snapshot, after
  lines saying the session's size, the positions the page covers and how many remain on either side.

Positions are those of the projected conversation (``project_conversation``), 0 the first, in both.
A session is named by its id or its ``dsh-session:`` URI. Every argument is untrusted: a bad one is a
``ToolResult`` with ``is_error`` and a stable ``TOOL_*`` code, never an exception, and nothing is
ever written. Results are text; data from sessions never appears outside a frame, and never as a
raw ``<`` (``stringify_tag_safe_json``).
"""

from __future__ import annotations

import asyncio
import json
import re
from collections.abc import Awaitable, Callable, Mapping, Sequence
from concurrent.futures import Executor
from dataclasses import dataclass
from functools import partial
from typing import Any

from core.agent.defaults import MIN_READ_BYTES, READ_BYTES
from core.agent.tool_specs import (
    SEARCH_LIMIT,
    SPECS,
    TOOL_INVALID_ARGUMENTS,
    TOOL_NAMES,
    TOOL_OUT_OF_RANGE,
    ToolCallError,
    tool_definitions,
)
from core.agent.tool_texts import escape_unsafe, framed, page_notice, search_note, snapshot_notice, spelled
from core.collector import collector_paused
from core.display import visible
from core.errors import SessionQueryError, SessionReferenceError
from core.reference.projection import project_conversation
from core.reference.retention import truncate_with_notice
from core.reference.service import SessionReferenceService, build_context
from core.reference.uri import ReferenceInput, decode_session_reference_uri, encode_session_reference_uri
from core.search.finder import SessionSearch
from core.search.matching import Snippet, marked_text, plain_snippet
from core.search.ranking import PASSAGES, snippet_of
from core.search.search_query import parse_query
from core.secrets.finder import mask_secrets
from core.serialization import utf8_length
from core.sessions.models import SessionRecord
from core.sessions.wire_shapes import ToolDefinition

TOOL_UNKNOWN = "TOOL_UNKNOWN"
TOOL_SESSION_NOT_FOUND = "TOOL_SESSION_NOT_FOUND"
TOOL_SELF_REFERENCE = "TOOL_SELF_REFERENCE"
TOOL_READ_FAILED = "TOOL_READ_FAILED"

Listing = Callable[[], Awaitable[tuple[Sequence[SessionRecord], Mapping[str, str | None]]]]
"""The sessions the picker lists and their known titles (the app passes its catalog's)."""


@dataclass(frozen=True)
class ToolResult:
    """What a tool call gives the model: text, and whether it failed (with its code)."""

    text: str
    is_error: bool = False
    code: str | None = None
    summary: str = ""
    """One line for the transcript: what was looked at, and how much came back."""


DEFINITIONS: list[ToolDefinition] = tool_definitions(READ_BYTES)
"""The tools in the Chat Completions ``tools`` shape, for pages of the default size (an instance's
``definitions`` describe its own)."""

__all__ = ["TOOL_INVALID_ARGUMENTS", "TOOL_NAMES", "TOOL_OUT_OF_RANGE"]


class SessionTools:
    """The session tools over a store (see the module docstring).

    Args:
        service: the reference service the `@` picker prepares with (its query is the listing's).
        search: the picker's search (its body index, when there is one).
        target: the session being written (never a result).
        listing: the sessions the picker lists and their titles; by default the service's query
            listed again for each search (titles unknown: sessions match by id, cwd and body).
        read_bytes: what one ``read_session`` returns at most.
        executor: where a search runs (the picker's search thread: a body index may be bound to
            it, and a search must not hold the event loop); ``None``: in the caller.
    """

    def __init__(
        self,
        service: SessionReferenceService,
        search: SessionSearch,
        target: Any,
        *,
        listing: Listing | None = None,
        read_bytes: int = READ_BYTES,
        executor: Executor | None = None,
    ) -> None:
        if read_bytes < MIN_READ_BYTES:
            raise ValueError(f"read_bytes must be at least {MIN_READ_BYTES}, not {read_bytes}")
        self.service = service
        self.search = search
        self.target = target
        self.read_bytes = read_bytes
        self._listing = listing
        self._executor = executor
        self._handlers: dict[str, Callable[[Mapping[str, Any]], Awaitable[ToolResult]]] = {
            "search_sessions": self._search,
            "reference_session": self._reference,
            "read_session": self._read,
        }
        """Each tool of ``tool_specs.TOOLS`` and what runs it (its arguments checked by its spec)."""
        assert set(self._handlers) == set(SPECS), "every tool spec has its handler, and only those"

    async def call(self, name: str, arguments: str | Mapping[str, Any]) -> ToolResult:
        """Run one tool call; ``arguments`` is the model's JSON text (or an already parsed object).
        Never raises for anything the model sent."""
        try:
            parsed = _arguments(arguments)
            spec = SPECS.get(name)
            if spec is None:
                raise ToolCallError(f"there is no tool named {json.dumps(name)}", TOOL_UNKNOWN)
            return _escaped(await self._handlers[name](spec.checked(parsed)))
        except ToolCallError as error:
            message = escape_unsafe(error.line)
            return ToolResult(message, is_error=True, code=error.code, summary=error.code)

    @property
    def definitions(self) -> list[ToolDefinition]:
        """The tools as offered to the model (Chat Completions shape), for this instance's page size."""
        return tool_definitions(self.read_bytes)

    # -- the tools --------------------------------------------------------------------------------

    async def _search(self, arguments: Mapping[str, Any]) -> ToolResult:
        query = arguments["query"]
        limit = arguments["limit"] if arguments["limit"] is not None else SEARCH_LIMIT
        try:
            body = await self.find(query, limit)
        except SessionReferenceError as error:
            raise ToolCallError(f"the search failed: {visible(error.message)}", TOOL_READ_FAILED) from None
        text = framed("session-search-results", body)
        count = len(body["sessions"])
        return ToolResult(text, summary=f"{json.dumps(query, ensure_ascii=False)} · {count} sessions")

    async def find(self, query: str, limit: int = SEARCH_LIMIT) -> dict[str, Any]:
        """What ``search_sessions`` answers for ``query``, before its frame: ``{"query", "sessions",
        "note"?}``, each session with its id, URI, label, cwd, and its best-matching messages (their
        secrets masked) or the field that matched. ``sessionref search`` prints the same.

        Raises:
            SessionReferenceError: the search failed (the store or the index could not be read).
        """
        records, titles = await self._records()
        search = partial(
            self.search.search, self.target, query, records=records, titles=titles, limit=limit, passages=PASSAGES
        )
        if self._executor is None:
            result = search()
        else:
            result = await asyncio.get_running_loop().run_in_executor(self._executor, search)
        hits = []
        for hit in result.hits:
            candidate = hit.candidate
            found: dict[str, Any] = {
                "session": candidate.session_id,
                "uri": encode_session_reference_uri(candidate.session_id),
                "label": mask_secrets(candidate.label).text if self.service.redact else candidate.label,
            }
            if candidate.cwd is not None:
                found["cwd"] = candidate.cwd
            said = await self._said(candidate.session_id, query, hit.snippets)
            if said:
                found["messages"] = [
                    {"message": snippet.message, "role": snippet.role, "text": marked_text(snippet)} for snippet in said
                ]
            elif hit.field is not None:
                found["matched"] = hit.field
            hits.append(found)
        body: dict[str, Any] = {"query": query, "sessions": hits}
        note = search_note(result)
        if note is not None:
            body["note"] = note
        return body

    async def _reference(self, arguments: Mapping[str, Any]) -> ToolResult:
        session_id = self._session_of(arguments)
        try:
            (retained,) = await self.service.retain_sources(self.target, [ReferenceInput(session_id)])
        except SessionReferenceError as error:
            raise _refusal(session_id, error) from None
        # The frame is what prepare gives for this reference, byte for byte (build_context of the same
        # retained source); the lines before it say what of the session it holds.
        frame = build_context([retained]).content[0]["text"]
        total = retained.stats["originalMessages"]
        text = snapshot_notice(session_id, total, retained.kept, retained.cut) + "\n\n" + frame
        kept = retained.stats["retainedMessages"]
        return ToolResult(text, summary=f"{session_id} · {kept} of {total} messages · {_size(text)}")

    async def _read(self, arguments: Mapping[str, Any]) -> ToolResult:
        session_id = self._session_of(arguments)
        try:
            snapshot = await self.service.query.read_surface(session_id)
        except SessionQueryError as error:
            if error.code == "SESSION_QUERY_SESSION_NOT_FOUND":
                raise ToolCallError(f"there is no session {json.dumps(session_id)}", TOOL_SESSION_NOT_FOUND) from None
            what = f"session {json.dumps(session_id)} cannot be read: {visible(error.message)}"
            raise ToolCallError(what, TOOL_READ_FAILED) from None
        with collector_paused():
            projected = project_conversation(snapshot)
        total = len(projected)
        start = _within("from_message", arguments["from_message"], 0, low=0, high=max(total - 1, 0))
        stop = _within("to_message", arguments["to_message"], total, low=start, high=total)
        # The page's secrets masked (its neighbours too: a key may be split over two messages).
        items = self.service.leaving(projected, range(max(0, start - 1), min(total, stop + 1)))
        page = _Page(session_id, snapshot.captured_through_seq, total, start)
        for index in range(start, stop):
            item = items[index]
            role = "summary" if item.checkpoint else item.role
            if not page.add(index, role, item.text, self.read_bytes):
                break
        notice = page_notice(session_id, total, page.start, page.stop, page.cut)
        text = notice + "\n\n" + framed("session-messages", page.frame())
        covered = f"messages {page.start}–{page.stop - 1}" if page.stop > page.start else "no messages"
        return ToolResult(text, summary=f"{session_id} · {covered} of {total} · {_size(text)}")

    async def _said(self, session_id: str, query: str, snippets: Sequence[Snippet]) -> list[Snippet]:
        """The messages that matched, as they may leave the session: cut from each message with its
        secrets masked (a snippet of the stored text could hold part of a key); a message whose
        words matched only inside a secret is left out."""
        if not snippets or not self.service.redact:
            return list(snippets)
        try:
            surface = await self.service.query.read_surface(session_id)
            with collector_paused():
                projected = project_conversation(surface)
            wanted = {snippet.message for snippet in snippets}
            around = range(max(0, min(wanted) - 1), min(len(projected), max(wanted) + 2))
            items = self.service.leaving(projected, around)
        except Exception:  # (the hit stays; only the words said are left out)
            return []
        parsed = parse_query(query)
        said: list[Snippet] = []
        for snippet in snippets:
            if 0 <= snippet.message < len(items):
                text = items[snippet.message].text
                if snippet.by_meaning:  # the message's head, nothing marked
                    again: Snippet | None = plain_snippet(text, snippet.role, snippet.message)
                else:
                    again = snippet_of(text, parsed, snippet.role, snippet.message)
                if again is not None:
                    said.append(again)
        return said

    # -- arguments --------------------------------------------------------------------------------

    def _session_of(self, arguments: Mapping[str, Any]) -> str:
        named: str = arguments["session"]
        session_id = named
        if named.startswith("dsh-session:"):
            try:
                session_id = decode_session_reference_uri(named)
            except SessionReferenceError:
                raise ToolCallError("session: not a valid dsh-session: URI", TOOL_INVALID_ARGUMENTS) from None
        elif _OTHER_URI.match(named):  # (ids may hold a colon: claude:<uuid>, codex:<uuid>)
            raise ToolCallError(
                "session: a session's id or its dsh-session: URI, not another URI", TOOL_INVALID_ARGUMENTS
            )
        if session_id == self.target.id:
            raise ToolCallError("that is this session itself: it is already in the conversation", TOOL_SELF_REFERENCE)
        return session_id

    async def _records(self) -> tuple[Sequence[SessionRecord], Mapping[str, str | None]]:
        if self._listing is not None:
            return await self._listing()
        try:
            records = await self.service.query.list_sessions()
        except SessionQueryError as error:
            raise ToolCallError(f"the sessions cannot be listed: {visible(error.message)}", TOOL_READ_FAILED) from None
        return records, {}


_OTHER_URI = re.compile(r"^[A-Za-z][A-Za-z0-9+.-]*://")


class _Page:
    """A page of a session's messages, filled up to a byte budget (its frame's JSON, as sent)."""

    def __init__(self, session_id: str, captured: int | None, total: int, start: int) -> None:
        self.session_id, self.captured, self.total = session_id, captured, total
        self.start = self.stop = start
        self.cut: int | None = None
        """The position of the one message cut to fit the page, if it was."""
        self.messages: list[dict[str, Any]] = []
        self._spelled = 0
        """Bytes the messages take in the frame's JSON (each message, and the commas between them)."""
        self.size = self._measure()

    def _measure(self) -> int:
        """The frame's size: its fields with no messages, plus the messages as spelled (no re-serialising)."""
        messages, self.messages = self.messages, []
        try:
            return utf8_length(spelled(self.frame())) + self._spelled
        finally:
            self.messages = messages

    def frame(self) -> dict[str, Any]:
        return {
            "sessionId": self.session_id,
            "capturedThroughSeq": self.captured,
            "totalMessages": self.total,
            "from": self.start,
            "to": self.stop,
            "remainingBefore": self.start,
            "remainingAfter": self.total - self.stop,
            "messages": self.messages,
        }

    def add(self, index: int, role: str, text: str, budget: int) -> bool:
        """Add a message if it fits (the first one always, cut to fit with the notice); whether it did."""
        message = {"index": index, "role": role, "text": text}
        size = utf8_length(spelled(message)) + (1 if self.messages else 0)
        # The frame grows by the message, its comma, and at most a digit in "to" and "remainingAfter".
        if self.size + size + 2 <= budget:
            self.messages.append(message)
            self.stop = index + 1
            self._spelled += size
            self.size = self._measure()
            return True
        if self.messages:
            return False
        # One message larger than a page: its head and tail with dsh's notice, cut until the page
        # fits (escapes make JSON longer than the text, so the text gets less than the room).
        base = self.size + utf8_length(spelled({**message, "text": ""})) + 8
        room = budget - base
        while True:
            message["text"], _ = truncate_with_notice(text, max(room, 0))
            self.messages, self.stop, self.cut = [message], index + 1, index
            self._spelled = utf8_length(spelled(message))
            self.size = self._measure()
            if self.size <= budget or room <= 0:
                return False
            # Shrink the text's bytes by how much its JSON outgrew the room (escapes), and a little more.
            grown = max(self.size - base, 1)
            room = min(room - 1, room * (budget - base) * 9 // (grown * 10))


def _refusal(session_id: str, error: SessionReferenceError) -> ToolCallError:
    if error.code == "SESSION_REFERENCE_SELF_REFERENCE":
        return ToolCallError("that is this session itself: it is already in the conversation", TOOL_SELF_REFERENCE)
    cause = error.__cause__
    if isinstance(cause, SessionQueryError) and cause.code == "SESSION_QUERY_SESSION_NOT_FOUND":
        return ToolCallError(f"there is no session {json.dumps(session_id)}", TOOL_SESSION_NOT_FOUND)
    what = f"session {json.dumps(session_id)} cannot be referenced: {visible(error.message)}"
    return ToolCallError(what, TOOL_READ_FAILED)


def _escaped(result: ToolResult) -> ToolResult:
    return ToolResult(escape_unsafe(result.text), result.is_error, result.code, result.summary)


def _size(text: str) -> str:
    size = utf8_length(text)
    return f"{size / 1024:.1f} KiB" if size >= 1024 else f"{size} B"


def _arguments(arguments: str | Mapping[str, Any]) -> Mapping[str, Any]:
    if isinstance(arguments, str):
        if len(arguments) > 65536:
            raise ToolCallError("the arguments are longer than any call needs", TOOL_INVALID_ARGUMENTS)
        try:
            parsed = json.loads(arguments or "{}")
        except ValueError:
            raise ToolCallError("the arguments are not a JSON object", TOOL_INVALID_ARGUMENTS) from None
    else:
        parsed = arguments
    if not isinstance(parsed, Mapping):
        raise ToolCallError("the arguments are not a JSON object", TOOL_INVALID_ARGUMENTS)
    return parsed


def _within(name: str, value: int | None, default: int, *, low: int, high: int) -> int:
    """A position argument (already an integer, or ``None``: ``default``) inside the session's range."""
    if value is None:
        return default
    if not low <= value <= high:
        raise ToolCallError(f"{name}: {value} is outside {low}–{high}", TOOL_OUT_OF_RANGE)
    return value
