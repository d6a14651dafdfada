"""What a tool step costs apart from the model: the session tools on the search benchmark's store
(10,000 sessions, 1,000,000 messages, its body index) and on a 20,000-message session.

Each figure is the median of the call as the agent loop makes it (``SessionTools.call`` with the
model's JSON arguments), result text included; target p50 <= 50 ms each."""

from __future__ import annotations

import asyncio
import statistics
import tempfile
import time
from typing import Any

from bench.search import build, seed_root
from bench.workload import write_big_log
from core import JsonlSessionStore, SessionReferenceService
from core.agent.session_tools import SessionTools
from core.search.body_index import BodyIndex, index_path_beside
from core.search.finder import SessionSearch


class _Target:
    id = "the-target"
    cwd = "/home/user/project-3"


def _median_ms(tools: SessionTools, name: str, arguments: str, repeats: int) -> tuple[float, Any]:
    samples = []
    result = None
    for _ in range(repeats):
        started = time.perf_counter()
        result = asyncio.run(tools.call(name, arguments))
        samples.append(time.perf_counter() - started)
    assert result is not None and not result.is_error, result
    return statistics.median(samples) * 1000, result


def main(repeats: int = 5) -> None:
    print("\n## Session tools: one call as the agent loop makes it (target p50 <= 50 ms each)")
    root, _ = seed_root()
    index_path = index_path_beside(root)
    if not (index_path / "shard-0.sqlite3").exists():
        build(root, index_path)
    index = BodyIndex(index_path)
    index.open()
    store = JsonlSessionStore(root)
    records = asyncio.run(store.list_sessions())
    titles = {session_id: title for session_id, (_revision, title) in index.titles().items()}

    async def listing() -> Any:
        return records, titles

    tools = SessionTools(SessionReferenceService(store), SessionSearch(index), _Target(), listing=listing)
    runs = max(repeats, 5)
    for query in ("quokka-protocol", "checksum", "raise valueerror", "project-7"):
        ms, result = _median_ms(tools, "search_sessions", f'{{"query": "{query}", "limit": 10}}', runs)
        print(f"  {'search_sessions ' + repr(query):46} {ms:6.1f} ms   ({result.summary})")
    ms, result = _median_ms(tools, "reference_session", '{"session": "session-04242"}', runs)
    print(f"  {'reference_session, 100 messages':46} {ms:6.1f} ms   ({result.summary})")
    index.close()
    store.close()
    with tempfile.TemporaryDirectory(prefix="sessionref-bench-tools-") as folder:
        write_big_log(folder, 20_000)
        big = JsonlSessionStore(folder)
        tools = SessionTools(SessionReferenceService(big), SessionSearch(None), _Target())
        for start in (0, 10_000, 19_990):
            arguments = f'{{"session": "big", "from_message": {start}}}'
            ms, result = _median_ms(tools, "read_session", arguments, runs)
            print(f"  {f'read_session of 20,000 messages from {start:,}':46} {ms:6.1f} ms   ({result.summary})")
        ms, result = _median_ms(tools, "reference_session", '{"session": "big"}', runs)
        print(f"  {'reference_session, 20,000 messages':46} {ms:6.1f} ms   ({result.summary})")
        big.close()
