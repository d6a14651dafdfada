"""Claude Code and Codex CLI session files as those tools write them, for the app's tests.

``seed_external`` writes one Claude Code session in the demo project (so it groups with the demo's
own sessions there) and one Codex session elsewhere, with times inside the demo's clock.
"""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from tui.cli.demo import DEMO_OTHER, DEMO_PROJECT, DEMO_START

CLAUDE_UUID = "5b1f3c2a-7d4e-4f6a-9b8c-0d1e2f3a4b5c"
CODEX_UUID = "c0dec0de-0000-4000-8000-00000000beef"


def tree_state(root: Path) -> dict[str, tuple[int, int]]:
    """Every path under ``root`` with its size and mtime: equal before and after means untouched."""
    return {str(p): (p.stat().st_size, p.stat().st_mtime_ns) for p in sorted(root.rglob("*"))}


def _iso(ms: int) -> str:
    return datetime.fromtimestamp(ms / 1000, UTC).strftime("%Y-%m-%dT%H:%M:%S.000Z")


def _write(path: Path, records: list[dict[str, Any]]) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps(record) + "\n" for record in records), encoding="utf-8")
    return path


def seed_external(claude_root: Path, codex_root: Path, claude_cwd: str = DEMO_PROJECT) -> None:
    """One Claude Code session (in the demo project, or ``claude_cwd``, 30 s after the demo's newest)
    and one Codex session (in the website folder, 90 s before the demo's oldest)."""
    at = DEMO_START + 6 * 60_000 + 30_000
    common = {"sessionId": CLAUDE_UUID, "cwd": claude_cwd, "isSidechain": False, "version": "1.0.80"}
    _write(
        claude_root / "projects" / "-home-demo-projects-sessionref" / f"{CLAUDE_UUID}.jsonl",
        [
            {"type": "summary", "summary": "Flaky lock test fix", "leafUuid": "a2"},
            {**common, "type": "user", "uuid": "u1", "parentUuid": None, "timestamp": _iso(at),
             "message": {"role": "user", "content": "Why does the lock test flake on CI?"}},
            {**common, "type": "assistant", "uuid": "a1", "parentUuid": "u1", "timestamp": _iso(at + 2000),
             "message": {"role": "assistant", "content": [
                 {"type": "thinking", "thinking": "look at the timeout", "signature": "sig"},
                 {"type": "tool_use", "id": "t1", "name": "Read", "input": {"file_path": "tests/test_lock.py"}}]}},
            {**common, "type": "user", "uuid": "r1", "parentUuid": "a1", "timestamp": _iso(at + 3000),
             "message": {"role": "user", "content": [
                 {"type": "tool_result", "tool_use_id": "t1", "content": "SECRET TOOL OUTPUT"}]}},
            {**common, "type": "assistant", "uuid": "a2", "parentUuid": "r1", "timestamp": _iso(at + 5000),
             "message": {"role": "assistant", "content": [
                 {"type": "text", "text": "The flock is taken before the wombat fixture releases it."}]}},
        ],
    )  # fmt: skip
    at = DEMO_START - 90_000
    meta = {"id": CODEX_UUID, "timestamp": _iso(at), "cwd": DEMO_OTHER, "originator": "codex_cli_rs"}
    _write(
        codex_root / "sessions" / "2025" / "12" / "31" / f"rollout-2025-12-31T23-58-30-{CODEX_UUID}.jsonl",
        [
            {"timestamp": _iso(at), "type": "session_meta", "payload": meta},
            {"timestamp": _iso(at), "type": "response_item", "payload": {"type": "message", "role": "user",
             "content": [{"type": "input_text", "text": "<environment_context>\n</environment_context>"}]}},
            {"timestamp": _iso(at + 1000), "type": "response_item", "payload": {"type": "message", "role": "user",
             "content": [{"type": "input_text", "text": "Make the hero image load lazily"}]}},
            {"timestamp": _iso(at + 2000), "type": "response_item", "payload": {"type": "reasoning",
             "summary": [], "encrypted_content": "gAAAAB"}},
            {"timestamp": _iso(at + 3000), "type": "response_item", "payload": {"type": "message",
             "role": "assistant", "content": [{"type": "output_text", "text": "Added loading=lazy to the img."}]}},
        ],
    )  # fmt: skip
