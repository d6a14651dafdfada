"""Run every benchmark and print figures and ratios (medians of repeated runs)."""

from __future__ import annotations

import argparse
import asyncio
import compileall
import itertools
import tracemalloc
from pathlib import Path
from typing import Any

from bench.timing import median_seconds
from bench.workload import conversation_events, snapshot_of
from core import (
    DEFAULT_MAX_REFERENCE_BYTES,
    MemorySessionStore,
    ReferenceInput,
    Session,
    js_json_stringify,
    project_conversation,
    retain_referenced_session,
)


def conversation_object(snapshot: Any) -> dict[str, Any]:
    items = project_conversation(snapshot)
    return {
        "sessionId": snapshot.session.id,
        "label": snapshot.session.id,
        "cwd": snapshot.session.cwd,
        "capturedThroughSeq": snapshot.captured_through_seq,
        "conversation": [{"role": item.role, "text": item.text} for item in items],
    }


def bench_retention(repeats: int) -> None:
    print("## Retention (one source into 64 KiB)")
    events = conversation_events(20_000)
    snapshot = snapshot_of("big", events)
    whole = conversation_object(snapshot)
    size_mb = len(js_json_stringify(whole).encode("utf-8")) / 1e6
    serialise = median_seconds(lambda: js_json_stringify(whole), repeats)
    retain = median_seconds(lambda: retain_referenced_session(snapshot, "big", DEFAULT_MAX_REFERENCE_BYTES), repeats)
    print(f"20,000 messages, {size_mb:.1f} MB serialised")
    print(f"  js_json_stringify once:       {serialise * 1000:8.1f} ms")
    print(f"  retain_referenced_session:    {retain * 1000:8.1f} ms")
    print(f"  ratio retain / serialise:     {retain / serialise:8.2f}x   (target <= 3x)")

    print("\n## Scaling")
    timings: list[tuple[int, float]] = []
    for messages in (2_000, 20_000, 200_000):
        scaled = snapshot if messages == 20_000 else snapshot_of("big", conversation_events(messages))
        runs = repeats if messages < 200_000 else max(1, repeats // 2)
        seconds = median_seconds(
            lambda scaled=scaled: retain_referenced_session(scaled, "big", DEFAULT_MAX_REFERENCE_BYTES), runs
        )
        timings.append((messages, seconds))
        print(f"  {messages:>7,} messages: {seconds * 1000:9.1f} ms")
    for (small, t_small), (large, t_large) in itertools.pairwise(timings):
        print(f"  {small:,} -> {large:,}: {t_large / t_small:5.1f}x time for 10x size   (target <= ~12x)")


def bench_literal(repeats: int) -> None:
    from tests.support.literal import literal_retain

    print("\n## Against the literal algorithm (1,000 messages, ~1 MB, into 64 KiB)")
    snapshot = snapshot_of("mid", conversation_events(1_000))
    fast = median_seconds(lambda: retain_referenced_session(snapshot, "mid", DEFAULT_MAX_REFERENCE_BYTES), repeats)
    slow = median_seconds(lambda: literal_retain(snapshot, "mid", DEFAULT_MAX_REFERENCE_BYTES), 1)
    print(f"  literal: {slow * 1000:9.1f} ms   ours: {fast * 1000:7.2f} ms   speed-up: {slow / fast:,.0f}x")


def _store_with_sources(count: int, messages: int) -> tuple[MemorySessionStore, Session]:
    store = MemorySessionStore(clock=lambda: 0)
    target = store.create("target", cwd="/bench/project")
    for index in range(count):
        source = store.create(f"source-{index}", cwd="/bench/project")
        for event in conversation_events(messages, seed=index):
            source.append(event.type, event.data, surface_op="append")
    return store, target


def bench_prepare(repeats: int) -> None:
    from core import SessionReferenceService

    print("\n## prepare() with three 20,000-message sources")
    store, target = _store_with_sources(3, 20_000)
    service = SessionReferenceService(store)
    references = [ReferenceInput(f"source-{index}") for index in range(3)]
    content = [{"type": "text", "text": "compare these"}]

    loop = asyncio.new_event_loop()

    def run() -> Any:
        return loop.run_until_complete(service.prepare(target, content, references))

    wall = median_seconds(run, repeats)
    tracemalloc.start()
    prepared = run()
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    prefix = len(prepared.contexts[0].content[0]["text"].encode("utf-8"))
    print(f"  wall time (median):           {wall * 1000:8.1f} ms")
    print(f"  peak traced allocation:       {peak / 1e6:8.1f} MB   (sources hold ~{3 * 20:.0f} MB of text)")
    print(f"  prompt prefix size:           {prefix / 1024:8.1f} KiB")


def main() -> None:
    parser = argparse.ArgumentParser(description="sessionref benchmarks")
    parser.add_argument("--repeats", type=int, default=5, help="runs per figure (median is reported)")
    parser.add_argument(
        "--only",
        choices=[
            "startup",
            "engine",
            "store",
            "search",
            "retrieval",
            "meaning",
            "tools",
            "mcp",
            "external",
            "agents",
            "secrets",
            "app",
            "memory",
            "context",
            "versus",
            "database",
        ],
        help="run one group of benchmarks",
    )
    args = parser.parse_args()
    # Bytecode for the sources, as pip writes it for an installed wheel: with PYTHONDONTWRITEBYTECODE
    # set, every fresh process a figure starts would otherwise compile what it imports.
    compileall.compile_dir(str(Path(__file__).resolve().parent.parent / "core"), quiet=1)
    compileall.compile_dir(str(Path(__file__).resolve().parent.parent / "tui"), quiet=1)
    if args.only in (None, "startup"):
        from bench.startup import main as bench_startup

        bench_startup(args.repeats)
    if args.only in (None, "engine"):
        bench_retention(args.repeats)
        bench_literal(args.repeats)
        bench_prepare(args.repeats)
        from bench.cancellation import main as bench_cancellation

        bench_cancellation(args.repeats)
    if args.only in (None, "store"):
        from bench.store import bench_append, bench_listing, bench_read_surface

        bench_listing(args.repeats)
        bench_read_surface(args.repeats)
        bench_append(args.repeats)
    if args.only in (None, "search"):
        from bench.search import main as bench_search

        bench_search(args.repeats)
    if args.only in (None, "retrieval"):
        from bench.retrieval import main as bench_retrieval

        bench_retrieval()
    if args.only in (None, "meaning"):
        from bench.meaning import main as bench_meaning

        bench_meaning()
    if args.only in (None, "tools"):
        from bench.tools import main as bench_tools

        bench_tools(args.repeats)
    if args.only in (None, "mcp"):
        from bench.mcp import main as bench_mcp

        bench_mcp(args.repeats)
    if args.only in (None, "external"):
        from bench.external import main as bench_external

        bench_external(args.repeats)
    if args.only in (None, "agents"):
        from bench.agents import main as bench_agents

        bench_agents(args.repeats)
    if args.only in (None, "secrets"):
        from bench.secrets import main as bench_secrets

        bench_secrets(args.repeats)
    if args.only in (None, "context"):
        from bench.context import main as bench_context

        bench_context(args.repeats)
    if args.only in (None, "versus"):
        from bench.versus import main as bench_versus

        bench_versus(args.repeats)
    if args.only in (None, "app"):
        from bench.app import bench_app

        bench_app(args.repeats)
    if args.only in (None, "memory"):
        from bench.memory import bench_memory

        bench_memory()
    if args.only in (None, "database"):
        from bench.database import main as bench_database

        bench_database(args.repeats)


if __name__ == "__main__":
    main()
