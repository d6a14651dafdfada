"""How soon an abort returns while storage hangs, and what parallel reads save: the figures the
cancellation tests leave to a benchmark (a wall-clock bound in a unit test flakes under load)."""

from __future__ import annotations

import asyncio
import contextlib
import statistics
import time
from typing import Any

from core import (
    AbortController,
    AgentLoop,
    MemorySessionStore,
    ReferenceInput,
    SessionReferenceError,
    SessionReferenceService,
)
from tests.support.hanging import HangingQuery

READ_SECONDS = 0.05
"""How long each read of the parallel-reads figure takes (its floor: one read)."""


def _store() -> tuple[MemorySessionStore, Any]:
    store = MemorySessionStore(clock=lambda: 0)
    target = store.create("target", cwd="/bench")
    for name in ("alpha", "beta", "gamma"):
        store.create(name, cwd="/bench").append(
            "user/message",
            {"content": [{"type": "text", "text": f"hello from {name}"}], "source": {"kind": "user"}},
            surface_op="append",
        )
    return store, target


async def _abort_latency(store: MemorySessionStore, target: Any, *, listing: bool) -> float:
    """Seconds from ``abort()`` to the cancelled call returning, its storage hanging for an hour."""
    query = HangingQuery(store, hang_list=listing, hang_read=not listing)
    controller = AbortController()
    service = SessionReferenceService(query)
    call = (
        service.list_candidates(target, signal=controller.signal)
        if listing
        else service.prepare(target, [{"type": "text", "text": "go"}], [ReferenceInput("alpha")], controller.signal)
    )
    task = asyncio.ensure_future(call)
    await asyncio.sleep(0.005)
    started = time.perf_counter()
    controller.abort()
    with contextlib.suppress(SessionReferenceError):  # the cancellation is the expected outcome
        await task
    return time.perf_counter() - started


class _Gated:
    """A model that streams one piece, then waits on a gate that never opens."""

    name = "gated"
    provider = "bench"

    async def stream(self, messages: list[dict[str, Any]], *, signal: Any) -> Any:
        yield {"type": "text-delta", "index": 0, "text": "partial"}
        await asyncio.Event().wait()


async def _cancel_latency() -> float:
    session = MemorySessionStore(clock=lambda: 0).create("chat")
    loop = AgentLoop(session, _Gated())  # type: ignore[arg-type]
    await loop.followup([{"type": "text", "text": "go"}])
    await asyncio.sleep(0.005)
    started = time.perf_counter()
    loop.cancel()
    await loop.when_idle()
    return time.perf_counter() - started


async def _parallel_prepare(store: MemorySessionStore, target: Any) -> float:
    class Slow(HangingQuery):
        async def read_surface(self, session_id: str) -> Any:
            await asyncio.sleep(READ_SECONDS)
            return await self.inner.read_surface(session_id)

    started = time.perf_counter()
    await SessionReferenceService(Slow(store)).prepare(
        target, [{"type": "text", "text": "go"}], [ReferenceInput(name) for name in ("alpha", "beta", "gamma")]
    )
    return time.perf_counter() - started


def main(repeats: int) -> None:
    print("\n## Cancellation and parallel reads (medians)")
    store, target = _store()
    samples = max(repeats, 5) * 4

    def median_ms(make: Any) -> float:
        return statistics.median(asyncio.run(make()) for _ in range(samples)) * 1000

    listing = median_ms(lambda: _abort_latency(store, target, listing=True))
    reading = median_ms(lambda: _abort_latency(store, target, listing=False))
    cancel = median_ms(_cancel_latency)
    parallel = median_ms(lambda: _parallel_prepare(store, target))
    floor = READ_SECONDS * 1000
    print(f"  abort while the listing hangs -> returned:        {listing:6.2f} ms   (target <= 100 ms)")
    print(f"  abort while a reference's read hangs -> returned: {reading:6.2f} ms   (target <= 100 ms)")
    print(f"  cancel a streaming reply -> turn ended:           {cancel:6.2f} ms   (target <= 100 ms)")
    print(
        f"  prepare, three {floor:.0f} ms reads: {parallel:6.1f} ms = {parallel / floor:4.2f}x one read "
        f"(serial would be 3x; target <= 1.5x)"
    )
