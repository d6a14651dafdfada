"""Nothing secret leaves a session: the finder measured on a corpus of planted secrets and look-alikes,
then a key planted in a real store, checked on every way session text leaves it (``prepare``, the
session tools, ``sessionref mcp`` over stdio, the preview), with masking on and off."""

from __future__ import annotations

import asyncio
import json
import os
import sys
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
from mcp.client.session import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client

from core import JsonlSessionStore, ReferenceInput, SessionReferenceService, format_session_reference_mention
from core.agent.session_tools import SessionTools
from core.secrets.conversation import mask_conversation
from core.secrets.finder import find_secrets, mask_secrets
from core.sessions.models import ProjectedItem
from tests.conftest import say_assistant, say_user
from tests.support.indexed_store import Indexed
from tests.support.secret_corpus import look_alikes, planted
from tui.services.preview_report import build_preview

REPO = Path(__file__).resolve().parent.parent
KEY = (
    "sk-ant-api03-"
    + "Zq8vLm3NpR5tXw7Yb9Cd1Ef4Gh6Jk2Mn0Pq8Rs5Tu3Vw7Xy9Za1Bc4De6Fg8Hi0Jk2Lm4No6Pq8Rs0Tu2Vw4Xy6Za8Bc0DeAA"
)
AWS_ID, AWS_SECRET = "AKIAZ3QXKVBW7HNLP4RT", "q7Vn2LmX9pR4tW8yB3cD6fG1hJ5kM0nP2rS4uV6w"


# -- the corpus ----------------------------------------------------------------------------------------


def test_the_corpus_is_found_above_target_with_its_look_alikes_kept() -> None:
    cases = planted()
    kinds = Counter(case.kind for case in cases)
    assert len(cases) >= 200 and len(kinds) >= 20
    missed = [case for case in cases if any(value in mask_secrets(case.text).text for value in case.values)]
    by_kind = Counter(case.kind for case in missed)
    for kind, total in kinds.items():
        assert (total - by_kind[kind]) / total >= 0.99, (kind, [case.text[:120] for case in missed])
    harmless = look_alikes()
    assert len(harmless) >= 1000
    flagged = [(text[:120], dict(mask_secrets(text).kinds)) for text in harmless if find_secrets(text)]
    assert len(flagged) / len(harmless) <= 0.005, flagged[:5]


def test_the_two_halves_of_the_vendor_corpus() -> None:
    # The tuning half (with the corpus above) and the held-back half, never tuned against: both at
    # the issue's targets (99% and 97%).
    from tests.support.secret_corpus import SECRETS
    from tests.support.secret_vendors import HELD_BACK, TUNING, look_alikes_held_back, planted_half

    assert len(SECRETS) + len(TUNING) + len(HELD_BACK) >= 120 and not set(HELD_BACK) & (set(TUNING) | set(SECRETS))
    for held_back, floor in ((False, 0.99), (True, 0.97)):
        cases = planted_half(held_back) + ([] if held_back else planted())
        missed = [case for case in cases if any(value in mask_secrets(case.text).text for value in case.values)]
        assert 1 - len(missed) / len(cases) >= floor, (held_back, [case.text[:100] for case in missed][:10])
    harmless = look_alikes_held_back()
    assert len(harmless) + len(look_alikes()) >= 1000
    assert sum(1 for text in harmless if find_secrets(text)) / len(harmless) <= 0.01


def test_the_validation_corpus_new_rules_are_checked_on() -> None:
    # Other providers and other ways of writing a credential than either half's (secret_validation).
    from tests.support import secret_validation

    cases = secret_validation.planted()
    assert len(secret_validation.KINDS) >= 40
    missed = [case for case in cases if any(value in mask_secrets(case.text).text for value in case.values)]
    assert 1 - len(missed) / len(cases) >= 0.99, [case.text[:100] for case in missed][:10]
    harmless = secret_validation.look_alikes()
    assert sum(1 for text in harmless if find_secrets(text)) / len(harmless) <= 0.01


def test_a_mask_replaces_the_secret_only() -> None:
    assert mask_secrets("postgresql://app:Xy7pQ2vLm9nR@db.internal/prod").text == (
        "postgresql://app:[redacted: url-password]@db.internal/prod"
    )
    assert mask_secrets(f'curl -H "Authorization: Bearer {AWS_SECRET}" https://x').text == (
        'curl -H "Authorization: Bearer [redacted: authorization-header]" https://x'
    )
    line = f"export ANTHROPIC_API_KEY={KEY}  # for the eval job"
    assert mask_secrets(line).text == "export ANTHROPIC_API_KEY=[redacted: anthropic-key]  # for the eval job"
    unchanged = "no secret here, only a sha 9f86d081884c7d659a2feaa0c55ad015a3bf4f1b"
    assert mask_secrets(unchanged).text is unchanged


def test_a_key_split_over_two_messages_is_masked_in_both_and_counted_once() -> None:
    items = [
        ProjectedItem("user", "the key, part one: " + KEY[:50], False),
        ProjectedItem("user", KEY[50:] + " (part two)", False),
    ]
    masked = mask_conversation(items)
    assert KEY[:50] not in masked.items[0].text and KEY[50:] not in masked.items[1].text
    assert masked.items[0].text == "the key, part one: [redacted: anthropic-key]"
    assert masked.items[1].text == "[redacted: anthropic-key] (part two)"
    assert masked.kinds() == Counter({"anthropic-key": 1})


# -- a real store ------------------------------------------------------------------------------------


def _store(root: Path) -> None:
    store = JsonlSessionStore(root)
    leaky = store.create("leaky", cwd="/work/app", created_at=3)
    say_user(leaky, "deploy fails with 403, here is my .env:\nAWS_ACCESS_KEY_ID=" + AWS_ID)
    say_user(leaky, "AWS_SECRET_ACCESS_KEY=" + AWS_SECRET + "\nand the model key " + KEY)
    say_assistant(leaky, "Rotate both now; the wombat policy denies s3:PutObject for that user.")
    clean = store.create("clean", cwd="/work/app", created_at=2)
    say_user(clean, "why is the quokka cache cold?")
    say_assistant(clean, "It was evicted at deploy.")
    me = store.create("me", cwd="/work/app", created_at=4)
    say_user(me, "hello")
    store.close()


def _prepare(root: Path, session: str, redact: bool = True) -> str:
    store = JsonlSessionStore(root)
    try:
        prepared = asyncio.run(
            SessionReferenceService(store, redact=redact).prepare(
                store.get("me"), [{"type": "text", "text": "go"}], [ReferenceInput(session)]
            )
        )
    finally:
        store.close()
    return str(prepared.contexts[0].content[0]["text"])


def test_prepare_masks_before_the_budget_and_leaves_a_clean_session_byte_identical(tmp_path: Path) -> None:
    _store(tmp_path / "store")
    context = _prepare(tmp_path / "store", "leaky")
    for value in (AWS_ID, AWS_SECRET, KEY):
        assert value not in context
    assert "[redacted: aws-access-key-id]" in context and "[redacted: anthropic-key]" in context
    assert "the wombat policy" in context  # the words around stay
    assert _prepare(tmp_path / "store", "clean") == _prepare(tmp_path / "store", "clean", redact=False)
    assert KEY in _prepare(tmp_path / "store", "leaky", redact=False)  # off: as it is
    # The stored log is never changed.
    store = JsonlSessionStore(tmp_path / "store")
    assert any(KEY in json.dumps(event.data) for event in store.get("leaky").events)
    store.close()


def test_the_session_tools_never_hand_the_value_over(tmp_path: Path) -> None:
    indexed = Indexed(tmp_path / "store")
    leaky = indexed.session("leaky", cwd="/work/app", created_at=3)
    say_user(leaky, "my key is " + KEY + " and the wombat is here")
    say_assistant(leaky, "Please rotate it.")
    me = indexed.session("me", cwd="/work/app", created_at=4)
    say_user(me, "hi")
    indexed.sync()

    async def listing() -> Any:
        return indexed.records, indexed.titles

    tools = SessionTools(
        SessionReferenceService(indexed.reader), indexed.search, indexed.reader.get("me"), listing=listing
    )
    for name, arguments in (
        ("reference_session", {"session": "leaky"}),
        ("read_session", {"session": "leaky"}),
        ("search_sessions", {"query": "wombat"}),
    ):
        result = asyncio.run(tools.call(name, json.dumps(arguments)))
        assert not any(part in result.text for part in (KEY, KEY[:24], KEY[-24:])), name
        if name != "search_sessions":
            assert "[redacted: anthropic-key]" in result.text, (name, result.text[-400:])
    indexed.reader.close()


async def _mcp(root: Path, *flags: str) -> list[str]:
    parameters = StdioServerParameters(
        command=sys.executable,
        args=["-m", "tui.cli", "mcp", "--root", str(root), "--no-external", *flags],
        env={**os.environ, "PYTHONPATH": str(REPO)},
        cwd=str(root.parent),
    )
    async with stdio_client(parameters) as (read, write), ClientSession(read, write) as session:
        await session.initialize()
        texts = []
        for name, arguments in (
            ("reference_session", {"session": "leaky"}),
            ("read_session", {"session": "leaky", "from_message": 0}),
        ):
            result = await session.call_tool(name, arguments)
            texts.append(str(result.content[0].text))  # type: ignore[union-attr]
    return texts


def test_sessionref_mcp_never_hands_the_value_over_unless_told(tmp_path: Path) -> None:
    _store(tmp_path / "store")
    for text in asyncio.run(_mcp(tmp_path / "store")):
        assert KEY not in text and AWS_SECRET not in text and "[redacted: anthropic-key]" in text
    assert all(KEY in text for text in asyncio.run(_mcp(tmp_path / "store", "--no-redaction")))


def test_the_preview_says_what_was_masked_and_when_masking_is_off(tmp_path: Path) -> None:
    _store(tmp_path / "store")
    store = JsonlSessionStore(tmp_path / "store")
    me = store.get("me")
    mention = format_session_reference_mention
    draft = f"look at {mention('leaky', 'Leaky')} and {mention('clean', 'Clean')}"
    report = asyncio.run(build_preview(SessionReferenceService(store), me, draft))
    leaky, clean = report.cards
    assert leaky.masked_words == "3 secrets masked: anthropic-key, aws-access-key-id, aws-secret-key"
    assert clean.masked_words is None
    assert KEY not in report.model_visible_text()  # F2 shows the masks in place
    off = asyncio.run(build_preview(SessionReferenceService(store, redact=False), me, draft))
    assert off.cards[0].masked_words == "secrets are sent as they are: redaction is off"
    assert KEY in off.model_visible_text()
    store.close()


@pytest.mark.parametrize("text", [
    "SECRET_KEY_FALLBACKS = []", "task-sk-123 and disk-sk-usage", "version 1.2.3-rc.4",
    "dsh-session:2b185404-aea4-46b3-b754-acf95282f59e", "color: #ff00aa;",
])  # fmt: skip
def test_look_alikes_named_in_the_issue_stay(text: str) -> None:
    assert find_secrets(text) == []


def test_doctor_secrets_names_the_sessions_that_hold_some_without_a_value_or_a_change(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from tests.support.external_fixtures import tree_state
    from tui.cli.command import main

    _store(tmp_path / "store")
    (tmp_path / "store").chmod(0o700)
    before = tree_state(tmp_path / "store")
    assert main(["doctor", "--root", str(tmp_path / "store"), "--no-external", "--secrets"]) == 1
    out = capsys.readouterr().out
    assert "warning: secrets: leaky: 3 secrets: anthropic-key (message 1), aws-access-key-id (message 0)" in out
    assert "clean" not in out.replace("cleanly", "") and KEY not in out and AWS_SECRET not in out
    assert "1 sessions hold secrets" in out or "1 session hold secrets" in out
    assert tree_state(tmp_path / "store") == before  # read-only
    assert main(["doctor", "--root", str(tmp_path / "store"), "--no-external"]) == 0  # not asked: not looked at


def test_a_title_that_holds_a_key_is_masked_where_it_labels_a_reference(tmp_path: Path) -> None:
    store = JsonlSessionStore(tmp_path / "store")
    titled = store.create("titled", cwd="/w", created_at=3)
    say_user(titled, "hello")
    me = store.create("me", cwd="/w", created_at=4)
    service = SessionReferenceService(store)
    prepared = asyncio.run(
        service.prepare(me, [{"type": "text", "text": "x"}], [ReferenceInput("titled", f"key {KEY}")])
    )
    context = prepared.contexts[0]
    assert KEY not in json.dumps(context.content) and KEY not in json.dumps(context.meta)
    assert "[redacted: anthropic-key]" in str(context.content[0]["text"])
    store.close()


def test_the_preview_pane_shows_the_masked_kinds_and_when_masking_is_off(tmp_path: Path) -> None:
    from rich.console import Console

    from tui.widgets.preview import render_report

    _store(tmp_path / "store")
    store = JsonlSessionStore(tmp_path / "store")
    draft = "see " + format_session_reference_mention("leaky", "Leaky")
    shown = []
    for redact in (True, False):
        report = asyncio.run(build_preview(SessionReferenceService(store, redact=redact), store.get("me"), draft))
        console = Console(width=100, record=True, file=open(os.devnull, "w"))  # noqa: SIM115
        console.print(render_report(report))
        shown.append(console.export_text())
    store.close()
    assert "3 secrets masked: anthropic-key, aws-access-key-id, aws-secret-key" in shown[0] and KEY not in shown[0]
    assert "⚠ secrets are sent as they are: redaction is off" in shown[1]


def test_text_with_a_lone_surrogate_is_scanned_and_masked() -> None:
    """JavaScript strings may hold a lone surrogate (dsh writes them): the scan never fails on one."""
    from core.secrets.finder import mask_secrets

    key = "sk-ant-api03-" + "a1B2c3D4e5" * 9 + "AA"
    masked = mask_secrets(f"\udc79 the key {key} \ud83d")
    assert masked.text == "\udc79 the key [redacted: anthropic-key] \ud83d"


def test_a_session_that_keeps_changing_keeps_one_masked_copy(tmp_path: Path) -> None:
    """The masked conversations kept for the next prepare are one a session, its latest: a source
    that changes between prepares (a chat going on beside this one) does not pile up its revisions
    (each a whole conversation; twenty loads of a 20,000-message session once grew the app by 1 GB)."""
    from core import MemorySessionStore
    from core.reference.service import MASKED_KEPT

    store = MemorySessionStore()
    me = store.create("me", cwd="/w")
    others = [store.create(f"other-{n}", cwd="/w") for n in range(3)]
    service = SessionReferenceService(store, redact=True)
    loop = asyncio.new_event_loop()
    try:
        for turn in range(MASKED_KEPT + 4):
            for other in others:
                say_user(other, f"turn {turn}: the key is {KEY}")
                prepared = loop.run_until_complete(
                    service.prepare(me, [{"type": "text", "text": "go"}], [ReferenceInput(other.id)])
                )
                assert KEY not in prepared.contexts[0].content[0]["text"]
    finally:
        loop.close()
    assert sorted(service._masked) == ["other-0", "other-1", "other-2"]
