"""The preview pane: per reference, what of the other session the model will see and what it costs."""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any

from rich.console import Group, RenderableType
from rich.text import Text
from textual.app import ComposeResult
from textual.containers import VerticalScroll
from textual.geometry import Region
from textual.message import Message
from textual.strip import Strip
from textual.widgets import Static

from tui.services.context_view import context_lines
from tui.services.palette import Paint, default_paint, theme_paint
from tui.services.preview_report import PreviewReport, ReferenceCard
from tui.services.text import bar, kib, short_cwd, visible, visible_lines

MESSAGE_CHARS = 160
"""Each projected message shows at most this many characters here; the viewer (F2) shows everything."""
SHOWN_MESSAGES = 8
"""The pane shows the first message (a checkpoint, when compacted) and the newest ones up to this many.

A full card is up to 64 KiB of text; wrapping all of it on every draft change would make the UI
thread wait on the preview. The exact model-visible text is one key away instead.
"""


def _message_line(item: dict[str, Any], paint: Paint) -> Text:
    text = item["text"]
    shown = text if len(text) <= MESSAGE_CHARS else text[:MESSAGE_CHARS] + f"… (+{len(text) - MESSAGE_CHARS:,} chars)"
    line = Text()
    line.append(f"{item['role']}: ", style=paint("you" if item["role"] == "user" else "assistant"))
    line.append(visible_lines(shown))
    return line


def _card(card: ReferenceCard, home: str | None, paint: Paint) -> list[RenderableType]:
    parts: list[RenderableType] = []
    parts.append(Text("@" + visible(card.label), style="bold", no_wrap=True, overflow="ellipsis"))
    where = short_cwd(card.cwd, 30, home) if card.problem is None else ""
    ident = Text(visible(card.session_id), style="dim", no_wrap=True, overflow="ellipsis")
    if where:
        ident.append(" · " + where)
    parts.append(ident)
    if card.problem is not None:
        parts.append(Text(f"✖ {visible(card.problem.describe())}", style=paint("problem")))
        return parts
    share = card.size / card.budget if card.budget else 0
    usage = Text(bar(card.size, card.budget, 12), style=paint("over" if card.truncated else "fits"))
    usage.append(f" {kib(card.size)} / {kib(card.budget)} ({share:.0%})", style="")
    parts.append(usage)
    through = "empty log" if card.captured_through_seq is None else f"captured through #{card.captured_through_seq}"
    parts.append(Text(through, style="dim"))
    if card.earlier is not None:
        # The model still holds the older snapshot in its history: say what is old before sending again.
        parts.append(
            Text(f"⚠ {visible(card.earlier)}; the model still holds that older snapshot", style=paint("caution"))
        )
    counts = Text(f"{card.retained_messages} of {card.original_messages} messages kept")
    if card.omitted_messages or card.omitted_bytes:
        counts.append(f" · {card.omitted_messages} omitted · {kib(card.omitted_bytes)} cut", style=paint("caution"))
    parts.append(counts)
    secrets = card.masked_words
    if secrets is not None:
        parts.append(
            Text(
                ("🔒 " if card.redaction else "⚠ ") + secrets, style=paint("caution" if not card.redaction else "fits")
            )
        )
    badges = Text()
    if card.compacted:
        badges.append(" compacted ", style=paint("badge-compacted"))
        badges.append(" ")
    if card.truncated:
        badges.append(" truncated ", style=paint("badge-truncated"))
    if badges.plain:
        parts.append(badges)
    conversation = card.conversation
    if len(conversation) <= SHOWN_MESSAGES:
        parts.extend(_message_line(item, paint) for item in conversation)
        return parts
    newest = conversation[-(SHOWN_MESSAGES - 1) :]
    parts.append(_message_line(conversation[0], paint))
    skipped = len(conversation) - len(newest) - 1
    parts.append(Text(f"  … {skipped} more messages are sent; F2 shows the exact text", style="dim italic"))
    parts.extend(_message_line(item, paint) for item in newest)
    return parts


def render_report(
    report: PreviewReport | None, home: str | None = None, busy: bool = False, paint: Paint = default_paint
) -> RenderableType:
    """The preview pane's content for ``report`` (``None``: nothing typed yet), its colours by ``paint``."""
    meter: list[RenderableType] = []
    if report is not None and report.context is not None:
        meter = [*context_lines(report.context, paint), Text("")]
    if report is None or (not report.references and report.problem is None):
        hint = Text("Type @ to reference another session.\n", style="dim")
        hint.append("What the model will see of it, and what it costs, appears here before you send.", style="dim")
        return Group(*meter, hint)
    parts: list[RenderableType] = [*meter]
    total = Text()
    total.append(f"{len(report.cards) if report.problem is None else len(report.references)}", style="bold")
    total.append(f"/{report.max_references} references")
    if report.contexts:
        total.append(f" · prefix {kib(report.prefix_bytes)} · ≈{report.prefix_tokens:,} tokens")
    if busy:
        total.append(" · updating…", style="dim italic")
    parts.append(total)
    if report.problem is not None:
        parts.append(Text(f"✖ {visible(report.problem.describe())}", style=paint("problem")))
        parts.append(Text("Nothing will be sent until this is fixed.", style="dim"))
    for card in report.cards:
        parts.append(Text(""))
        parts.extend(_card(card, home, paint))
    return Group(*parts)


class PreviewBody(Static):
    """The pane's content; posts ``Painted`` when a new report is first rendered."""

    @dataclass
    class Painted(Message):
        """The report given to ``update`` reached the screen at ``painted_at``."""

        body: PreviewBody
        painted_at: float

        @property
        def control(self) -> PreviewBody:
            """The pane body that painted."""
            return self.body

    def __init__(self, content: RenderableType, *, id: str | None = None) -> None:
        super().__init__(content, id=id, markup=False)
        self._paint_pending = False

    def update(self, content: Any = "", *, layout: bool = True) -> None:
        super().update(content, layout=layout)
        self._paint_pending = True

    def render_lines(self, crop: Region) -> list[Strip]:
        lines = super().render_lines(crop)
        if self._paint_pending:
            self._paint_pending = False
            self.post_message(self.Painted(self, time.perf_counter()))
        return lines


class PreviewPane(VerticalScroll):
    """Scrollable preview of the current draft's references."""

    DEFAULT_CSS = """
    PreviewPane {
        width: 44;
        height: 1fr;
        border: round $primary 50%;
        border-title-color: $text-muted;
        scrollbar-size-vertical: 1;
        padding: 0 1;
        &:focus { border: round $primary; }
        & > #preview-body { width: 1fr; height: auto; }
    }
    """

    def __init__(self, *, id: str | None = None, home: str | None = None) -> None:
        super().__init__(id=id)
        self.border_title = "Preview"
        self.home = home
        self.report: PreviewReport | None = None

    def compose(self) -> ComposeResult:
        yield PreviewBody(render_report(None), id="preview-body")  # no colours until a report comes

    def show(self, report: PreviewReport | None, busy: bool = False) -> None:
        """Render ``report`` (keep showing the previous one, marked updating, while ``busy``)."""
        if report is not None:
            self.report = report
        self.query_one(PreviewBody).update(render_report(self.report, self.home, busy, theme_paint(self.app)))

    def on_mount(self) -> None:
        self.app.theme_changed_signal.subscribe(self, lambda _theme: self.show(None))
