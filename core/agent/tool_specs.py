"""The session tools, one record each: name, title, description, arguments, and what the transcript
says of a call. Everything else is derived from this table: the Chat Completions ``tools`` the model
is offered (``tool_definitions``), the MCP server's tools and their titles, the arguments checked
before a call runs (``ToolSpec.checked``, from the same schema the model reads), the tools a hand-off
allows another agent (``TOOL_NAMES``), and the transcript's line for a call (``ToolSpec.line``).

Adding a tool is one ``ToolSpec`` here and its handler in ``SessionTools`` (``session_tools``).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Literal

from core.errors import SessionrefError
from core.sessions.sources.registry import agent_names
from core.sessions.wire_shapes import ToolDefinition

SEARCH_LIMIT = 10
MAX_SEARCH_LIMIT = 50
MAX_STRING = 4096
"""The longest string argument any tool takes (an id, a URI, a query)."""

TOOL_INVALID_ARGUMENTS = "TOOL_INVALID_ARGUMENTS"
TOOL_OUT_OF_RANGE = "TOOL_OUT_OF_RANGE"

LabelOf = Callable[[str], str | None]
"""A session id -> its title, when known (a call's line names a session by it)."""


class ToolCallError(SessionrefError):
    """A refused tool call (turned into an error result, never raised to the model's caller)."""


@dataclass(frozen=True)
class Parameter:
    """One argument: its JSON type, what the model is told, and its bounds. ``low``/``high`` are
    the schema's ``minimum``/``maximum``; a range that depends on the session (``read_session``'s
    positions) is checked by the tool itself."""

    name: str
    kind: Literal["string", "integer"]
    description: str
    required: bool = False
    low: int | None = None
    high: int | None = None

    def schema(self) -> dict[str, object]:
        schema: dict[str, object] = {"type": self.kind}
        if self.low is not None:
            schema["minimum"] = self.low
        if self.high is not None:
            schema["maximum"] = self.high
        schema["description"] = self.description
        return schema

    def checked(self, arguments: Mapping[str, Any]) -> Any:
        """The argument's value (``None`` when it is optional and not given).

        Raises:
            ToolCallError: the value is not of its type, or outside its fixed range.
        """
        value = arguments.get(self.name)
        if value is None and not self.required:
            return None
        if self.kind == "string":
            if not isinstance(value, str) or not value or len(value) > MAX_STRING:
                raise ToolCallError(f"{self.name}: a non-empty string is required", TOOL_INVALID_ARGUMENTS)
            return value
        if isinstance(value, bool) or not isinstance(value, int):
            raise ToolCallError(f"{self.name}: an integer is required", TOOL_INVALID_ARGUMENTS)
        if self.low is not None and self.high is not None and not self.low <= value <= self.high:
            raise ToolCallError(f"{self.name}: {value} is outside {self.low}–{self.high}", TOOL_OUT_OF_RANGE)
        return value


@dataclass(frozen=True)
class ToolSpec:
    """One session tool (see the module docstring)."""

    name: str
    title: str
    """What an MCP client shows for it."""
    describe: Callable[[int], str]
    """Its description, for pages of at most this many bytes."""
    parameters: tuple[Parameter, ...]
    what: Callable[[Mapping[str, Any], str, LabelOf | None], str]
    """What a call looked at, for the transcript: from its arguments and its result's text (a tool
    that needs its frame's data parses it, ``frame_data``; the others never do)."""

    def definition(self, read_bytes: int) -> ToolDefinition:
        """The tool in the Chat Completions ``tools`` shape."""
        return {
            "type": "function",
            "function": {
                "name": self.name,
                "description": self.describe(read_bytes),
                "parameters": {
                    "type": "object",
                    "properties": {parameter.name: parameter.schema() for parameter in self.parameters},
                    "required": [parameter.name for parameter in self.parameters if parameter.required],
                    "additionalProperties": False,
                },
            },
        }

    def checked(self, arguments: Mapping[str, Any]) -> dict[str, Any]:
        """The arguments by name, as the schema allows them (``None`` for an optional one not given).

        Raises:
            ToolCallError: an argument the tool does not take, or one of the wrong type or range.
        """
        known = {parameter.name for parameter in self.parameters}
        unknown = sorted(str(key) for key in arguments if key not in known)
        if unknown:
            raise ToolCallError(f"unknown argument {json.dumps(unknown[0])}", TOOL_INVALID_ARGUMENTS)
        return {parameter.name: parameter.checked(arguments) for parameter in self.parameters}

    def line(self, arguments: str, output: str, label_of: LabelOf | None = None) -> str:
        """What a call looked at (the transcript's line), from the arguments the model sent (JSON
        text) and its result's text; empty when they say nothing."""
        try:
            parsed = json.loads(arguments) if arguments else {}
        except ValueError:
            return ""
        return self.what(parsed, output, label_of) if isinstance(parsed, dict) else ""


def _kib(read_bytes: int) -> str:
    kib = read_bytes / 1024
    return f"{kib:g} KiB" if kib >= 1 else f"{read_bytes} bytes"


def _session_named(arguments: Mapping[str, Any], label_of: LabelOf | None) -> str:
    session = str(arguments.get("session", ""))
    label = label_of(session) if label_of is not None and session else None
    return label or session


def _searched(arguments: Mapping[str, Any], _output: str, _label_of: LabelOf | None) -> str:
    return json.dumps(str(arguments.get("query", "")), ensure_ascii=False)


def _referenced(arguments: Mapping[str, Any], _output: str, label_of: LabelOf | None) -> str:
    return _session_named(arguments, label_of)


def _read(arguments: Mapping[str, Any], output: str, label_of: LabelOf | None) -> str:
    from core.agent.tool_texts import frame_data  # (the texts' module reads sessions: not for the tool list)

    session = _session_named(arguments, label_of)
    frame = frame_data(output)
    if isinstance(frame, dict):
        total, start, stop = frame.get("totalMessages"), frame.get("from"), frame.get("to")
        if isinstance(total, int) and isinstance(start, int) and isinstance(stop, int):
            covered = f"messages {start}–{stop - 1} of {total}" if stop > start else f"none of {total}"
            return f"{session} · {covered}"
    return session


_SESSION = Parameter(
    "session",
    "string",
    "the session's id, or its dsh-session: URI (as a reference or a search result names it)",
    required=True,
)

SEARCH_SESSIONS = ToolSpec(
    name="search_sessions",
    title="Search sessions",
    describe=lambda _read_bytes: (
        f"Search the user's other chat sessions (this store; other agents' sessions: {agent_names()}; "
        "sessions teammates shared) by the words said in "
        "them, their title, id and folder. The query is words in any order, or a question as the user "
        "would ask it: sessions holding more of its rarer words rank first, a word in the title counts "
        'more, case and word forms are folded (crash finds crashed); "quoted words" must occur as '
        "written; an identifier (retry_budget.py, --max-references) is found as typed; a query of two "
        "words or more is also matched by its meaning, so other words than the session used can find it "
        "(a message found by meaning alone shows its start, nothing in bold). Returns the best "
        "matches first, each with its id (session), its dsh-session: URI (uri), its title (label), its "
        "folder (cwd) when it has one, and the messages that match best (messages: each with its "
        "position as read_session counts it (message), the speaker's role, and a short snippet with the "
        "matching words in **bold**), or else the field that matched (matched: title, id or cwd). To "
        "read around a match, call read_session with from_message near its position. A note says when "
        "what was said was not searched in full (message search off or not ready yet). Use it when the "
        "user mentions earlier work that no reference in the conversation covers."
    ),
    parameters=(
        Parameter("query", "string", 'words or a question; "quoted words" as a phrase', required=True),
        Parameter(
            "limit",
            "integer",
            f"how many sessions at most (default {SEARCH_LIMIT})",
            low=1,
            high=MAX_SEARCH_LIMIT,
        ),
    ),
    what=_searched,
)

REFERENCE_SESSION = ToolSpec(
    name="reference_session",
    title="Reference a session",
    describe=lambda _read_bytes: (
        "Take a snapshot of one session: the very one a reference to it in the prompt carries, "
        "its newest messages (and checkpoint summaries) within a byte budget, older ones omitted "
        "and long ones cut with an '[… omitted N UTF-8 bytes …]' notice. Before the snapshot, "
        "lines outside it say how many messages the session has, which positions (0 is the first, "
        "as read_session counts them) the snapshot keeps, which it omits and which it cuts, and "
        "the read_session call that reads them. Use it for a session search_sessions found."
    ),
    parameters=(_SESSION,),
    what=_referenced,
)

READ_SESSION = ToolSpec(
    name="read_session",
    title="Read a session's messages",
    describe=lambda read_bytes: (
        "Read a session's messages by position (0 is the first): what a snapshot omitted or cut. "
        "A snapshot of a session referenced in the user's prompt keeps its newest messages within "
        "a byte budget and may omit older ones and cut long ones without saying how many; call "
        "read_session with no range to learn the session's size and read from its first message. "
        "Each result starts with lines saying how many messages the session has, which positions "
        f"the page holds, how many come before and after it, and where the next page starts. A page "
        f"holds at most {_kib(read_bytes)}; a message longer than that comes cut with an "
        "'[… omitted N UTF-8 bytes …]' notice."
    ),
    parameters=(
        _SESSION,
        Parameter("from_message", "integer", "the first message (default 0)", low=0),
        Parameter("to_message", "integer", "one past the last message (default: as many as fit)", low=0),
    ),
    what=_read,
)

TOOLS: tuple[ToolSpec, ...] = (SEARCH_SESSIONS, REFERENCE_SESSION, READ_SESSION)
"""Every session tool, in the order the model is offered them."""
TOOL_NAMES: tuple[str, ...] = tuple(spec.name for spec in TOOLS)
SPECS: dict[str, ToolSpec] = {spec.name: spec for spec in TOOLS}


def tool_definitions(read_bytes: int) -> list[ToolDefinition]:
    """The tools in the Chat Completions ``tools`` shape (DeepSeek's and OpenAI's), for pages of
    at most ``read_bytes``."""
    return [spec.definition(read_bytes) for spec in TOOLS]
