"""Transcripts Claude Code (1.0.98 to 2.1.39) and Codex CLI (the bare-line layout to Desktop 0.128)
wrote themselves (``../shared/fixtures/external-real/``): every one lists (sub-agent files excluded),
reads and projects every user prompt and assistant text of its main chain, checked against a reading
of the raw lines written here independently of the readers."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

from core.reference.projection import project_conversation
from core.sessions.sources.claude import ClaudeCodeSource
from core.sessions.sources.codex import CodexSource
from tests.support.shared_fixtures import shared_fixtures


def _real() -> Path:
    return shared_fixtures("external-real")


def _records(path: Path) -> list[Any]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


# -- Claude Code: the main chain, read by hand ---------------------------------------------------------


def _claude_words(message: Any) -> str:
    content = message.get("content") if isinstance(message, dict) else None
    if isinstance(content, str):
        return content
    return "\n".join(block["text"] for block in content or [] if block.get("type") == "text" and block.get("text"))


def claude_expected(path: Path) -> list[tuple[str, str]]:
    """(role, text) of the chain that ends in the newest linked record: walk ``parentUuid`` back
    through every record kind (progress included); from a compaction summary on; slash-command
    echoes as "/name words" when words were typed, other echoes and meta records left out."""
    linked = [r for r in _records(path) if isinstance(r.get("uuid"), str) and not r.get("isSidechain")]
    by_uuid = {record["uuid"]: record for record in linked}
    chain: list[dict[str, Any]] = []
    record: dict[str, Any] | None = linked[-1]
    while record is not None:
        chain.insert(0, record)
        record = by_uuid.get(record.get("parentUuid"))  # type: ignore[arg-type]
    expected: list[tuple[str, str]] = []
    for record in chain:
        if record["type"] not in ("user", "assistant") or record.get("isMeta"):
            continue
        text = _claude_words(record.get("message"))
        if not text.strip():
            continue  # tool calls, tool results, thinking
        if record.get("isCompactSummary"):
            expected = [("user", text)]
            continue
        if record["type"] == "assistant":
            expected.append(("assistant", text))
            continue
        name = re.search(r"<command-name>(.*?)</command-name>", text)
        if name is not None:
            words = re.search(r"<command-args>(.*?)</command-args>", text, re.DOTALL)
            if words is not None and words.group(1).strip():
                expected.append(("user", f"{name.group(1)} {words.group(1).strip()}"))
            continue
        if text.lstrip().startswith(("<local-command-stdout>", "<command-message>", "Caveat: ")):
            continue
        expected.append(("user", text))
    return expected


def claude_files() -> list[Path]:
    return sorted(path for path in (_real() / "claude" / "projects").glob("*/*.jsonl"))


def test_the_real_claude_files_are_all_here() -> None:
    files = claude_files()
    assert len([path for path in files if not path.name.startswith("agent-")]) == 11
    assert len([path for path in files if path.name.startswith("agent-")]) == 2


def test_every_real_claude_session_lists_reads_and_projects_its_main_chain() -> None:
    source = ClaudeCodeSource(_real() / "claude")
    listed = {record.header.id: record for record in source.listing()}
    assert source.problems == []
    sessions = [path for path in claude_files() if not path.name.startswith("agent-")]
    assert set(listed) == {f"claude:{path.stem}" for path in sessions}  # sub-agent sidechains are not sessions
    for path in sessions:
        session_id = f"claude:{path.stem}"
        assert listed[session_id].header.cwd == next(r["cwd"] for r in _records(path) if r.get("cwd"))
        projected = [(item.role, item.text) for item in project_conversation(source.surface(session_id))]
        expected = claude_expected(path)
        assert projected == expected, path.name
        assert any(role == "assistant" for role, _ in expected), path.name


def test_claude_2_1_progress_records_no_longer_cut_the_chain() -> None:
    """The cases the issue names: the newest record's parent is a ``progress`` record (2.1.39, with a
    compaction), and the first prompt sits behind one (2.1.38)."""
    source = ClaudeCodeSource(_real() / "claude")
    compacted = project_conversation(source.surface("claude:4d5611e5-241a-462a-8d15-5122611a9569"))
    assert len(compacted) == 46
    assert compacted[0].text.startswith("This session is being continued from a previous conversation")
    short = project_conversation(source.surface("claude:55604662-cf2a-4331-851a-ec234028f8ca"))
    assert short[0].role == "user" and short[0].text.startswith("mix phx.server doesnt seem to start")
    # A notification the tool wrote in the user's turn is conversation, never the title.
    assert source.title("claude:4d5611e5-241a-462a-8d15-5122611a9569") is None


def test_claude_1_x_slash_commands_keep_the_words_typed_after_them() -> None:
    source = ClaudeCodeSource(_real() / "claude")
    session_id = "claude:5c0375b4-57a5-4f26-b12d-d022ee4e51b7"
    first = project_conversation(source.surface(session_id))[0]
    assert (first.role, first.text) == ("user", "/orchestrator @CLAUDE.md を最新の状態にアップデートしてください")
    title = source.title(session_id)
    assert title is not None and title.title == "/orchestrator @CLAUDE.md を最新の状態にアップデートしてください"
    bare = source.title("claude:1af7fc5e-8455-4414-9ccd-011d40f70b2a")  # `/init`, no words typed
    assert bare is not None and bare.title == "/init"


# -- Codex CLI: every prompt and answer once ------------------------------------------------------------

BOILERPLATE = ("<user_instructions", "<environment_context", "# AGENTS.md instructions for ")


def _codex_words(content: Any) -> str:
    if isinstance(content, str):
        return content
    return "\n".join(
        block["text"]
        for block in content or []
        if block.get("type") in ("input_text", "output_text", "text") and block.get("text")
    )


def codex_expected(path: Path) -> list[tuple[str, str]]:
    """Per role: the ``message`` response items (bare lines in the older layout) when the file has
    any of that role, else the ``event_msg`` records; in file order; instructions left out."""
    items: list[tuple[int, str, str]] = []
    events: list[tuple[int, str, str]] = []
    for number, record in enumerate(_records(path)):
        payload = record.get("payload")
        item = payload if record.get("type") == "response_item" else record if "payload" not in record else None
        if isinstance(item, dict) and item.get("type") == "message" and item.get("role") in ("user", "assistant"):
            text = _codex_words(item.get("content"))
            if text.strip() and not text.lstrip().startswith(BOILERPLATE):
                items.append((number, item["role"], text))
        elif record.get("type") == "event_msg" and payload.get("type") in ("user_message", "agent_message"):
            text = payload.get("message")
            if isinstance(text, str) and text.strip() and not text.lstrip().startswith(BOILERPLATE):
                events.append((number, "user" if payload["type"] == "user_message" else "assistant", text))
    chosen = []
    for role in ("user", "assistant"):
        pool = items if any(entry[1] == role for entry in items) else events
        chosen += [entry for entry in pool if entry[1] == role]
    return [(role, text) for _number, role, text in sorted(chosen)]


def codex_files() -> list[Path]:
    return sorted((_real() / "codex" / "sessions").glob("*/*/*/rollout-*.jsonl"))


def test_every_real_codex_session_lists_reads_and_projects_every_message_once() -> None:
    source = CodexSource(_real() / "codex")
    listed = {record.header.id: record for record in source.listing()}
    assert source.problems == []
    files = codex_files()
    assert len(files) == 5 and len(listed) == 5
    for path in files:
        session_id = "codex:" + path.stem[-36:]
        assert listed[session_id].header.cwd is not None, path.name  # the older layout's too
        session = source.session(session_id)
        assert session.problems == 0, path.name
        projected = [(item.role, item.text) for item in project_conversation(source.surface(session_id))]
        expected = codex_expected(path)
        assert projected == expected, path.name
        assert {"user", "assistant"} <= {role for role, _ in expected} or "019b7f94" in path.name  # (ends early)
        prompts = sum(1 for record in _records(path) if (record.get("payload") or {}).get("type") == "user_message")
        if prompts:  # every prompt the tool logged as an event is there once, whichever kind it came from
            assert sum(1 for role, _ in projected if role == "user") == prompts, path.name


@pytest.mark.parametrize(
    ("stem", "title", "cwd"),
    [
        # Codex Desktop 0.128: prompts only as event_msg, answers only as response items: both kept.
        (
            "019e1695-0522-7c83-8b39-0dd379793f80",
            "analyze trascript and summarzie action items",
            "/Users/Sample_User/naya",
        ),
        # 0.125 and 0.77 open with the AGENTS.md instructions: boilerplate, not the title.
        ("019e1625-789d-76c0-80ab-3724b5ddb799", "show tools", "/Users/Sample_User/repos/codemie-ai/codemie-code"),
        ("019b7f94-51b4-7593-922e-ba12b5b73b52", "what is current repository about?", None),
        # 0.40 from an IDE: the title is the request, not the open tabs before it.
        ("01997e76-d124-7592-9cac-2ec05abbca08", "Updating a team to assign a lead", None),
        # The older bare-line layout: its cwd only inside <environment_context>.
        (
            "cf4def41-21e0-4b91-adb4-5397c1492084",
            "What's the next task I should work on?",
            "/home/user/projects/codex-session-viewer",
        ),
    ],
)
def test_real_codex_titles_and_folders(stem: str, title: str, cwd: str | None) -> None:
    source = CodexSource(_real() / "codex")
    listed = {record.header.id: record for record in source.listing()}
    read = source.title(f"codex:{stem}")
    assert read is not None and read.title.startswith(title)
    if cwd is not None:
        assert listed[f"codex:{stem}"].header.cwd == cwd
    conversation = project_conversation(source.surface(f"codex:{stem}"))
    assert not any(item.text.lstrip().startswith(BOILERPLATE) for item in conversation)
    if stem.startswith("019e1695"):
        assert [item.role for item in conversation] == ["user", "assistant"] * 3
