"""Readers beside a writer: one process appends to real stores on disk (zstd and plain JSONL)
without pause while this one lists them and reads surfaces in a loop. Every read must be a
consistent prefix of what the writer wrote: the same events, in order, none torn or missing.

    python -m fuzz.readers [--reads 10000] [--root DIR]

The writer replays a script that is a pure function of a seed (prompts, packed chunk runs of
streamed replies up to ~45 KB a batch, replies, titles; a new session every so often), so the
reader can rebuild exactly what any prefix must look like. A read checks:

- ``list_sessions`` reports no problem (a torn tail is not damage) and lists only scripted ids;
- ``read_surface``'s events equal the scripted surface up to its ``captured_through_seq``;
- ``read_title`` is one the script wrote by then, or ``None`` before the first;
- the raw file parsed on its own yields a prefix of the script's events (this also counts the
  reads that landed on a torn, half-written tail).
"""

from __future__ import annotations

import argparse
import asyncio
import multiprocessing
import os
import random
import shutil
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from core import JsonlSessionStore
from core.folder.jsonl_codec import load_log

Batch = list[tuple[str, dict[str, Any], str | None]]
SESSION_BATCHES = 30
"""Batches per session before the writer starts the next one (keeps files small enough to re-read often)."""
COMPRESSIONS = ("zstd", "none")
PACE = 0.005
"""Seconds the writer waits between batches, as a streaming reply paces them (without it the store
fills with thousands of sessions and the run measures listing size, not consistency)."""


def session_id(number: int) -> str:
    return f"rw-{number:05d}"


def script(seed: int, number: int) -> Iterator[Batch]:
    """The batches the writer appends to session ``number``, always the same for a seed."""
    rng = random.Random(seed * 1_000_003 + number)
    for step in range(SESSION_BATCHES):
        prompt = f"prompt {number}.{step} " + "p" * rng.randrange(0, 500)
        yield [("user/message", {"content": [{"type": "text", "text": prompt}], "source": {"kind": "user"}}, "append")]
        parts = [f"[{step}.{k}]" + "x" * rng.choice([1, 10, 100, 1500]) for k in range(rng.randrange(0, 30))]
        batch: Batch = [
            (
                "assistant/chunk",
                {"turn": step, "step": 0, "chunk": {"type": "text-delta", "index": 0, "text": part}},
                None,
            )
            for part in parts
        ]
        reply = {
            "turn": step,
            "step": 0,
            "content": [{"type": "text", "text": "".join(parts) or "ok"}],
            "provenance": {},
        }
        batch.append(("assistant/message", reply, "append"))
        yield batch
        if rng.random() < 0.2:
            yield [("session/title", {"title": f"title {number}.{step}", "messageSeqs": [], "source": "user"}, None)]


@dataclass
class Expected:
    """What session ``number``'s log holds after each event: the events and the titles."""

    types: list[str]
    data: list[dict[str, Any]]
    surface: list[int]
    titles: list[str | None]

    @classmethod
    def of(cls, seed: int, number: int) -> Expected:
        types: list[str] = []
        data: list[dict[str, Any]] = []
        surface: list[int] = []
        titles: list[str | None] = []
        title: str | None = None
        for batch in script(seed, number):
            for kind, payload, op in batch:
                if op == "append":
                    surface.append(len(types))
                if kind == "session/title":
                    title = payload["title"]
                types.append(kind)
                data.append(payload)
                titles.append(title)
        return cls(types, data, surface, titles)


def write(roots: dict[str, str], seed: int, stop: Any, sessions: int, written: Any) -> None:
    """The writer process: appends every script to both stores, a batch at a time, until stopped;
    ``written`` (a shared counter) counts the batches appended, one per store."""
    stores = {name: JsonlSessionStore(root, compression=name) for name, root in roots.items()}  # type: ignore[arg-type]
    for number in range(sessions):
        opened = {
            name: store.create(session_id(number), cwd="/work/rw", created_at=number) for name, store in stores.items()
        }
        for batch in script(seed, number):
            for session in opened.values():
                session.append_batch([(kind, payload, op, None) for kind, payload, op in batch])
                with written.get_lock():
                    written.value += 1
            if stop.is_set():
                return
            time.sleep(PACE)
        for store in stores.values():
            store.release(session_id(number))


@dataclass
class Figures:
    reads: int = 0
    torn_tails: int = 0
    listings: int = 0
    events_checked: int = 0
    longest_read_ms: float = 0.0
    distinct_prefixes: int = 0
    states_written: int = 0
    """Batches the writer appended (both stores) while the reads ran: the lengths a read could see."""


class Inconsistent(AssertionError):
    """A read that is not a consistent prefix of what was written."""


def _check(condition: bool, message: str) -> None:
    if not condition:
        raise Inconsistent(message)


def _expected(cache: dict[int, Expected], seed: int, sid: str) -> Expected:
    number = int(sid.removeprefix("rw-"))
    if number not in cache:
        if len(cache) >= 8:  # a few sessions' scripts, not every one's: the collector walks what is kept
            del cache[next(iter(cache))]
        cache[number] = Expected.of(seed, number)
    return cache[number]


async def read(roots: dict[str, str], seed: int, reads: int, figures: Figures, deadline: float) -> None:
    """The reader: list, read surfaces and titles, parse raw files; every result checked."""
    stores = {name: JsonlSessionStore(root, compression=name) for name, root in roots.items()}  # type: ignore[arg-type]
    cache: dict[int, Expected] = {}
    seen: set[tuple[str, str, int | None]] = set()
    rng = random.Random(seed)
    while figures.reads < reads:
        _check(time.monotonic() < deadline, f"only {figures.reads} reads before the deadline")
        for name, store in stores.items():
            if figures.reads >= reads:
                break  # (a store with nothing listed yet skipped its turn: the count must not overshoot)
            records = await store.list_sessions()
            figures.listings += 1
            _check(not store.problems, f"{name}: listing reported {store.problems}")
            if not records:
                continue
            # The newest session (being written) most of the time, an older finished one otherwise.
            record = records[0] if rng.random() < 0.8 else rng.choice(records)
            sid = record.header.id
            expected = _expected(cache, seed, sid)
            began = time.perf_counter()
            surface = await store.read_surface(sid)
            title = await store.read_title(sid)
            figures.longest_read_ms = max(figures.longest_read_ms, (time.perf_counter() - began) * 1000)
            through = surface.captured_through_seq
            count = 0 if through is None else through + 1
            _check(count <= len(expected.types), f"{name} {sid}: read past the end of what was written")
            want = [seq for seq in expected.surface if seq < count]
            got = [event.seq for event in surface.events]
            _check(got == want, f"{name} {sid}: surface seqs {got[-3:]} at {through}, expected {want[-3:]}")
            for event in surface.events:
                _check(event.type == expected.types[event.seq], f"{name} {sid}: event {event.seq} has another type")
                _check(event.data == expected.data[event.seq], f"{name} {sid}: event {event.seq} has other data")
            figures.events_checked += len(surface.events)
            later = expected.titles[count - 1 :] if count else [None, *expected.titles]
            _check(
                (title is None and None in later) or (title is not None and title.title in later),
                f"{sid}: title {title}",
            )
            seen.add((name, sid, through))
            figures.reads += 1
            if figures.reads % 4 == 0:
                _raw_prefix(store, name, sid, expected, figures)
    figures.distinct_prefixes = len(seen)


def _raw_prefix(store: JsonlSessionStore, name: str, sid: str, expected: Expected, figures: Figures) -> None:
    """Parse the file's bytes as they are this instant (maybe mid-append): a prefix, maybe torn."""
    path = store.session_path(sid, "/work/rw")
    raw = path.read_bytes()
    log = load_log(raw, path, store.compression)
    figures.torn_tails += log.valid_length != len(raw)
    _check(
        [e.type for e in log.events] == expected.types[: len(log.events)],
        f"{name} {sid}: the raw file is not a prefix",
    )
    _check(
        all(e.seq == seq and e.data == expected.data[seq] for seq, e in enumerate(log.events)),
        f"{name} {sid}: the raw file's events differ",
    )


def run(reads: int, root: str | None = None, seed: int = 1, timeout: float = 600) -> tuple[Figures, float]:
    """Start the writer, read ``reads`` times beside it, stop it; return the figures and seconds."""
    base = Path(root) if root else Path(tempfile.mkdtemp(prefix="sessionref-rw-"))
    roots = {name: str(base / name) for name in COMPRESSIONS}
    context = multiprocessing.get_context("spawn")
    stop = context.Event()
    written = context.Value("q", 0)
    writer = context.Process(target=write, args=(roots, seed, stop, 10_000, written), daemon=True)
    figures = Figures()
    started = time.perf_counter()
    writer.start()
    try:
        while not all(os.path.isdir(r) and any(Path(r).iterdir()) for r in roots.values()):
            _check(writer.is_alive(), "the writer died before writing anything")
            time.sleep(0.01)
        before = written.value
        asyncio.run(read(roots, seed, reads, figures, time.monotonic() + timeout))
        figures.states_written = written.value - before
        _check(writer.is_alive(), f"the writer stopped early (exit {writer.exitcode})")
    finally:
        stop.set()
        writer.join(30)
        if writer.is_alive():
            writer.kill()
        if root is None:
            shutil.rmtree(base, ignore_errors=True)
    return figures, time.perf_counter() - started


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m fuzz.readers", description=__doc__.split("\n\n")[0])
    parser.add_argument("--reads", type=int, default=10_000, help="surface reads to check (default 10,000)")
    parser.add_argument("--root", help="where the two stores go (default: a temporary folder, removed after)")
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args(argv)
    try:
        figures, seconds = run(args.reads, args.root, args.seed)
    except Inconsistent as error:
        print(f"INCONSISTENT READ: {error}")
        return 1
    print(
        f"{figures.reads:,} surface reads beside a writer in {seconds:.1f} s, every one a consistent prefix: "
        f"{figures.distinct_prefixes:,} distinct prefixes of the {figures.states_written:,} written meanwhile, "
        f"{figures.events_checked:,} events compared, "
        f"{figures.listings:,} listings without a problem, {figures.torn_tails:,} raw reads on a torn tail, "
        f"slowest read {figures.longest_read_ms:.1f} ms"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
