"""``sessionref export SESSION --format markdown|html``: a session written as people read it, its
secrets masked, from this store or another agent's; the HTML opened in a real browser (Chromium,
through Playwright) as a person would, with a screenshot, and nothing from the session run as
script or markup."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest

from core import JsonlSessionStore
from tests.conftest import say_assistant, say_user
from tui.cli.command import main

KEY = "ghp_" + "Zq8vLm3NpR5tXw7Yb9Cd1Ef4Gh6Jk2Mn0PqRs"
HOSTILE = '<script>window.pwned = 1</script><img src=x onerror="window.pwned = 2"> [click](javascript:alert(1))'

try:
    from playwright.sync_api import sync_playwright
except ImportError:  # pragma: no cover - the dev extra brings it
    sync_playwright = None  # type: ignore[assignment]
CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")


def _store(root: Path) -> None:
    store = JsonlSessionStore(root)
    session = store.create("deploy", cwd="/work/app", created_at=1_796_400_000_000)
    say_user(session, f"Why does `deploy` fail? The token is {KEY}. {HOSTILE}")
    session.append(
        "assistant/message",
        {
            "turn": 1,
            "step": 0,
            "content": [
                {"type": "reasoning", "text": "The token looks expired; check gh auth."},
                {"type": "text", "text": "**Because** the token expired.\n\n```sh\ngh auth status\n```"},
                {"type": "tool-call", "id": "c1", "name": "bash", "arguments": json.dumps({"command": "x" * 5000})},
            ],
        },
        surface_op="append",
    )
    session.append("session/title", {"title": "Deploy <b>fails</b>", "messageSeqs": [0], "source": "user"})
    say_user(session, "thanks")
    say_assistant(session, "You're welcome.")
    store.close()


def _export(tmp_path: Path, capsys: pytest.CaptureFixture[str], *more: str) -> str:
    code = main(["export", "deploy", "--root", str(tmp_path / "store"), "--no-external", *more])
    assert code == 0
    return capsys.readouterr().out


def test_markdown_holds_the_conversation_masked_with_reasoning_and_tools_bounded(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    _store(tmp_path / "store")
    text = _export(tmp_path, capsys, "--format", "markdown")
    assert text.startswith("# Deploy <b>fails</b>\n")
    assert "folder `/work/app`" in text and "1 secret masked" in text
    assert KEY not in text and "[redacted: github-token]" in text
    assert "> **Reasoning**" in text and "**Tool call bash**" in text and "more characters" in text
    assert text.index("Why does") < text.index("Because") < text.index("thanks") < text.index("welcome")
    assert KEY in _export(tmp_path, capsys, "--format", "markdown", "--no-redaction")


def test_a_missing_session_and_another_agents_session(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    _store(tmp_path / "store")
    assert main(["export", "nope", "--format", "html", "--root", str(tmp_path / "store"), "--no-external"]) == 1
    assert "SESSION_QUERY_SESSION_NOT_FOUND" in capsys.readouterr().err
    claude = tmp_path / "claude" / "projects" / "-work-app"
    claude.mkdir(parents=True)
    record = {
        "type": "user",
        "uuid": "u1",
        "parentUuid": None,
        "sessionId": "c",
        "cwd": "/work/app",
        "timestamp": "2026-12-05T10:00:00.000Z",
        "message": {"role": "user", "content": f"my key {KEY}"},
    }
    (claude / "0f8e6a2c-1b3d-4c5e-8f9a-0123456789ab.jsonl").write_text(json.dumps(record) + "\n")
    code = main(
        [
            "export",
            "claude:0f8e6a2c-1b3d-4c5e-8f9a-0123456789ab",
            "--format",
            "markdown",
            "--root",
            str(tmp_path / "store"),
            "--claude-root",
            str(tmp_path / "claude"),
        ]
    )
    out = capsys.readouterr().out
    assert code == 0 and "my key [redacted: github-token]" in out and KEY not in out


def test_html_is_one_page_that_escapes_everything_and_runs_no_script(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    _store(tmp_path / "store")
    page = tmp_path / "deploy.html"
    assert "written to" in _export(tmp_path, capsys, "--format", "html", "-o", str(page))
    html = page.read_text()
    assert "<script" not in html and "onerror=" not in html.replace("onerror=&quot;", "")
    assert "&lt;script&gt;" in html and 'href="javascript' not in html
    assert "Content-Security-Policy" in html and "<details><summary>Reasoning</summary>" in html
    assert KEY not in html and "[redacted: github-token]" in html
    assert "http://" not in html and "https://" not in html  # nothing outside the page


@pytest.mark.skipif(
    (CHROMIUM is None or sync_playwright is None) and not os.environ.get("SESSIONREF_REQUIRE_BROWSER"),
    reason="needs chromium and playwright (.ci/run installs both and sets SESSIONREF_REQUIRE_BROWSER)",
)
def test_the_html_in_a_real_browser_reads_as_a_person_would(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert CHROMIUM is not None and sync_playwright is not None
    _store(tmp_path / "store")
    page_file = tmp_path / "deploy.html"
    _export(tmp_path, capsys, "--format", "html", "-o", str(page_file))
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox"])
        page = browser.new_page(viewport={"width": 1000, "height": 900})
        page.goto(page_file.as_uri())
        page.wait_for_load_state("load")
        assert page.evaluate("window.pwned") is None  # nothing from the session ran
        assert page.title() == "Deploy <b>fails</b>"
        body = page.inner_text("body")
        assert "Why does deploy fail?" in body and "[redacted: github-token]" in body
        assert "<script>window.pwned = 1</script>" in body  # shown as the text it was
        assert "Because the token expired." in body and "gh auth status" in body
        assert page.locator("details").count() == 2 and not page.locator("details").first.get_attribute("open")
        shot = tmp_path / "export.png"
        page.screenshot(path=str(shot), full_page=True)
        browser.close()
    assert shot.stat().st_size > 20_000


def test_markdown_from_data_cannot_open_a_section_or_end_its_code_early() -> None:
    from core.export.readable import Readable, Turn, to_markdown

    session = Readable(
        "id`x",
        "Title\n## Injected section",
        "/w/`weird`",
        0,
        [Turn("assistant", 0, "ok", tools=[("result", "```\n# not a heading\n```")])],
    )
    text = to_markdown(session)
    assert text.startswith("# Title ## Injected section\n") and "\n## Injected" not in text
    assert "``id`x``" in text and "`` /w/`weird` ``" in text
    assert "````text\n```\n# not a heading\n```\n````" in text


def test_another_tool_s_escape_sequences_and_odd_times_never_reach_the_terminal_raw(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    import sys

    from tests.test_other_agents import OpenCodeDb, text

    db = OpenCodeDb(tmp_path / "opencode" / "opencode.db")
    db.clock = 10**17  # past the year 9999
    db.session("ses_far", title="Far")
    db.message("ses_far", "msg_1", {"role": "user"}, text("clear \x1b[2J title \x1b]0;pwned\x07 bell \x9b6n"))
    (tmp_path / "store").mkdir()
    command = ["export", "opencode:ses_far", "--format", "markdown", "--root", str(tmp_path / "store")]
    command += ["--opencode-root", str(db.path.parent)]
    monkeypatch.setattr(sys.stdout, "isatty", lambda: True)
    assert main(command) == 0
    shown = capsys.readouterr().out
    assert "\x1b" not in shown and "\x07" not in shown and "\x9b" not in shown
    assert "\\x1b[2J" in shown and "\\x1b]0;pwned\\x07" in shown
    assert "ms after 1970" in shown  # a time no calendar holds, said as it is
    monkeypatch.setattr(sys.stdout, "isatty", lambda: False)
    assert main(command) == 0
    assert "\x1b[2J" in capsys.readouterr().out  # to a pipe or a file: the text as it is


def test_tool_results_of_both_shapes_are_shown(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    # The app's own agent writes rc.8's shape (the text in data.message.content); the contract's
    # keeps it in data.content: the export shows both, never "null".
    from core.agent.tool_steps import result_event

    store = JsonlSessionStore(tmp_path / "store")
    session = store.create("deploy", cwd="/work/app", created_at=1_796_400_000_000)
    say_user(session, "list the files")
    calls = [{"type": "tool-call", "id": f"c{n}", "name": "bash", "arguments": "{}"} for n in (1, 2)]
    session.append("assistant/message", {"turn": 1, "step": 0, "content": calls}, surface_op="append")
    session.append("tool/result", result_event(1, 0, "c1", "README.md from the agent", False), surface_op="append")
    contract = {
        "turn": 1,
        "step": 0,
        "callId": "c2",
        "content": [{"type": "text", "text": "setup.py as in the contract"}],
    }
    session.append("tool/result", contract, surface_op="append")
    store.close()
    out = _export(tmp_path, capsys, "--format", "markdown")
    assert "README.md from the agent" in out and "setup.py as in the contract" in out
    assert "null" not in out


def test_a_message_cannot_forge_a_turn() -> None:
    from core.export.readable import Readable, Turn, to_markdown

    said = (
        "Intro\n## You · 2026-12-05 10:00 UTC\nforged prompt\n\nYou · 2026-12-05 10:01 UTC\n---\n"
        "> ## quoted\n```sh\n# a comment, not a heading\n## neither\n```\n#### Notes\n###### six"
    )
    text = to_markdown(Readable("s", "T", None, 0, [Turn("assistant", 0, said)]))
    assert "#### You · 2026-12-05 10:00 UTC" in text and "> #### quoted" in text
    assert "You · 2026-12-05 10:01 UTC\n\n---" in text  # an underline after a blank line: a rule
    assert "```sh\n# a comment, not a heading\n## neither\n```" in text  # code as it was
    assert "###### Notes" in text and "###### six" in text
    from markdown_it import MarkdownIt

    tokens = MarkdownIt("commonmark").parse(text)
    h2 = [
        tokens[at + 1].content for at, token in enumerate(tokens) if token.type == "heading_open" and token.tag == "h2"
    ]
    assert h2 == ["Assistant · 1970-01-01 00:00 UTC"]  # the one turn, and no other
