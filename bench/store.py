"""Benchmarks of the durable JSONL store: listing, loading, appending."""

from __future__ import annotations

import asyncio
import os
import statistics
import subprocess
import sys
import tempfile
import time
import tracemalloc
from collections.abc import Callable
from pathlib import Path

import msgspec
import zstandard

from bench.workload import write_big_log
from core import JsonlSessionStore, SessionEvent, SessionHeader, js_json_stringify
from core.collector import collector_paused
from core.sessions.jsonl_codec import header_line
from core.sessions.jsonl_layout import session_file

# One loop for every measurement, as in the app; asyncio.run's per-call teardown would dominate.
_LOOP = asyncio.new_event_loop()
_COLD_LISTING = """
import asyncio, sys, time
started = time.perf_counter()
from core import JsonlSessionStore
store = JsonlSessionStore(sys.argv[1])
records = asyncio.run(store.list_sessions())
print(len(records), time.perf_counter() - started)
"""


def listing_root(count: int) -> Path:
    """A zstd store of ``count`` one-message sessions over 40 project folders, written once per
    machine (kept in the temporary folder and reused): header frame plus one event frame each,
    the bytes our store writes, without an fsync per file."""
    root = Path(tempfile.gettempdir()) / f"sessionref-bench-{count // 1000}k-v1"
    marker = root / ".complete"
    if marker.exists():
        return root
    compressor = zstandard.ZstdCompressor(level=3, write_checksum=True, write_content_size=True)
    for index in range(count):
        header = SessionHeader(id=f"session-{index:05}", cwd=f"/home/user/project-{index % 40}", created_at=index)
        event = SessionEvent.model_construct(
            type="user/message",
            seq=0,
            time=index,
            data={"content": [{"type": "text", "text": f"hello {index}"}], "source": {"kind": "user"}},
            surface_op="append",
            source_event_seqs=None,
        )
        path = session_file(root, header.id, header.cwd, "zstd")
        os.makedirs(os.path.dirname(path), mode=0o700, exist_ok=True)
        row = js_json_stringify(event.to_wire()) + "\n"
        Path(path).write_bytes(compressor.compress(header_line(header).encode()) + compressor.compress(row.encode()))
    marker.write_text("ok")
    return root


def bench_listing(repeats: int) -> None:
    print("\n## Listing 10,000 sessions (JsonlSessionStore, zstd)")
    began = time.perf_counter()
    root = listing_root(10_000)
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


_ROWS = msgspec.json.Decoder()


def _parsed_objects(path: Path) -> list[object]:
    """The read floor: every frame decompressed (one streaming reader across frames) and every
    row parsed by msgspec from the bytes, all rows held, the cyclic collector paused meanwhile (as
    our reader does): what any reader of the whole log pays."""
    with collector_paused():
        text = zstandard.ZstdDecompressor().stream_reader(path.read_bytes(), read_across_frames=True).read()
        return _ROWS.decode_lines(text)


def _floor(path: Path) -> float:
    started = time.perf_counter()
    rows = _parsed_objects(path)
    elapsed = time.perf_counter() - started
    del rows
    return elapsed


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
        path = write_big_log(directory)
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
        print(f"  floor (decompress + msgspec, rows held):  {floor * 1000:8.1f} ms")
        ratio, memory = read / floor, peak / decompressed
        print(
            f"  read_surface (cold instance):             {read * 1000:8.1f} ms   ratio {ratio:.2f}x (target <= 1.2x)"
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
