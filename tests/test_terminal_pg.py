"""The real app in a real terminal on a real PostgreSQL: bob references a session alice wrote from
another process (another "machine", another role) and shared with their team; her unshared session
never shows."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from core.database.store import PostgresSessionStore
from tests.support.pg_cluster import Team, cluster, database, team
from tests.test_terminal import Terminal, app_env, pytestmark

__all__ = ["cluster", "database", "pytestmark", "team"]  # the fixtures, and tmux or skip

REPO = Path(__file__).resolve().parent.parent
CWD = "/work/shared"

_ALICE = """
import sys
from core.database.store import PostgresSessionStore
from tests.conftest import say_assistant, say_user
store = PostgresSessionStore(sys.argv[1])
plan = store.create("alice-plan-7", cwd=sys.argv[3])
say_user(plan, "how do we cache the listing?")
say_assistant(plan, "the wombat plan: keep it and fetch only what moved")
plan.append("session/title", {"title": "Listing cache plan", "messageSeqs": [0], "source": "user"})
store.share("alice-plan-7", sys.argv[2])
notes = store.create("private-notes", cwd=sys.argv[3])
say_user(notes, "the wombat is also my secret nickname")
notes.append("session/title", {"title": "Private notes", "messageSeqs": [0], "source": "user"})
store.close()
"""


def test_bob_references_the_session_alice_shared_from_another_machine(team: Team, tmp_path: Path) -> None:
    subprocess.run([sys.executable, "-c", _ALICE, team.alice, team.team, CWD], cwd=REPO, check=True, timeout=60)
    command = [sys.executable, "-m", "tui.cli", "--store", team.bob, "--cwd", CWD]
    terminal = Terminal(command, app_env(tmp_path))
    try:
        # The sidebar has room for "@t123_0… Listing …": the owner's badge, then the title.
        screen = terminal.wait_for(lambda s: "Prompt" in s and "… Listing" in s)
        assert "Private" not in screen
        terminal.mention("what did alice decide in ", "wombat")  # said only in her messages
        screen = terminal.wait_for(lambda s: "ai: the wombat plan" in s)
        assert "Private" not in screen and "secret nickname" not in screen
        terminal.accept_and_send("Listing cache plan", kept="2 of 2 messages kept")
        terminal.quit()
    finally:
        terminal.close()

    store = PostgresSessionStore(team.bob)
    [mine] = [session_id for session_id in store.listed_revisions() or _ids(store) if session_id != "alice-plan-7"]
    _header, events = store.read_log(mine)
    prompt = next(event for event in events if event.type == "user/message")
    assert prompt.data["envelope"]["prefixContexts"][0]["meta"]["references"][0]["sessionId"] == "alice-plan-7"
    assert "the wombat plan: keep it and fetch only what moved" in prompt.data["content"][0]["text"]
    assert "secret nickname" not in prompt.data["content"][0]["text"]
    store.close()


def _ids(store: PostgresSessionStore) -> list[str]:
    import asyncio

    return [record.header.id for record in asyncio.run(store.list_sessions())]
