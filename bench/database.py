"""The folder store (JSONL + SQLite index) and the PostgreSQL store side by side, in one run, on the
same 10,000 sessions / 1,000,000 messages (``bench.search``'s store), then the load run.

PostgreSQL is a throwaway cluster of Debian's server on a Unix socket, with ``fsync`` on (as a real
server runs), started and removed by the benchmark itself (``tests.support.pg_cluster``).
"""

from __future__ import annotations

import asyncio
import multiprocessing
import random
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import psycopg

from bench.app import percentile, print_latencies, type_mentions
from bench.search import PICKER_WORDS, RANKED_QUERIES, build, seed_root
from core import EchoModel, JsonlSessionStore
from core.database.store import PostgresSessionStore
from core.database.transfer import import_jsonl
from core.search.body_index import index_path_beside
from core.search.search_query import parse_query
from tests.support.pg_cluster import running_cluster

_CWD = "/home/user/project-1"
LOAD_SECONDS = 60
LOAD_WRITERS = 20
LOAD_READERS = 5
MEMBER = "bench_member"
"""A login role (no superuser) that owns the imported sessions: what a team member's searches cost
under row-level security, where the superuser the import ran as bypasses it."""


def _median_ms(samples: list[float]) -> float:
    return statistics.median(samples) * 1000


def _timed(work: Any, repeats: int) -> list[float]:
    samples = []
    for _ in range(repeats):
        started = time.perf_counter()
        work()
        samples.append(time.perf_counter() - started)
    return samples


def _appends(store: Any, count: int) -> float:
    """Appends per second: one user message per batch, each durable before the next."""
    session = store.create(f"appender-{time.time_ns()}", cwd=_CWD)
    data = {"content": [{"type": "text", "text": "x" * 200}], "source": {"kind": "user"}}
    session.append("user/message", data, surface_op="append")
    started = time.perf_counter()
    for _ in range(count):
        session.append("user/message", data, surface_op="append")
    return count / (time.perf_counter() - started)


async def _picker(store: Any, rounds: int) -> list[float]:
    from tui.app.sessionref_app import make_app

    app = make_app(store, EchoModel(), cwd=_CWD, refresh_interval=3600, cursor_blink=False)
    async with app.run_test(size=(120, 40)) as pilot:
        await asyncio.wait_for(app.workspace.catalog_loaded.wait(), 300)
        index = app.workspace.message_index
        while index is not None and not (index.status.complete and not app.indexer.running):  # noqa: ASYNC110
            await asyncio.sleep(0.05)
        for _ in range(rounds):
            await type_mentions(app, pilot, PICKER_WORDS)
        return list(app.trace.picker_latencies)


def side_by_side(conninfo: str, root: Path, repeats: int) -> None:
    print(
        "\n## The folder store (JSONL + SQLite index) and PostgreSQL side by side, 10,000 sessions / 1,000,000 messages"
    )
    store = PostgresSessionStore(conninfo)
    started = time.perf_counter()
    report = import_jsonl(root, store)
    seconds = time.perf_counter() - started
    print(f"  import into PostgreSQL: {seconds:.0f} s for {report.copied:,} sessions, {report.events:,} events"
          f" (target <= 180 s; messages indexed in the same transactions)")  # fmt: skip
    folder = JsonlSessionStore(root)
    asyncio.run(folder.list_sessions())
    asyncio.run(store.list_sessions())

    def cold_read() -> None:
        asyncio.run(JsonlSessionStore(root).read_surface("session-00042"))  # a new instance: no cached log

    rows = [
        ("warm listing", _timed(lambda: asyncio.run(folder.list_sessions()), repeats),
         _timed(lambda: asyncio.run(store.list_sessions()), repeats), "<= 50 ms"),
        ("read_surface (100 messages)", _timed(cold_read, repeats),
         _timed(lambda: asyncio.run(store.read_surface("session-00042")), repeats), ""),
    ]  # fmt: skip
    print(f"  {'':32} {'folder':>12} {'PostgreSQL':>12}")
    for name, ours, theirs, target in rows:
        print(f"  {name:32} {_median_ms(ours):9.1f} ms {_median_ms(theirs):9.1f} ms  {target}")
    with tempfile.TemporaryDirectory() as scratch:
        jsonl_rate = _appends(JsonlSessionStore(scratch), 300)
    pg_rate = _appends(store, 300)
    print(f"  {'appends/s (one durable batch each)':32} {jsonl_rate:12.0f} {pg_rate:12.0f}")
    store.close()
    if not (index_path_beside(root) / ".complete").exists() and not any(index_path_beside(root).glob("*")):
        print(f"  (building the folder store's SQLite index first: {build(root, index_path_beside(root)):.0f} s)")
    rounds = max(2, repeats // 2)
    print(f"  picker, message search on, typing @{', @'.join(PICKER_WORDS)}: key received -> painted")
    print("  folder store:")
    print_latencies(asyncio.run(_picker(JsonlSessionStore(root), rounds)), "    ")
    print("  PostgreSQL, as the superuser (row-level security bypassed):")
    print_latencies(asyncio.run(_picker(PostgresSessionStore(conninfo), rounds)), "    ")
    member = _member(conninfo)
    print(f"  PostgreSQL, as {MEMBER}, who owns the sessions (row-level security applies):")
    print_latencies(asyncio.run(_picker(PostgresSessionStore(member), rounds)), "    ")
    print("  ranked word search (the database's part of search_sessions), p50 over the bench's queries:")
    for who, role in ((conninfo, "superuser"), (member, MEMBER)):
        print(f"    {role:12} {_median_ms(_ranked(who, repeats)):8.1f} ms")


def _member(conninfo: str) -> str:
    """``MEMBER``'s connection string, the role created and given every session."""
    with psycopg.connect(conninfo, autocommit=True) as admin:
        if admin.execute("SELECT 1 FROM pg_catalog.pg_roles WHERE rolname = %s", (MEMBER,)).fetchone() is None:
            admin.execute(f"CREATE ROLE {MEMBER} LOGIN")
        admin.execute(f"UPDATE sessionref.sessionref_sessions SET owner = '{MEMBER}'")
        admin.execute("VACUUM ANALYZE sessionref.sessionref_sessions")
    return conninfo.replace("user=postgres", f"user={MEMBER}")


def _ranked(conninfo: str, repeats: int) -> list[float]:
    """Seconds of each full ranked word query of ``RANKED_QUERIES`` in the database."""
    store = PostgresSessionStore(conninfo)
    index = store.message_index()
    samples = []
    for query in RANKED_QUERIES:
        parsed = parse_query(query)
        samples += _timed(lambda parsed=parsed: index.rank(parsed), max(1, repeats // 2))  # type: ignore[misc]
    index.close()
    store.close()
    return samples


# -- the load run -------------------------------------------------------------------------------------


def _writer(conninfo: str, number: int, stop_at: float, results: Any) -> None:
    """Stream replies into a session of its own until ``stop_at``: a prompt, 40 chunks flushed
    every 10, then the message and the step's end. Reports the events the store acknowledged."""
    store = PostgresSessionStore(conninfo)
    session = store.create(f"load-{number:02}", cwd=_CWD)
    turn = batches = 0
    rng = random.Random(number)
    while time.time() < stop_at:
        turn += 1
        session.append("user/message", {"content": [{"type": "text", "text": f"question {turn} about retry"}],
                                        "source": {"kind": "user"}}, surface_op="append")  # fmt: skip
        session.append("step/start", {"turn": turn, "step": 0})
        words = [rng.choice(["the ", "retry ", "loop ", "works ", "storage "]) for _ in range(40)]
        for index, word in enumerate(words):
            chunk = {"turn": turn, "step": 0, "chunk": {"type": "text-delta", "index": 0, "text": word}}
            session.append("assistant/chunk", chunk, buffered=True)
            if index % 10 == 9:
                session.flush()
                batches += 1
        message = {"turn": turn, "step": 0, "content": [{"type": "text", "text": "".join(words)}]}
        session.append_batch([("assistant/message", message, "append", None),
                              ("step/end", {"turn": turn, "step": 0}, None, None)])  # fmt: skip
        batches += 3
    results.put(("writer", session.id, len(session.events), batches))
    store.close()


def _reader(conninfo: str, number: int, stop_at: float, results: Any) -> None:
    """List, search and prepare references until ``stop_at``; reports the latencies."""
    from core import ReferenceConfig, ReferenceInput, SessionReferenceService
    from core.search.finder import SessionSearch

    store = PostgresSessionStore(conninfo)
    index = store.message_index()
    search = SessionSearch(index)
    service = SessionReferenceService(store, ReferenceConfig())  # reads the database directly
    rng = random.Random(100 + number)
    searches: list[float] = []
    prepares: list[float] = []
    lists: list[float] = []

    class Target:
        id = f"reader-{number}"
        cwd = _CWD

    while time.time() < stop_at:
        started = time.perf_counter()
        records = asyncio.run(store.list_sessions())
        lists.append(time.perf_counter() - started)
        started = time.perf_counter()
        search.search(Target(), rng.choice(["retry", "storage", "quokka", "checksum"]), records=records, titles={},
                      limit=50)  # fmt: skip
        searches.append(time.perf_counter() - started)
        chosen = rng.choice(records[:200]).header.id
        started = time.perf_counter()
        content = [{"type": "text", "text": "what about this one?"}]
        asyncio.run(service.prepare(Target(), content, [ReferenceInput(chosen)]))
        prepares.append(time.perf_counter() - started)
    results.put(("reader", lists, searches, prepares))
    index.close()
    store.close()


def load_run(conninfo: str, seconds: float = LOAD_SECONDS) -> None:
    print(f"\n## Load run: {LOAD_WRITERS} writers streaming replies into their own sessions, {LOAD_READERS} readers"
          f" listing, searching and preparing references, {seconds:.0f} s (10,000 sessions present)")  # fmt: skip
    context = multiprocessing.get_context("spawn")
    results = context.Queue()
    stop_at = time.time() + seconds
    processes = [context.Process(target=_writer, args=(conninfo, n, stop_at, results)) for n in range(LOAD_WRITERS)]
    processes += [context.Process(target=_reader, args=(conninfo, n, stop_at, results)) for n in range(LOAD_READERS)]
    for process in processes:
        process.start()
    reports = [results.get(timeout=seconds + 300) for _ in processes]
    for process in processes:
        process.join()
    writers = [report for report in reports if report[0] == "writer"]
    readers = [report for report in reports if report[0] == "reader"]
    store = PostgresSessionStore(conninfo)
    missing = 0
    for _kind, session_id, acknowledged, _batches in writers:
        _header, events = store.read_log(session_id)
        missing += max(0, acknowledged - len(events))
        assert [event.seq for event in events[:acknowledged]] == list(range(acknowledged))
    store.close()
    events = sum(report[2] for report in writers)
    batches = sum(report[3] for report in writers)
    print(f"  appends: {batches / seconds:,.0f} batches/s, {events / seconds:,.0f} events/s"
          f" ({events:,} events acknowledged; {missing} missing afterwards)")  # fmt: skip
    for name, position in (("listing", 1), ("search", 2), ("prepare", 3)):
        samples = [sample for report in readers for sample in report[position]]
        p50, p95 = statistics.median(samples) * 1000, percentile(samples, 0.95) * 1000
        print(f"  {name:8} p50 {p50:7.1f} ms   p95 {p95:7.1f} ms   ({len(samples)} by {LOAD_READERS} readers)")


def main(repeats: int = 5) -> None:
    root, _text = seed_root()
    with running_cluster(durable=True) as server:
        side_by_side(server.conninfo, root, repeats)
        load_run(server.conninfo)


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 5)
