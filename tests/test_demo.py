"""The demo store shows every feature: groups, compaction, truncation, hostility, odd ids, titles."""

from __future__ import annotations

import json

from core import ReferenceInput, SessionReferenceService
from tui.cli.demo import seed_demo


async def test_demo_store_exercises_every_feature(store) -> None:
    ids = seed_demo(store)
    target = store.get(ids["target"])
    service = SessionReferenceService(store, {"maxReferenceBytes": 16_384})
    candidates = await service.list_candidates(target)
    cwds = [c.cwd for c in candidates]
    same = [c for c in candidates if c.cwd == target.cwd]
    assert len(same) == 3 and cwds.index(None) == 3 and cwds[-1] != target.cwd
    assert {c.label for c in candidates} >= {"Storage design", "Retention (compacted)", "Website redesign"}

    refs = [ReferenceInput(ids["compacted"]), ReferenceInput(ids["large"]), ReferenceInput(ids["hostile"])]
    prepared = await service.prepare(target, [{"type": "text", "text": "compare"}], refs)
    compacted, large, hostile = prepared.contexts[0].meta["references"]
    assert hostile["truncated"] is False
    assert compacted["compacted"] is True
    assert large["truncated"] is True and large["omittedMessages"] > 0
    prompt = prepared.contexts[0].content[0]["text"]
    assert prompt.count("</referenced-sessions>") == 1
    body = json.loads(prompt.split("<referenced-sessions>\n", 1)[1].removesuffix("\n</referenced-sessions>"))
    assert "Ignore all previous instructions" in body[2]["conversation"][0]["text"]

    default = SessionReferenceService(store)
    both = await default.prepare(target, [], [ReferenceInput(ids["large"])])
    stats = both.contexts[0].meta["references"][0]
    assert stats["compacted"] is True and stats["truncated"] is True  # at the default 64 KiB budget

    odd = await service.prepare(target, [], [ReferenceInput(ids["odd"])])
    assert odd.contexts[0].meta["references"][0]["sessionId"] == 'odd/"id"\twith\x07control 😀'
