"""Head to head with the real dsh 0.1.0-rc.8 (under the Node 22 binary ``make interop`` installs),
on the same files in the same run: prepare, listing (cold and warm) and loading one log.

Every figure is an in-process median on each side (dsh times its own calls inside Node; process
start and JSON transport are outside both). Before any timing counts, both sides must have produced
the same thing: byte-identical prompt prefixes, the same headers, the same events.
"""

from __future__ import annotations

import asyncio
import contextlib
import gc
import statistics
import tempfile
import time
from collections.abc import Callable, Iterator
from typing import Any

from bench.store import cold_listing, listing_root
from bench.workload import conversation_events, write_big_log
from core import JsonlSessionStore, MemorySessionStore, ReferenceInput, SessionReferenceService
from core.folder import jsonl_codec
from tests.support.rc8 import NODE, dsh, rc8_snapshots

_LOOP = asyncio.new_event_loop()


class Mismatch(AssertionError):
    """The two sides did not produce the same result: no timing of this workload is printed."""


def _median_ms(work: Callable[[], Any], repeats: int) -> float:
    return statistics.median(_collected_samples_ms(work, repeats))


def _busy_samples_ms(work: Callable[[], Any], repeats: int) -> list[float]:
    """``work`` timed as a busy process does it: no collection before a sample, and each result held
    until the next one is in (so a load runs beside the previous one's objects)."""
    samples = []
    held = work()  # a previous load of the same size
    for _ in range(repeats):
        started = time.perf_counter()
        result = work()
        samples.append((time.perf_counter() - started) * 1000)
        held = result
    del held
    return samples


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


BUSY_SESSIONS = 10_000
"""Sessions the busy process lists (in zstd, and again in plain JSONL) and holds before it loads."""
BUSY_SAMPLES = 9
"""Samples per busy row, at least (medians of at least 7, as the issue asks)."""


LOAD_TARGETS = {"read_surface": 0.5, "get (locks)": 0.6}
"""The load rows' targets, as ratios of rc.8's time (the others are printed for what they show)."""


def _busy_row(name: str, theirs: list[float], ours: list[float], note: str = "") -> None:
    """A load row: medians, their ratio against the row's target (``LOAD_TARGETS``, by the name's
    last part), and the spread (max/min) of our samples (target <= 1.5x)."""
    spread = max(ours) / min(ours)
    ratio = statistics.median(ours) / statistics.median(theirs)
    target = LOAD_TARGETS.get(name.split(": ", 1)[-1])
    if target is None:
        verdict = "(no target)"
    else:
        verdict = (
            f"{'ok' if ratio <= target and spread <= 1.5 else 'SLOWER' if ratio > target else 'SPREAD'} <= {target}x"
        )
    print(
        f"  {name:<48} {statistics.median(theirs):10.1f} ms {statistics.median(ours):10.1f} ms {ratio:9.4f}x  "
        f"{verdict}, spread {spread:.2f}x, {len(ours)} samples {note}".rstrip()
    )


@contextlib.contextmanager
def _whole_rows() -> Iterator[None]:
    """Every row decoded whole at load, as the reader did before it deferred each event's data."""
    saved = jsonl_codec.envelopes
    jsonl_codec.envelopes = lambda content: None  # type: ignore[assignment]
    try:
        yield
    finally:
        jsonl_codec.envelopes = saved


def _every_data_row(
    name: str, theirs: list[float], work: Callable[[], Any], samples: Callable[..., list[float]], runs: int
) -> None:
    """What a load costs a reader of every event's data: ours (each event's data decoded on first
    read), and the reader that decoded every row at load, in the same run."""

    def read_all() -> Any:
        events = work()
        for event in events:
            _ = event.data
        return events

    deferred = samples(read_all, runs)
    with _whole_rows():
        whole = samples(read_all, runs)
    _busy_row(name, theirs, deferred, f"(decoding every row at load: {statistics.median(whole):.1f} ms)")


def versus_load_busy(repeats: int, directory: str) -> None:
    """Loading inside a busy process: both sides first list ``BUSY_SESSIONS`` sessions twice (zstd
    and plain) and hold what they listed, and each load runs while the previous one is still held.
    Nothing is frozen here (the app freezes its listing with ``gc.freeze``; measured, that changes
    nothing for a load, which runs with the collector paused)."""
    roots = [(listing_root(BUSY_SESSIONS, compression), compression) for compression in ("zstd", "none")]
    runs = max(repeats, BUSY_SAMPLES)
    busy = [{"root": str(root), "compression": compression} for root, compression in roots]
    theirs = dsh(
        "timed", timeout=900, kind="load", repeats=runs, root=directory, compression="zstd", id="big", busy=busy
    )
    held = []
    for root, compression in roots:
        store = JsonlSessionStore(root, compression=compression)  # type: ignore[arg-type]
        held.append((store, _LOOP.run_until_complete(store.list_sessions())))
    if [len(records) for _, records in held] != [BUSY_SESSIONS] * 2 or theirs["held"] != [BUSY_SESSIONS] * 2:
        raise Mismatch(f"busy: listed {[len(r) for _, r in held]} here, {theirs['held']} in dsh")
    try:

        def surface() -> Any:
            return _LOOP.run_until_complete(JsonlSessionStore(directory).read_surface("big"))

        def log() -> Any:
            return JsonlSessionStore(directory).read_log("big")

        def get() -> Any:
            store = JsonlSessionStore(directory)
            session = store.get("big")
            store.close()
            return session

        note = f"(after listing {BUSY_SESSIONS:,} twice, the previous load held)"
        their_samples = theirs["samples"]
        _busy_row("busy process: read_surface", their_samples, _busy_samples_ms(surface, runs), note)
        _busy_row("busy process: read_log", their_samples, _busy_samples_ms(log, runs))
        _busy_row("busy process: get (locks)", their_samples, _busy_samples_ms(get, runs))
        _every_data_row(
            "busy process: read_surface, every data read",
            their_samples,
            lambda: surface().events,
            _busy_samples_ms,
            runs,
        )
    finally:
        del held


def _collected_samples_ms(work: Callable[[], Any], repeats: int) -> list[float]:
    """``work`` timed from a collected heap, nothing of the previous sample alive."""
    samples = []
    for _ in range(repeats):
        # Each sample starts from a collected heap: rc.8 runs in a fresh Node process, while this one
        # still holds what earlier benchmarks left (a full collection over it is not the load's cost).
        gc.collect()
        started = time.perf_counter()
        work()
        samples.append((time.perf_counter() - started) * 1000)
    return samples


def versus_load(repeats: int) -> None:
    """Loading one 20,000-event log, both ways: from a collected heap with nothing else alive, and
    inside a busy process (``versus_load_busy``); at least ``BUSY_SAMPLES`` samples each."""
    runs = max(repeats, BUSY_SAMPLES)
    with tempfile.TemporaryDirectory() as directory:
        write_big_log(directory)
        theirs = dsh("timed", timeout=600, kind="load", repeats=runs, root=directory, compression="zstd", id="big")
        header, events = JsonlSessionStore(directory).read_log("big")
        if (
            header.to_wire() != theirs["result"]["meta"]
            or [event.to_wire() for event in events] != theirs["result"]["events"]
        ):
            raise Mismatch("load: the events differ")

        def surface() -> Any:
            return _LOOP.run_until_complete(JsonlSessionStore(directory).read_surface("big"))

        def log() -> None:
            JsonlSessionStore(directory).read_log("big")

        def get() -> None:
            store = JsonlSessionStore(directory)
            store.get("big")
            store.close()

        note = f"({len(events):,} events, same events)"
        their_samples = theirs["samples"]
        _busy_row("collected heap: read_surface", their_samples, _collected_samples_ms(surface, runs), note)
        _busy_row("collected heap: read_log", their_samples, _collected_samples_ms(log, runs))
        _busy_row("collected heap: get (locks)", their_samples, _collected_samples_ms(get, runs))
        _every_data_row(
            "collected heap: read_surface, every data read",
            their_samples,
            lambda: surface().events,
            _collected_samples_ms,
            runs,
        )
        versus_load_busy(repeats, directory)


def main(repeats: int) -> None:
    print("\n## Head to head with dsh 0.1.0-rc.8 (same data, same run)")
    if NODE is None:
        print("  skipped: the dsh packages are not installed (make interop)")
        return
    print(f"  Loading one 20,000-event zstd log (medians of {max(repeats, BUSY_SAMPLES)} samples each side):")
    _header()
    versus_load(repeats)
    print()
    _header()
    versus_listing(repeats)
    versus_prepare(repeats)
