"""The transcript: the target session's surface replayed from its log (TUI.md, CONTRACT §8)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from rich.markdown import Markdown
from rich.text import Text
from textual.binding import Binding
from textual.containers import VerticalScroll
from textual.message import Message
from textual.widgets import Static

from core import Session, SessionEvent, display_prompt_content
from core.agent.wire import wire_text
from core.reference.projection import is_compact_checkpoint_source
from core.sessions.surface import message_content, message_payload, text_of_blocks

from ..text import visible, visible_lines


def referenced_line(data: dict[str, Any]) -> str | None:
    """``Referenced sessions · Label (id), ...`` from a baked prompt's envelope (just the id when label == id)."""
    envelope = data.get("envelope")
    if not isinstance(envelope, dict):
        return None
    names: list[str] = []
    for context in envelope.get("prefixContexts") or []:
        meta = context.get("meta") if isinstance(context, dict) else None
        if not isinstance(meta, dict) or meta.get("kind") != "session-reference":
            continue
        for reference in meta.get("references") or []:
            session_id, label = str(reference.get("sessionId", "")), str(reference.get("label", ""))
            names.append(visible(session_id) if label == session_id else f"{visible(label)} ({visible(session_id)})")
    return "Referenced sessions · " + ", ".join(names) if names else None


def model_received(data: dict[str, Any]) -> str:
    """Exactly the text the model received for a prompt event: the wire text of its baked content."""
    return wire_text(data.get("content") or [])


class UserBlock(Static, can_focus=True):
    """A prompt of the user's: display content, then the referenced-sessions line. Enter shows what the model got."""

    BINDINGS = [Binding("enter", "show_received", "What the model received")]

    DEFAULT_CSS = """
    UserBlock {
        padding: 0 1;
        margin: 1 0 0 0;
        &:focus { background: $primary 15%; }
    }
    """

    @dataclass
    class ShowReceived(Message):
        """Open the viewer on what the model received for ``event``."""

        event: SessionEvent

    def __init__(self, event: SessionEvent) -> None:
        self.event = event
        super().__init__(self._render_event(event), markup=False)

    @staticmethod
    def _render_event(event: SessionEvent) -> Text:
        data = event.data
        steering = event.type == "steering/message"
        text = Text()
        text.append("You", style="bold #5fafff")
        if steering:
            text.append(" · steering (sent while the reply streamed)", style="italic #ffaf00")
        text.append("\n")
        text.append(visible_lines(text_of_blocks(display_prompt_content(data))))
        line = referenced_line(data)
        if line is not None:
            text.append("\n" + line, style="dim")
        return text

    def action_show_received(self) -> None:
        """Ask the app to show what the model received."""
        self.post_message(self.ShowReceived(self.event))


class AssistantBlock(Static):
    """An assistant message (or the one streaming in), rendered as Markdown."""

    DEFAULT_CSS = """
    AssistantBlock { padding: 0 1; margin: 1 0 0 0; }
    """

    def __init__(self, text: str, model: str | None = None, streaming: bool = False) -> None:
        super().__init__(self._body(text, model, streaming))
        self.text = text

    @staticmethod
    def _body(text: str, model: str | None, streaming: bool) -> Any:
        from rich.console import Group

        header = Text("Assistant", style="bold #d787ff")
        if model:
            header.append(f" · {visible(model)}", style="dim")
        if streaming:
            header.append(" · streaming…", style="dim italic")
        return Group(header, Markdown(visible_lines(text) or "…"))

    def stream(self, text: str, model: str | None) -> None:
        """Show ``text`` so far."""
        if text != self.text:
            self.text = text
            self.update(self._body(text, model, True))


class CheckpointBlock(Static):
    """A compaction checkpoint: the summary that stands for the shadowed history."""

    DEFAULT_CSS = """
    CheckpointBlock {
        border: round #5fafff 60%;
        border-title-color: #5fafff;
        padding: 0 1;
        margin: 1 0 0 0;
    }
    """

    def __init__(self, event: SessionEvent) -> None:
        super().__init__(visible_lines(text_of_blocks(display_prompt_content(event.data))), markup=False)
        self.border_title = "Checkpoint · compacted summary"


class NoteLine(Static):
    """One dim line (a tool result, an injected context)."""

    DEFAULT_CSS = """
    NoteLine { color: $text-muted; padding: 0 1; }
    """


def _block_for(event: SessionEvent) -> Static | None:
    data = event.data
    if event.type == "user/message":
        source = data.get("source")
        if is_compact_checkpoint_source(source):
            return CheckpointBlock(event)
        if isinstance(source, dict) and source.get("kind") not in (None, "user"):
            plugin = visible(str(source.get("plugin") or source.get("kind")))
            return NoteLine(Text(f"· context from {plugin}", style="dim"))
        return UserBlock(event)
    if event.type == "steering/message":
        return UserBlock(event)
    if event.type == "assistant/message":
        message = message_payload(data)
        provenance = data.get("provenance") or message.get("source") or {}
        return AssistantBlock(text_of_blocks(message_content(data)), provenance.get("model"))
    if event.type == "tool/result":
        message = message_payload(data)
        blocks = message_content(data)
        if message is not data and blocks and isinstance(blocks[0], dict):
            result = blocks[0]  # a newer dsh tool result: one tool-result block
            call_id, failed, blocks = result.get("toolCallId"), result.get("isError"), result.get("content") or []
        else:
            call_id, failed = data.get("callId"), data.get("isError")
        call = visible(str(call_id or "?"))
        outcome = "failed" if failed else "returned"
        size = len(text_of_blocks(blocks))
        return NoteLine(Text(f"· tool call {call} {outcome} {size:,} characters", style="dim"))
    return None


def streaming_text(session: Session) -> str | None:
    """The text of the assistant step in progress (its chunks so far), or ``None`` when none runs."""
    events = session.events
    texts: list[str] = []
    for event in reversed(events):
        if event.type == "assistant/chunk":
            chunk = event.data.get("chunk") or {}
            texts.append(str(chunk.get("text", "")))
        elif event.type == "step/start":
            return "".join(reversed(texts))
        elif event.type in ("assistant/message", "step/end", "turn/end"):
            return None
    return None


class Transcript(VerticalScroll):
    """Replays a session's surface; new events are appended, a compaction rebuilds it."""

    DEFAULT_CSS = """
    Transcript {
        height: 1fr;
        border: round $primary 50%;
        scrollbar-size-vertical: 1;
        border-title-color: $text-muted;
        &:focus-within { border: round $primary; }
        & > #transcript-empty { color: $text-muted; padding: 1 2; }
    }
    """

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self.border_title = "Transcript"
        self._seqs: list[int] = []
        self._session_id: str | None = None
        self._stream: AssistantBlock | None = None

    def sync(self, session: Session, model: str | None = None) -> None:
        """Bring the blocks up to date with ``session`` (cheap when nothing changed)."""
        surface = session.surface()
        seqs = [event.seq for event in surface]
        if session.id != self._session_id or seqs[: len(self._seqs)] != self._seqs:
            self._session_id = session.id
            self._seqs = []
            self._stream = None
            self.remove_children()
        fresh = surface[len(self._seqs) :]
        streaming = streaming_text(session)
        if fresh and self._stream is not None:
            self._stream.remove()
            self._stream = None
        blocks = [block for block in map(_block_for, fresh) if block is not None]
        if not seqs and not self.children:
            blocks.append(
                Static("Nothing here yet. Write below; type @ to reference another session.", id="transcript-empty")
            )
        elif fresh:
            for empty in self.query("#transcript-empty"):
                empty.remove()
        self._seqs = seqs
        at_end = self.is_vertical_scroll_end or not self.children
        if blocks:
            self.mount_all(blocks)
        if streaming is not None:
            if self._stream is None:
                self._stream = AssistantBlock(streaming, model, streaming=True)
                self.mount(self._stream)
            else:
                self._stream.stream(streaming, model)
        elif self._stream is not None:
            self._stream.remove()
            self._stream = None
        if (blocks or streaming is not None) and at_end:
            self.scroll_end(animate=False)
