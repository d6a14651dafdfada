"""The live preview: after a typing pause, the real ``prepare`` runs on the draft's references off the
UI thread (a newer draft aborts the running one), and the pane shows what each reference sends and
what the request takes of the window.
"""

from __future__ import annotations

import asyncio
import time
from dataclasses import dataclass
from functools import partial

from textual.message import Message
from textual.timer import Timer

from core import AbortController, SessionReferenceError
from tui.services.context_view import DraftContext, draft_context
from tui.services.host import Host
from tui.services.preview_report import PreviewReport, build_preview
from tui.services.workspace import Workspace
from tui.widgets.preview import PreviewPane
from tui.widgets.prompt import PromptArea

PREVIEW_DELAY = 0.12
"""Seconds of typing pause before the preview recomputes (a newer draft cancels the running one)."""


class PreviewControl:
    """The preview of the draft, for the chat screen.

    It owns the preview pane; of the prompt it only reads the draft. A report built on the worker
    thread comes back as ``Ready`` (the screen hands it to ``show``); ``Shown`` says how long a
    draft took to reach the screen.

    Args:
        host: the screen (the pause timer, the preview worker, the messages above).
        workspace: the service that prepares, the target and its agent (the context meter).
        prompt: the draft (read, never changed).
        pane: where the report shows.
    """

    @dataclass
    class Ready(Message):
        """The report of draft ``generation``, built off the UI thread."""

        report: PreviewReport
        generation: int

    @dataclass
    class Shown(Message):
        """A draft's preview reached the screen ``seconds`` after the typing paused."""

        seconds: float

    def __init__(self, host: Host, workspace: Workspace, prompt: PromptArea, pane: PreviewPane) -> None:
        self._host = host
        self._workspace = workspace
        self._prompt = prompt
        self._pane = pane
        self._abort: AbortController | None = None
        self._timer: Timer | None = None
        self._generation = 0
        self._started = 0.0
        self._shown_generation = -1

    def schedule(self, delay: float = PREVIEW_DELAY) -> None:
        """Recompute the preview after ``delay`` (a newer call replaces a pending one)."""
        if self._timer is not None:
            self._timer.stop()
        self._timer = self._host.set_timer(max(delay, 0.01), self._start)

    def _start(self) -> None:
        if self._abort is not None:
            self._abort.abort("superseded by a newer draft")
        controller = AbortController()
        self._abort = controller
        self._generation += 1
        self._started = time.perf_counter()
        draft = self._prompt.text
        if "@[" not in draft and "dsh-session:" not in draft:
            self._shown_generation = self._generation
            report = PreviewReport(draft=draft, max_references=self._workspace.service.config.max_references)
            report.context = self._draft_context(report)
            self._pane.show(report)
            return
        self._pane.show(None, busy=True)
        work = partial(self._run, draft, controller, self._generation)
        self._host.run_worker(work, "_run_preview", "preview", exclusive=True, thread=True)

    def _run(self, draft: str, controller: AbortController, generation: int) -> None:
        workspace = self._workspace
        try:
            report = asyncio.run(build_preview(workspace.service, workspace.session, draft, controller.signal))
        except SessionReferenceError:
            return  # cancelled: a newer draft is being previewed
        self._host.post_message(self.Ready(report, generation))

    def _draft_context(self, report: PreviewReport) -> DraftContext:
        content = report.content or ([{"type": "text", "text": report.draft}] if report.draft.strip() else [])
        return draft_context(self._workspace.agent, content, report.contexts)

    def show(self, report: PreviewReport, generation: int) -> None:
        """Show the report of draft ``generation`` (``Ready``), unless a newer draft superseded it."""
        if generation != self._generation:
            return
        self._shown_generation = generation
        report.context = self._draft_context(report)
        self._pane.show(report)

    def painted(self, painted_at: float) -> None:
        """The pane painted: a new report reports how long it took from the typing pause."""
        if self._shown_generation != self._generation:
            return  # a "busy" repaint, or a report already superseded
        self._shown_generation = -1
        # Draft change (after the typing pause) -> the new report on screen: the benchmark's figure.
        self._host.post_message(self.Shown(painted_at - self._started))
