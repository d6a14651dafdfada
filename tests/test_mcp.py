"""``sessionref mcp`` with the MCP SDK's own client over stdio, against a real folder store: the tools
are listed with their schemas and annotations, and each call gives the same bytes as the agent
loop's tools (a reference equals what ``prepare`` gives), every error path a coded error result."""

from __future__ import annotations

import asyncio
import json
import os
import sys
from pathlib import Path
from typing import Any

import pytest
from mcp.client.session import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client

from core import JsonlSessionStore, ReferenceInput, SessionQueryError, SessionReferenceService
from core.catalog.catalog import SessionCatalog
from tests.conftest import say_assistant, say_user
from tests.support.pg_cluster import cluster, database, team
from tests.support.rc8 import INTEROP, NODE
from tests.test_session_tools import frame_text, split_result

__all__ = ["cluster", "database", "team"]  # the fixtures

REPO = Path(__file__).resolve().parent.parent


def _store(root: Path) -> None:
    store = JsonlSessionStore(root)
    design = store.create("design", cwd="/work/app", created_at=3)
    for index in range(100):
        say_user(design, f"question {index}: " + "why a log? " * 40 + (" the wombat decision" if index == 50 else ""))
        say_assistant(design, f"answer {index}: " + "because fsync. " * 40)
    design.append("session/title", {"title": "Storage design", "messageSeqs": [0], "source": "user"})
    other = store.create("mine", cwd="/work/app", created_at=4)
    say_user(other, "the agent's own session")
    store.close()


async def _client(root: Path, calls: list[tuple[str, dict[str, Any]]], *more: str) -> tuple[Any, list[Any]]:
    parameters = StdioServerParameters(
        command=sys.executable,
        args=["-m", "tui.cli", "mcp", "--root", str(root), "--no-external", *more],
        env={**os.environ, "PYTHONPATH": str(REPO)},
        cwd=str(root.parent),
    )
    async with stdio_client(parameters) as (read, write), ClientSession(read, write) as session:
        await session.initialize()
        tools = await session.list_tools()
        results = [await session.call_tool(name, arguments) for name, arguments in calls]
    return tools, results


def snapshot(root: Path, **config: Any) -> str:
    """What ``prepare`` gives for a reference to ``design`` in the store at ``root``."""
    store = JsonlSessionStore(root)
    try:
        prepared = asyncio.run(
            SessionReferenceService(store, config or None).prepare(
                type("Caller", (), {"id": "x"})(), [{"type": "text", "text": ""}], [ReferenceInput("design")]
            )
        )
    finally:
        store.close()
    return str(prepared.contexts[0].content[0]["text"])


def _text(result: Any) -> str:
    (content,) = result.content
    return str(content.text)


def test_the_session_tools_over_mcp(tmp_path: Path) -> None:
    root = tmp_path / "store"
    _store(root)
    calls = [
        ("search_sessions", {"query": "storage"}),
        ("reference_session", {"session": "design"}),
        ("read_session", {"session": "design", "from_message": 100, "to_message": 102}),
        ("read_session", {"session": "design", "from_message": 9999}),
        ("reference_session", {"session": "mine", "exclude_session": "mine"}),
        ("reference_session", {"session": "nobody"}),
        ("delete_everything", {}),
        ("read_session", {"session": "design", "from_message": "3"}),
    ]
    tools, results = asyncio.run(_client(root, calls))
    listed = {tool.name: tool for tool in tools.tools}
    assert sorted(listed) == ["read_session", "reference_session", "search_sessions"]
    for tool in listed.values():
        annotations = tool.annotations
        assert annotations is not None and tool.title
        assert (annotations.read_only_hint, annotations.destructive_hint, annotations.open_world_hint) == (
            True, False, False
        )  # fmt: skip
        assert "exclude_session" in tool.input_schema["properties"]
    search, reference, read, out_of_range, excluded, missing, unknown, invalid = results
    assert not search.is_error and '"session":"design"' in _text(search)
    notice, frame = split_result(_text(reference))
    assert frame == snapshot(root)  # the same bytes as a reference, after what the snapshot holds of it
    assert notice.startswith('Session "design" has 200 messages, at positions 0–199') and "It omits" in notice
    assert not read.is_error and "the wombat decision" in _text(read)
    page = json.loads(frame_text(_text(read), "session-messages"))
    assert (page["from"], page["to"], page["totalMessages"]) == (100, 102, 200)
    for result, code in ((out_of_range, "TOOL_OUT_OF_RANGE"), (excluded, "TOOL_SELF_REFERENCE"),
                         (missing, "TOOL_SESSION_NOT_FOUND"), (unknown, "TOOL_UNKNOWN"),
                         (invalid, "TOOL_INVALID_ARGUMENTS")):  # fmt: skip
        assert result.is_error and _text(result).endswith(f"({code})"), _text(result)
    # Read-only: the store's session files are as they were.
    assert sorted(path.name for path in root.rglob("session.jsonl.zstd")) == ["session.jsonl.zstd"] * 2


def test_a_missing_store_is_one_line_and_exit_3(tmp_path: Path) -> None:
    import subprocess

    done = subprocess.run(
        [sys.executable, "-m", "tui.cli", "mcp", "--root", str(tmp_path / "absent")],
        capture_output=True, text=True, cwd=REPO, timeout=60,
    )  # fmt: skip
    assert (done.returncode, done.stdout) == (3, "")
    assert done.stderr == f"sessionref mcp: {tmp_path / 'absent'} is not a session store folder\n"


def test_links_out_of_the_store_are_never_followed(tmp_path: Path) -> None:
    """A session file, a session folder and a project folder that are symlinks to sessions outside the
    store: the server neither lists, searches nor reads them."""
    root, outside = tmp_path / "store", tmp_path / "outside"
    _store(root)
    store = JsonlSessionStore(outside)
    for name in ("secret-file", "secret-folder", "secret-project"):
        say_user(store.create(name, cwd=f"/elsewhere/{name}", created_at=5), "the password is swordfish")
    store.close()
    project = root / "--work-app--"
    (project / "secret-file").mkdir()
    (project / "secret-file" / "session.jsonl.zstd").symlink_to(
        outside / "--elsewhere-secret-file--" / "secret-file" / "session.jsonl.zstd"
    )
    (project / "secret-folder").symlink_to(outside / "--elsewhere-secret-folder--" / "secret-folder")
    (root / "--elsewhere-secret-project--").symlink_to(outside / "--elsewhere-secret-project--")
    calls: list[tuple[str, dict[str, Any]]] = [("search_sessions", {"query": "secret"})]
    for name in ("secret-file", "secret-folder", "secret-project"):
        calls += [("reference_session", {"session": name}), ("read_session", {"session": name})]
    _tools, (search, *reads) = asyncio.run(_client(root, calls))
    found = frame_text(_text(search), "session-search-results")
    assert json.loads(found)["sessions"] == []
    # The control: served from their own store, the same search finds all three.
    _tools, (control,) = asyncio.run(_client(outside, calls[:1]))
    assert all(f'"session":"secret-{kind}"' in _text(control) for kind in ("file", "folder", "project"))
    for result in reads:
        assert result.is_error and "swordfish" not in _text(result), _text(result)


class _Failing(JsonlSessionStore):
    """The folder store, but reading a session fails (a disk error) or hangs (a stuck network mount)."""

    hang = False

    async def read_surface(self, session_id: str) -> Any:
        if self.hang:
            await asyncio.sleep(3600)
        raise SessionQueryError("input/output error", "SESSION_QUERY_READ_FAILED")


def test_a_failing_or_hanging_store_is_a_coded_tool_error(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """What the server adds to the tools: a read that fails is ``TOOL_READ_FAILED``, one that hangs
    answers ``TOOL_TIMEOUT`` after the bound (here 0.5 s instead of 20) and the next call is served."""
    import core.mcp.server as mcp_cli

    root = tmp_path / "store"
    _store(root)
    store = query = _Failing(root)
    server = mcp_cli.SessionToolServer(SessionCatalog(store), "/work/app")
    monkeypatch.setattr(mcp_cli, "CALL_SECONDS", 0.5)

    async def calls() -> list[Any]:
        failed = await server.call("reference_session", {"session": "design"})
        query.hang = True
        started = asyncio.get_running_loop().time()
        hung = await server.call("read_session", {"session": "design"})
        waited = asyncio.get_running_loop().time() - started
        listed = await server.call("search_sessions", {"query": "storage"})
        return [failed, hung, waited, listed]

    failed, hung, waited, listed = asyncio.run(calls())
    server.close()
    store.close()
    assert (failed.is_error, failed.code) == (True, "TOOL_READ_FAILED") and "input/output error" in failed.text
    assert (hung.is_error, hung.code) == (True, "TOOL_TIMEOUT") and 0.5 <= waited < 5
    assert hung.text == "the store did not answer within 0.5 s; try again (TOOL_TIMEOUT)"
    assert not listed.is_error and '"session":"design"' in listed.text


def test_the_config_file_sets_the_bounds(tmp_path: Path) -> None:
    """``--config``: the file's [reference] limits bound a reference and [tools] read_bytes a page,
    as in the app; a bad file is one line on stderr and exit 2, before anything is served."""
    import subprocess

    root = tmp_path / "store"
    _store(root)
    config = tmp_path / "sessionref.toml"
    config.write_text("[reference]\nmax_reference_bytes = 8192\n\n[tools]\nread_bytes = 2048\n")
    calls = [("reference_session", {"session": "design"}), ("read_session", {"session": "design"})]
    _tools, (reference, read) = asyncio.run(_client(root, calls, "--config", str(config)))
    assert split_result(_text(reference))[1] == snapshot(root, max_reference_bytes=8192)
    assert len(_text(reference).encode()) < 8192 + 1024  # the budget, and the frame around it
    assert not read.is_error
    page = frame_text(_text(read), "session-messages")
    assert len(page.encode()) <= 2048 and json.loads(page)["remainingAfter"] > 0  # a page of 2 KiB, not 64
    config.write_text("[tools]\nread_bytes = 'many'\n")
    done = subprocess.run(
        [sys.executable, "-m", "tui.cli", "mcp", "--root", str(root), "--config", str(config)],
        capture_output=True, text=True, cwd=REPO, timeout=60,
    )  # fmt: skip
    assert (done.returncode, done.stdout) == (2, "")
    assert done.stderr.startswith("sessionref mcp: ") and "read_bytes" in done.stderr
    assert len(done.stderr.splitlines()) == 1 and "Traceback" not in done.stderr


def _initialize() -> bytes:
    return (
        json.dumps({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "0"}}})
        + "\n"
    ).encode()  # fmt: skip


def test_a_client_that_goes_away_ends_the_server_cleanly(tmp_path: Path) -> None:
    """Stdin closed (the client quit), or stdout's reader gone (a broken pipe): the server ends, with
    exit 0 and no traceback, and stdout never carried anything but protocol messages."""
    import subprocess

    root = tmp_path / "store"
    _store(root)
    command = [sys.executable, "-m", "tui.cli", "mcp", "--root", str(root), "--no-external"]
    environment = {**os.environ, "PYTHONPATH": str(REPO)}
    quits = subprocess.Popen(
        command, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=environment
    )
    out, err = quits.communicate(_initialize(), timeout=60)  # writes, then closes stdin
    assert quits.returncode == 0 and b"Traceback" not in err, err.decode()
    (line,) = out.splitlines()
    assert json.loads(line)["result"]["serverInfo"]["name"] == "sessionref"
    # The reader of its stdout goes first; then a request whose answer has nowhere to go.
    broken = subprocess.Popen(
        command, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=environment
    )
    assert broken.stdin is not None and broken.stdout is not None and broken.stderr is not None
    broken.stdout.close()
    broken.stdin.write(_initialize())
    broken.stdin.flush()
    broken.stdin.close()
    assert broken.wait(timeout=60) == 0
    assert b"Traceback" not in broken.stderr.read()


def test_on_a_team_store_the_server_sees_what_the_role_may_see(team: Any) -> None:
    """On PostgreSQL: bob's server finds and references what alice shared with his team, never her
    unshared session (it reads as missing)."""
    from core.database.store import PostgresSessionStore
    from tests.test_pg_schema import _uri

    alice = PostgresSessionStore(team.alice)
    for session_id, words in (("shared-plan", "the wombat plan"), ("private", "the hidden otter")):
        session = alice.create(session_id, cwd="/work/team")
        say_user(session, words)
        session.append("session/title", {"title": session_id.title(), "messageSeqs": [0], "source": "user"})
    alice.share("shared-plan", team.team)
    alice.close()

    async def as_bob() -> list[Any]:
        parameters = StdioServerParameters(
            command=sys.executable,
            args=["-m", "tui.cli", "mcp", "--store", _uri(team.bob), "--no-external"],
            env={**os.environ, "PYTHONPATH": str(REPO)},
        )
        async with stdio_client(parameters) as (read, write), ClientSession(read, write) as session:
            await session.initialize()
            return [
                await session.call_tool("search_sessions", {"query": "plan"}),
                await session.call_tool("reference_session", {"session": "shared-plan"}),
                await session.call_tool("reference_session", {"session": "private"}),
                await session.call_tool("search_sessions", {"query": "otter"}),
                await session.call_tool("search_sessions", {"query": "wombat"}),
            ]

    found, shared, private, otter, wombat = asyncio.run(as_bob())
    assert '"session":"shared-plan"' in _text(found) and "private" not in _text(found)
    assert "the wombat plan" in _text(shared)
    assert private.is_error and _text(private).endswith("(TOOL_SESSION_NOT_FOUND)")
    assert '"sessions":[]' in _text(otter)
    # Message search on the database's own index, as the app does: a word only the shared one's body has.
    assert '"session":"shared-plan"' in _text(wombat) and "message search is off" not in _text(wombat)


@pytest.mark.interop
@pytest.mark.skipif(NODE is None, reason="the interop packages are not installed (make interop)")
def test_the_official_typescript_sdk_client_lists_and_calls_the_tools(tmp_path: Path) -> None:
    """An MCP client nobody here wrote (``@modelcontextprotocol/sdk``, under the Node the interop
    packages bring) drives ``sessionref mcp``: it sees the tools with their annotations, and a
    reference it asks for is the snapshot ``prepare`` gives."""
    import subprocess

    root = tmp_path / "store"
    _store(root)
    request = {
        "command": sys.executable,
        "args": ["-m", "tui.cli", "mcp", "--root", str(root), "--no-external"],
        "env": {**os.environ, "PYTHONPATH": str(REPO)},
        "calls": [
            ["reference_session", {"session": "design"}],
            ["read_session", {"session": "design", "from_message": 7000}],
        ],
    }
    assert NODE is not None
    done = subprocess.run(
        [NODE, str(INTEROP / "mcp_client.mjs")], input=json.dumps(request), capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr
    answer = json.loads(done.stdout)
    tools = {tool["name"]: tool for tool in answer["tools"]}
    assert sorted(tools) == ["read_session", "reference_session", "search_sessions"]
    assert tools["reference_session"]["annotations"] == {
        "title": "Reference a session", "readOnlyHint": True, "destructiveHint": False, "openWorldHint": False
    }  # fmt: skip
    reference, out_of_range = answer["results"]
    assert not reference["isError"] and split_result(reference["text"])[1] == snapshot(root)
    assert out_of_range["isError"] and out_of_range["text"].endswith("(TOOL_OUT_OF_RANGE)")


def test_a_client_that_knows_only_the_descriptions_reads_what_a_snapshot_omitted(tmp_path: Path) -> None:
    """Over MCP, as an agent would: the reference_session description promises lines saying what
    the snapshot omits; they name messages 0–763 of a 1,000-message session and the read_session
    call that reads them; message 3 comes back whole."""
    from tests.test_tool_texts import LONG, WIDTH, _reference_lines

    root = tmp_path / "store"
    store = JsonlSessionStore(root)
    long = store.create("long", cwd="/w", created_at=5)
    for index in range(LONG):
        (say_user if index % 2 == 0 else say_assistant)(long, f"message {index:03d} " + "w" * WIDTH)
    store.close()
    calls = [
        ("reference_session", {"session": "long"}),
        ("read_session", {"session": "long", "from_message": 3, "to_message": 4}),
    ]
    tools, (reference, read) = asyncio.run(_client(root, calls))
    (described,) = [tool.description for tool in tools.tools if tool.name == "reference_session"]
    assert described is not None and "which it omits" in described
    said = _reference_lines(split_result(_text(reference))[0])
    assert said["omitted"] == list(range(764)) and said["kept"] == list(range(764, 1000))
    assert said["call"] == {"session": "long", "from_message": 0, "to_message": 764}
    page = json.loads(frame_text(_text(read), "session-messages"))
    assert page["messages"] == [{"index": 3, "role": "assistant", "text": "message 003 " + "w" * WIDTH}]
