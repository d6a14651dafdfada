"""Titles the screen wants are told, not polled for: ``SessionTitles.wanted_news`` fires when a first
title is wanted, once until the wanted ones are read, and the app reads them then."""

from __future__ import annotations

from pathlib import Path

from core import JsonlSessionStore
from core.catalog import SessionCatalog
from tests.conftest import say_user


def test_a_wanted_title_is_told_once_until_read(tmp_path: Path) -> None:
    store = JsonlSessionStore(tmp_path)
    for number in range(3):
        session = store.create(f"s{number}", cwd="/w")
        say_user(session, "hello")
        session.append("session/title", {"title": f"Title {number}", "messageSeqs": [0], "source": "user"})
    store.close()
    store = JsonlSessionStore(tmp_path)
    catalog = SessionCatalog(store)
    catalog.refresh()
    told: list[None] = []
    catalog.titles.wanted_news.subscribe(told.append)
    assert catalog.titles.title("s0") is None and len(told) == 1  # not read yet: wanted, and told
    assert catalog.titles.title("s1") is None and len(told) == 1  # more of the same batch: no more news
    assert catalog.titles.load_wanted()
    assert (catalog.titles.title("s0"), catalog.titles.title("s1")) == ("Title 0", "Title 1")
    assert catalog.titles.title("s2") is None and len(told) == 2  # a new batch is told again
    store.close()
