"""Differential fuzzing against the real ``@deepseek-ai/dsh-session-reference``: hundreds of hostile,
seeded sessions and thousands of mention texts go through our code and through dsh's own (one
Node process, ``batch``); the prompt text, the stats, and every error code and message must be
identical. Skipped without the npm packages, unless ``SESSIONREF_REQUIRE_INTEROP=1``."""

from __future__ import annotations

import random
from pathlib import Path
from typing import Any

import pytest

from core import (
    JsonlSessionStore,
    MemorySessionStore,
    SessionQueryError,
    SessionReferenceError,
    SessionReferenceService,
    encode_session_reference_uri,
    format_session_reference_mention,
    js_json_stringify,
    parse_session_reference_text,
)
from core.folder.jsonl_codec import load_log
from fuzz.targets import HOSTILE
from tests.conftest import text
from tests.support.rc8 import NODE, dsh, rc8_snapshots
from tests.test_interop import conversation, wires

pytestmark = pytest.mark.skipif(NODE is None, reason="the dsh packages are not installed (make interop)")

CASES = 1_000
TEXTS = 10_000
FILE_VARIANTS = 300
ALPHABET = [
    "a",
    "Z",
    " ",
    "\n",
    "\t",
    "<",
    ">",
    "&",
    '"',
    "\\",
    "]",
    "[",
    "(",
    ")",
    "@",
    "é",
    "界",
    "😀",
    "\u2028",
    "\x7f",
]


def hostile_text(rng: random.Random, size: int) -> str:
    parts: list[str] = []
    length = 0
    while length < size:
        pick = rng.random()
        if pick < 0.15:
            parts.append(rng.choice(HOSTILE))
        elif pick < 0.25:
            parts.append(chr(rng.choice([rng.randrange(0xD800, 0xE000), rng.randrange(0, 0x20)])))
        elif pick < 0.3:
            parts.append(chr(rng.randrange(0x10000, 0x10FFFF)))
        else:
            parts.append(rng.choice(ALPHABET) * rng.choice([1, 1, 3, 50]))
        length += len(parts[-1])
    return "".join(parts)[: max(size, 1)]


def _append(session: Any, rng: random.Random, words: str, index: int) -> None:
    kind = rng.randrange(6)
    if kind <= 2:
        session.append("user/message", {"content": [text(words)], "source": {"kind": "user"}}, surface_op="append")
    elif kind <= 4:
        data = {"turn": index, "step": 0, "content": [text(words)], "provenance": {"provider": "p", "model": "m"}}
        session.append("assistant/message", data, surface_op="append")
    elif session.surface():
        seqs = [event.seq for event in session.surface()]
        session.append(
            "user/message",
            {"content": [text(words)], "source": {"kind": "plugin", "plugin": "compact"}},
            surface_op={"op": "replace", "start": seqs[0], "end": seqs[-1]},
            source_event_seqs=seqs,
        )


async def _case(seed: int) -> tuple[dict[str, Any], Any]:
    """One hostile case: the request for dsh and our answer to it."""
    rng = random.Random(seed)
    store = MemorySessionStore(clock=iter(range(10**12, 10**12 + 10**6)).__next__)
    target = store.create("target", cwd="/work/app")
    ids = []
    for number in range(rng.randint(1, 3)):
        session_id = hostile_text(rng, rng.randint(1, 12)) if rng.random() < 0.5 else f"source-{number}"
        if session_id in ids or session_id == "target":
            continue
        cwd = rng.choice([None, "/work/app", "/" + hostile_text(rng, 10)])
        session = store.create(session_id, cwd=cwd)
        ids.append(session_id)
        for index in range(rng.randint(0, 12)):
            size = rng.choice([0, 5, 40, 300, 2_000, 20_000]) if rng.random() > 0.02 else 150_000
            _append(session, rng, hostile_text(rng, size), index)
    references: list[dict[str, Any]] = []
    for session_id in ids + (["missing"] if rng.random() < 0.05 else []):
        reference: dict[str, Any] = {"sessionId": session_id}
        if rng.random() < 0.7:
            reference["label"] = hostile_text(rng, rng.randint(0, 30))
        references.append(reference)
    if rng.random() < 0.05:
        references.append({"sessionId": "target"})
    budget = rng.choice([1, 50, 120, 300, 1_000, 4_096, 65_536])
    snapshots = await rc8_snapshots(store, ids)
    request = {
        "op": "prepare",
        "target": "target",
        "references": references,
        "snapshots": snapshots,
        "config": {"maxReferenceBytes": budget},
    }
    service = SessionReferenceService(store, {"maxReferenceBytes": budget})
    try:
        prepared = await service.prepare(target, [text("q")], references)
    except SessionReferenceError as error:
        return request, {"ok": False, "code": error.code, "message": str(error)}
    (context,) = prepared.contexts
    return request, {"ok": True, "text": context.content[0]["text"], "references": context.meta["references"]}  # type: ignore[index]


async def test_hostile_sessions_prepare_byte_identically_to_dsh() -> None:
    cases = [await _case(seed) for seed in range(CASES)]
    theirs = dsh("batch", requests=[request for request, _ in cases])
    outcomes = {"ok": 0, "truncated": 0, "error": 0}
    for seed, ((_, ours), their) in enumerate(zip(cases, theirs, strict=True)):
        if not their["ok"] or not ours["ok"]:
            assert (ours.get("code"), ours.get("message")) == (their.get("code"), their.get("message")), seed
            outcomes["error"] += 1
            continue
        assert ours["text"] == their["text"], f"case {seed}: the prompt text differs"
        # Compared as the bytes they are stored and sent as: a surrogate pair that Python holds as
        # two code points is JavaScript's one character, and JSON writes both the same.
        assert js_json_stringify(ours["references"]) == js_json_stringify(their["references"]), seed
        outcomes["truncated" if any(r["truncated"] for r in ours["references"]) else "ok"] += 1
    # The cases reach every kind of outcome: whole snapshots, truncated ones and refusals.
    print(outcomes)
    assert min(outcomes.values()) >= 20, outcomes


def test_hostile_mention_texts_parse_identically_to_dsh() -> None:
    rng = random.Random(7)
    ids = [hostile_text(rng, rng.randint(1, 20)) for _ in range(200)]
    texts = []
    for _ in range(TEXTS):
        pieces = [hostile_text(rng, rng.randint(0, 15))]
        for _ in range(rng.randint(0, 3)):
            session_id = rng.choice(ids)
            pick = rng.random()
            if pick < 0.4:
                pieces.append(format_session_reference_mention(session_id, hostile_text(rng, rng.randint(0, 10))))
            elif pick < 0.6:
                pieces.append(encode_session_reference_uri(session_id))
            else:  # a damaged one: cut, or a character changed
                uri = encode_session_reference_uri(session_id)
                at = rng.randrange(len(uri))
                pieces.append(f"@[{session_id[:4]}](" + uri[:at] + rng.choice(["", "%", "=", "A", ")"]) + uri[at + 1 :])
            pieces.append(hostile_text(rng, rng.randint(0, 8)))
        texts.append("".join(pieces))
    theirs = dsh("uri", ids=ids, texts=texts)
    assert [encode_session_reference_uri(session_id) for session_id in ids] == theirs["uris"]
    failures = 0
    for sample, expected in zip(texts, theirs["parsed"], strict=True):
        if not expected["ok"]:
            with pytest.raises(SessionReferenceError) as caught:
                parse_session_reference_text(sample)
            assert (caught.value.code, str(caught.value)) == (expected["code"], expected["message"]), sample
            failures += 1
            continue
        parsed = parse_session_reference_text(sample)
        ours = {"text": parsed.text, "references": [ref.to_wire() for ref in parsed.references]}
        assert js_json_stringify(ours) == js_json_stringify(expected["value"]), sample
    print({"texts": TEXTS, "refused": failures})
    assert 100 < failures < TEXTS - 100


@pytest.mark.parametrize("budget", [40, 57, 64, 90, 200])
async def test_a_byte_order_mark_at_either_cut_is_dropped_as_dsh_drops_it(budget: int) -> None:
    """The divergence differential fuzzing found: dsh's retainer decodes the kept head and tail
    with ``TextDecoder``, which drops a leading U+FEFF from each."""
    store = MemorySessionStore(clock=iter(range(10**12, 10**12 + 10**6)).__next__)
    target = store.create("target")
    source = store.create("bom")
    words = "\ufeff" + "head " * 20 + "\ufeff" * 3 + "tail " * 20
    source.append("user/message", {"content": [text(words)], "source": {"kind": "user"}}, surface_op="append")
    snapshot = await store.read_surface("bom")
    snapshots = {"bom": {"session": snapshot.session.to_wire(), "capturedThroughSeq": 0,
                         "events": [event.to_wire() for event in snapshot.events]}}  # fmt: skip
    references = [{"sessionId": "bom", "label": "b"}]
    theirs = dsh(
        "prepare",
        target="target",
        references=references,
        snapshots=snapshots,
        config={"maxReferenceBytes": budget + 120},
    )
    prepared = await SessionReferenceService(store, {"maxReferenceBytes": budget + 120}).prepare(
        target, [text("q")], references
    )
    (context,) = prepared.contexts
    assert theirs["ok"]
    assert context.content[0]["text"] == theirs["text"]
    assert context.meta["references"] == theirs["references"]  # type: ignore[index]


VALIDATION = ("invalid surface", "malformed event row", "a row is not an object", "invalid header")
"""Our reader validates what dsh's raw loader (``loadStored``) leaves to its session layer."""


@pytest.mark.parametrize("compression", ["zstd", "none"])
async def test_cut_and_bit_flipped_files_read_as_in_dsh(tmp_path: Path, compression: str) -> None:
    """A session file cut at random bytes or with one bit flipped, read by dsh's ``loadStored``
    and by ours. Both keep the same events, or both refuse, except for two deliberate differences:

    - a damaged *last* record (a plain line that is not JSON, a zstd frame whose blocks run past the
      end): dsh calls it a torn tail and its next writer cuts it off; we refuse the file, at the
      same offset, so nothing is dropped without the user knowing (``sessionref doctor`` names it);
    - events our reader validates on load (surface ops, row shapes) that dsh's raw loader passes
      on to its session layer.
    """
    meta, batches = conversation("cut", "/work/alpha")
    clock = iter(range(1_790_000_000_000, 1_790_000_100_000)).__next__
    store = JsonlSessionStore(tmp_path / "original", compression=compression, clock=clock)  # type: ignore[arg-type]
    session = store.create("cut", cwd="/work/alpha", created_at=meta["createdAt"])
    for events in batches:
        session.append_batch([(e["type"], e["data"], e.get("surfaceOp"), e.get("sourceEventSeqs")) for e in events])
    store.close()
    path = store.session_path("cut", "/work/alpha")
    raw = path.read_bytes()
    rng = random.Random(11)
    variants: list[tuple[str, bytes]] = []
    for number in range(FILE_VARIANTS):
        data = bytearray(raw)
        if number % 2:
            data = data[: rng.randrange(len(raw))]
        else:
            data[rng.randrange(len(data))] ^= 1 << rng.randrange(8)
        root = tmp_path / f"variant-{number}"
        copy = root / path.relative_to(tmp_path / "original")
        copy.parent.mkdir(parents=True)
        copy.write_bytes(bytes(data))
        variants.append((str(root), bytes(data)))
    requests = [{"op": "load", "root": root, "compression": compression, "ids": ["cut"]} for root, _ in variants]
    theirs = dsh("batch", requests=requests)
    tally = {"same events": 0, "both refuse": 0, "their torn tail, our refusal": 0, "validated here": 0}
    for (root, data), answer in zip(variants, theirs, strict=True):
        their = answer["cut"]
        reader = JsonlSessionStore(root, compression=compression)  # type: ignore[arg-type]
        try:
            log = load_log(data, path, compression)  # type: ignore[arg-type]
            ours: list[dict[str, Any]] | None = wires(log.events)
            refusal = None
            if reader.session_path(log.header.id, log.header.cwd) != Path(root) / path.relative_to(
                tmp_path / "original"
            ):
                ours = None  # a header that belongs elsewhere: the store never lists it
        except SessionQueryError as error:
            ours, refusal = None, error
        if their is None or "error" in their:
            assert ours is None, f"{root}: dsh refuses ({their}) what we read"
            tally["both refuse"] += 1
        elif ours is not None:
            assert ours == their["events"], root
            tally["same events"] += 1
        else:
            assert refusal is not None, f"{root}: a header that dsh places here"
            if their["torn"] is not None and refusal.offset == their["torn"]["truncateTo"]:
                assert their["events"] == wires(load_log(data[: refusal.offset], path, compression).events)  # type: ignore[arg-type]
                tally["their torn tail, our refusal"] += 1
            else:
                assert (refusal.detail or "").startswith(VALIDATION), (root, refusal)
                tally["validated here"] += 1
    print(compression, tally)
    assert tally["same events"] > FILE_VARIANTS // 4 and tally["both refuse"] > 10, tally
