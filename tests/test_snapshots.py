"""SVG snapshots of the app (stored in the top-level ``snapshots/`` folder; see ``conftest.py``).

Deterministic: 120x40 terminal, the fixed demo clock, no cursor blink, the demo store copied fresh.
Update with ``pytest tests/test_snapshots.py --snapshot-update`` and look at every picture.
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest

from core import format_session_reference_mention
from core.agent.chat_models import SUMMARY_REQUEST_MARK
from core.agent.loop import ContextSettings
from core.agent.tokens import estimate_history
from core.agent.wire import wire_text
from tests.support.app_harness import SIZE, open_app, settle, until
from tui.app.sessionref_app import SessionRefApp
from tui.screens.dialogs import ViewerScreen
from tui.widgets.preview import PreviewPane
from tui.widgets.transcript_blocks import AssistantBlock, CheckpointBlock


async def _preview_ready(pilot: Any) -> None:
    app = pilot.app
    pane = app.chat.query_one(PreviewPane)
    await until(pilot, lambda: pane.report is not None and pane.report.draft == app.chat.prompt.text)
    await pilot.pause()


async def _mention_the_load_test(pilot: Any) -> None:
    """Type `@load`, accept the load test with Tab, and wait for its preview."""
    await settle(pilot)
    for key in ["@", "l", "o", "a", "d"]:
        await pilot.press(key)
    await until(pilot, lambda: pilot.app.chat.picker.is_open and pilot.app.chat.picker.candidates)
    await pilot.press("tab")
    await _preview_ready(pilot)


def test_first_screen(snap_compare: Any, app: SessionRefApp) -> None:
    """Sidebar with the three groups (This folder, No folder, Elsewhere) and the current session marked;
    an empty transcript with its hint; the preview's hint; the prompt and the footer keys."""

    async def run_before(pilot: Any) -> None:
        await settle(pilot)

    assert snap_compare(app, terminal_size=SIZE, run_before=run_before)


def test_picker_open_with_three_groups(snap_compare: Any, app: SessionRefApp) -> None:
    """After typing `compare @`, the picker sits above the prompt at the `@`: headings This folder,
    No folder, Elsewhere; rows with label, abbreviated cwd or (no cwd), and age; the odd id's tab and
    bell shown as \\x09 and \\x07; the first row highlighted."""

    async def run_before(pilot: Any) -> None:
        await settle(pilot)
        for key in ["c", "o", "m", "p", "a", "r", "e", "space", "@"]:
            await pilot.press(key)
        await until(pilot, lambda: pilot.app.chat.picker.is_open)
        await pilot.pause()

    assert snap_compare(app, terminal_size=SIZE, run_before=run_before)


@pytest.mark.parametrize("theme", ["textual-light", "nord"])
def test_picker_under_a_light_and_a_dark_theme(snap_compare: Any, app: SessionRefApp, theme: str) -> None:
    """The main screen with the picker open (a match marked, a tool-less and a titled row, headings,
    ages) under one light and one dark built-in theme: the rows' parts (headings, muted text, the
    match mark, the current-session mark) follow the theme's colours."""

    async def run_before(pilot: Any) -> None:
        pilot.app.theme = theme
        await settle(pilot)
        for key in ["@", "s", "t", "o"]:
            await pilot.press(key)
        await until(pilot, lambda: pilot.app.chat.picker.is_open and pilot.app.chat.picker.candidates)
        await pilot.pause()

    assert snap_compare(app, terminal_size=SIZE, run_before=run_before)


def _search_picker(query: str) -> Any:
    async def run_before(pilot: Any) -> None:
        await settle(pilot)
        for key in ["@", *query]:
            await pilot.press(key)
        picker = pilot.app.chat.picker
        await until(pilot, lambda: picker.is_open and picker.query_text == query)
        await until(pilot, lambda: picker.note != "Searching more messages…")
        await pilot.pause()

    return run_before


def test_picker_title_match(snap_compare: Any, app: SessionRefApp) -> None:
    """`@sto`: "Storage design" found by its title (the id is design-notes), "Sto" marked in the
    label; no second line, since the row itself shows why it matched."""

    assert snap_compare(app, terminal_size=SIZE, run_before=_search_picker("sto"))


def test_picker_body_snippets(snap_compare: Any, app: SessionRefApp) -> None:
    """`@log`: the load test by its id (a line `id load-test-log` under the row, "log" marked), then
    "Storage design" only by what was said: a line `you: And how do we keep a crash from corrupting
    a log?` with "log" marked; the two lines of the first hit highlighted together."""

    assert snap_compare(app, terminal_size=SIZE, run_before=_search_picker("log"))


def test_picker_with_claude_code_and_codex_sessions(snap_compare: Any, demo_template: Path, tmp_path: Path) -> None:
    """`@` with a Claude Code session (badge CC, "Flaky lock test fix", 30s) first in This folder; the
    Codex session (badge CX, "Make the hero image load lazily", 8m) is last in Elsewhere, below the
    picker's fold, and the sidebar shows both badges in their groups."""
    from core.sessions.sources.claude import ClaudeCodeSource
    from core.sessions.sources.codex import CodexSource
    from tests.support.external_fixtures import seed_external

    seed_external(tmp_path / "claude", tmp_path / "codex")
    external = (ClaudeCodeSource(tmp_path / "claude"), CodexSource(tmp_path / "codex"))
    mixed, _ = open_app(demo_template, tmp_path / "store", external=external)

    async def run_before(pilot: Any) -> None:
        await settle(pilot)
        await pilot.press("@")
        await until(pilot, lambda: pilot.app.chat.picker.is_open and pilot.app.chat.picker.candidates)
        await pilot.pause()

    assert snap_compare(mixed, terminal_size=SIZE, run_before=run_before)


def test_mention_with_truncated_compacted_preview(snap_compare: Any, app: SessionRefApp) -> None:
    """`@load` accepted with Tab: the highlighted mention token in the prompt; the preview card of the
    load test: a full red budget bar near 64.0 KiB, kept of 201 messages with omitted counts and bytes,
    the compacted and truncated badges, the checkpoint first in the projected conversation; totals with
    the prefix size and the token estimate."""

    assert snap_compare(app, terminal_size=SIZE, run_before=_mention_the_load_test)


def test_preview_showing_an_error(snap_compare: Any, app: SessionRefApp) -> None:
    """A draft referencing a session that does not exist and a good one: the totals show the
    READ_FAILED problem in red with its code, the good card shows its numbers, and the missing one
    shows its own problem in place."""

    async def run_before(pilot: Any) -> None:
        await settle(pilot)
        good = format_session_reference_mention("design-notes", "Storage design")
        gone = format_session_reference_mention("deleted-yesterday")
        pilot.app.chat.prompt.load_text(f"compare {good} with {gone}")
        await _preview_ready(pilot)

    assert snap_compare(app, terminal_size=SIZE, run_before=run_before)


def test_transcript_with_referenced_sessions_line(snap_compare: Any, app: SessionRefApp) -> None:
    """After sending `what changed in @Retention (compacted)`: the You block with the user's words
    (never the snapshot) and a dim `Referenced sessions · Retention (compacted) (retention-work)` line,
    then the echo model's Markdown reply."""

    async def run_before(pilot: Any) -> None:
        await settle(pilot)
        mention = format_session_reference_mention("retention-work", "Retention (compacted)")
        pilot.app.chat.prompt.load_text(f"what changed in {mention}")
        await pilot.press("enter")
        await until(pilot, lambda: pilot.app.trace.sent == 1 and pilot.app.workspace.agent.status == "idle")
        await until(pilot, lambda: pilot.app.chat.query(AssistantBlock) and not pilot.app.chat.transcript.streaming)
        await _preview_ready(pilot)

    assert snap_compare(app, terminal_size=SIZE, run_before=run_before)


def test_model_visible_viewer(snap_compare: Any, app: SessionRefApp) -> None:
    """F2 on a draft referencing the hostile pasted page: the viewer shows the warning header, the
    `<referenced-sessions>` frame whose JSON spells every `<` as \\u003c, and `## My request:`."""

    async def run_before(pilot: Any) -> None:
        await settle(pilot)
        mention = format_session_reference_mention("pasted-web-page", "Pasted web page (hostile)")
        pilot.app.chat.prompt.load_text(f"is {mention} safe?")
        await _preview_ready(pilot)
        await pilot.press("f2")
        await until(pilot, lambda: isinstance(pilot.app.screen, ViewerScreen))
        await pilot.pause()

    assert snap_compare(app, terminal_size=SIZE, run_before=run_before)


def test_narrow_terminal_80x24(snap_compare: Any, app: SessionRefApp) -> None:
    """At 80x24 every pane stays usable: the sidebar's groups, the transcript hint, the preview card of
    the load test (budget bar, kept counts, badges) and the highlighted mention in the prompt."""

    assert snap_compare(app, terminal_size=(80, 24), run_before=_mention_the_load_test)


class ThinkingModel:
    """An in-process reasoning model: it thinks, answers with usage, and writes checkpoints when asked
    (``gate`` holds a summary back until set, so a compaction in progress can be pictured)."""

    name = "deepseek-reasoner"
    provider = "test"

    def __init__(self, gate: asyncio.Event | None = None) -> None:
        self.gate = gate

    async def stream(self, messages: list[dict[str, Any]], *, signal: Any, max_tokens: int | None = None) -> Any:
        last = wire_text(messages[-1]["content"]) if messages else ""
        if SUMMARY_REQUEST_MARK in last:
            if self.gate is not None:
                await self.gate.wait()
            yield {"type": "text-delta", "index": 0, "text": "## What the user wants\n- a plan for the **release**"}
            yield {"type": "text-delta", "index": 0, "text": "\n\n## Decisions\n- ship on Friday"}
            return
        for piece in ["The user asks about ", "the release; check the notes."]:
            yield {"type": "reasoning-delta", "index": 0, "text": piece}
        yield {"type": "text-delta", "index": 0, "text": "Ship it on **Friday**, after the notes are reviewed."}
        # A server's count: the bare rule plus a tenth, a third of it read from the cache.
        prompt = round(estimate_history(messages) * 1.1)
        usage = {"inputTokens": prompt - prompt // 3, "outputTokens": 86, "cacheReadTokens": prompt // 3}
        yield {"type": "usage", "usage": {**usage, "reasoningTokens": 31}}


def _thinking_app(demo_template: Path, tmp_path: Path, gate: asyncio.Event | None = None) -> SessionRefApp:
    built, _ = open_app(demo_template, tmp_path / "store", model=ThinkingModel(gate))
    return built


async def _two_turns(pilot: Any) -> None:
    await settle(pilot)
    app = pilot.app
    background = " The release notes list the parser rewrite, the new store and the picker." * 12
    for words in ["when do we release?" + background, "and the notes?" + background]:
        sent = app.trace.sent
        app.chat.prompt.load_text(words)
        await pilot.press("enter")
        await until(pilot, lambda sent=sent: app.trace.sent == sent + 1 and app.workspace.agent.status == "idle")
        await until(pilot, lambda: not app.chat.transcript.streaming)
    await _preview_ready(pilot)


def test_collapsed_reasoning_and_usage_under_replies(snap_compare: Any, demo_template: Path, tmp_path: Path) -> None:
    """Two replies of a reasoning model: each shows `▶ Thought for 1 s` collapsed above its Markdown
    answer and a dim usage line under it (`↑ N prompt (M cached) · ↓ 86 completion (31 reasoning)`);
    the header says how much of the window the session uses."""
    assert snap_compare(_thinking_app(demo_template, tmp_path), terminal_size=SIZE, run_before=_two_turns)


def test_context_meter_for_a_draft_with_a_big_reference(snap_compare: Any, app: SessionRefApp) -> None:
    """The preview's context meter above the load test's card: `Context` bar with used / window
    (assumed for the echo model), `This draft +… (request … + references …) → …` and the estimator."""
    assert snap_compare(app, terminal_size=SIZE, run_before=_mention_the_load_test)


def test_a_draft_that_cannot_fit(snap_compare: Any, demo_template: Path, tmp_path: Path) -> None:
    """With an 8,000-token window, mentioning the 64 KiB load test: the meter turns red and says in
    words that the draft cannot fit even after compaction, what to do, and CONTEXT_PROMPT_TOO_LARGE."""
    built, _ = open_app(demo_template, tmp_path / "store", context=ContextSettings(window=8_000))
    assert snap_compare(built, terminal_size=SIZE, run_before=_mention_the_load_test)


def test_compaction_in_progress(snap_compare: Any, demo_template: Path, tmp_path: Path) -> None:
    """F8 after two turns, while the summary is still being written: the prompt's title reads
    `Compacting 2 messages into a checkpoint… · Esc cancels`."""
    gate = asyncio.Event()

    async def run_before(pilot: Any) -> None:
        await _two_turns(pilot)
        await pilot.press("f8")
        await until(pilot, lambda: "Compacting" in str(pilot.app.chat.prompt.border_title))
        await pilot.pause()

    assert snap_compare(_thinking_app(demo_template, tmp_path, gate), terminal_size=SIZE, run_before=run_before)
    gate.set()


def test_a_checkpoint_in_the_transcript(snap_compare: Any, demo_template: Path, tmp_path: Path) -> None:
    """After F8: the framed `Checkpoint · 2 messages compacted` block holds the collapsed
    `2 earlier messages (still in the log)` and the summary as Markdown; the kept exchange follows."""

    async def run_before(pilot: Any) -> None:
        await _two_turns(pilot)
        await pilot.press("f8")
        await until(pilot, lambda: pilot.app.chat.query(CheckpointBlock))
        await until(pilot, lambda: pilot.app.workspace.agent.status == "idle")
        await pilot.pause()

    assert snap_compare(_thinking_app(demo_template, tmp_path), terminal_size=SIZE, run_before=run_before)


@pytest.mark.parametrize("theme", ["textual-dark", "textual-light"])
def test_prompt_with_chips_under_a_dark_and_a_light_theme(snap_compare: Any, app: SessionRefApp, theme: str) -> None:
    """The prompt holds three mentions, one of them a teammate's (its ``@bob`` badge) and one whose
    label is too long (cut with an ellipsis): each shows as a chip, ``@`` and its label in the
    mention style, never its URI; the preview beside it lists the three references whole."""
    long = format_session_reference_mention(
        "load-test-log", "Load test (compacted, too large) with a title that runs on"
    )

    async def run_before(pilot: Any) -> None:
        pilot.app.theme = theme
        await settle(pilot)
        prompt = pilot.app.chat.prompt
        prompt.badge_of = {"retention-work": "@bob"}.get  # as a shared database's catalog badges a teammate's
        prompt.load_text(
            f"compare {format_session_reference_mention('design-notes', 'Storage design')} with "
            f"{format_session_reference_mention('retention-work', 'Retention (compacted)')} and {long} "
        )
        prompt.move_cursor(prompt.document.end)
        await _preview_ready(pilot)

    assert snap_compare(app, terminal_size=SIZE, run_before=run_before)
