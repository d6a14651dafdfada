"""Searches on one thread while another closes, reopens and interrupts the same ``BodyIndex``.

Run as a process (``python -m tests.support.index_stress SECONDS``) by ``test_search.py``: closing a SQLite
connection another thread reads on, or interrupting one being closed, crashes the interpreter,
so a regression shows as a failed test rather than a dead test run.
"""

from __future__ import annotations

import asyncio
import sys
import tempfile
import threading
import time
from pathlib import Path

from core import JsonlSessionStore
from core.search.body_index import BodyIndex
from core.search.index_values import IndexedSession, IndexUnavailable, indexed_session, revision_key
from tests.conftest import say_user


def main(seconds: float) -> None:
    root = Path(tempfile.mkdtemp(prefix="sessionref-stress-"))
    writer = JsonlSessionStore(root)
    for number in range(40):
        say_user(writer.create(f"s-{number}", cwd="/w", created_at=number), f"stress {number} " + "filler " * 400)
    writer.close()
    store = JsonlSessionStore(root)
    headers = {record.header.id: record.header for record in asyncio.run(store.list_sessions())}
    sources = [(sid, revision_key(store.listed_revision(header))) for sid, header in headers.items()]

    def read(session_id: str) -> IndexedSession:
        stored = store.read_stored(headers[session_id])
        return indexed_session(stored.revision, stored.surface, stored.title)

    index = BodyIndex(root / "index")
    index.sync(sources, read)
    deadline = time.monotonic() + seconds
    counts = {"searches": 0, "reopens": 0}

    def search() -> None:
        while time.monotonic() < deadline:
            try:
                index.candidates("filler")
                for session_id in list(headers)[:10]:
                    index.scan(session_id, "filler")
                index.messages("s-1")
            except IndexUnavailable:
                pass  # interrupted, or closed just then: what a host sees, never a crash
            counts["searches"] += 1

    def churn() -> None:
        while time.monotonic() < deadline:
            index.release()
            index.interrupt()
            index.open()
            index.interrupt()
            counts["reopens"] += 1

    threads = [threading.Thread(target=search), threading.Thread(target=churn)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    index.close()
    store.close()
    print(f"searches {counts['searches']} reopens {counts['reopens']}")


if __name__ == "__main__":
    main(float(sys.argv[1]) if len(sys.argv) > 1 else 2.0)
