"""The same app in a browser: ``sessionref --serve`` (textual-serve) driven by headless Chromium.

Playwright drives Debian's ``chromium`` (no browser download). The terminal in the page is drawn on
a canvas, so what the test reads back is the store: the prompt typed in the page, with the mention
the picker inserted on Tab, baked into the target session. ``.ci/run`` installs both and sets
``SESSIONREF_REQUIRE_BROWSER``, so there the test never skips.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import os
import shutil
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

from core import JsonlSessionStore
from tui.cli.demo import DEMO_PROJECT

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
ROOT = Path(__file__).resolve().parent.parent

try:
    from playwright.sync_api import sync_playwright
except ImportError:  # pragma: no cover - the dev extra installs it
    sync_playwright = None  # type: ignore[assignment]

pytestmark = pytest.mark.skipif(
    (CHROMIUM is None or sync_playwright is None) and not os.environ.get("SESSIONREF_REQUIRE_BROWSER"),
    reason="needs chromium and playwright (.ci/run installs both and sets SESSIONREF_REQUIRE_BROWSER)",
)


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def wait_for_port(port: int, timeout: float = 30) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            socket.create_connection(("127.0.0.1", port), 0.2).close()
            return
        except OSError:
            time.sleep(0.1)
    raise AssertionError(f"nothing listens on port {port}")


def prompts(root: Path) -> list[dict[str, object]]:
    """The prompts of the target session on disk (read on a thread of its own: Playwright's sync
    API keeps an event loop running on this one)."""

    def read() -> list[dict[str, object]]:
        surface = asyncio.run(JsonlSessionStore(root).read_surface("today"))
        return [event.data for event in surface.events if event.type == "user/message"]

    with concurrent.futures.ThreadPoolExecutor(1) as helper:
        return helper.submit(read).result()


def test_the_app_in_a_browser_references_a_session_and_bakes_it(demo_template: Path, tmp_path: Path) -> None:
    assert CHROMIUM is not None and sync_playwright is not None
    root = tmp_path / "store"
    shutil.copytree(demo_template, root)
    port = free_port()
    command = [sys.executable, "-m", "tui.cli", "--serve", "--port", str(port), "--root", str(root),
               "--cwd", DEMO_PROJECT, "--session", "today", "--no-external"]  # fmt: skip
    env = {**os.environ, "HOME": str(tmp_path), "PYTHONPATH": str(ROOT)}
    server = subprocess.Popen(command, cwd=ROOT, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    try:
        wait_for_port(port)
        with sync_playwright() as playwright:
            browser = playwright.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox"])
            page = browser.new_page(viewport={"width": 1400, "height": 900})
            page.goto(f"http://127.0.0.1:{port}/")
            page.wait_for_selector("body.-first-byte", timeout=30_000)  # the app's first bytes arrived
            time.sleep(1.5)  # the app lists the store and paints
            page.mouse.click(700, 840)  # the prompt
            page.keyboard.type("compare ")
            time.sleep(1.0)
            above_prompt = {"x": 0, "y": 560, "width": 760, "height": 250}  # where the picker opens
            before = page.screenshot(clip=above_prompt)
            page.keyboard.type("@ret")
            time.sleep(1.5)
            page.screenshot(path=str(tmp_path / "picker.png"))
            # Only the picker draws over the sidebar and the transcript there; the prompt is below.
            assert page.screenshot(clip=above_prompt) != before
            page.keyboard.press("Tab")  # accept the highlighted candidate: Retention (compacted)
            time.sleep(0.8)
            page.keyboard.press("Enter")
            deadline = time.monotonic() + 20
            while not prompts(root) and time.monotonic() < deadline:
                time.sleep(0.2)
            browser.close()
    finally:
        server.terminate()
        server.wait(10)
    (prompt,) = prompts(root)
    envelope = prompt["envelope"]
    assert isinstance(envelope, dict)
    assert envelope["displayContent"] == [{"type": "text", "text": "compare @Retention (compacted) "}]
    assert envelope["prefixContexts"][0]["meta"]["references"][0]["sessionId"] == "retention-work"
    content = prompt["content"]
    assert isinstance(content, list) and content[0]["text"].startswith("## Referenced sessions")
