"""Readers beside a writer (``python -m fuzz.readers``): one process appends to a zstd and a plain
store without pause while this one lists and reads them; 5,000 reads (the fuzzer's own run: 10,000),
every one checked to be a consistent prefix of what was written. And the checker itself catches a
read that is not."""

from __future__ import annotations

import asyncio
import time
from pathlib import Path

import pytest

from core import JsonlSessionStore
from fuzz.readers import Figures, Inconsistent, read, run, script, session_id


def test_five_thousand_reads_beside_a_writer_are_consistent_prefixes() -> None:
    # (``make fuzz`` reads 10,000 times: python -m fuzz.readers; here half, the suite's longest test)
    figures, _seconds = run(5_000)
    assert figures.reads == 5_000
    assert figures.listings >= 5_000
    # The reads really ran beside the writer: it appended hundreds of batches while they ran, and the
    # reads saw the sessions at a good share of those lengths. (How many depends on how the two
    # processes share the cores: about 1,400 alone here, 829 with the suite's workers beside it, so the
    # share is judged against what could be seen, the fewer of the batches written and the reads.)
    assert figures.states_written >= 200
    assert figures.distinct_prefixes >= min(figures.states_written, figures.reads) // 4
    assert figures.events_checked > figures.reads


@pytest.mark.parametrize("compression", ["zstd", "none"])
def test_the_checker_catches_an_event_that_was_not_written(tmp_path: Path, compression: str) -> None:
    roots = {compression: str(tmp_path / compression)}
    store = JsonlSessionStore(roots[compression], compression=compression)  # type: ignore[arg-type]
    session = store.create(session_id(0), cwd="/work/rw", created_at=0)
    batches = list(script(1, 0))
    for batch in batches[:3]:
        session.append_batch([(kind, payload, op, None) for kind, payload, op in batch])
    kind, payload, op = batches[3][0]
    session.append_batch([(kind, {**payload, "content": [{"type": "text", "text": "not scripted"}]}, op, None)])
    store.close()
    with pytest.raises(Inconsistent, match=r"other data|events differ"):
        asyncio.run(read(roots, 1, 5, Figures(), time.monotonic() + 60))
