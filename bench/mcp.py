"""``sessionref mcp`` as an agent meets it: the server started by the SDK's client over stdio on a
10,000-session store with one 1,000-message source; start to first answer, and a
``reference_session`` round trip (request out, snapshot back), medians."""

from __future__ import annotations

import asyncio
import os
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

from bench.store import listing_root
from bench.workload import conversation_events
from core import JsonlSessionStore

REPO = Path(__file__).resolve().parent.parent


def _store(folder: Path) -> Path:
    root = folder / "store"
    shutil.copytree(listing_root(10_000), root)
    store = JsonlSessionStore(root)
    source = store.create("long-source", cwd="/bench")
    events = conversation_events(1_000)
    source.append_batch([(event.type, event.data, "append", None) for event in events])
    said = store.create("said-once", cwd="/elsewhere")
    said.append("user/message", {"content": [{"type": "text", "text": f"the {WORD} plan"}], "source": {"kind": "user"}},
                surface_op="append")  # fmt: skip
    store.close()
    return root


WORD = "zebracorn"
"""A word said in one session only, found by message search once the server indexed the store."""


async def _measure(root: Path, repeats: int) -> tuple[float, list[float], float]:
    from mcp.client.session import ClientSession
    from mcp.client.stdio import StdioServerParameters, stdio_client

    parameters = StdioServerParameters(
        command=sys.executable,
        args=["-m", "tui.cli", "mcp", "--root", str(root), "--no-external"],
        env={**os.environ, "PYTHONPATH": str(REPO)},
    )
    began = time.perf_counter()
    async with stdio_client(parameters) as (read, write), ClientSession(read, write) as session:
        await session.initialize()
        await session.list_tools()
        started = time.perf_counter() - began
        while True:  # a word said in one session: found once the server's index holds it
            found = await session.call_tool("search_sessions", {"query": WORD})
            if '"session":"said-once"' in str(found.content[0].text):  # type: ignore[union-attr]
                break
            await asyncio.sleep(0.05)
        searchable = time.perf_counter() - began
        trips = []
        for _ in range(repeats):
            sent = time.perf_counter()
            result = await session.call_tool("reference_session", {"session": "long-source"})
            trips.append(time.perf_counter() - sent)
            assert not result.is_error
    return started, trips, searchable


def main(repeats: int = 5) -> None:
    print("\n## sessionref mcp: 10,000 sessions and a 1,000-message source, over stdio")
    with tempfile.TemporaryDirectory(prefix="sessionref-bench-mcp-") as folder:
        root = _store(Path(folder))
        starts, trips, searchable = [], [], []
        for _ in range(3):  # the first on a store no index was built for, then with its index
            started, measured, found = asyncio.run(_measure(root, max(repeats, 5) * 4))
            starts.append(started)
            trips += measured
            searchable.append(found)
    print(f"  server start -> first answer (initialize + tools/list): {statistics.median(starts) * 1000:6.0f} ms"
          "   (target <= 300 ms)")  # fmt: skip
    print(f"  reference_session round trip, p50: {statistics.median(trips) * 1000:6.1f} ms   (target <= 50 ms)")
    print(f"  start -> a word said found, store never indexed: {searchable[0]:5.1f} s   (target <= 30 s; "
          f"with the index: {statistics.median(searchable[1:]):.1f} s)")  # fmt: skip
