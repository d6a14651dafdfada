"""Build the real app on a real store for pilot tests: demo sessions on disk, a fixed clock."""

from __future__ import annotations

import asyncio
import io
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

from rich.console import Console
from textual.pilot import Pilot

from core import ChatModel, EchoModel, JsonlSessionStore, ReferenceConfig, format_session_reference_mention
from core.agent.loop import ContextSettings
from core.sessions.sources.merged import ExternalSource
from core.settings import RunConfig
from tui.app.sessionref_app import SessionRefApp, make_app
from tui.cli.demo import DEMO_PROJECT, DEMO_START, seed_demo
from tui.widgets.preview import PreviewPane, render_report

NOW = DEMO_START + 7 * 60_000
"""The fixed clock of every app test: one minute after the demo's newest session."""
HOME = "/home/demo"
SIZE = (120, 40)


def fixed_clock() -> int:
    return NOW


def seed_template(folder: Path) -> dict[str, str]:
    """Write the demo store once into ``folder``; returns its ``{role: id}``."""
    store = JsonlSessionStore(folder, clock=fixed_clock)
    ids = seed_demo(store)
    # The target has no events yet, so it is not on disk; give it one so every test can reopen it.
    store.get(ids["target"]).append("session/title", {"title": "Today", "messageSeqs": [], "source": "user"})
    store.close()
    return ids


def open_app(
    template: Path,
    folder: Path,
    *,
    model: ChatModel | None = None,
    config: ReferenceConfig | None = None,
    session: str = "today",
    cwd: str = DEMO_PROJECT,
    setup: Callable[[JsonlSessionStore], None] | None = None,
    refresh_interval: float = 3600,
    external: tuple[ExternalSource, ...] = (),
    context: ContextSettings | None = None,
) -> tuple[SessionRefApp, JsonlSessionStore]:
    """A copy of the demo store in ``folder`` and the app on it (no cursor blink, no auto refresh
    unless ``refresh_interval`` asks for it).

    ``setup`` may write more sessions into the copy before the app opens it; ``external`` lists
    other agents' sessions too.
    """
    shutil.copytree(template, folder)
    if setup is not None:
        writer = JsonlSessionStore(folder, clock=fixed_clock)
        setup(writer)
        writer.close()
    store = JsonlSessionStore(folder, clock=fixed_clock)
    app = make_app(
        store,
        model or EchoModel(),
        settings=RunConfig(
            reference=config or ReferenceConfig(),
            compaction=context or ContextSettings(),
            sources=external,
        ),
        cwd=cwd,
        session_id=session,
        clock=fixed_clock,
        home=HOME,
        cursor_blink=False,
        refresh_interval=refresh_interval,
    )
    return app, store


async def until(pilot: Pilot[Any], predicate: Callable[[], Any], timeout: float = 5.0) -> None:  # noqa: ASYNC109
    """Let the app run until ``predicate()`` is true (fails the test after ``timeout`` seconds)."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    while not predicate():
        if loop.time() > deadline:
            raise AssertionError(f"condition not met within {timeout}s")
        await pilot.pause(0.01)


async def settle(pilot: Pilot[Any]) -> None:
    """Wait until the catalog is loaded, every session's messages are searchable, and the preview
    has caught up with the draft."""
    app = pilot.app
    assert isinstance(app, SessionRefApp)
    await until(pilot, app.workspace.catalog_loaded.is_set)
    await until(pilot, lambda: index_settled(app))
    await pilot.pause()


def index_settled(app: SessionRefApp) -> bool:
    """Whether the body index (if any) is current with the catalog and no indexing run is going."""
    index = app.workspace.body_index
    return index is None or (index.status.complete and not app.indexer.running)


def picker_ids(app: SessionRefApp) -> list[str]:
    return [candidate.session_id for candidate in app.chat.picker.candidates]


async def type_text(pilot: Any, text: str) -> None:
    for character in text:
        await pilot.press("space" if character == " " else character)


async def open_picker(pilot: Any, query: str = "") -> None:
    app = pilot.app
    before = app.trace.picker_updates
    await pilot.press("@", *query)
    await until(
        pilot,
        lambda: app.chat.picker.is_open and app.trace.picker_updates > before and app.chat.picker.query_text == query,
    )


async def preview_of(pilot: Any) -> Any:
    """The preview report once it matches the current draft."""
    app = pilot.app
    pane = app.chat.query_one(PreviewPane)
    await until(pilot, lambda: pane.report is not None and pane.report.draft == app.chat.prompt.text)
    return pane.report


def preview_text(report: Any) -> str:
    """The preview pane's content as plain text."""
    console = Console(width=60, record=True, file=io.StringIO())
    console.print(render_report(report, HOME))
    return console.export_text()


def mention(session_id: str, label: str | None = None) -> str:
    return format_session_reference_mention(session_id, label)


def picker_rows(app: SessionRefApp) -> list[str]:
    return [row.text.rstrip() for row in app.chat.picker.rows]
