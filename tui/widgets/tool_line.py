"""A tool call in the transcript: one dim line saying what was looked at and how much came back
(``read_session · design-notes · messages 1–40 of 300 · 18.2 KiB``); Enter shows the exact
arguments and the result the model received."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from rich.text import Text
from textual.binding import Binding
from textual.message import Message
from textual.widgets import Static

from core import Session, SessionEvent
from core.agent.tool_specs import SPECS, LabelOf
from core.sessions import event_types as ev
from core.sessions.surface import message_content, message_payload, text_of_blocks
from tui.services.text import visible


class ToolLine(Static, can_focus=True):
    """One tool call and its result (see the module docstring)."""

    BINDINGS = [Binding("enter", "show_call", "The call and its result")]

    DEFAULT_CSS = """
    ToolLine { color: $text-muted; padding: 0 1; }
    ToolLine:focus { background: $primary 15%; }
    """

    @dataclass
    class ShowCall(Message):
        """Open the viewer on a call's exact arguments and result."""

        line: ToolLine
        title: str
        text: str

        @property
        def control(self) -> ToolLine:
            """The tool call's line."""
            return self.line

    def __init__(self, summary: str, title: str, details: str) -> None:
        super().__init__(Text(summary, style="dim"), markup=False)
        self.summary = summary
        self._title, self._details = title, details

    def action_show_call(self) -> None:
        self.post_message(self.ShowCall(self, self._title, self._details))


__all__ = ["LabelOf", "ToolLine", "tool_line"]


def tool_line(event: SessionEvent, session: Session, label_of: LabelOf | None = None) -> ToolLine:
    """The line of a ``tool/result`` event (either dsh shape), with its call when the log has it."""
    data = event.data
    message = message_payload(data)
    blocks = message_content(data)
    if message is not data and blocks and isinstance(blocks[0], dict):
        result = blocks[0]  # a newer dsh tool result: one tool-result block
        call_id, failed, content = result.get("toolCallId"), bool(result.get("isError")), result.get("content") or []
    else:
        call_id, failed, content = data.get("callId"), bool(data.get("isError")), data.get("content") or []
    output = text_of_blocks(content if isinstance(content, list) else [])
    call = _call_of(session, event, call_id)
    name = str(call.get("name") or "tool") if call is not None else "tool"
    arguments = str(call.get("arguments") or "") if call is not None else ""
    parts = [name]
    spec = SPECS.get(name)
    what = spec.line(arguments, output, label_of) if spec is not None else ""
    if what:
        parts.append(what)
    parts.append(("failed: " + output.rsplit("(", 1)[-1].rstrip(")")) if failed else _size(output))
    summary = visible("· " + " · ".join(parts))
    details = f"{name}({arguments})\n\n{'Error' if failed else 'Result'}:\n{output}"
    return ToolLine(summary, f"Tool call {visible(str(call_id or '?'))}", details)


def _call_of(session: Session, result: SessionEvent, call_id: Any) -> dict[str, Any] | None:
    """The ``tool/call`` event's data for ``call_id``: the one the result cites, else the latest before it."""
    cited = set(result.source_event_seqs or ())
    for event in reversed(session.events):
        if event.seq >= result.seq or event.type != ev.TOOL_CALL:
            continue
        if event.seq in cited or event.data.get("callId") == call_id:
            return dict(event.data)
    return None


def _size(text: str) -> str:
    size = len(text.encode("utf-8", "surrogatepass"))
    return f"{size / 1024:.1f} KiB" if size >= 1024 else f"{size} B"
