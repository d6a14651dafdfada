"""Benchmarks of the durable JSONL store: listing, loading, appending."""

from __future__ import annotations

import asyncio
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
import tracemalloc
from collections.abc import Callable
from pathlib import Path

import zstandard

from bench.workload import conversation_events
from core import JsonlSessionStore

# One loop for every measurement, as in the app; asyncio.run's per-call teardown would dominate.
_LOOP = asyncio.new_event_loop()
_LISTING_ROOT = Path(tempfile.gettempdir()) / "sessionref-bench-10k-v1"
_COLD_LISTING = """
import asyncio, sys, time
started = time.perf_counter()
from core import JsonlSessionStore
store = JsonlSessionStore(sys.argv[1])
records = asyncio.run(store.list_sessions())
print(len(records), time.perf_counter() - started)
"""


def _seed_listing_root(count: int) -> Path:
    marker = _LISTING_ROOT / ".complete"
    if marker.exists():
        return _LISTING_ROOT
    store = JsonlSessionStore(_LISTING_ROOT)
    for index in range(count):
        session = store.create(f"session-{index:05}", cwd=f"/home/user/project-{index % 40}", created_at=index)
        session.append(
            "user/message",
            {"content": [{"type": "text", "text": f"hello {index}"}], "source": {"kind": "user"}},
            surface_op="append",
        )
        store.release(session.id)
    marker.write_text("ok")
    return _LISTING_ROOT


def bench_listing(repeats: int) -> None:
    print("\n## Listing 10,000 sessions (JsonlSessionStore, zstd)")
    began = time.perf_counter()
    root = _seed_listing_root(10_000)
    if time.perf_counter() - began > 1:
        print(f"  (seeded the root once in {time.perf_counter() - began:.0f} s: {root})")
    env = dict(os.environ, PYTHONPATH=str(Path(__file__).parent.parent))
    colds = []
    for _ in range(repeats):
        out = subprocess.run(
            [sys.executable, "-c", _COLD_LISTING, str(root)], capture_output=True, text=True, env=env, check=True
        )
        count, seconds = out.stdout.split()
        colds.append(float(seconds))
    store = JsonlSessionStore(root)
    _LOOP.run_until_complete(store.list_sessions())
    warms = []
    for _ in range(repeats):
        started = time.perf_counter()
        records = _LOOP.run_until_complete(store.list_sessions())
        warms.append(time.perf_counter() - started)
    files = [entry.path + "/session.jsonl.zstd" for p in os.scandir(root) if p.is_dir() for entry in os.scandir(p.path)]
    floors = []
    for _ in range(repeats):
        started = time.perf_counter()
        for path in files:
            os.stat(path)
        floors.append(time.perf_counter() - started)
    cold, warm = statistics.median(colds) * 1000, statistics.median(warms) * 1000
    stat_floor = statistics.median(floors) * 1000
    print(f"  cold (fresh process, import included): {cold:8.1f} ms   (target <= 2000 ms, {count} sessions)")
    print(f"  warm (revision cache hit):             {warm:8.1f} ms   (target <= 50 ms, {len(records)} sessions)")
    print(f"  floor: one os.stat per session file:   {stat_floor:8.1f} ms")
    print(f"  warm / stat floor:                     {warm / stat_floor:8.2f}x     (target <= 2x, per-file revisions)")


def _floor(path: Path) -> float:
    started = time.perf_counter()
    raw = path.read_bytes()
    offset = 0
    while offset < len(raw):
        decompressor = zstandard.ZstdDecompressor().decompressobj()
        content = decompressor.decompress(raw[offset:])
        offset = len(raw) - len(decompressor.unused_data)
        for line in content.splitlines():
            json.loads(line)
    return time.perf_counter() - started


def _parsed_objects(path: Path) -> list[object]:
    """Every row of the file parsed and held: the memory any reader of the whole log must pay."""
    raw = path.read_bytes()
    rows: list[object] = []
    offset = 0
    while offset < len(raw):
        decompressor = zstandard.ZstdDecompressor().decompressobj()
        content = decompressor.decompress(raw[offset:])
        offset = len(raw) - len(decompressor.unused_data)
        rows.extend(json.loads(line) for line in content.splitlines())
        del content
    return rows


def _traced_peak(work: Callable[[], object]) -> int:
    tracemalloc.start()
    kept = work()
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    del kept
    return peak


def bench_read_surface(repeats: int) -> None:
    print("\n## read_surface of a 20,000-event log (zstd, 1,000-event frames)")
    with tempfile.TemporaryDirectory() as directory:
        store = JsonlSessionStore(directory)
        session = store.create("big", cwd="/bench")
        events = conversation_events(20_000)
        for start in range(0, len(events), 1000):
            session.append_batch([(e.type, e.data, "append", None) for e in events[start : start + 1000]])
        store.close()
        path = store.session_path("big", "/bench")
        raw = path.read_bytes()
        decompressed = 0
        offset = 0
        while offset < len(raw):
            decompressor = zstandard.ZstdDecompressor().decompressobj()
            decompressed += len(decompressor.decompress(raw[offset:]))
            offset = len(raw) - len(decompressor.unused_data)
        floors, reads = [], []
        for _ in range(repeats):
            floors.append(_floor(path))
            fresh = JsonlSessionStore(directory)  # a new instance: no cached log
            started = time.perf_counter()
            _LOOP.run_until_complete(fresh.read_surface("big"))
            reads.append(time.perf_counter() - started)
        peaks = [
            _traced_peak(lambda: _LOOP.run_until_complete(JsonlSessionStore(directory).read_surface("big")))
            for _ in range(3)
        ]
        objects_floors = [_traced_peak(lambda: _parsed_objects(path)) for _ in range(3)]
        peak, objects_floor = statistics.median(peaks), statistics.median(objects_floors)
        floor, read = statistics.median(floors), statistics.median(reads)
        print(f"  file {len(raw) / 1e6:.1f} MB compressed, {decompressed / 1e6:.1f} MB decompressed")
        print(f"  floor (decompress + json.loads per line): {floor * 1000:8.1f} ms")
        ratio, memory = read / floor, peak / decompressed
        print(
            f"  read_surface (cold instance):             {read * 1000:8.1f} ms   ratio {ratio:.2f}x (target <= 1.5x)"
        )
        print(f"  peak traced memory during read_surface:   {peak / 1e6:8.1f} MB   = {memory:.1f}x decompressed")
        print(f"  floor: the parsed rows held in memory:    {objects_floor / 1e6:8.1f} MB")
        print(f"  read_surface peak / parsed-objects floor: {peak / objects_floor:8.2f}x     (target <= 1.2x)")


def bench_append(repeats: int) -> None:
    print("\n## Append throughput (fsync per batch)")
    with tempfile.TemporaryDirectory() as directory:
        store = JsonlSessionStore(directory)
        session = store.create("appender")
        data = {"content": [{"type": "text", "text": "x" * 200}], "source": {"kind": "user"}}
        session.append("user/message", data, surface_op="append")
        count = 300
        rates = []
        for _ in range(repeats):
            started = time.perf_counter()
            for _ in range(count):
                session.append("user/message", data, surface_op="append")
            rates.append(count / (time.perf_counter() - started))
        store.close()
    print(f"  single-event batches: {statistics.median(rates):8.0f} appends/s (median of {repeats} x {count})")
