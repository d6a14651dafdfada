"""Read-only session sources of other coding agents: Claude Code and OpenAI's Codex CLI.

Each source implements the ``SessionQuery`` protocol over the agent's own files and maps what it
finds to surface events, so projection, budgets, framing and baking stay the contract's own:

- user-typed text → ``user/message`` with source ``{kind: "user"}``; assistant text →
  ``assistant/message``; a Claude Code compaction summary → a compact checkpoint (the surface
  starts there);
- tool calls and results, thinking/reasoning, system and meta records, sidechains, and Codex's
  ``<user_instructions>`` / ``<environment_context>`` boilerplate are not on the surface.

Ids are namespaced (``claude:<uuid>``, ``codex:<uuid>``). Nothing is ever written under the roots.
A file is read up to its last complete line (an agent appending meanwhile yields a consistent
prefix), line by line; malformed or unknown lines are skipped and counted (``problems``).

Formats are not officially documented. Supported shapes: Claude Code ``projects/<dir>/<uuid>.jsonl``
(records ``user``/``assistant``/``summary``/``system`` with ``uuid``/``parentUuid``, ``cwd``,
``timestamp``, ``isSidechain``, ``isMeta``, ``isCompactSummary``; message content as a string or
block array), as written by Claude Code 1.x–2.x; Codex CLI ``sessions/YYYY/MM/DD/rollout-*.jsonl``
in both layouts: ``{timestamp, type, payload}`` lines (``session_meta``, ``response_item``,
``event_msg``, ``turn_context``; Codex 0.2x+) and the older bare lines (a first ``{id, timestamp,
instructions}`` line, then response items).
"""

from __future__ import annotations

import asyncio
import itertools
import json
import os
import re
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

from core.collector import collector_paused
from core.files import open_regular
from core.sessions.jsonl_listing import Revision, StoreProblem
from core.sessions.jsonl_store import file_revision
from core.sessions.models import (
    SessionEvent,
    SessionHeader,
    SessionRecord,
    SurfaceSnapshot,
    TitleSnapshot,
    trusted_event,
)
from core.sessions.query import SessionQuery, listing_order_key
from core.sessions.session import not_found

CLAUDE_PREFIX = "claude:"
CODEX_PREFIX = "codex:"
HEAD_BYTES = 256 * 1024
"""How much of a file the listing reads for its header (first timestamp, cwd, Codex meta)."""

_UUID = re.compile(r"([0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12})$")
_BOILERPLATE = ("<user_instructions", "<environment_context", "# AGENTS.md instructions for ")
"""Codex user messages that the tool wrote, not the user (instructions files, the environment)."""
_CWD_IN_CONTEXT = re.compile(r"<environment_context>.*?<cwd>([^<]+)</cwd>", re.DOTALL)
_TITLE_LENGTH = 80


def claude_root() -> Path:
    """``CLAUDE_CONFIG_DIR``, else ``~/.claude``."""
    configured = os.environ.get("CLAUDE_CONFIG_DIR")
    return Path(configured) if configured else Path.home() / ".claude"


def codex_root() -> Path:
    """``CODEX_HOME``, else ``~/.codex``."""
    configured = os.environ.get("CODEX_HOME")
    return Path(configured) if configured else Path.home() / ".codex"


def _millis(value: Any) -> int | None:
    """Epoch milliseconds of an ISO 8601 timestamp (``...Z`` or an offset), or ``None``."""
    if not isinstance(value, str) or not value:
        return None
    try:
        parsed = datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        return None
    if parsed.tzinfo is None:
        return None
    return int(parsed.timestamp() * 1000)


_scan: Callable[[str, int], tuple[Any, int]] = json.JSONDecoder().scan_once  # type: ignore[attr-defined]
_TRAILING = frozenset(" \t\r\n")


def _decode(text: str) -> Any:
    """``json.loads`` of one line, minus its per-call setup (the C scanner, then only whitespace)."""
    start = 0
    length = len(text)
    while start < length and text[start] in _TRAILING:
        start += 1
    try:
        value, end = _scan(text, start)
    except StopIteration as error:
        raise ValueError(f"no JSON value at {error.value}") from None
    if text[end:].strip(" \t\r\n"):
        raise ValueError("extra data after the JSON value")
    return value


def _lines(path: Path, limit: int | None = None) -> Iterator[tuple[int, Any]]:
    """(line number, parsed JSON or ``None`` when malformed) of every complete line, streamed.

    Only bytes present when the file was opened are read, and a last line without its newline
    (being written) is left out, so a file another program appends to reads as a consistent prefix.
    """
    # Another tool's files may be symlinks (people link ~/.claude), but only a regular file is opened:
    # a FIFO would block the listing, a device never end.
    with os.fdopen(open_regular(path, follow=True), "rb") as handle:
        size = os.fstat(handle.fileno()).st_size
        budget = size if limit is None else min(size, limit)
        read = 0
        for number in itertools.count():
            # A line is read up to what is left of the budget: one endless line cannot be read whole.
            raw = handle.readline(budget - read + 1)
            if not raw:
                return
            read += len(raw)
            if read > budget or not raw.endswith(b"\n"):
                return
            if raw.isspace():
                continue
            try:
                # (json.loads on bytes, minus its encoding sniffing: these files are UTF-8.)
                yield number, _decode(raw.decode("utf-8", "surrogatepass"))
            except (ValueError, UnicodeDecodeError, RecursionError):
                yield number, None


def _text(value: str) -> list[dict[str, Any]]:
    return [{"type": "text", "text": value}]


def _first_line_title(text: str) -> str:
    line = " ".join(text.split())
    return line if len(line) <= _TITLE_LENGTH else line[: _TITLE_LENGTH - 1] + "…"


_CODEX_REQUEST = "## My request for Codex:"
"""What Codex's IDE and Desktop clients put before the words the user typed (after open tabs, files)."""


def _prompt_title(text: str) -> str | None:
    """A title from a prompt; ``None`` for text a tool wrote in the user's turn (``<task-notification>``
    and other tag blocks)."""
    at = text.find(_CODEX_REQUEST)
    if at >= 0:
        text = text[at + len(_CODEX_REQUEST) :]
    if not text.strip() or text.lstrip().startswith("<"):
        return None
    return _first_line_title(text)


@dataclass
class ExternalSession:
    """One session of another agent as read: its header, folded surface, title and problems."""

    header: SessionHeader
    events: list[SessionEvent]
    title: str | None
    problems: int = 0
    last_seq: int | None = None


@dataclass
class _Entry:
    path: Path
    revision: Revision
    header: SessionHeader | None
    session: ExternalSession | None = None
    problem: str | None = None


def _event(kind: str, seq: int, time: int, data: dict[str, Any]) -> SessionEvent:
    # Built here from checked values: no need to validate each of a long transcript's events again.
    return trusted_event(kind, seq, time, data, "append")


@dataclass
class _Builder:
    """Collects surface events in order; a checkpoint drops everything before it."""

    events: list[SessionEvent] = field(default_factory=list)
    turn: int = 0

    def user(self, seq: int, time: int, text: str) -> None:
        self.turn += 1
        data = {"content": _text(text), "source": {"kind": "user"}}
        self.events.append(_event("user/message", seq, time, data))

    def assistant(self, seq: int, time: int, text: str) -> None:
        data = {"turn": max(1, self.turn), "step": 0, "content": _text(text)}
        self.events.append(_event("assistant/message", seq, time, data))

    def checkpoint(self, seq: int, time: int, text: str) -> None:
        source = {"kind": "plugin", "plugin": "compact"}
        data = {"content": _text(text), "source": source}
        self.events = [_event("user/message", seq, time, data)]


class _FileSource:
    """What both agents' sources share: a cached listing by file revision and lazy reads."""

    prefix = ""
    name = ""

    def __init__(self, root: str | os.PathLike[str]) -> None:
        self.root = Path(root)
        self._entries: dict[str, _Entry] = {}
        self._by_path: dict[str, _Entry] = {}
        self._records: list[SessionRecord] | None = None
        self.problems: list[StoreProblem] = []

    def _files(self) -> Iterator[str]:
        raise NotImplementedError

    def _header(self, path: Path) -> SessionHeader | None:
        raise NotImplementedError

    def _read(self, path: Path, header: SessionHeader) -> ExternalSession:
        raise NotImplementedError

    def listing(self) -> list[SessionRecord]:
        """Every session, newest first: one ``stat`` per file; a file's head is read again only
        when its revision changed, and the same list object comes back while nothing did."""
        known = self._by_path
        fresh: dict[str, _Entry] = {}
        changed = self._records is None
        for path in self._files():
            try:
                revision = file_revision(path, follow=True)
            except OSError:
                changed = True
                continue  # gone meanwhile
            entry = known.get(path)
            if entry is None or entry.revision != revision:
                changed = True
                entry = self._entry(Path(path), revision)
            fresh[path] = entry
        self._by_path = fresh
        if not changed and len(fresh) == len(known) and self._records is not None:
            return self._records
        entries: dict[str, _Entry] = {}
        problems: list[StoreProblem] = []
        records: list[SessionRecord] = []
        for entry in fresh.values():
            if entry.header is None:
                problems.append(StoreProblem(entry.path, entry.problem or f"no readable {self.name} record"))
            else:
                entries[entry.header.id] = entry
                records.append(SessionRecord.model_construct(header=entry.header, live=False, persisted=True))
        records.sort(key=listing_order_key)
        self._entries, self.problems, self._records = entries, problems, records
        return records

    def _entry(self, path: Path, revision: Revision) -> _Entry:
        try:
            return _Entry(path, revision, self._header(path))
        except OSError as error:
            return _Entry(path, revision, None, problem=f"cannot read: {error.strerror or error}")

    def session(self, session_id: str) -> ExternalSession:
        """The session as read now (cached by file revision).

        Raises:
            SessionQueryError: ``SESSION_QUERY_SESSION_NOT_FOUND`` (not listed, or its file is gone).
        """
        entry = self._entries.get(session_id)
        if entry is None:
            self.listing()
            entry = self._entries.get(session_id)
        if entry is None or entry.header is None:
            raise not_found(session_id)
        try:
            revision = file_revision(entry.path, follow=True)
            if entry.session is None or revision != entry.revision:
                entry.revision = revision
                with collector_paused():  # tens of thousands of small acyclic containers
                    entry.session = self._read(entry.path, entry.header)
        except OSError as error:
            raise not_found(session_id) from error
        return entry.session

    def revision(self, session_id: str) -> Revision | None:
        """The file revision the last listing saw (``None`` when not listed)."""
        entry = self._entries.get(session_id)
        return entry.revision if entry is not None else None

    def surface(self, session_id: str) -> SurfaceSnapshot:
        """``read_surface``, synchronously (for a host's own threads)."""
        session = self.session(session_id)
        # Its events were built from checked values (``trusted_event``): no validation pass again.
        return SurfaceSnapshot.model_construct(
            session=session.header, captured_through_seq=session.last_seq, events=list(session.events)
        )

    def title(self, session_id: str) -> TitleSnapshot | None:
        """``read_title``, synchronously (for a host's own threads)."""
        session = self.session(session_id)
        if session.title is None:
            return None
        seq = session.last_seq or 0
        return TitleSnapshot(title=session.title, message_seqs=[], event_seq=seq, updated_at=session.header.created_at)

    # Like the dsh store's, these coroutines read synchronously: a host that must not wait runs
    # them (or the plain methods above) on a thread of its own.
    async def list_sessions(self) -> list[SessionRecord]:
        return self.listing()

    async def read_surface(self, session_id: str) -> SurfaceSnapshot:
        return self.surface(session_id)

    async def read_title(self, session_id: str) -> TitleSnapshot | None:
        return self.title(session_id)


# -- Claude Code ----------------------------------------------------------------------------------


def _claude_text(content: Any) -> str:
    """A message's text: a string content, or its ``text`` blocks (tool calls, results and
    thinking are left out)."""
    if type(content) is str:
        return content
    if type(content) is not list:
        return ""
    texts = [b["text"] for b in content if type(b) is dict and b.get("type") == "text" and type(b.get("text")) is str]
    return texts[0] if len(texts) == 1 else "\n".join(text for text in texts if text)


class ClaudeCodeSource(_FileSource):
    """Claude Code's sessions: ``<root>/projects/<encoded cwd>/<uuid>.jsonl`` (read-only)."""

    prefix = CLAUDE_PREFIX
    name = "Claude Code"

    def _files(self) -> Iterator[str]:
        projects = self.root / "projects"
        try:
            folders = [entry for entry in os.scandir(projects) if entry.is_dir()]
        except OSError:
            return
        for folder in folders:
            try:
                names = os.listdir(folder.path)
            except OSError:
                continue
            for name in names:
                # ``agent-*.jsonl``: a sub-agent's sidechain, part of its parent session, never one itself.
                if name.endswith(".jsonl") and not name.startswith("agent-"):
                    yield os.path.join(folder.path, name)

    def _header(self, path: Path) -> SessionHeader | None:
        created: int | None = None
        cwd: str | None = None
        readable = False
        for _number, record in _lines(path, HEAD_BYTES):
            if not isinstance(record, Mapping):
                continue
            readable = readable or isinstance(record.get("type"), str)
            if created is None:
                created = _millis(record.get("timestamp"))
            if cwd is None and isinstance(record.get("cwd"), str) and record["cwd"]:
                cwd = record["cwd"]
            if created is not None and cwd is not None:
                break
        if not readable:
            return None
        if created is None:
            created = path.stat().st_mtime_ns // 1_000_000
        return SessionHeader(id=self.prefix + path.stem, created_at=created, cwd=cwd)

    def _read(self, path: Path, header: SessionHeader) -> ExternalSession:
        # Each conversation record is kept as a small tuple of what the surface needs, never the
        # parsed dict: a long transcript then holds few objects for the garbage collector to walk.
        records: dict[str, tuple[int, str | None, int, str, int | None]] = {}
        order: list[str] = []
        summaries: list[tuple[str | None, str]] = []
        problems = 0
        last_seq: int | None = None
        for number, record in _lines(path):
            last_seq = number
            if type(record) is not dict or type(record.get("type")) is not str:
                problems += 1
                continue
            kind = record["type"]
            if kind == "summary":
                if isinstance(record.get("summary"), str):
                    leaf = record.get("leafUuid")
                    summaries.append((leaf if isinstance(leaf, str) else None, record["summary"]))
                continue
            uuid = record.get("uuid")
            if type(uuid) is not str or record.get("isSidechain") is True:
                continue  # file history snapshots, queue operations, summaries; sub-agents' records
            parent = record.get("parentUuid")
            message = record.get("message")
            # (The role, inlined: this loop runs once per line of a transcript.) Records of other
            # kinds are links of the chain too (Claude Code 2.1 writes hook ``progress`` records
            # between a prompt and its answer), never conversation.
            if kind not in ("user", "assistant") or record.get("isMeta") is True or type(message) is not dict:
                role, text = _SKIP, ""
            else:
                role = (
                    _CHECKPOINT if record.get("isCompactSummary") is True else _USER if kind == "user" else _ASSISTANT
                )
                content = message.get("content")
                text = content if type(content) is str else _claude_text(content)  # (a call less per prompt)
            # (Most records of a working session are tool calls and results: no text, no time needed.)
            when = _millis(record.get("timestamp")) if text else None
            records[uuid] = (number, parent if type(parent) is str else None, role if text else _SKIP, text, when)
            order.append(uuid)
        chain = self._chain(records, order)
        builder = _Builder()
        first_prompt: str | None = None
        first_command: str | None = None
        for uuid in chain:
            number, _parent, role, text, time = records[uuid]
            if role == _SKIP or not text.strip():
                continue  # system and meta records; tool results, thinking and tool calls only
            when = time if time is not None else header.created_at
            if role == _CHECKPOINT:
                builder.checkpoint(number, when, text)
            elif role == _USER:
                if _is_claude_command_noise(text):
                    command = _claude_command(text)
                    if command is None:
                        continue
                    if command[1] is None:  # a command without arguments: no words of the user's
                        first_command = first_command or command[0]
                        continue
                    text = f"{command[0]} {command[1]}"
                builder.user(number, when, text)
                if first_prompt is None:
                    first_prompt = _prompt_title(text)
            else:
                builder.assistant(number, when, text)
        in_chain = set(chain)
        title = next((summary for leaf, summary in reversed(summaries) if leaf in in_chain), None)
        if title is None and summaries:
            title = summaries[-1][1]
        if title is None:
            title = first_prompt or first_command
        return ExternalSession(header, builder.events, title, problems, last_seq)

    @staticmethod
    def _chain(records: Mapping[str, tuple[int, str | None, int, str, int | None]], order: Sequence[str]) -> list[str]:
        """The branch that ends in the newest record, root first (``parentUuid`` links)."""
        if not order:
            return []
        chain: list[str] = []
        seen: set[str] = set()
        current: str | None = order[-1]
        while current is not None and current in records and current not in seen:
            seen.add(current)
            chain.append(current)
            current = records[current][1]
        chain.reverse()
        return chain


_SKIP, _USER, _ASSISTANT, _CHECKPOINT = range(4)


def _is_claude_command_noise(text: str) -> bool:
    # Slash-command echoes and local command output Claude Code stores as user records.
    stripped = text.lstrip()
    return stripped.startswith(("<command-name>", "<local-command-stdout>", "<command-message>", "Caveat: "))


_COMMAND_NAME = re.compile(r"<command-name>([^<]*)</command-name>")
_COMMAND_ARGS = re.compile(r"<command-args>(.*?)</command-args>", re.DOTALL)


def _claude_command(text: str) -> tuple[str, str | None] | None:
    """A slash command's echo: its name and the words typed after it (``None`` when there were
    none); ``None`` for local command output and caveats."""
    name = _COMMAND_NAME.search(text)
    if name is None or not name.group(1).strip():
        return None
    args = _COMMAND_ARGS.search(text)
    words = args.group(1).strip() if args is not None else ""
    return name.group(1).strip(), words or None


# -- Codex CLI ------------------------------------------------------------------------------------


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


class CodexSource(_FileSource):
    """Codex CLI's sessions: ``<root>/sessions/YYYY/MM/DD/rollout-*.jsonl`` (read-only)."""

    prefix = CODEX_PREFIX
    name = "Codex"

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
        for _number, record in _lines(path, HEAD_BYTES):
            if not isinstance(record, Mapping):
                continue
            payload = record.get("payload")
            if record.get("type") == "session_meta" and isinstance(payload, Mapping):
                readable = True
                session_id = payload.get("id") if isinstance(payload.get("id"), str) else session_id
                created = _millis(payload.get("timestamp")) or _millis(record.get("timestamp"))
                cwd = payload.get("cwd") if isinstance(payload.get("cwd"), str) else None
                break
            if "payload" not in record and isinstance(record.get("id"), str) and "timestamp" in record:
                readable = True  # the older layout's first line
                session_id, created = record["id"], _millis(record.get("timestamp"))
                continue
            if isinstance(record.get("type"), str):
                readable = True
                if created is None:
                    created = _millis(record.get("timestamp"))
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
            match = _UUID.search(path.stem)
            session_id = match.group(1) if match else path.stem
        if created is None:
            created = path.stat().st_mtime_ns // 1_000_000
        return SessionHeader(id=self.prefix + session_id, created_at=created, cwd=cwd)

    def _read(self, path: Path, header: SessionHeader) -> ExternalSession:
        items: list[tuple[int, int, str, str]] = []  # (seq, time, role, text) from response items
        events: list[tuple[int, int, str, str]] = []  # the same from event_msg, used only without items
        problems = 0
        last_seq: int | None = None
        for number, record in _lines(path):
            last_seq = number
            if not isinstance(record, Mapping):
                problems += 1
                continue
            time = _millis(record.get("timestamp")) or header.created_at
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
        builder = _Builder()
        title: str | None = None
        for seq, time, role, text in chosen:
            if role == "user":
                builder.user(seq, time, text)
                title = title or _prompt_title(text)
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


ExternalSource = ClaudeCodeSource | CodexSource
"""A read-only source of another agent's sessions."""


def source_of(sources: Sequence[ExternalSource], session_id: str) -> ExternalSource | None:
    """Which of ``sources`` a namespaced id (``claude:…``, ``codex:…``) belongs to, if any."""
    return next((source for source in sources if session_id.startswith(source.prefix)), None)


# -- one listing over several sources ---------------------------------------------------------------


class MergedSessionQuery:
    """The dsh store and other agents' sources as one ``SessionQuery``: one listing in contract
    order (newest first, ties by id), each read routed to the source that listed the session."""

    def __init__(self, primary: SessionQuery, sources: Sequence[ExternalSource]) -> None:
        self.primary = primary
        self.sources = list(sources)

    def source_of(self, session_id: str) -> ExternalSource | None:
        """The external source a namespaced id belongs to (``None``: the primary store)."""
        return source_of(self.sources, session_id)

    async def list_sessions(self) -> list[SessionRecord]:
        listings = await asyncio.gather(self.primary.list_sessions(), *(s.list_sessions() for s in self.sources))
        merged = [record for listing in listings for record in listing]
        merged.sort(key=listing_order_key)
        return merged

    async def read_surface(self, session_id: str) -> SurfaceSnapshot:
        source = self.source_of(session_id)
        return await (source.read_surface(session_id) if source else self.primary.read_surface(session_id))

    async def read_title(self, session_id: str) -> TitleSnapshot | None:
        source = self.source_of(session_id)
        return await (source.read_title(session_id) if source else self.primary.read_title(session_id))


__all__ = [
    "CLAUDE_PREFIX",
    "CODEX_PREFIX",
    "ClaudeCodeSource",
    "CodexSource",
    "ExternalSession",
    "ExternalSource",
    "MergedSessionQuery",
    "claude_root",
    "codex_root",
    "source_of",
]
