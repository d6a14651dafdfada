"""Changes under a store root heard from inotify: the watcher names what changed, the store looks at
only that, and the listing is the one a full walk gives; where inotify fails, polling takes over."""

from __future__ import annotations

import asyncio
import errno
import os
import random
import shutil
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import pytest

import core.folder.watch as watch
from core import EchoModel, JsonlSessionStore
from core.folder.store_listing import StoreListing
from core.folder.watch import StoreWatcher
from tests.conftest import say_user
from tui.app.sessionref_app import make_app

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
        _write_elsewhere(tmp_path, "there")  # (a Python process: its start is not the watcher's time)
        written = time.monotonic()
        folder = str(store.session_path("there", "/w/elsewhere").parent)
        heard.wait_for(folder)
        assert time.monotonic() - written < 1.0  # reported within a second of the writer finishing
        assert heard.reports[0] is None  # "look at everything" once the watches are in place
    finally:
        watcher.stop()
    assert not watcher.running


ACTIONS = [
    "create",
    "append",
    "append_own",
    "create_own",
    "delete",
    "project",
    "drop_project",
    "flat",
    "unflat",
    "symlink",
    "unlink",
    "garbage",
    "duplicate",
    "undo_duplicate",
    "rewrite_header",
]


PLAIN = {"create", "append", "append_own", "delete", "project", "drop_project"}
"""Changes that involve no problem, no duplicate and no new file of our own."""


def _rewrite_header(store: JsonlSessionStore, session_id: str, cwd: str, created_at: int) -> None:
    """Replace a session's file by one whose header says another ``created_at`` (same id, same place)."""
    path = store.session_path(session_id, cwd)
    other = JsonlSessionStore(path.parent / "tmp-store", clock=lambda: created_at)
    say_user(other.create(session_id, cwd=cwd), "rewritten")
    other.close()
    os.replace(other.session_path(session_id, cwd), path)
    shutil.rmtree(path.parent / "tmp-store")


@pytest.mark.long
@pytest.mark.parametrize("seed", [7, 11, 13])
def test_the_listing_from_reported_changes_is_the_listing_a_full_walk_gives(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, seed: int
) -> None:
    """Random creates, appends (by another store and by the watched store itself), deletes, new and
    removed projects, misplaced files, symlinks, unreadable files, duplicate ids and rewritten
    headers, each reported by the watcher: after every step, a store that looks only at what was
    reported lists exactly what a new store lists; most steps are applied as changes, not recomputed."""
    full_passes: list[int] = []
    real_full = StoreListing._full

    def counting(self: StoreListing, *args: Any) -> Any:
        if self is watched._listing:  # not the fresh stores the test compares with
            full_passes.append(1)
        return real_full(self, *args)

    monkeypatch.setattr(StoreListing, "_full", counting)
    rng = random.Random(seed)
    writer = JsonlSessionStore(tmp_path)
    cwds = {f"s{index}": f"/w/p{index % 3}" for index in range(20)}
    for session_id, cwd in cwds.items():
        say_user(writer.create(session_id, cwd=cwd), "hello")
    writer.close()
    watched = JsonlSessionStore(tmp_path)
    watched.watched = True
    heard = Heard()

    def note(paths: set[str] | None) -> None:
        watched.note_changes(paths)
        heard(paths)  # after the store has noted them

    watcher = StoreWatcher(tmp_path, note)
    assert watcher.start() and watcher.ready.wait(5)
    own: list[str] = []
    extras: list[Path] = []
    duplicates: list[str] = []
    twinned: set[str] = set()
    steps = 90
    try:
        _listing(watched)
        full_passes.clear()
        for step in range(steps):
            action = rng.choice(ACTIONS)
            touched: set[str] = set()
            alive = [session_id for session_id in cwds if session_id not in own]
            if action == "create" or not alive:
                cwds[f"n{step}"] = f"/w/p{rng.randrange(5)}"
                say_user(writer.create(f"n{step}", cwd=cwds[f"n{step}"]), "new")
            elif action == "append":
                touched.add(victim := rng.choice(alive))
                session = writer.get(victim)
                assert session is not None
                say_user(session, "more")
            elif action == "create_own":
                cwds[f"o{step}"] = "/w/p0"
                say_user(watched.create(f"o{step}", cwd="/w/p0"), "mine")
                own.append(f"o{step}")
            elif action == "append_own" and own:
                session = watched.get(rng.choice(own))
                assert session is not None
                say_user(session, "mine again")
            elif action == "delete":
                writer.delete(victim := rng.choice(alive))
                touched.add(victim)
                del cwds[victim]
            elif action == "project":
                cwds[f"p{step}"] = f"/w/new-project-{step}"
                say_user(writer.create(f"p{step}", cwd=cwds[f"p{step}"]), "first in its folder")
            elif action == "drop_project":
                # Not p0 (our own sessions), p1 or p2 (problems live there): plain sessions only.
                others = [session_id for session_id in alive if cwds[session_id] not in ("/w/p0", "/w/p1", "/w/p2")]
                if not others:
                    continue
                project = rng.choice([session_id for session_id in others if session_id.startswith("p")] or others)
                folder = writer.session_path(project, cwds[project]).parent.parent
                shutil.rmtree(folder)
                for session_id in [s for s, cwd in cwds.items() if cwd == cwds[project]]:
                    touched.add(session_id)
                    del cwds[session_id]
            elif action == "flat":
                extras.append(tmp_path / "--w-p0--" / f"flat{step}.jsonl")
                extras[-1].parent.mkdir(exist_ok=True)
                extras[-1].write_text("{}\n")
            elif action == "symlink":
                extras.append(tmp_path / "--w-p1--" / f"link{step}")
                extras[-1].parent.mkdir(exist_ok=True)
                extras[-1].symlink_to(tmp_path)
            elif action in ("unflat", "unlink") and extras:
                extras.pop(rng.randrange(len(extras))).unlink(missing_ok=True)
            elif action == "garbage":
                path = writer.session_path(f"g{step}", "/w/p2")
                path.parent.mkdir(parents=True)
                path.write_bytes(b"not zstd at all")
                extras.append(path)
            elif action == "duplicate":
                twin, aside = rng.choice(alive), tmp_path.parent / f"aside-{step}"
                twinned.add(twin)
                other = JsonlSessionStore(aside)
                say_user(other.create(twin, cwd=f"/w/twin-{step}"), "same id elsewhere")
                other.close()
                folder = other.session_path(twin, f"/w/twin-{step}").parent.parent
                os.rename(folder, tmp_path / folder.name)  # the same id, in another project folder
                duplicates.append(f"/w/twin-{step}")
            elif action == "undo_duplicate" and duplicates:
                cwd = duplicates.pop()
                folder = writer.session_path("x", cwd).parent.parent
                shutil.rmtree(folder, ignore_errors=True)
            elif action == "rewrite_header":
                victim = rng.choice(alive)
                _rewrite_header(writer, victim, cwds[victim], created_at=rng.randrange(10**12))
            writer.close()
            # A new, empty project folder after the step: inotify delivers events in order, so once
            # the watcher has reported it, everything the step changed has been reported too.
            sentinel = tmp_path / f"--sentinel-{step}--"
            sentinel.mkdir()
            heard.wait_for(str(sentinel))
            passes = len(full_passes)
            expected = _listing(JsonlSessionStore(tmp_path))
            assert _listing(watched) == expected, f"step {step} ({action})"
            if action in PLAIN and not touched & twinned:  # applied to the kept listing, no pass over all
                assert len(full_passes) == passes, f"step {step} ({action}) took a full pass"
    finally:
        watcher.stop()
        watched.close()


def _limit_watches(monkeypatch: pytest.MonkeyPatch, root: Path) -> None:
    """inotify refuses a watch below the project folders, as when its watch limit is reached."""

    class Limited(watch.INotify):  # type: ignore[misc, name-defined]
        def add_watch(self, path: str, mask: int) -> int:
            if str(path).count(os.sep) > str(root).count(os.sep) + 1:
                raise OSError(errno.ENOSPC, "No space left on device")
            return int(super().add_watch(path, mask))

    monkeypatch.setattr(watch, "INotify", Limited)


def test_a_watch_limit_reached_hands_back_to_polling(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """inotify's watch limit (ENOSPC) stops the watcher with the reason and a "look at everything"."""
    for index in range(3):
        say_user(JsonlSessionStore(tmp_path).create(f"s{index}", cwd="/w"), "hi")
    _limit_watches(monkeypatch, tmp_path)
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


async def test_the_app_says_it_polls_when_it_cannot_watch(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Past the watch limit the user is told once, and a session written elsewhere still shows (polled)."""
    store = JsonlSessionStore(tmp_path)
    say_user(store.create("older", cwd="/w/here"), "hi")
    store.release("older")
    _limit_watches(monkeypatch, tmp_path)
    app = make_app(store, EchoModel(), cwd="/w/here", refresh_interval=0.3)
    told: list[tuple[str, str]] = []
    real_notify = app.notify

    def notify(message: str, *, title: str = "", **options: Any) -> None:
        told.append((title, message))
        real_notify(message, title=title, **options)

    app.notify = notify  # type: ignore[method-assign]
    async with app.run_test(size=(120, 40)) as pilot:
        while app.watcher is None or not app.watcher.ready.is_set() or not told:
            await pilot.pause(0.02)
        assert not store.watched
        assert told == [
            (
                "Not watching the store",
                "The inotify watch limit is reached (fs.inotify.max_user_watches);"
                " sessions written elsewhere now show within 0.3 s.",
            )
        ]
        sidebar = app.screen.query_one("#sidebar")
        _write_elsewhere(tmp_path, "polled")
        started = time.monotonic()
        while not any(row.header is not None and row.header.id == "polled" for row in sidebar.rows):
            assert time.monotonic() - started < 20.0, "polling never showed the new session"
            await pilot.pause(0.05)
        assert len(told) == 1  # told once, however often it polls


def test_a_session_growing_elsewhere_keeps_the_catalog_listing_and_a_new_one_changes_it(tmp_path: Path) -> None:
    """Another program streaming into a session changes its revision (titles may change), not the
    listing the sidebar and the picker hold: the catalog keeps the same records object."""
    from core.catalog.catalog import SessionCatalog

    writer = JsonlSessionStore(tmp_path)
    for index in range(5):
        say_user(writer.create(f"s{index}", cwd="/w", created_at=index), "hello")
        writer.release(f"s{index}")
    store = JsonlSessionStore(tmp_path)
    store.watched = True
    heard = Heard()

    def report(paths: set[str] | None) -> None:
        store.note_changes(paths)
        heard(paths)

    watcher = StoreWatcher(tmp_path, report)
    assert watcher.start() and watcher.ready.wait(5)
    try:
        catalog = SessionCatalog(store)
        assert catalog.refresh()
        shown = catalog.records
        session = writer.get("s2")
        assert session is not None
        say_user(session, "streamed elsewhere")
        writer.release("s2")
        heard.wait_for(str(writer.session_path("s2", "/w").parent))
        assert catalog.refresh()  # the revision changed: titles are looked at again
        assert catalog.records is shown  # the listing itself did not
        say_user(writer.create("s9", cwd="/w", created_at=99), "new")
        writer.release("s9")
        heard.wait_for(str(writer.session_path("s9", "/w").parent))
        assert catalog.refresh() and catalog.records is not shown
        assert [record.header.id for record in catalog.records] == ["s9", "s4", "s3", "s2", "s1", "s0"]
    finally:
        watcher.stop()
        writer.close()
        store.close()
