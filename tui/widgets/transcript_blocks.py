"""The transcript's blocks: a prompt, a reply (its reasoning folded), a compaction's checkpoint, a
hand-off's note; each built from one event of the session's log (TUI.md, CONTRACT §8)."""

from __future__ import annotations

import bisect
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from rich.markdown import Markdown
from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical
from textual.content import Content
from textual.message import Message
from textual.widget import Widget
from textual.widgets import Collapsible, Static

from core import Session, SessionEvent, display_prompt_content
from core.agent.wire import wire_text
from core.handoff.record import Handoff
from core.reference.projection import is_compact_checkpoint_source
from core.reference.staleness import references_of
from core.sessions import event_types as ev
from core.sessions.surface import message_content, message_payload, text_of_blocks
from tui.services.palette import STYLES
from tui.services.text import visible, visible_lines
from tui.widgets.tool_line import LabelOf, tool_line

Freshness = Callable[[dict[str, Any]], str | None]
"""A reference's meta -> how the session moved on since it was captured (``3 newer messages since``), or ``None``."""


def referenced_line(data: dict[str, Any], freshness: Freshness | None = None) -> str | None:
    """``Referenced sessions · Label (id), ...`` from a baked prompt's envelope (just the id when
    label == id), each followed by how it moved on since, when ``freshness`` says so."""
    names: list[str] = []
    for reference in references_of(data):
        session_id, label = str(reference.get("sessionId", "")), str(reference.get("label", ""))
        name = visible(session_id) if label == session_id else f"{visible(label)} ({visible(session_id)})"
        moved = freshness(reference) if freshness is not None else None
        names.append(name if moved is None else f"{name} · {visible(moved)}")
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

        block: UserBlock
        event: SessionEvent

        @property
        def control(self) -> UserBlock:
            """The prompt's block in the transcript."""
            return self.block

    def __init__(self, event: SessionEvent, freshness: Freshness | None = None) -> None:
        self.event = event
        super().__init__(self._render_event(event, freshness), markup=False)

    @staticmethod
    def _render_event(event: SessionEvent, freshness: Freshness | None = None) -> Content:
        data = event.data
        parts: list[str | tuple[str, str]] = [("You", STYLES["you"])]
        if event.type == ev.STEERING_MESSAGE:
            parts.append((" · steering (sent while the reply streamed)", STYLES["steering"]))
        parts.append("\n" + visible_lines(text_of_blocks(display_prompt_content(data))))
        line = referenced_line(data, freshness)
        if line is not None:
            parts.append(("\n" + line, "dim"))
        return Content.assemble(*parts)

    def action_show_received(self) -> None:
        """Ask the app to show what the model received."""
        self.post_message(self.ShowReceived(self, self.event))


def usage_line(usage: Any) -> str | None:
    """``↑ 62,104 prompt (31,000 cached) · ↓ 245 completion (120 reasoning)`` from dsh's ``TokenUsage``
    (or a raw chat-completions usage), ``None`` without counts."""
    if not isinstance(usage, dict):
        return None
    cached = usage.get("cacheReadTokens")
    if type(usage.get("inputTokens")) is int:
        prompt = usage["inputTokens"] + (cached if type(cached) is int else 0)
    elif type(usage.get("prompt_tokens")) is int:
        prompt = usage["prompt_tokens"]
    else:
        return None
    completion = usage.get("outputTokens", usage.get("completion_tokens"))
    line = f"↑ {prompt:,} prompt"
    if type(cached) is int and cached:
        line += f" ({cached:,} cached)"
    if type(completion) is int:
        line += f" · ↓ {completion:,} completion"
        reasoning = usage.get("reasoningTokens")
        if type(reasoning) is int and reasoning:
            line += f" ({reasoning:,} reasoning)"
    return line


def reasoning_of(blocks: list[Any]) -> str:
    """The reasoning text of an assistant message's blocks ("" without any)."""
    return "".join(
        str(block.get("text", "")) for block in blocks if isinstance(block, dict) and block.get("type") == "reasoning"
    )


def thinking_seconds(session: Session, event: SessionEvent) -> float | None:
    """How long the model thought before answering: its step's first reasoning chunk to its last one
    (or to the first text chunk), from the chunks' times; ``None`` without reasoning chunks."""
    events = session.events
    index = event.seq
    if not (index < len(events) and events[index] is event):
        index = bisect.bisect_left(events, event.seq, key=lambda item: item.seq)  # a log with seq gaps
    first = last = None
    for earlier in reversed(events[:index]):
        if earlier.type == ev.STEP_START:
            break
        if earlier.type != ev.ASSISTANT_CHUNK:
            continue
        kind = (earlier.data.get("chunk") or {}).get("type")
        if kind == "reasoning-delta":
            first = earlier.time
            if last is None:
                last = earlier.time
        elif kind == "text-delta" and first is None:
            last = earlier.time  # the answer's first words end the thinking
    if first is None or last is None:
        return None
    return max(0.0, (last - first) / 1000)


def _thought(seconds: float | None, done: bool) -> str:
    if not done:
        return "Thinking…" if seconds is None else f"Thinking… {seconds:.0f} s"
    return "Thought" if seconds is None else f"Thought for {max(1, round(seconds))} s"


class AssistantBlock(Vertical):
    """An assistant message (or the one streaming in): its reasoning collapsed, the reply as Markdown,
    and the token usage dim below."""

    DEFAULT_CSS = """
    AssistantBlock {
        height: auto;
        padding: 0 1;
        margin: 1 0 0 0;
        & > Collapsible { border: none; padding: 0; background: transparent; }
        & > Collapsible > Contents { padding: 0 0 0 2; }
        & .reasoning { color: $text-muted; }
        & > .usage { color: $text-muted; }
    }
    """

    def __init__(
        self,
        text: str,
        model: str | None = None,
        streaming: bool = False,
        *,
        reasoning: str = "",
        seconds: float | None = None,
        usage: Any = None,
    ) -> None:
        super().__init__()
        self.text = text
        self.reasoning = reasoning
        self.model = model
        self.streaming = streaming
        self.seconds = seconds
        self.usage = usage
        self._body = Static(self._markdown(text, streaming), markup=False)
        self._thoughts = Static(Text(visible_lines(reasoning)), classes="reasoning", markup=False)
        self._fold = Collapsible(self._thoughts, title=_thought(seconds, not streaming), collapsed=True)
        self._fold.display = bool(reasoning)

    def compose(self) -> ComposeResult:
        header: list[tuple[str, str]] = [("Assistant", STYLES["assistant"])]
        if self.model:
            header.append((f" · {visible(self.model)}", "dim"))
        if self.streaming:
            header.append((" · streaming…", "dim italic"))
        yield Static(Content.assemble(*header), markup=False)
        yield self._fold
        yield self._body
        line = usage_line(self.usage)
        if line is not None:
            yield Static(Text(line), classes="usage", markup=False)

    @staticmethod
    def _markdown(text: str, streaming: bool) -> Any:
        if not text and streaming:
            return Text("…", style="dim")
        return Markdown(visible_lines(text) or "…")

    def stream(self, text: str, model: str | None, reasoning: str = "", seconds: float | None = None) -> None:
        """Show the reply and the reasoning so far."""
        if reasoning != self.reasoning or seconds != self.seconds:
            self.reasoning, self.seconds = reasoning, seconds
            self._thoughts.update(Text(visible_lines(reasoning)))
            self._fold.title = _thought(seconds, bool(text))
            self._fold.display = bool(reasoning)
        if text != self.text:
            self.text = text
            self._body.update(self._markdown(text, True))


def compacted_messages(session: Session, checkpoint: SessionEvent) -> list[SessionEvent]:
    """The messages a checkpoint stands for, oldest first (earlier checkpoints expanded)."""
    events = session.events
    contiguous = not events or events[-1].seq == len(events) - 1
    by_seq = None if contiguous else {event.seq: event for event in events}
    found: list[SessionEvent] = []
    for seq in checkpoint.source_event_seqs or ():
        event = events[seq] if by_seq is None else by_seq.get(seq)
        if event is None or event.type not in (
            ev.USER_MESSAGE,
            ev.STEERING_MESSAGE,
            ev.ASSISTANT_MESSAGE,
            ev.TOOL_RESULT,
        ):
            continue
        if event.type == ev.USER_MESSAGE and is_compact_checkpoint_source(event.data.get("source")):
            found.extend(compacted_messages(session, event))
        else:
            found.append(event)
    return found


SHOWN_COMPACTED = 400
"""The collapsed history under a checkpoint shows at most this many of the newest compacted messages."""


def _compacted_text(messages: list[SessionEvent]) -> Text:
    text = Text()
    hidden = len(messages) - SHOWN_COMPACTED
    if hidden > 0:
        text.append(f"… {hidden:,} older messages are in the log\n", style="italic")
    for event in messages[-SHOWN_COMPACTED:]:
        if event.type == ev.ASSISTANT_MESSAGE:
            who, words = "Assistant", text_of_blocks(message_content(event.data))
        elif event.type == ev.TOOL_RESULT:
            who, words = "Tool", "(result)"
        else:
            who, words = "You", text_of_blocks(display_prompt_content(event.data))
        words = words if len(words) <= 300 else words[:300] + "…"
        text.append(f"{who}: ", style="bold")
        text.append(visible_lines(words) + "\n")
    return text


class CheckpointBlock(Vertical):
    """A compaction checkpoint: the summary that stands for the shadowed history, and that history
    itself, collapsed and dim (it is still in the log)."""

    DEFAULT_CSS = """
    CheckpointBlock {
        height: auto;
        border: round $primary 60%;
        border-title-color: $text-primary;
        padding: 0 1;
        margin: 1 0 0 0;
        & > Collapsible { border: none; padding: 0; background: transparent; }
        & > Collapsible > Contents { padding: 0 0 0 2; color: $text-muted; }
    }
    """

    def __init__(self, event: SessionEvent, session: Session | None = None) -> None:
        super().__init__()
        self.event = event
        self.compacted = compacted_messages(session, event) if session is not None else []
        count = len(self.compacted)
        self.border_title = f"Checkpoint · {count} messages compacted" if count else "Checkpoint · compacted summary"

    def compose(self) -> ComposeResult:
        if self.compacted:
            earlier = Static(_compacted_text(self.compacted), markup=False)
            yield Collapsible(earlier, title=f"{len(self.compacted)} earlier messages (still in the log)")
        content = display_prompt_content(self.event.data)
        summary = content[1:-1] if len(content) > 2 else content
        yield Static(Markdown(visible_lines(text_of_blocks(summary)) or "…"), markup=False)


class NoteLine(Static):
    """One dim line (a tool result, an injected context)."""

    DEFAULT_CSS = """
    NoteLine { color: $text-muted; padding: 0 1; }
    """


def block_for(
    event: SessionEvent, session: Session, freshness: Freshness | None = None, label_of: LabelOf | None = None
) -> Widget | None:
    data = event.data
    match event.type:
        case ev.USER_MESSAGE:
            source = data.get("source")
            if is_compact_checkpoint_source(source):
                return CheckpointBlock(event, session)
            if isinstance(source, dict) and source.get("kind") not in (None, "user"):
                plugin = visible(str(source.get("plugin") or source.get("kind")))
                return NoteLine(Text(f"· context from {plugin}", style="dim"))
            return UserBlock(event, freshness)
        case ev.STEERING_MESSAGE:
            return UserBlock(event, freshness)
        case ev.ASSISTANT_MESSAGE:
            message = message_payload(data)
            provenance = data.get("provenance") or message.get("source") or {}
            blocks = message_content(data)
            reasoning = reasoning_of(blocks)
            if (
                not reasoning
                and not text_of_blocks(blocks)
                and any(isinstance(block, dict) and block.get("type") == "tool-call" for block in blocks)
            ):
                return None  # a step that only called tools: its calls are the lines that follow
            return AssistantBlock(
                text_of_blocks(blocks),
                provenance.get("model"),
                reasoning=reasoning,
                seconds=thinking_seconds(session, event) if reasoning else None,
                usage=data.get("usage"),
            )
        case ev.TOOL_RESULT:
            return tool_line(event, session, label_of)
    return None


def handoff_line(event: SessionEvent) -> Widget | None:
    """Where the session was handed (a ``sessionref/handoff`` note of its log)."""
    handoff = Handoff.of("", event.data)
    if handoff is None:
        return None
    line = NoteLine(Text(visible(f"→ {handoff.summary}"), style="dim"))
    line.add_class("handoff-note")
    return line
