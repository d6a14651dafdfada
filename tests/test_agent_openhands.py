"""OpenHands CLI (``openhands``, pinned in ``tests/interop/python/openhands.txt``, in its own
virtualenv on Python 3.12), run offline against a local stub of an OpenAI-compatible API
(``--override-with-envs``: ``LLM_MODEL``, ``LLM_BASE_URL``, ``LLM_API_KEY``): a plain chat, a resumed
turn calling its ``terminal`` tool, a resumed turn with hostile text, then its own condensation.
sessionref lists what it wrote with its folder, finds it by a word through ``sessionref mcp
--openhands-root`` and references it. Then the events' corners, in files as the SDK writes them."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest

from core import project_conversation
from core.sessions.sources.files import local_millis
from core.sessions.sources.openhands import OpenHandsSource, openhands_root
from tests.support.rc8 import INTEROP
from tests.test_agents_real import (
    HOSTILE,
    _OpenAI,
    base_environment,
    check_search,
    check_sessions,
    run,
    setup_work,
    stub,
    tool_turn_made,
)

OPENHANDS = INTEROP / "python" / ".venv-openhands" / "bin" / "openhands"
_OPTIONAL = os.environ.get("SESSIONREF_REQUIRE_INTEROP") != "1"
needs_openhands = pytest.mark.skipif(
    _OPTIONAL and not OPENHANDS.exists(), reason="OpenHands is not installed (make agents)"
)


def openhands_environment(home: Path, port: int) -> dict[str, str]:
    return {
        **base_environment(home),
        "LLM_MODEL": "openai/stub-model",
        "LLM_BASE_URL": f"http://127.0.0.1:{port}/v1",
        "LLM_API_KEY": "stub",
        "LITELLM_LOCAL_MODEL_COST_MAP": "True",  # (else LiteLLM fetches its price list, retrying for 20 s)
        "OPENHANDS_SUPPRESS_BANNER": "1",
    }


def openhands(environment: dict[str, str], work: Path, *arguments: str) -> str:
    command = [str(OPENHANDS), "--headless", "--override-with-envs", "--always-approve", *arguments]
    return run(command, work, environment)


def _conversation(source: OpenHandsSource, session_id: str) -> list[str]:
    return [item.text for item in project_conversation(source.surface(session_id))]


@needs_openhands
def test_openhands_conversations_list_search_reference_and_its_condensation(tmp_path: Path) -> None:
    home, work = setup_work(tmp_path)
    folder = home / ".openhands"
    with stub(_OpenAI) as (port, script):
        environment = openhands_environment(home, port)
        openhands(environment, work, "-t", "OH-MARK-1 hello, what is a wombat?")
        (conversation,) = [p.name for p in (folder / "conversations").iterdir()]
        openhands(environment, work, "--resume", conversation, "-t", "OH-MARK-2 please USE A TOOL to list the files")
        openhands(environment, work, "--resume", conversation, "-t", f"OH-MARK-3 resumed. {HOSTILE}")
        assert tool_turn_made(script)
        (session_id,) = check_sessions(OpenHandsSource(folder), "OH", work)
        assert session_id == f"openhands:{conversation}"
        check_search("--openhands-root", folder, "wombat", session_id, tmp_path)
        # Its own condensation: the agent it ran with, saved as its settings with a condenser of 8
        # events keeping the first 2; the next prompt makes it summarize (asking the model) before it
        # answers.
        state = json.loads((folder / "conversations" / conversation / "base_state.json").read_text())
        agent = state["agent"]
        agent["condenser"].update(max_size=8, keep_first=2)
        (folder / "agent_settings.json").write_text(json.dumps(agent))
        openhands(environment, work, "--resume", conversation, "-t", "OH-MARK-4 more")
    source = OpenHandsSource(folder)
    said = _conversation(source, session_id)
    events = source.surface(session_id).events
    assert events[0].data["source"] == {"kind": "plugin", "plugin": "compact"}
    assert said[0].startswith("OH-MARK-1 hello, what is a wombat?\n\n")  # (the first events it keeps)
    assert "OH-MARK-2" not in " ".join(said[1:])  # (forgotten: in the summary's place)
    assert said[-2:] == ["OH-MARK-4 more", "ANSWER OH-MARK-4"], said


# -- the events' corners ----------------------------------------------------------------------------------

CONVERSATION = "16c67e46aadb478eaadad7ca8f1bf03a"


def message(source: str, role: str, text: str, event: str) -> dict[str, Any]:
    """A ``MessageEvent`` as the OpenHands SDK 1.21 writes one."""
    return {"id": event, "timestamp": "2026-12-06T19:02:45.633262", "source": source,
            "llm_message": {"role": role, "content": [{"cache_prompt": False, "type": "text", "text": text}],
                            "thinking_blocks": []}, "activated_skills": [], "extended_content": [],
            "kind": "MessageEvent"}  # fmt: skip


def write_conversation(root: Path, events: list[Any], name: str = CONVERSATION) -> Path:
    folder = root / "conversations" / name
    (folder / "events").mkdir(parents=True)
    state = {"id": "16c67e46-aadb-478e-aada-d7ca8f1bf03a", "workspace": {"working_dir": "/work/oh"}}
    (folder / "base_state.json").write_text(json.dumps(state))
    for index, event in enumerate(events):
        (folder / "events" / f"event-{index:05d}-{index:08x}-0000-4000.json").write_text(json.dumps(event))
    return folder


EVENTS = [
    {"id": "s0", "timestamp": "2026-12-06T19:02:45.600000", "source": "agent", "kind": "SystemPromptEvent",
     "system_prompt": {"type": "text", "text": "You are OpenHands agent"}},
    message("user", "user", "first question", "u1"),
    {"id": "a2", "timestamp": "2026-12-06T19:02:46.0", "source": "agent", "thought": [{"type": "text", "text": "hm"}],
     "tool_name": "terminal", "tool_call_id": "call_1", "kind": "ActionEvent",
     "action": {"command": "ls", "kind": "TerminalAction"}},
    {"id": "o3", "timestamp": "2026-12-06T19:02:46.5", "source": "environment", "tool_name": "terminal",
     "tool_call_id": "call_1", "action_id": "a2", "kind": "ObservationEvent",
     "observation": {"content": [{"type": "text", "text": "SECRET-TOOL-OUTPUT"}]}},
    message("agent", "assistant", "an answer", "m4"),
    {"id": "c5", "timestamp": "2026-12-06T19:02:47.0", "source": "environment", "kind": "ConversationStateUpdateEvent",
     "key": "execution_status", "value": "finished"},
    message("user", "user", "and then?", "u6"),
    {"id": "f7", "timestamp": "2026-12-06T19:02:48.0", "source": "agent", "tool_name": "finish",
     "tool_call_id": "call_2", "kind": "ActionEvent", "action": {"message": "it is done", "kind": "FinishAction"}},
]  # fmt: skip


def test_the_events_as_the_model_reads_them_and_a_condensation(tmp_path: Path) -> None:
    write_conversation(tmp_path, EVENTS)
    source = OpenHandsSource(tmp_path)
    (record,) = source.listing()
    assert (record.header.id, record.header.cwd) == (f"openhands:{CONVERSATION}", "/work/oh")
    assert record.header.created_at == local_millis("2026-12-06T19:02:45.600000")
    assert _conversation(source, record.header.id) == ["first question", "an answer", "and then?", "it is done"]
    # A condensation forgets events and puts its summary where it says; a later one without a summary
    # forgets more, the summary staying where it was.
    condensed = [
        *EVENTS,
        {"id": "k8", "timestamp": "2026-12-06T19:02:49.0", "source": "environment", "kind": "Condensation",
         "forgotten_event_ids": ["a2", "o3", "m4", "c5"], "summary": "the lock, retried", "summary_offset": 2,
         "llm_response_id": "c1"},
        message("user", "user", "after", "u9"),
        {"id": "k10", "timestamp": "2026-12-06T19:02:50.0", "source": "environment", "kind": "Condensation",
         "forgotten_event_ids": ["u6"], "llm_response_id": "c2"},
    ]  # fmt: skip
    write_conversation(tmp_path / "b", condensed)
    source = OpenHandsSource(tmp_path / "b")
    (record,) = source.listing()
    said = _conversation(source, record.header.id)
    assert said == ["first question\n\nthe lock, retried", "it is done", "after"]
    assert source.title(record.header.id).title == "after"  # type: ignore[union-attr]


def test_odd_events_are_read_around_and_its_folder_follows_its_environment(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    odd = [
        {"kind": "MessageEvent", "timestamp": "+10000-01-01", "llm_message": {"role": 5, "content": "x"}},
        message("user", "user", "first question", "u1"),
        [1, 2],
        {"kind": "Condensation", "forgotten_event_ids": "u1", "summary": 7, "summary_offset": -1},
        {"kind": "MessageEvent", "timestamp": 17, "llm_message": {"role": "assistant", "content": [{"type": "text",
                                                                  "text": "an answer"}, {"type": "image"}]}},
        {"kind": "ActionEvent", "tool_name": "finish", "action": "done"},
    ]  # fmt: skip
    folder = write_conversation(tmp_path, odd)
    (folder / "events" / "event-00009-deadbeef-0000-4000.json").write_text("{")
    (folder / "events" / "notes.txt").write_text("not an event")
    source = OpenHandsSource(tmp_path)
    (record,) = source.listing()
    assert _conversation(source, record.header.id) == ["first question", "an answer"]
    assert source.session(record.header.id).problems == 2
    monkeypatch.delenv("OPENHANDS_CONVERSATIONS_DIR", raising=False)
    monkeypatch.delenv("OPENHANDS_PERSISTENCE_DIR", raising=False)
    monkeypatch.setenv("HOME", str(tmp_path))
    assert openhands_root() == tmp_path / ".openhands" / "conversations"
    monkeypatch.setenv("OPENHANDS_PERSISTENCE_DIR", str(tmp_path / "p"))
    assert openhands_root() == tmp_path / "p" / "conversations"
    monkeypatch.setenv("OPENHANDS_CONVERSATIONS_DIR", str(tmp_path / "c"))
    assert openhands_root() == tmp_path / "c"


def test_no_link_out_of_its_folders_is_followed(tmp_path: Path) -> None:
    outside = write_conversation(tmp_path / "outside", [message("user", "user", "not yours", "x1")], "elsewhere")
    store = tmp_path / "store"
    write_conversation(store, [message("user", "user", "first question", "u1")])
    (store / "conversations" / "linked").symlink_to(outside)
    events_link = store / "conversations" / "events-link"
    events_link.mkdir()
    (events_link / "events").symlink_to(outside / "events")
    event_link = write_conversation(store, [], "event-link") / "events"
    (event_link / "event-00000-abcdef12-0000.json").symlink_to(next((outside / "events").iterdir()))
    source = OpenHandsSource(store)
    listed = {r.header.id: _conversation(source, r.header.id) for r in source.listing()}
    assert listed == {f"openhands:{CONVERSATION}": ["first question"]}
    # (a conversation whose only event is a link holds nothing to read: reported, never followed)
    assert [problem.path.parent.name for problem in source.problems] == ["event-link"]


@needs_openhands
def test_openhands_references_a_session_through_sessionref_mcp(tmp_path: Path) -> None:
    from tests.test_agents_real import _said, docs_command, offered_tools, sessionref_on_path, tool_messages
    from tests.test_mcp import snapshot

    home, work = setup_work(tmp_path)
    path, root = sessionref_on_path(tmp_path, home)
    with stub(_OpenAI) as (port, script):
        environment = {**openhands_environment(home, port), "PATH": path}
        run([str(OPENHANDS), *docs_command("openhands")], work, environment)
        openhands(environment, work, "-t", "REFERENCE DESIGN please")
    offered = offered_tools(script)
    assert any(name.endswith("reference_session") for name in offered), offered
    (result,) = [_said(m.get("content")) for m in tool_messages(script)]
    # OpenHands cuts any tool text over 50,000 characters in the middle (a fixed limit of its SDK): the
    # 64 KiB snapshot reaches its model as its head and tail around OpenHands's notice.
    whole = snapshot(root)
    head, _clipped, tail = result.removeprefix("[Tool 'reference_session' executed.] ").partition("<response clipped>")
    assert len(result) <= 50_000 + 100 and _clipped, result[:300]
    assert head.startswith('Session "design" has 200 messages') and whole[:10_000] in head, result[:300]
    assert whole.endswith(tail[-20_000:]), result[-300:]
