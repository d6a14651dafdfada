"""The ``display`` fuzz target: hostile text through the real widgets' renderers and the CLI's formatters.

The input (and mixes of it with markup and escape sequences) becomes a title, an id, a cwd, a
message, a reasoning text, a server's error, a file name; each goes through what shows it: the
sidebar's and the picker's row builders, the transcript's blocks, the preview pane's report, the
command palette's hit and help line, a notification, the rename field's pre-fill, ``doctor``'s
report. Rich renderables are rendered by a real ``Console`` as a terminal would receive them.

What must hold: after removing the styling sequences Rich itself writes (SGR, OSC 8 links), no C0
or C1 control character, DEL, bidi override, isolate or mark, separator or invisible format
character reaches the output; and nothing of the data is ever parsed as markup (the plain text of
what the palette shows is the escaped text, character for character).
"""

from __future__ import annotations

import io
import re
from typing import Any

from rich.console import Console
from rich.segment import Segment
from rich.text import Text
from textual.content import Content

from core import Candidate, SessionEvent, SessionHeader
from core.display import visible, visible_lines
from core.folder.doctor import Diagnosis, Finding, format_diagnosis
from core.search.finder import SearchHit
from core.search.matching import Snippet
from fuzz.kit import check
from tui.services.preview_report import PreviewReport, Problem, ReferenceCard
from tui.services.text import markup_escape
from tui.widgets.picker import MentionPicker
from tui.widgets.preview import render_report
from tui.widgets.sidebar import SessionSidebar, SidebarRow
from tui.widgets.transcript_blocks import AssistantBlock, UserBlock, _compacted_text, usage_line

_FORMAT = "\u00ad\u061c\u180e\u200b-\u200f\u2028\u2029\u202a-\u202e\u2060-\u2064\u2066-\u206f\ufeff\ufff9-\ufffb"
FORBIDDEN_LINE = re.compile(f"[\x00-\x1f\x7f-\x9f{_FORMAT}\ud800-\udfff]")
"""What may never reach the terminal on a one-line display."""
FORBIDDEN = re.compile(f"[\x00-\x09\x0b-\x1f\x7f-\x9f{_FORMAT}\ud800-\udfff]")
"""What may never reach the terminal in a multi-line one (line breaks allowed)."""
_STYLING = re.compile(r"\x1b\[[0-9;:]*m|\x1b\]8;[^\x1b\x07]*(?:\x1b\\|\x07)")

MARKUP = [
    "[@click=app.quit]x[/]",
    "[/]",
    "[$accent]x",
    "[B]bold[/B]",
    "[link=https://evil.example]click[/link]",
    "\\[b]",
    "[bold red]",
    "]8;;https://evil.example\x07",
]
ESCAPES = [
    "\x1b]52;c;aGVsbG8=\x07",
    "\x1b[2J",
    "\x1b[31m",
    "\x9b31m",
    "\x1b]0;title\x07",
    "\u202e",
    "\u2066",
    "\u200f",
    "\x00",
    "\r",
    "\x08",
    "\x7f",
    "\ud800",
    "\u2028",
]


def _terminal(renderable: Any, width: int = 48) -> str:
    console = Console(file=io.StringIO(), force_terminal=True, color_system="truecolor", width=width)
    console.print(renderable)
    output = console.file.getvalue()  # type: ignore[attr-defined]
    return _STYLING.sub("", output)


def _clean(output: str, where: str, *, lines: bool = True) -> None:
    found = (FORBIDDEN if lines else FORBIDDEN_LINE).search(output)
    check(found is None, f"{where}: {found.group()!r} reaches the terminal raw" if found else "")


def _segments(segments: list[Segment], where: str) -> None:
    _clean("".join(segment.text for segment in segments), where, lines=False)


def _values(text: str, rng: Any) -> list[str]:
    mixed = rng.choice(MARKUP) + text + rng.choice(ESCAPES)
    around = text[: len(text) // 2] + rng.choice(ESCAPES) + rng.choice(MARKUP) + text[len(text) // 2 :]
    return [text, mixed, around]


def show(text: str, rng: Any) -> str:
    """Every display of ``text`` (see the module docstring); ``"ok"``, or ``fuzz.kit.FuzzFailure``."""
    for value in _values(text, rng):
        header = SessionHeader(id=value, cwd="/home/x/" + value.replace("/", "_"), created_at=0)
        # The sidebar's row, and the picker's rows for a title, an id, a cwd and a body match.
        sidebar = SessionSidebar(home="/home/x")
        sidebar.rows = [SidebarRow(None, header)]
        sidebar.title_of = lambda _header, value=value: value
        sidebar.current_id, sidebar.now = "", 0
        _segments(sidebar.row_segments(0, 60), "sidebar row")
        picker = MentionPicker(home="/home/x")
        candidate = Candidate(session_id=value, label=value, cwd=header.cwd, created_at=0)
        snippet = Snippet(text=value, start=0, end=min(3, len(value)), role="assistant", message=0)
        for hit in (
            SearchHit(candidate, "title", (0, 1)),
            SearchHit(candidate, "id", (0, 1)),
            SearchHit(candidate, "cwd", (0, 1)),
            SearchHit(candidate, "body", None, snippet),
        ):
            for row in picker._rows(hit, value[:3] or "abc", 0):
                _segments(row.segments, f"picker row ({hit.field})")
        # The transcript: the user's words and the references line, a reply, its reasoning and usage,
        # the history under a checkpoint.
        reference = {"sessionId": value, "label": value}
        data = {
            "content": [{"type": "text", "text": value}],
            "source": {"kind": "user"},
            "envelope": {
                "displayContent": [{"type": "text", "text": value}],
                "prefixContexts": [{"source": {}, "meta": {"kind": "session-reference", "references": [reference]}}],
            },
        }
        event = SessionEvent.model_construct(type="user/message", seq=0, time=0, data=data, surface_op="append")
        _clean(_terminal(UserBlock._render_event(event)), "transcript: your message")
        _clean(_terminal(AssistantBlock._markdown(value, False)), "transcript: a reply")
        _clean(_terminal(Text(visible_lines(value))), "transcript: reasoning")
        _clean(_terminal(_compacted_text([event])), "transcript: compacted history")
        line = usage_line({"inputTokens": 1, "outputTokens": 2, value: value})
        check(line is not None, "usage line")
        # The preview pane: a card whose label, id, cwd, messages and problem are the value.
        card = ReferenceCard(session_id=value, label=value, budget=100, cwd=header.cwd, size=50)
        card.conversation = [{"role": "user", "text": value}, {"role": "assistant", "text": value}]
        failed = ReferenceCard(session_id=value, label=value, budget=100, problem=Problem("X", value, value))
        report = PreviewReport(draft=value, max_references=3, cards=[card, failed], contexts=[])
        report.references = []
        report.problem = Problem("X", value, value)
        _clean(_terminal(render_report(report, "/home/x")), "preview pane")
        # The command palette: the hit is Content (never markup), the help line is escaped markup.
        hit_text = f"Switch to: {visible(value)}"
        check(Content(hit_text).plain == hit_text, "palette hit")
        help_line = Content.from_markup(markup_escape(value))
        check(help_line.plain == visible(value), f"palette help parsed as markup: {help_line.plain!r}")
        check(not help_line.spans, f"palette help has styles from the data: {help_line.spans!r}")
        _clean(help_line.plain, "palette help", lines=False)
        # A notification (the app shows its message and title this way), the rename field's pre-fill.
        _clean(visible_lines(value), "notification")
        _clean(visible(value), "rename field", lines=False)
        # doctor's report about a file of that name, with that message.
        finding = Finding("error", "unsafe_path", "/store/" + value, value, code="X")
        _clean(format_diagnosis(Diagnosis(root="/store/" + value, findings=[finding])), "doctor")
    return "ok"
