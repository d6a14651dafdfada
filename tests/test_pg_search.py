"""Message search in the PostgreSQL store: the same hits and snippets as the SQLite index beside a
folder store, kept current by the appends themselves, and nothing found that a role may not see."""

from __future__ import annotations

import asyncio
import threading
import time
from pathlib import Path
from typing import Any

import psycopg
import pytest

from core import JsonlSessionStore
from core.database.store import PostgresSessionStore
from core.errors import SessionQueryError
from core.search.body_index import BodyIndex
from core.search.finder import SessionSearch
from core.search.index_values import indexed_session, revision_key
from core.search.matching import marked_text
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
        # The same sessions, each found for the same reason; the order is each store's own ranking
        # (PostgreSQL's ts_rank_cd, the folder store's BM25), so where one session is found, the same
        # snippet too.
        in_pg = _hits(SessionSearch(index), pg_records, needle)
        in_folder = _hits(SessionSearch(body), records, needle)
        assert sorted(hit[:2] for hit in in_pg) == sorted(hit[:2] for hit in in_folder), needle
        if len(in_pg) == 1:
            assert in_pg == in_folder, needle
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


async def test_ranked_search_with_the_best_messages_under_row_level_security(team: Team) -> None:
    """Words in any order and form, ranked by PostgreSQL's ts_rank_cd, each session with its best
    messages at read_session's positions; a session the role may not see never counts, not even in
    how rare a word is."""
    alice = PostgresSessionStore(team.alice)
    storage = alice.create("storage", cwd="/w", created_at=10)
    say_user(storage, "Where should sessions live on disk?")
    say_assistant(storage, "One file per session, zstd frames with checksums.")
    say_user(storage, "And how do we keep a crash from corrupting a log?")
    say_assistant(storage, "Write each batch as one frame and fsync; readers ignore a torn last frame.")
    say_user(alice.create("crashes", cwd="/w", created_at=20), "the build crashed again on the runner")
    say_user(alice.create("private", cwd="/w", created_at=30), "corrupting crash fsync: alice's own notes")
    for session_id in ("storage", "crashes"):
        alice.share(session_id, team.team)
    alice.close()
    bob = PostgresSessionStore(team.bob)
    records = await bob.list_sessions()
    search = SessionSearch(bob.message_index())
    for query in ("fsync crash", "how do we avoid corrupting logs on crash", "crashed"):
        result = search.search(_Target(), query, records=records, titles={}, limit=10, passages=3)
        ids = [hit.candidate.session_id for hit in result.hits]
        assert "private" not in ids, query
        assert ids[0] == ("crashes" if query == "crashed" else "storage"), query
    best = search.search(_Target(), "how do we avoid corrupting logs on crash", records=records, titles={}, limit=10)
    snippet = best.hits[0].snippet
    assert snippet is not None and (snippet.message, snippet.role) == (2, "user")
    assert marked_text(snippet) == "And how do we keep a **crash** from **corrupting** a **log**?"
    assert [hit.candidate.session_id for hit in best.hits] == ["storage", "crashes"]  # some of the words: lower
    bob.close()


async def test_a_keystrokes_first_ranked_answer_reads_the_newest_sessions_under_row_level_security(
    team: Team, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A keystroke's first answer reads a common word in the sessions changed last (what the role
    may see), a rare one wherever it is; the full answer ranks every message that holds it; a
    first answer that cannot finish in time has no hits by words and never waits."""
    from core.database import search as pg_search
    from core.search.finder import FIRST_BUDGET
    from core.search.search_query import parse_query

    monkeypatch.setattr(pg_search, "QUICK_MESSAGES", 4)
    alice = PostgresSessionStore(team.alice)
    say_user(alice.create("rare", cwd="/w", created_at=1), "the quokka census")
    for number in range(12):
        session = alice.create(f"s{number:02d}", cwd="/w", created_at=10 + number)
        say_user(session, f"the lantern number {number}")
        say_assistant(session, "a lantern, lit")
    say_user(alice.create("private", cwd="/w", created_at=99), "alice's own lantern")
    for session_id in ("rare", *(f"s{number:02d}" for number in range(12))):
        alice.share(session_id, team.team)
    say_user(alice.get("s03"), "the lantern again")  # (changed last of those shared)
    alice.close()
    bob = PostgresSessionStore(team.bob)
    index = bob.message_index()
    typed = parse_query("lante", typing=True)
    quick = index.rank(typed, quick=True).scores
    assert set(quick) == {"s03", "s11"}  # the four newest messages: three, then one
    assert set(index.rank(typed).scores) == {f"s{number:02d}" for number in range(12)}
    assert set(index.rank(parse_query("quokk", typing=True), quick=True).scores) == {"rare"}
    records = await bob.list_sessions()
    first = SessionSearch(index).search(
        _Target(), "lante", records=records, titles={}, limit=10, budget=FIRST_BUDGET, typing=True
    )
    assert [hit.candidate.session_id for hit in first.hits][:2] == ["s03", "s11"]
    assert not first.complete  # the full answer follows
    with psycopg.connect(team.admin, autocommit=True) as admin:
        admin.execute("BEGIN")
        admin.execute("LOCK TABLE sessionref.sessionref_messages IN ACCESS EXCLUSIVE MODE")  # nothing can read
        began = time.perf_counter()
        assert index.rank(parse_query("lantern lit", typing=True), quick=True).scores == {}
        assert index.candidates("lantern", budget=0.0) is None  # no time left: dense, without asking
        assert time.perf_counter() - began < 1.0
        admin.execute("ROLLBACK")
    assert index.rank(parse_query("lantern lit", typing=True)).scores  # and then it answers
    index.close()
    bob.close()


def _left_at_version(database: str, version: int, *undo: str) -> None:
    """Make ``database`` as schema ``version`` left it (``undo``: statements removing what later
    versions added), check the store refuses it as outdated, and bring it up with ``db init``."""
    from core.database.setup import initialize_database

    with psycopg.connect(database, autocommit=True) as admin:
        for statement in undo:
            admin.execute(statement)  # type: ignore[arg-type]
        admin.execute("UPDATE sessionref.sessionref_schema SET version = %s", (version,))
    with pytest.raises(SessionQueryError) as outdated:
        PostgresSessionStore(database)
    assert outdated.value.code == "SESSION_QUERY_SCHEMA_OUTDATED"
    initialize_database(database)


async def test_a_version_4_database_gets_the_words_of_the_messages_it_holds(database: str) -> None:
    store = PostgresSessionStore(database)
    say_user(store.create("old", cwd="/w"), "the pangolin census was corrupted")
    store.close()
    _left_at_version(
        database,
        4,
        "DROP INDEX sessionref.sessionref_messages_words",
        "ALTER TABLE sessionref.sessionref_messages DROP COLUMN words",
    )
    store = PostgresSessionStore(database)
    records = await store.list_sessions()
    result = SessionSearch(store.message_index()).search(
        _Target(), "corrupting pangolins", records=records, titles={}, limit=5
    )
    assert [hit.candidate.session_id for hit in result.hits] == ["old"]
    store.close()


# -- search by meaning in the team store -----------------------------------------------------------------


async def test_search_by_meaning_in_the_team_store_under_row_level_security(team: Team) -> None:
    """Each owner's sessionref embeds its own sessions; a teammate finds a shared session by what it
    means, never a private one, and the vectors go with a rewritten message."""
    from core.search.meaning import LocalEmbedder

    embedder = LocalEmbedder()
    alice = PostgresSessionStore(team.alice)
    trip = alice.create("trip", cwd="/w", created_at=10)
    say_user(trip, "Any plans for the weekend?")
    say_assistant(trip, "The car broke down on the highway and we had to call a tow truck.")
    say_user(alice.create("private-car", cwd="/w", created_at=20), "My car broke down again, tow truck number two.")
    say_user(alice.create("certs", cwd="/w", created_at=30), "Rotate the TLS certificates before they expire.")
    for session_id in ("trip", "certs"):
        alice.share(session_id, team.team)
    index = alice.message_index()
    index.use_meaning(embedder)
    assert index.meaning is not None
    assert index.meaning.embed_pending() == 4  # every message alice owns
    assert index.meaning.embed_pending() == 0  # once
    assert index.meaning.progress().complete
    index.close()
    alice.close()

    bob = PostgresSessionStore(team.bob)
    records = await bob.list_sessions()
    own = bob.message_index()
    own.use_meaning(embedder)
    assert own.meaning is not None
    assert own.meaning.embed_pending() == 0  # bob owns nothing: he may not add alice's vectors
    with psycopg.connect(team.bob, autocommit=True) as connection:
        with pytest.raises(psycopg.errors.InsufficientPrivilege):
            connection.execute(
                "INSERT INTO sessionref.sessionref_vectors (session_id, position, model, dims, vector) "
                "VALUES ('trip', 0, 'x', 1, '\\x00')"
            )
        assert connection.execute("SELECT count(*) FROM sessionref.sessionref_vectors").fetchone() == (3,)
    search = SessionSearch(own)
    result = search.search(_Target(), "automobile trouble roadside", records=records, titles={}, limit=5, passages=3)
    assert [hit.candidate.session_id for hit in result.hits] == ["trip"]  # not alice's private one
    snippet = result.hits[0].snippet
    assert snippet is not None and (snippet.message, snippet.role) == (1, "assistant")
    assert snippet.text.startswith("The car broke down")
    own.close()
    bob.close()

    # A rewritten message takes its vector with it; the owner's next run embeds the new text.
    alice = PostgresSessionStore(team.alice)
    compact(alice.get("trip"), "summary: a breakdown on the road, towed to a garage")
    alice.release("trip")
    index = alice.message_index()
    index.use_meaning(embedder)
    assert index.meaning is not None
    with psycopg.connect(team.alice, autocommit=True) as connection:
        kept = connection.execute(
            "SELECT count(*) FROM sessionref.sessionref_vectors WHERE session_id = 'trip'"
        ).fetchone()
    assert kept == (0,)  # the compaction replaced its messages: their vectors went with them
    assert index.meaning.embed_pending() == 1
    index.close()
    alice.close()


async def test_a_version_5_database_gets_its_vectors_table(database: str) -> None:
    from core.search.meaning import LocalEmbedder

    store = PostgresSessionStore(database)
    say_user(store.create("old", cwd="/w"), "The car broke down on the highway.")
    store.close()
    _left_at_version(database, 5, "DROP TABLE sessionref.sessionref_vectors")
    store = PostgresSessionStore(database)
    index = store.message_index()
    index.use_meaning(LocalEmbedder())
    assert index.meaning is not None and index.meaning.embed_pending() == 1
    records = await store.list_sessions()
    result = SessionSearch(index).search(_Target(), "automobile trouble roadside", records=records, titles={}, limit=5)
    assert [hit.candidate.session_id for hit in result.hits] == ["old"]
    index.close()
    store.close()


def test_a_version_6_database_gets_its_sessions_indexed_by_revision(database: str) -> None:
    from core.search.search_query import parse_query

    store = PostgresSessionStore(database)
    say_user(store.create("old", cwd="/w"), "the pangolin census")
    store.close()
    _left_at_version(database, 6, "DROP INDEX sessionref.sessionref_sessions_revision")
    with psycopg.connect(database, autocommit=True) as admin:
        indexed = admin.execute("SELECT indexdef FROM pg_catalog.pg_indexes WHERE indexname = %s",
                                ("sessionref_sessions_revision",)).fetchone()  # fmt: skip
    assert indexed is not None and "(revision)" in indexed[0]
    store = PostgresSessionStore(database)
    index = store.message_index()
    assert set(index.rank(parse_query("pango", typing=True), quick=True).scores) == {"old"}
    index.close()
    store.close()


async def test_a_search_by_meaning_never_waits_behind_the_embedding(database: str) -> None:
    """Embedding runs its queries on a connection of its own (finding what has no vector yet reads
    every message the user owns: a second at a million): a search asked meanwhile answers at once.
    Here the embedding's connection is held for the whole search."""
    from core.search.meaning import LocalEmbedder

    store = PostgresSessionStore(database)
    say_user(store.create("trip", cwd="/w"), "The car broke down on the highway and we called a tow truck.")
    records = await store.list_sessions()
    index = store.message_index()
    index.use_meaning(LocalEmbedder())
    meaning = index.meaning
    assert meaning is not None and meaning.embed_pending() == 1
    found: list[Any] = []
    search = threading.Thread(
        target=lambda: found.append(
            SessionSearch(index).search(_Target(), "automobile trouble roadside", records=records, titles={}, limit=5)
        )
    )
    with meaning._embedding._lock:  # (an embedding query under way, for as long as it takes)
        search.start()
        search.join(30)
    assert found, "the search waited behind the embedding"
    result = found[0]
    assert [hit.candidate.session_id for hit in result.hits] == ["trip"]
    index.close()
    store.close()
