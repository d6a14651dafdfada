"""The chat screen's preview: a ``PreviewPane`` that previews the draft itself. After a typing pause
the real ``prepare`` runs on the draft's references in the pane's own worker, off the UI thread (a
newer draft cancels the running one), and the pane shows what each reference sends and what the
request takes of the window.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from dataclasses import dataclass

from textual import on, work
from textual.message import Message
from textual.timer import Timer

from core import AbortController, SessionReferenceError
from tui.services.context_view import DraftContext, draft_context
from tui.services.preview_report import PreviewReport, build_preview
from tui.services.workspace import Workspace
from tui.widgets.preview import PreviewBody, PreviewPane

PREVIEW_DELAY = 0.12
"""Seconds of typing pause before the preview recomputes (a newer draft cancels the running one)."""


class LivePreview(PreviewPane):
    """The preview of the draft; ``Shown`` says how long a draft took to reach the screen.

    Args:
        workspace: the service that prepares, the target and its agent (the context meter).
        draft: the draft as it is now (read when a typing pause ends).
    """

    @dataclass
    class Shown(Message):
        """A draft's preview reached the screen ``seconds`` after the typing paused."""

        seconds: float

    def __init__(self, workspace: Workspace, draft: Callable[[], str], *, id: str | None = None) -> None:
        super().__init__(id=id, home=workspace.home)
        self._workspace = workspace
        self._draft = draft
        self._abort: AbortController | None = None
        self._timer: Timer | None = None
        self._generation = 0
        self._started = 0.0
        self._shown_generation = -1

    def schedule(self, delay: float = PREVIEW_DELAY) -> None:
        """Recompute the preview after ``delay`` (a newer call replaces a pending one)."""
        if self._timer is not None:
            self._timer.stop()
        self._timer = self.set_timer(max(delay, 0.01), self._start)

    def _start(self) -> None:
        if self._abort is not None:
            self._abort.abort("superseded by a newer draft")
        controller = AbortController()
        self._abort = controller
        self._generation += 1
        self._started = time.perf_counter()
        draft = self._draft()
        if "@[" not in draft and "dsh-session:" not in draft:
            self._shown_generation = self._generation
            report = PreviewReport(draft=draft, max_references=self._workspace.service.config.max_references)
            report.context = self._draft_context(report)
            self.show(report)
            return
        self.show(None, busy=True)
        self._build(draft, controller, self._generation)

    @work(exclusive=True, group="preview", thread=True)
    def _build(self, draft: str, controller: AbortController, generation: int) -> None:
        workspace = self._workspace
        try:
            report = asyncio.run(build_preview(workspace.service, workspace.session, draft, controller.signal))
        except SessionReferenceError:
            return  # cancelled: a newer draft is being previewed
        self.app.call_from_thread(self._built, report, generation)

    def _draft_context(self, report: PreviewReport) -> DraftContext:
        content = report.content or ([{"type": "text", "text": report.draft}] if report.draft.strip() else [])
        return draft_context(self._workspace.agent, content, report.contexts)

    def _built(self, report: PreviewReport, generation: int) -> None:
        if generation != self._generation or not self.is_mounted:
            return  # a newer draft superseded it (or the app is closing)
        self._shown_generation = generation
        report.context = self._draft_context(report)
        self.show(report)

    @on(PreviewBody.Painted)
    def _painted(self, event: PreviewBody.Painted) -> None:
        event.stop()
        if self._shown_generation != self._generation:
            return  # a "busy" repaint, or a report already superseded
        self._shown_generation = -1
        # Draft change (after the typing pause) -> the new report on screen: the benchmark's figure.
        self.post_message(self.Shown(event.painted_at - self._started))
