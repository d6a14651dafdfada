"""Changes under a store root heard from inotify: the watcher names what changed, the store looks at
only that, and the listing is the one a full walk gives; where inotify fails, polling takes over."""

from __future__ import annotations

import asyncio
import errno
import os
import random
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

import core.sessions.watch as watch
from core import EchoModel, JsonlSessionStore
from core.sessions.watch import StoreWatcher
from tests.conftest import say_user
from tui.app import make_app

pytestmark = pytest.mark.skipif(watch.INotify is None, reason="inotify is unavailable here")
REPO = Path(__file__).parent.parent

WRITE_ELSEWHERE = """
import sys
from core import JsonlSessionStore
store = JsonlSessionStore(sys.argv[1])
session = store.create(sys.argv[2], cwd="/w/elsewhere")
session.append("user/message", {"content": [{"type": "text", "text": "from another process"}],
               "source": {"kind": "user"}}, surface_op="append")
store.close()
"""


def _write_elsewhere(root: Path, session_id: str) -> None:
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    subprocess.run([sys.executable, "-c", WRITE_ELSEWHERE, str(root), session_id], check=True, env=env)


class Heard:
    """What a watcher reported, waited for from the test."""

    def __init__(self) -> None:
        self.reports: list[set[str] | None] = []
        self.changed = threading.Condition()

    def __call__(self, paths: set[str] | None) -> None:
        with self.changed:
            self.reports.append(paths)
            self.changed.notify_all()

    def wait_for(self, path: str, timeout: float = 5.0) -> float:
        started = time.monotonic()
        with self.changed:
            while not any(report is not None and path in report for report in self.reports):
                left = timeout - (time.monotonic() - started)
                assert left > 0, f"{path} was not reported: {self.reports}"
                self.changed.wait(left)
        return time.monotonic() - started


def _listing(store: JsonlSessionStore) -> tuple[list[dict[str, object]], list[str]]:
    records = asyncio.run(store.list_sessions())
    return [r.header.to_wire() for r in records], sorted(p.message for p in store.problems)


def test_a_session_another_process_writes_is_reported_within_a_second(tmp_path: Path) -> None:
    store = JsonlSessionStore(tmp_path)
    say_user(store.create("here", cwd="/w/here"), "hi")
    heard = Heard()
    watcher = StoreWatcher(tmp_path, heard)
    assert watcher.start() and watcher.ready.wait(5)
    try:
        started = time.monotonic()
        _write_elsewhere(tmp_path, "there")
        folder = str(store.session_path("there", "/w/elsewhere").parent)
        heard.wait_for(folder)
        assert time.monotonic() - started < 1.0
        assert heard.reports[0] is None  # "look at everything" once the watches are in place
    finally:
        watcher.stop()
    assert not watcher.running


def test_the_listing_from_reported_changes_is_the_listing_a_full_walk_gives(tmp_path: Path) -> None:
    """Random creates, appends, deletes, new projects and misplaced files, each reported by the
    watcher: a store that looks only at what was reported lists exactly what a new store lists."""
    rng = random.Random(7)
    writer = JsonlSessionStore(tmp_path)
    for index in range(20):
        say_user(writer.create(f"s{index}", cwd=f"/w/p{index % 3}"), "hello")
    writer.close()
    watched = JsonlSessionStore(tmp_path)
    watched.watched = True
    watcher = StoreWatcher(tmp_path, watched.note_changes)
    assert watcher.start() and watcher.ready.wait(5)
    try:
        _listing(watched)
        alive = [f"s{index}" for index in range(20)]
        for step in range(60):
            action = rng.choice(["create", "append", "delete", "project", "flat", "symlink"])
            if action == "create" or not alive:
                session_id = f"n{step}"
                say_user(writer.create(session_id, cwd=f"/w/p{rng.randrange(5)}"), "new")
                alive.append(session_id)
            elif action == "append":
                session = writer.get(rng.choice(alive))
                assert session is not None
                say_user(session, "more")
            elif action == "delete":
                writer.delete(alive.pop(rng.randrange(len(alive))))
            elif action == "project":
                say_user(writer.create(f"p{step}", cwd=f"/w/new-project-{step}"), "first in its folder")
                alive.append(f"p{step}")
            elif action == "flat":
                (tmp_path / "--w-p0--" / f"flat{step}.jsonl").write_text("{}\n")
            else:
                (tmp_path / "--w-p1--" / f"link{step}").symlink_to(tmp_path)
            writer.close()
            if step % 7 == 6:
                deadline = time.monotonic() + 5
                expected = _listing(JsonlSessionStore(tmp_path))
                while _listing(watched) != expected:  # events arrive within a burst (<= 0.25 s)
                    assert time.monotonic() < deadline, f"step {step}: the watched listing never caught up"
                    time.sleep(0.05)
    finally:
        watcher.stop()


def test_a_watch_limit_reached_hands_back_to_polling(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """inotify's watch limit (ENOSPC) stops the watcher with the reason and a "look at everything"."""
    for index in range(3):
        say_user(JsonlSessionStore(tmp_path).create(f"s{index}", cwd="/w"), "hi")

    class Limited(watch.INotify):  # type: ignore[misc, name-defined]
        def add_watch(self, path: str, mask: int) -> int:
            if str(path).count(os.sep) > str(tmp_path).count(os.sep) + 1:
                raise OSError(errno.ENOSPC, "No space left on device")
            return int(super().add_watch(path, mask))

    monkeypatch.setattr(watch, "INotify", Limited)
    heard = Heard()
    watcher = StoreWatcher(tmp_path, heard)
    assert watcher.start() and watcher.ready.wait(5)
    watcher.stop()
    assert watcher.failure == "the inotify watch limit is reached (fs.inotify.max_user_watches)"
    assert heard.reports == [None]


async def test_the_app_shows_a_session_written_elsewhere_without_polling(tmp_path: Path) -> None:
    store = JsonlSessionStore(tmp_path)
    say_user(store.create("older", cwd="/w/here"), "hi")
    store.release("older")
    app = make_app(store, EchoModel(), cwd="/w/here", refresh_interval=3600)  # the timer never fires
    async with app.run_test(size=(120, 40)) as pilot:
        while app.watcher is None or not app.watcher.ready.is_set():
            await pilot.pause(0.02)
        assert store.watched and app.watcher.failure is None
        sidebar = app.screen.query_one("#sidebar")
        _write_elsewhere(tmp_path, "written-elsewhere")
        started = time.monotonic()
        while not any(row.header is not None and row.header.id == "written-elsewhere" for row in sidebar.rows):
            assert time.monotonic() - started < 2.0, "the sidebar never showed the new session"
            await pilot.pause(0.02)
        assert time.monotonic() - started < 1.0
    assert not app.watcher.running
