"""The transcript: the target session's surface replayed from its log (TUI.md, CONTRACT §8)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from textual.containers import VerticalScroll
from textual.message import Message
from textual.timer import Timer
from textual.widgets import Static

from core import Session
from core.agent.loop import AgentLoop
from core.handoff.record import HANDOFF_EVENT
from core.sessions import event_types as ev
from tui.widgets.tool_line import LabelOf
from tui.widgets.transcript_blocks import (
    AssistantBlock,
    Freshness,
    UserBlock,
    block_for,
    handoff_line,
    referenced_line,
)

STREAM_TICK = 1 / 20
"""The least time between two repaints of a streaming reply: news of the session or its agent
(``Session.appended``, ``AgentLoop.changed``) asks for a repaint this long after it, at most one
pending at a time."""


@dataclass(frozen=True, slots=True)
class Streaming:
    """The assistant step in progress: its reply and reasoning so far, and how long it has thought."""

    text: str
    reasoning: str
    seconds: float | None


def streaming_reply(session: Session) -> Streaming | None:
    """The step in progress (its chunks so far), or ``None`` when none runs."""
    events = session.events
    texts: list[str] = []
    thoughts: list[str] = []
    first = last = None
    for event in reversed(events):
        match event.type:
            case ev.ASSISTANT_CHUNK:
                chunk = event.data.get("chunk") or {}
                if chunk.get("type") == "reasoning-delta":
                    thoughts.append(str(chunk.get("text", "")))
                    first = event.time
                    last = last if last is not None else event.time
                else:
                    texts.append(str(chunk.get("text", "")))
            case ev.STEP_START:
                seconds = None if first is None or last is None else (last - first) / 1000
                return Streaming("".join(reversed(texts)), "".join(reversed(thoughts)), seconds)
            case ev.ASSISTANT_MESSAGE | ev.STEP_END | ev.TURN_END:
                return None
    return None


class Transcript(VerticalScroll):
    """Replays a session's surface; new events are appended, a compaction rebuilds it.

    It follows the session it shows (``show_session``): the session's and its agent's news
    (``appended``, ``changed``) repaint it, at most every ``STREAM_TICK`` while a reply streams; it
    posts ``Moved`` after each such repaint and ``TurnEnded`` when the agent went idle. It stops
    listening when another session is shown and when it is unmounted.
    """

    class Moved(Message):
        """The followed session or its agent moved on, and the transcript shows it."""

    class TurnEnded(Message):
        """The followed session's agent finished a turn (its reply, or its compaction), shown."""

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

    def __init__(
        self, *, id: str | None = None, freshness: Freshness | None = None, label_of: LabelOf | None = None
    ) -> None:
        super().__init__(id=id)
        self.freshness = freshness
        self.label_of = label_of
        """A session id -> its title (a tool call's line names the session it looked at by it)."""
        """How a referenced session moved on since a prompt captured it (the "Referenced sessions" line says so)."""
        self.border_title = "Transcript"
        self._seqs: list[int] = []
        self._session_id: str | None = None
        self.following = True
        """Whether the transcript keeps its end in view (until the user scrolls up)."""
        self._stream: AssistantBlock | None = None
        self._scanned = 0
        """How many of the session's events were looked at for hand-off notes."""
        self._followed: tuple[Session, AgentLoop, str | None] | None = None
        self._unsubscribe: tuple[Callable[[], None], ...] = ()
        self._busy = False
        """Whether the followed agent was seen working (its going idle ends a turn)."""
        self._repaint: Timer | None = None

    @property
    def streaming(self) -> bool:
        """Whether a turn of the followed agent is still being shown (it runs, or its end is not painted yet)."""
        return self._busy or self._repaint is not None

    def show_session(self, session: Session, agent: AgentLoop, model: str | None = None) -> None:
        """Show ``session`` now and follow it (its agent's news too) until another is shown."""
        followed = self._followed
        if followed is None or followed[0] is not session or followed[1] is not agent:
            self._stop_following()
            self._followed = (session, agent, model)
            self._busy = agent.status != "idle"
            self._unsubscribe = (session.appended.subscribe(self._news), agent.changed.subscribe(self._news))
        self.sync(session, model)

    def on_unmount(self) -> None:
        self._stop_following()

    def _stop_following(self) -> None:
        for unsubscribe in self._unsubscribe:
            unsubscribe()
        self._unsubscribe = ()
        self._followed = None
        self._busy = False
        if self._repaint is not None:
            self._repaint.stop()
            self._repaint = None

    def _news(self, _what: object) -> None:
        if self._followed is None:
            return
        if self._followed[1].status != "idle":
            self._busy = True
            if self._repaint is None:
                self._repaint = self.set_timer(STREAM_TICK, self._tick)
            return
        # Idle: what the turn wrote last is painted now, not a tick later.
        if self._repaint is not None:
            self._repaint.stop()
        self._tick()

    def _tick(self) -> None:
        self._repaint = None
        if self._followed is None:
            return
        session, agent, model = self._followed
        self.sync(session, model)
        self.post_message(self.Moved())
        if agent.status == "idle" and self._busy:
            self._busy = False
            self.post_message(self.TurnEnded())

    def refresh_references(self) -> None:
        """Say again, on every prompt that referenced sessions, how they moved on since (the store changed)."""
        for block in self.query(UserBlock):
            if referenced_line(block.event.data) is not None:
                block.update(UserBlock._render_event(block.event, self.freshness))

    def sync(self, session: Session, model: str | None = None) -> None:
        """Bring the blocks up to date with ``session`` (cheap when nothing changed)."""
        surface = session.surface()
        seqs = [event.seq for event in surface]
        if session.id != self._session_id or seqs[: len(self._seqs)] != self._seqs:
            self._session_id = session.id
            self._seqs = []
            self._stream = None
            self._scanned = 0
            self.remove_children()
        fresh = surface[len(self._seqs) :]
        events = session.events
        notes = [event for event in events[self._scanned :] if event.type == HANDOFF_EVENT]
        self._scanned = len(events)
        streaming = streaming_reply(session)
        if fresh and self._stream is not None:
            self._stream.remove()
            self._stream = None
        # Blocks in log order: a hand-off's note lands between the messages it came between.
        ordered = sorted([*fresh, *notes], key=lambda event: event.seq) if notes else fresh
        made = (
            handoff_line(event)
            if event.type == HANDOFF_EVENT
            else block_for(event, session, self.freshness, self.label_of)
            for event in ordered
        )
        blocks = [block for block in made if block is not None]
        if not seqs and not self.children:
            blocks.append(
                Static("Nothing here yet. Write below; type @ to reference another session.", id="transcript-empty")
            )
        elif fresh:
            for empty in self.query("#transcript-empty"):
                empty.remove()
        self._seqs = seqs
        if blocks:
            self.mount_all(blocks)
        if streaming is not None:
            if self._stream is None:
                self._stream = AssistantBlock(
                    streaming.text, model, streaming=True, reasoning=streaming.reasoning, seconds=streaming.seconds
                )
                self.mount(self._stream)
            else:
                self._stream.stream(streaming.text, model, streaming.reasoning, streaming.seconds)
        elif self._stream is not None:
            self._stream.remove()
            self._stream = None

    def watch_scroll_y(self, old_value: float, new_value: float) -> None:
        super().watch_scroll_y(old_value, new_value)
        # The user scrolled up (stop following), or back down to the end (follow again).
        self.following = new_value >= self.max_scroll_y - 1

    def watch_virtual_size(self, _old: object, _new: object) -> None:
        # What was mounted has its final height now (a Markdown reply, a reasoning fold): keep
        # following the end through every layout, not only the first one after a mount.
        if self.following:
            self.scroll_end(animate=False)
