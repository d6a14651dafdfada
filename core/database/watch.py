"""Hearing a PostgreSQL store change: ``LISTEN sessionref_changed`` on a connection of its own.

Every change to sessions or shares notifies the channel with an empty payload (``schema``), so a
listener learns *that* something changed, never what: it lists again, and row-level security
decides what it sees. A burst (a reply streamed batch by batch) is reported once, when it pauses or
after ``LONGEST_BURST``, so another machine's session shows within a second without a re-listing
per batch.

When the connection drops (the server restarted), the watcher reconnects by itself, backing off up
to ``RETRY_LONGEST`` seconds, and reports "look at everything" once it listens again.
"""

from __future__ import annotations

import threading
import time
from typing import Any

import psycopg

from core.database.connect import connect
from core.database.errors import server_words
from core.folder.watch import LONGEST_BURST, QUIET, ChangeCallback

CHANNEL = "sessionref_changed"
RETRY_FIRST = 0.25
RETRY_LONGEST = 5.0
ALIVE_CHECK = 2.0
"""Seconds between round trips that check a quiet connection is still there."""


class NotifyWatcher:
    """Reports changes to a PostgreSQL store (see the module docstring); the same surface as
    ``StoreWatcher``: ``start``, ``stop``, ``ready``, ``failure``, ``running``.

    Args:
        conninfo: the store's connection string (never shown in ``failure``).
        on_change: called on the watcher's thread with ``None``: list again.
    """

    def __init__(self, conninfo: str, on_change: ChangeCallback) -> None:
        self._conninfo = conninfo
        self.on_change = on_change
        self.failure: str | None = None
        """Why the watcher is not watching (it could not listen at all), for the host to show."""
        self.connected = False
        """Whether the watcher listens right now (``False`` while it reconnects)."""
        self.ready = threading.Event()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._connection: psycopg.Connection[Any] | None = None

    @property
    def running(self) -> bool:
        return self._thread is not None and self._thread.is_alive() and self.failure is None

    def start(self) -> bool:
        """Listen on a daemon thread; ``False`` (with ``failure``) when the database cannot be reached."""
        try:
            self._connection = self._listen()
        except psycopg.Error as error:
            self.failure = f"cannot listen for changes in the session database ({server_words(error)})"
            self.ready.set()
            return False
        self._thread = threading.Thread(target=self._run, name="sessionref-listen", daemon=True)
        self._thread.start()
        return True

    def stop(self) -> None:
        """Stop listening (returns once the thread has ended)."""
        self._stop.set()
        if self._thread is not None:
            self._thread.join()

    def _listen(self) -> psycopg.Connection[Any]:
        connection = connect(self._conninfo, autocommit=True, connect_timeout=5)
        connection.execute(f"LISTEN {CHANNEL}")  # a constant, not data
        self.connected = True
        return connection

    # -- the thread -------------------------------------------------------------------------------

    def _run(self) -> None:
        connection = self._connection
        assert connection is not None
        self.on_change(None)  # whatever changed before the listening began
        self.ready.set()
        try:
            while not self._stop.is_set():
                try:
                    self._loop(connection)
                except psycopg.OperationalError:
                    self.connected = False
                    connection.close()
                    reconnected = self._reconnect()
                    if reconnected is None:
                        return
                    connection = reconnected
                    self.on_change(None)  # what changed while nobody listened
        finally:
            connection.close()

    def _loop(self, connection: psycopg.Connection[Any]) -> None:
        burst_started = 0.0
        checked = time.monotonic()
        while not self._stop.is_set():
            heard = any(True for _ in connection.notifies(timeout=QUIET if burst_started else 0.2, stop_after=1))
            now = time.monotonic()
            if heard and not burst_started:
                burst_started = now
            if burst_started and (not heard or now - burst_started >= LONGEST_BURST):
                burst_started = 0.0
                self.on_change(None)
            if not heard and now - checked >= ALIVE_CHECK:
                # A connection the server dropped without a word (a network gone) only shows on a
                # round trip; a restart shows at once, as an error from ``notifies``.
                checked = now
                connection.execute("SELECT 1")

    def _reconnect(self) -> psycopg.Connection[Any] | None:
        pause = RETRY_FIRST
        while not self._stop.wait(pause):
            try:
                return self._listen()
            except psycopg.Error:
                pause = min(pause * 2, RETRY_LONGEST)
        return None
