"""Message search in the PostgreSQL store: the same hits and snippets as the SQLite index beside a
folder store, kept current by the appends themselves, and nothing found that a role may not see."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import psycopg
import pytest

from core import JsonlSessionStore
from core.database.store import PostgresSessionStore
from core.search.body_index import BodyIndex
from core.search.finder import SessionSearch
from core.search.index_values import indexed_session, revision_key
from tests.conftest import compact, say_assistant, say_user
from tests.support.pg_cluster import Team, cluster, database, team

__all__ = ["cluster", "database", "team"]  # the fixtures


class _Target:
    id = "target"
    cwd = "/work/app"


def _converse(store: Any) -> None:
    """Sessions with words worth finding: CJK, mixed case, LIKE's own characters, a compaction."""
    storage = store.create("storage", cwd="/work/app", created_at=50)
    say_user(storage, "Where do the LOGS live? 日志在哪里")
    say_assistant(storage, "In zstd frames under ~/.dsh; 100% of them, with_underscores and a back\\slash")
    other = store.create("other", cwd="/elsewhere", created_at=40)
    say_user(other, "the wombat strategy")
    say_assistant(other, "caching the listing, 日志 too")
    compacted = store.create("compacted", cwd="/work/app", created_at=30)
    say_user(compacted, "an old question about otters")
    say_assistant(compacted, "an old answer about otters")
    compact(compacted, "summary: the otters were discussed, and the narwhal")
    say_user(compacted, "a question after the checkpoint")
    for session_id in ("storage", "other", "compacted"):
        store.release(session_id)


def _hits(search: SessionSearch, records: list[Any], query: str) -> list[tuple[str, str | None, str | None]]:
    result = search.search(_Target(), query, records=records, titles={}, limit=50)
    return [
        (hit.candidate.session_id, hit.field, hit.snippet.text if hit.snippet is not None else None)
        for hit in result.hits
    ]


NEEDLES = ["logs", "日志", "wombat", "100%", "with_under", "back\\slash", "otters", "narwhal", "zzz-nothing", "the"]


async def test_the_same_hits_and_snippets_as_the_sqlite_index(database: str, tmp_path: Path) -> None:
    jsonl = JsonlSessionStore(tmp_path)
    _converse(jsonl)
    jsonl.close()
    reader = JsonlSessionStore(tmp_path)
    records = await reader.list_sessions()
    body = BodyIndex(None)

    def read(session_id: str) -> Any:
        header = next(r.header for r in records if r.header.id == session_id)
        stored = reader.read_stored(header)
        return indexed_session(stored.revision, stored.surface, stored.title)

    body.sync([(r.header.id, revision_key(reader.listed_revision(r.header))) for r in records], read)
    store = PostgresSessionStore(database)
    _converse(store)
    pg_records = await store.list_sessions()
    assert [r.header for r in pg_records] == [r.header for r in records]
    index = store.message_index()
    for needle in NEEDLES:
        assert _hits(SessionSearch(index), pg_records, needle) == _hits(SessionSearch(body), records, needle), needle
    # The compaction replaced the old messages on the surface: only its summary and what followed
    # are found ("otters" only through the summary).
    assert _hits(SessionSearch(index), pg_records, "otters") == [
        ("compacted", "body", "summary: the otters were discussed, and the narwhal")
    ]
    index.close()
    store.close()


def test_search_is_current_after_every_append_and_an_import(database: str, tmp_path: Path) -> None:
    store = PostgresSessionStore(database)
    index = store.message_index()
    session = store.create("live", cwd="/w")
    say_user(session, "first words")
    assert index.candidates("first") == {"live": [0]}
    say_assistant(session, "a streamed narwhal answer")
    assert set(index.candidates("narwhal") or {}) == {"live"}
    compact(session, "only the summary remains")
    assert index.candidates("narwhal") == {} and set(index.candidates("summary") or {}) == {"live"}
    session.append("session/title", {"title": "Live title", "messageSeqs": [], "source": "user"})
    asyncio.run(store.list_sessions())
    assert store.listed_titles()["live"][1] == "Live title"
    # An import makes the whole session searchable in its one transaction.
    folder = JsonlSessionStore(tmp_path)
    say_user(folder.create("imported", cwd="/w"), "imported aardvark words")
    folder.close()
    from core.database.transfer import import_jsonl

    import_jsonl(tmp_path, store)
    assert set(index.candidates("aardvark") or {}) == {"imported"}
    index.close()
    store.close()


HOSTILE = {
    "'; DROP TABLE sessionref_messages; --": set(),
    "00%": {"storage"},  # "100%": LIKE's wildcards are taken literally
    "h_u": {"storage"},  # "with_underscores"
    "k\\s": {"storage"},  # "back\\slash"
    "%%%": set(),
    "_%_": set(),
    "a\x00b": set(),
    "x" * 1_000_000: set(),
    "\\%_": set(),
}


async def test_hostile_needles_change_nothing_and_match_only_literally(database: str) -> None:
    store = PostgresSessionStore(database)
    _converse(store)
    records = await store.list_sessions()
    index = store.message_index()
    search = SessionSearch(index)
    for needle, expected in HOSTILE.items():
        hits = _hits(search, records, needle)
        assert {hit[0] for hit in hits if hit[1] == "body"} == expected, repr(needle[:20])
    assert index.status.complete
    assert [r.header.id for r in await store.list_sessions()] == ["storage", "other", "compacted"]
    index.close()
    store.close()


async def test_nothing_a_role_may_not_see_is_ever_found(team: Team) -> None:
    alice = PostgresSessionStore(team.alice)
    say_user(alice.create("secret", cwd="/w"), "the hidden otter plan")
    say_user(alice.create("open", cwd="/w"), "the open otter plan")
    alice.share("open", team.team)
    alice.close()
    for who, expected in ((team.bob, {"open"}), (team.carol, set())):
        store = PostgresSessionStore(who)
        index = store.message_index()
        assert set(index.candidates("otter") or {}) == expected
        assert index.scan("secret", "otter") is None
        assert index.verify("secret", [0], "hidden") is None
        store.close()
        index.close()
        with psycopg.connect(who, autocommit=True) as connection:
            counted = connection.execute("SELECT count(*) FROM sessionref.sessionref_messages").fetchone()
            assert counted == (len(expected),)  # not even a count of what it may not see
            with pytest.raises(psycopg.errors.InsufficientPrivilege):
                connection.execute(
                    "INSERT INTO sessionref.sessionref_messages (session_id, position, role, body, folded) "
                    "VALUES ('secret', 9, 'user', 'planted', 'planted')"
                )


def test_a_search_can_be_interrupted(database: str) -> None:
    store = PostgresSessionStore(database)
    say_user(store.create("s", cwd="/w"), "words")
    index = store.message_index()
    index.interrupt()  # nothing running: harmless
    assert asyncio.run(asyncio.to_thread(index.candidates, "words")) == {"s": [0]}
    index.close()
    store.close()


async def test_hostile_titles_are_kept_as_text(database: str) -> None:
    store = PostgresSessionStore(database)
    session = store.create("titled", cwd="/w")
    say_user(session, "words")
    hostile = "[b]bold[/b] \x1b[2J <script> %_\\ ' ; DROP \x00 end"
    session.append("session/title", {"title": hostile, "messageSeqs": [], "source": "user"})
    await store.list_sessions()
    stored = store.listed_titles()["titled"][1]
    assert stored == hostile.replace("\x00", "\ufffd")  # text as it was, NUL as PostgreSQL can hold it
    title = await store.read_title("titled")
    assert title is not None and title.title == hostile  # the log itself keeps it exactly
    store.close()
