"""Noticing changes under a JSONL store root from the kernel (inotify), instead of polling.

inotify watches one folder at a time, so the watcher watches the root, every project folder and
every session folder (a store of 100,000 sessions takes 100,000 watches, added in about 0.2 s on a
background thread), and adds the folders that appear. Each change is reported as the session or
project folder it touched; the store then looks at those folders only.

Where inotify is missing or its watch limit (``fs.inotify.max_user_watches``) is reached, the
watcher says why in ``failure`` and stops; the host goes back to polling. The library:
``inotify_simple``, a thin wrapper of the three system calls. ``watchfiles`` was measured first: its
recursive watch of 100,000 folders holds the interpreter for 8.7 s before the first event.
"""

from __future__ import annotations

import contextlib
import errno
import os
import threading
import time
from collections.abc import Callable
from pathlib import Path

try:
    from inotify_simple import INotify, flags
except ImportError:  # not Linux, or not installed: the host polls
    INotify = None

_FOLDER_MASK = 0
if INotify is not None:
    _FOLDER_MASK = (
        flags.CREATE
        | flags.DELETE
        | flags.MODIFY
        | flags.CLOSE_WRITE
        | flags.MOVED_FROM
        | flags.MOVED_TO
        | flags.ATTRIB
        | flags.DELETE_SELF
        | flags.MOVE_SELF
        | flags.ONLYDIR
        | flags.DONT_FOLLOW
    )

QUIET = 0.05
"""Seconds without events before a burst is reported (a streamed reply writes many batches)."""
LONGEST_BURST = 0.25
"""A burst longer than this is reported anyway: another machine's session shows within a second."""

ChangeCallback = Callable[[set[str] | None], None]
"""Receives the changed session and project folders, or ``None``: look at everything."""


class StoreWatcher:
    """Reports changes under a store root (see the module docstring).

    Args:
        root: the store folder.
        on_change: called on the watcher's thread with the changed folders (absolute paths), or
            ``None`` when anything may have changed (once all watches are in place, after an event
            queue overflow, or when the watcher stops for good).
        ignore_prefix: names in the root that start with it are not project folders (sessionref's
            own index folder and listing cache): their changes are not reported.
    """

    def __init__(self, root: Path, on_change: ChangeCallback, *, ignore_prefix: str = ".sessionref-") -> None:
        self.root = Path(root)
        self.on_change = on_change
        self.ignore_prefix = ignore_prefix
        self.failure: str | None = None
        """Why the watcher is not (or no longer) watching, for the host to show."""
        self.ready = threading.Event()
        """Set once every folder is watched (or the watcher failed)."""
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._folders: dict[int, str] = {}

    @property
    def running(self) -> bool:
        return self._thread is not None and self._thread.is_alive() and self.failure is None

    def start(self) -> bool:
        """Start watching on a daemon thread; ``False`` (with ``failure``) when inotify is unavailable."""
        if INotify is None:
            self.failure = "file-system events are unavailable here (no inotify)"
            self.ready.set()
            return False
        try:
            inotify = INotify()
        except OSError as error:
            self.failure = f"file-system events are unavailable: {error.strerror}"
            self.ready.set()
            return False
        self._thread = threading.Thread(target=self._run, args=(inotify,), name="sessionref-watch", daemon=True)
        self._thread.start()
        return True

    def stop(self) -> None:
        """Stop watching (returns once the thread has ended)."""
        self._stop.set()
        if self._thread is not None:
            self._thread.join()

    # -- the thread -------------------------------------------------------------------------------

    def _run(self, inotify: INotify) -> None:
        try:
            self._watch_tree(inotify, str(self.root), depth=0)
            self.on_change(None)  # whatever changed before the watches were in place (before ``ready``)
            self.ready.set()
            self._loop(inotify)
        except OSError as error:
            self.failure = (
                "the inotify watch limit is reached (fs.inotify.max_user_watches)"
                if error.errno == errno.ENOSPC
                else f"file-system events stopped: {error.strerror or error}"
            )
            self.on_change(None)
            self.ready.set()
        finally:
            inotify.close()

    def _loop(self, inotify: INotify) -> None:
        changed: set[str] = set()
        burst_started = 0.0
        while not self._stop.is_set():
            events = inotify.read(timeout=int(QUIET * 1000) if changed else 200)
            for event in events:
                if event.mask & flags.Q_OVERFLOW:
                    changed.clear()
                    self.on_change(None)
                    continue
                folder = self._folders.get(event.wd)
                if folder is None:
                    continue
                if event.mask & flags.IGNORED:
                    self._folders.pop(event.wd, None)
                    continue
                path = os.path.join(folder, event.name) if event.name else folder
                depth = self._depth(path)
                if depth == 1 and event.name.startswith(self.ignore_prefix):
                    continue
                if event.mask & flags.ISDIR and event.mask & (flags.CREATE | flags.MOVED_TO) and depth <= 2:
                    # Session folders that appeared in a new project folder before its watch was
                    # in place raised no event of their own: they are reported with it.
                    found: list[str] = []
                    self._watch_tree(inotify, path, depth, found)
                    changed.update(found)
                changed.add(self._folder_of(path, depth))
            now = time.monotonic()
            if changed and not burst_started:
                burst_started = now
            if changed and (not events or now - burst_started >= LONGEST_BURST):
                report, changed, burst_started = changed, set(), 0.0
                self.on_change(report)

    def _depth(self, path: str) -> int:
        """0 for the root, 1 for a project folder, 2 for a session folder, 3 for a session's file."""
        relative = os.path.relpath(path, self.root)
        return 0 if relative == "." else relative.count(os.sep) + 1

    def _folder_of(self, path: str, depth: int) -> str:
        """The project (depth 1) or session folder (depth >= 2) a change belongs to."""
        if depth <= 2:
            return path if depth else str(self.root)
        return os.path.dirname(path) if depth == 3 else self._folder_of(os.path.dirname(path), depth - 1)

    def _watch_tree(self, inotify: INotify, folder: str, depth: int, found: list[str] | None = None) -> None:
        """Watch ``folder`` and the store folders below it (projects, sessions); never a symlink.
        The session folders found below ``folder`` are added to ``found`` when one is given."""
        with contextlib.suppress(FileNotFoundError, NotADirectoryError, PermissionError):
            self._folders[inotify.add_watch(folder, _FOLDER_MASK)] = folder
            if depth >= 2:
                return
            for entry in os.scandir(folder):
                if self._stop.is_set():
                    return
                if depth == 0 and entry.name.startswith(self.ignore_prefix):
                    continue
                if entry.is_dir(follow_symlinks=False):
                    if depth == 1 and found is not None:
                        found.append(entry.path)
                    self._watch_tree(inotify, entry.path, depth + 1, found)
