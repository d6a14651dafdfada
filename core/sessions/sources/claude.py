"""Claude Code's sessions: ``<root>/projects/<encoded cwd>/<uuid>.jsonl``, read-only.

One JSON record per line: ``user`` / ``assistant`` / ``summary`` / ``system`` records (and, from 2.1,
``progress`` records of hooks) linked by ``uuid`` / ``parentUuid``, with ``cwd``, ``timestamp``,
``isSidechain``, ``isMeta``, ``isCompactSummary``; message content as a string or a block array.
Mapping: the main chain walked back from the newest record (every uuid record is a link);
user-typed text becomes a user prompt (a slash command's arguments as "/name args"), assistant text
an answer, a compaction summary a compact checkpoint; tool calls and results, thinking, system and
meta records, and sidechains (sub-agents) are not on the surface.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

from core.sessions.models import SessionHeader
from core.sessions.sources.files import (
    ASSISTANT as _ASSISTANT,
)
from core.sessions.sources.files import (
    CHECKPOINT as _CHECKPOINT,
)
from core.sessions.sources.files import (
    HEAD_BYTES,
    ExternalSession,
    FileSource,
    SurfaceBuilder,
    json_lines,
    millis,
    newest_branch,
    prompt_title,
)
from core.sessions.sources.files import (
    SKIP as _SKIP,
)
from core.sessions.sources.files import (
    USER as _USER,
)

CLAUDE_PREFIX = "claude:"


def claude_root() -> Path:
    """``CLAUDE_CONFIG_DIR``, else ``~/.claude``."""
    configured = os.environ.get("CLAUDE_CONFIG_DIR")
    return Path(configured) if configured else Path.home() / ".claude"


def _claude_text(content: Any) -> str:
    """A message's text: a string content, or its ``text`` blocks (tool calls, results and
    thinking are left out)."""
    if type(content) is str:
        return content
    if type(content) is not list:
        return ""
    texts = [b["text"] for b in content if type(b) is dict and b.get("type") == "text" and type(b.get("text")) is str]
    return texts[0] if len(texts) == 1 else "\n".join(text for text in texts if text)


class ClaudeCodeSource(FileSource):
    """Claude Code's sessions: ``<root>/projects/<encoded cwd>/<uuid>.jsonl`` (read-only)."""

    prefix = CLAUDE_PREFIX
    name = "Claude Code"

    def _files(self) -> Iterator[str]:
        projects = self.root / "projects"
        try:
            folders = [entry for entry in os.scandir(projects) if entry.is_dir()]
        except OSError:
            return
        for folder in folders:
            try:
                names = os.listdir(folder.path)
            except OSError:
                continue
            for name in names:
                # ``agent-*.jsonl``: a sub-agent's sidechain, part of its parent session, never one itself.
                if name.endswith(".jsonl") and not name.startswith("agent-"):
                    yield os.path.join(folder.path, name)

    def _header(self, path: Path) -> SessionHeader | None:
        created: int | None = None
        cwd: str | None = None
        readable = False
        for _number, record in json_lines(path, HEAD_BYTES):
            if not isinstance(record, Mapping):
                continue
            readable = readable or isinstance(record.get("type"), str)
            if created is None:
                created = millis(record.get("timestamp"))
            if cwd is None and isinstance(record.get("cwd"), str) and record["cwd"]:
                cwd = record["cwd"]
            if created is not None and cwd is not None:
                break
        if not readable:
            return None
        if created is None:
            created = path.stat().st_mtime_ns // 1_000_000
        return SessionHeader(id=self.prefix + path.stem, created_at=created, cwd=cwd)

    def _read(self, path: Path, header: SessionHeader) -> ExternalSession:
        # Each conversation record is kept as a small tuple of what the surface needs, never the
        # parsed dict: a long transcript then holds few objects for the garbage collector to walk.
        records: dict[str, tuple[int, str | None, int, str, int | None]] = {}
        order: list[str] = []
        summaries: list[tuple[str | None, str]] = []
        problems = 0
        last_seq: int | None = None
        for number, record in json_lines(path):
            last_seq = number
            if type(record) is not dict or type(record.get("type")) is not str:
                problems += 1
                continue
            kind = record["type"]
            if kind == "summary":
                if isinstance(record.get("summary"), str):
                    leaf = record.get("leafUuid")
                    summaries.append((leaf if isinstance(leaf, str) else None, record["summary"]))
                continue
            uuid = record.get("uuid")
            if type(uuid) is not str or record.get("isSidechain") is True:
                continue  # file history snapshots, queue operations, summaries; sub-agents' records
            parent = record.get("parentUuid")
            message = record.get("message")
            # (The role, inlined: this loop runs once per line of a transcript.) Records of other
            # kinds are links of the chain too (Claude Code 2.1 writes hook ``progress`` records
            # between a prompt and its answer), never conversation.
            if kind not in ("user", "assistant") or record.get("isMeta") is True or type(message) is not dict:
                role, text = _SKIP, ""
            else:
                role = (
                    _CHECKPOINT if record.get("isCompactSummary") is True else _USER if kind == "user" else _ASSISTANT
                )
                content = message.get("content")
                text = content if type(content) is str else _claude_text(content)  # (a call less per prompt)
            # (Most records of a working session are tool calls and results: no text, no time needed.)
            when = millis(record.get("timestamp")) if text else None
            records[uuid] = (number, parent if type(parent) is str else None, role if text else _SKIP, text, when)
            order.append(uuid)
        chain = newest_branch(records, order)
        builder = SurfaceBuilder()
        first_prompt: str | None = None
        first_command: str | None = None
        for uuid in chain:
            number, _parent, role, text, time = records[uuid]
            if role == _SKIP or not text.strip():
                continue  # system and meta records; tool results, thinking and tool calls only
            when = time if time is not None else header.created_at
            if role == _CHECKPOINT:
                builder.checkpoint(number, when, text)
            elif role == _USER:
                if _is_claude_command_noise(text):
                    command = _claude_command(text)
                    if command is None:
                        continue
                    if command[1] is None:  # a command without arguments: no words of the user's
                        first_command = first_command or command[0]
                        continue
                    text = f"{command[0]} {command[1]}"
                builder.user(number, when, text)
                if first_prompt is None:
                    first_prompt = prompt_title(text)
            else:
                builder.assistant(number, when, text)
        in_chain = set(chain)
        title = next((summary for leaf, summary in reversed(summaries) if leaf in in_chain), None)
        if title is None and summaries:
            title = summaries[-1][1]
        if title is None:
            title = first_prompt or first_command
        return ExternalSession(header, builder.events, title, problems, last_seq)


def _is_claude_command_noise(text: str) -> bool:
    # Slash-command echoes and local command output Claude Code stores as user records.
    stripped = text.lstrip()
    return stripped.startswith(("<command-name>", "<local-command-stdout>", "<command-message>", "Caveat: "))


_COMMAND_NAME = re.compile(r"<command-name>([^<]*)</command-name>")
_COMMAND_ARGS = re.compile(r"<command-args>(.*?)</command-args>", re.DOTALL)


def _claude_command(text: str) -> tuple[str, str | None] | None:
    """A slash command's echo: its name and the words typed after it (``None`` when there were
    none); ``None`` for local command output and caveats."""
    name = _COMMAND_NAME.search(text)
    if name is None or not name.group(1).strip():
        return None
    args = _COMMAND_ARGS.search(text)
    words = args.group(1).strip() if args is not None else ""
    return name.group(1).strip(), words or None
