"""Benchmarks of the Claude Code and Codex CLI sources: listing 2,000 + 2,000 sessions, one 20 MB read.

Files are written in the tools' own shapes (see ``core/sessions/sources/``) into a temp folder cached
across runs. "Cold" is a fresh source object (nothing cached in the process; the OS page cache is
warm, as on a machine where the tools just ran); "warm" lists again with the per-file cache.
"""

from __future__ import annotations

import asyncio
import json
import os
import sys
import tempfile
from pathlib import Path

from bench.timing import median_seconds
from core.sessions.sources.claude import ClaudeCodeSource
from core.sessions.sources.codex import CodexSource
from core.sessions.sources.merged import MergedSessionQuery

SESSIONS = 2_000
_ROOT = Path(tempfile.gettempdir()) / "sessionref-bench-external-v2"
BIG_MB = 20


def _claude_records(index: int, turns: int) -> list[dict[str, object]]:
    """A working session as Claude Code writes it: one record per content block, so a turn is a
    prompt, a text answer, a tool call, its result and a closing text."""
    uuid = f"{index:08x}-0000-4000-8000-000000000000"
    records: list[dict[str, object]] = [{"type": "summary", "summary": f"Claude session {index}", "leafUuid": "x"}]
    parent = None
    for turn in range(turns):
        stamp = f"2025-06-{1 + index % 28:02}T10:{turn % 60:02}:{turn % 59:02}.{turn % 1000:03}Z"
        common = {
            "sessionId": uuid,
            "cwd": f"/home/user/project-{index % 40}",
            "isSidechain": False,
            "timestamp": stamp,
        }

        def add(kind: str, content: object, role: str, key: str, common: dict[str, object] = common) -> None:
            nonlocal parent
            records.append(
                {
                    **common,
                    "type": kind,
                    "uuid": key,
                    "parentUuid": parent,
                    "message": {"role": role, "content": content},
                }
            )
            parent = key

        add("user", f"question {turn}: " + "why does it fail? " * 10, "user", f"u{turn}")
        add(
            "assistant",
            [{"type": "text", "text": f"answer {turn}: " + "because of the lock. " * 20}],
            "assistant",
            f"a{turn}",
        )
        add(
            "assistant",
            [{"type": "tool_use", "id": f"t{turn}", "name": "Bash", "input": {"command": "pytest -q"}}],
            "assistant",
            f"c{turn}",
        )
        add(
            "user",
            [{"type": "tool_result", "tool_use_id": f"t{turn}", "content": "collected 873 items " * 50}],
            "user",
            f"r{turn}",
        )
        add("assistant", [{"type": "text", "text": "All green now. " * 10}], "assistant", f"d{turn}")
    return records  # fmt: skip


def _codex_records(index: int, turns: int) -> list[dict[str, object]]:
    uuid = f"{index:08x}-1111-4000-8000-000000000000"
    stamp = f"2025-07-{1 + index % 28:02}T09:00:00.000Z"
    records: list[dict[str, object]] = [
        {
            "timestamp": stamp,
            "type": "session_meta",
            "payload": {"id": uuid, "timestamp": stamp, "cwd": f"/home/user/project-{index % 40}"},
        }
    ]
    for turn in range(turns):
        records.append(
            {
                "timestamp": stamp,
                "type": "response_item",
                "payload": {
                    "type": "message",
                    "role": "user",
                    "content": [{"type": "input_text", "text": f"task {turn}: " + "refactor the parser " * 10}],
                },
            }
        )
        records.append(
            {
                "timestamp": stamp,
                "type": "response_item",
                "payload": {"type": "function_call", "name": "shell", "arguments": "{}", "call_id": f"c{turn}"},
            }
        )
        records.append(
            {
                "timestamp": stamp,
                "type": "response_item",
                "payload": {
                    "type": "message",
                    "role": "assistant",
                    "content": [{"type": "output_text", "text": "done. " * 40}],
                },
            }
        )
    return records  # fmt: skip


def _write(path: Path, records: list[dict[str, object]]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps(record) + "\n" for record in records))


def seed(root: Path = _ROOT) -> tuple[Path, Path, Path]:
    """The two roots (2,000 sessions each) and one 20 MB Claude Code transcript, written once."""
    claude, codex = root / "claude", root / "codex"
    big = root / "big" / "projects" / "-home-user-big" / "0badc0de-0000-4000-8000-000000000000.jsonl"
    if (root / ".complete").exists():
        return claude, codex, big
    for index in range(SESSIONS):
        uuid = f"{index:08x}-0000-4000-8000-000000000000"
        _write(claude / "projects" / f"-home-user-project-{index % 40}" / f"{uuid}.jsonl", _claude_records(index, 4))
        day = f"{1 + index % 28:02}"
        name = f"rollout-2025-07-{day}T09-00-00-{index:08x}-1111-4000-8000-000000000000.jsonl"
        _write(codex / "sessions" / "2025" / "07" / day / name, _codex_records(index, 10))
    records = _claude_records(999_999, 1)
    turns = 0
    with_turns: list[dict[str, object]] = []
    while sum(len(json.dumps(r)) + 1 for r in with_turns) < BIG_MB * 1_000_000 and turns < 100_000:
        with_turns = _claude_records(999_999, turns := turns + 1_000)
    _write(big, with_turns or records)
    (root / ".complete").write_text("ok")
    return claude, codex, big


def _stat_floor(claude: Path, codex: Path) -> None:
    for folder in (claude / "projects", codex / "sessions"):
        for base, _dirs, names in os.walk(folder):
            for name in names:
                os.stat(os.path.join(base, name))


def main(repeats: int = 5) -> None:
    claude, codex, big = seed()
    print(f"\n## Other agents' sessions: {SESSIONS:,} Claude Code + {SESSIONS:,} Codex files")
    cold = median_seconds(lambda: (ClaudeCodeSource(claude).listing(), CodexSource(codex).listing()), repeats)
    sources = (ClaudeCodeSource(claude), CodexSource(codex))
    for source in sources:
        source.listing()
    warm = median_seconds(lambda: [source.listing() for source in sources], repeats)
    floor = median_seconds(lambda: _stat_floor(claude, codex), repeats)
    print(f"  cold listing (fresh sources, heads read): {cold * 1000:7.0f} ms   (target <= 2000 ms)")
    print(f"  warm listing (stat per file):             {warm * 1000:7.1f} ms = {warm / floor:.2f}x the stat floor"
          f" ({floor * 1000:.1f} ms; target <= 2x)")  # fmt: skip
    size = big.stat().st_size

    def parse_floor() -> None:
        with big.open("rb") as handle:
            for line in handle:
                json.loads(line)

    loop = asyncio.new_event_loop()  # one loop, as a host has (asyncio.run per call costs 0.4 s here)

    def read_surface() -> None:
        source = ClaudeCodeSource(big.parents[2])  # nothing cached: the file is read and parsed
        source.listing()
        loop.run_until_complete(source.read_surface("claude:" + big.stem))

    floor = median_seconds(parse_floor, repeats)
    read = median_seconds(read_surface, repeats)
    print(f"  read_surface of a {size / 1e6:.0f} MB transcript: {read * 1000:6.0f} ms = {read / floor:.2f}x"
          f" its parse floor ({floor * 1000:.0f} ms: json.loads of every line; target <= 2x)")  # fmt: skip
    huge = big.parent / "0badc0de-0000-4000-8000-000000000100.jsonl"
    if not huge.exists():
        chunk = big.read_bytes()
        with huge.open("wb") as handle:
            for _ in range(5):
                handle.write(chunk)  # the same records again (same uuids: one chain of the last)
    print(f"  read_surface of a {huge.stat().st_size / 1e6:.0f} MB transcript, in a fresh process:"
          f" {_huge_read(huge)}")  # fmt: skip
    query = MergedSessionQuery(sources[0], [sources[1]])
    merged = median_seconds(lambda: loop.run_until_complete(query.list_sessions()), repeats)
    loop.close()
    print(f"  the merged listing of both (warm):          {merged * 1000:6.1f} ms")


_HUGE = """
import sys, time
from pathlib import Path
from bench.timing import median_seconds
from core.sessions.sources.claude import ClaudeCodeSource

def high_water_mb():  # this process's own peak (ru_maxrss would include the parent's, across exec)
    with open("/proc/self/status") as status:
        return next(int(line.split()[1]) for line in status if line.startswith("VmHWM")) / 1024

path = Path(sys.argv[1])
source = ClaudeCodeSource(path.parents[2])
source.listing()
before = high_water_mb()
started = time.perf_counter()
surface = source.surface("claude:" + path.stem)
seconds = time.perf_counter() - started
peak = high_water_mb()
print(f"{seconds:.2f} s, peak RSS {peak:.0f} MB (+{peak - before:.0f} MB reading), {len(surface.events):,} events")
"""


def _huge_read(path: Path) -> str:
    import subprocess

    done = subprocess.run(
        [sys.executable, "-c", _HUGE, str(path)], capture_output=True, text=True, check=True,
        cwd=Path(__file__).resolve().parent.parent,
    )  # fmt: skip
    return done.stdout.strip()


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 5)
