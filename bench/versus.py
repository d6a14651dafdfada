"""Head to head with the real dsh 0.1.0-rc.8 (under the Node 22 binary ``make interop`` installs),
on the same files in the same run: prepare, listing (cold and warm) and loading one log.

Every figure is an in-process median on each side (dsh times its own calls inside Node; process
start and JSON transport are outside both). Before any timing counts, both sides must have produced
the same thing: byte-identical prompt prefixes, the same headers, the same events.
"""

from __future__ import annotations

import asyncio
import gc
import statistics
import tempfile
import time
from collections.abc import Callable
from typing import Any

from bench.store import cold_listing, listing_root
from bench.workload import conversation_events, write_big_log
from core import JsonlSessionStore, MemorySessionStore, ReferenceInput, SessionReferenceService
from tests.rc8 import NODE, dsh, rc8_snapshots

_LOOP = asyncio.new_event_loop()


class Mismatch(AssertionError):
    """The two sides did not produce the same result: no timing of this workload is printed."""


def _median_ms(work: Callable[[], Any], repeats: int) -> float:
    samples = []
    for _ in range(repeats):
        # Each sample starts from a collected heap: rc.8 runs in a fresh Node process, while this one
        # still holds what earlier benchmarks left (a full collection over it is not the load's cost).
        gc.collect()
        started = time.perf_counter()
        work()
        samples.append(time.perf_counter() - started)
    return statistics.median(samples) * 1000


def _row(name: str, theirs: float, ours: float, note: str = "") -> None:
    ratio = ours / theirs
    verdict = "ok" if ratio <= 1.0 else "SLOWER"
    print(f"  {name:<48} {theirs:10.1f} ms {ours:10.1f} ms {ratio:9.4f}x  {verdict} {note}".rstrip())


def _header() -> None:
    print(f"  {'workload (in-process medians)':<48} {'dsh rc.8':>13} {'sessionref':>13} {'ours/dsh':>10}")


def versus_prepare(repeats: int) -> None:
    store = MemorySessionStore(clock=lambda: 0)
    target = store.create("target", cwd="/bench/project")
    ids = [f"source-{index}" for index in range(3)]
    for index, source_id in enumerate(ids):
        source = store.create(source_id, cwd="/bench/project")
        for event in conversation_events(1_000, seed=index):
            source.append(event.type, event.data, surface_op="append")
    snapshots = _LOOP.run_until_complete(rc8_snapshots(store, ids))
    references = [{"sessionId": source_id} for source_id in ids]
    theirs = dsh(
        "timed",
        timeout=1800,
        kind="prepare",
        repeats=max(1, min(repeats, 2)),  # seconds each: rc.8's prepare is quadratic
        target="target",
        references=references,
        snapshots=snapshots,
        config={},
    )
    service = SessionReferenceService(store)
    content = [{"type": "text", "text": "compare these"}]
    inputs = [ReferenceInput(source_id) for source_id in ids]
    prepared = _LOOP.run_until_complete(service.prepare(target, content, inputs))
    result = theirs["result"]
    if not result["ok"] or prepared.contexts[0].content[0]["text"] != result["text"]:
        raise Mismatch("prepare: the prompt prefixes differ")
    size = len(result["text"].encode("utf-8"))
    ours = _median_ms(lambda: _LOOP.run_until_complete(service.prepare(target, content, inputs)), repeats)
    _row(
        "prepare, 3 sources x 1,000 messages, 64 KiB",
        statistics.median(theirs["samples"]),
        ours,
        f"(same {size:,} bytes)",
    )


def versus_listing(repeats: int, count: int = 10_000) -> None:
    root = listing_root(count)
    runs = max(1, min(repeats, 3))  # seconds each on rc.8
    theirs = dsh("timed", timeout=1800, kind="list", repeats=runs, root=str(root), compression="zstd")
    store = JsonlSessionStore(root)
    records = _LOOP.run_until_complete(store.list_sessions())
    ours_headers = sorted((r.header.to_wire() for r in records), key=lambda header: header["id"])
    their_headers = sorted(theirs["result"], key=lambda header: header["id"])
    if ours_headers != their_headers:
        raise Mismatch(f"listing: the headers differ ({len(ours_headers)} ours, {len(their_headers)} dsh's)")
    # Cold: a fresh process, once on the very first start (no listing cache yet), once as every later
    # start finds the store (the cache our last run wrote). rc.8 has no such cache: the same files.
    first = [cold_listing(root, cache=False)[1] * 1000 for _ in range(repeats)]
    colds = [cold_listing(root, cache=True)[1] * 1000 for _ in range(repeats)]
    warm = _median_ms(lambda: _LOOP.run_until_complete(store.list_sessions()), repeats)
    cold_theirs = statistics.median(theirs["samples"])
    _row(f"list {count:,} sessions, zstd, cold, first start", cold_theirs, statistics.median(first))
    _row(f"list {count:,} sessions, zstd, cold, later starts", cold_theirs, statistics.median(colds))
    _row(f"list {count:,} sessions, zstd, warm", statistics.median(theirs["warm"]), warm)


def versus_load(repeats: int) -> None:
    with tempfile.TemporaryDirectory() as directory:
        write_big_log(directory)
        theirs = dsh("timed", timeout=600, kind="load", repeats=repeats, root=directory, compression="zstd", id="big")
        header, events = JsonlSessionStore(directory).read_log("big")
        if (
            header.to_wire() != theirs["result"]["meta"]
            or [event.to_wire() for event in events] != theirs["result"]["events"]
        ):
            raise Mismatch("load: the events differ")
        dsh_ms = statistics.median(theirs["samples"])

        def surface() -> None:
            _LOOP.run_until_complete(JsonlSessionStore(directory).read_surface("big"))

        def log() -> None:
            JsonlSessionStore(directory).read_log("big")

        def get() -> None:
            store = JsonlSessionStore(directory)
            store.get("big")
            store.close()

        note = f"({len(events):,} events, same events)"
        _row("load a 20,000-event zstd log: read_surface", dsh_ms, _median_ms(surface, repeats), note)
        _row("load a 20,000-event zstd log: read_log", dsh_ms, _median_ms(log, repeats))
        _row("load a 20,000-event zstd log: get (locks)", dsh_ms, _median_ms(get, repeats))


def main(repeats: int) -> None:
    print("\n## Head to head with dsh 0.1.0-rc.8 (same data, same run)")
    if NODE is None:
        print("  skipped: the dsh packages are not installed (make interop)")
        return
    _header()
    versus_load(repeats)
    versus_listing(repeats)
    versus_prepare(repeats)
