"""pi's sessions (``@mariozechner/pi-coding-agent``): ``<agent dir>/sessions/--<cwd>--/<time>_<id>.jsonl``,
read-only.

One JSON record per line. The first is the session's header (``type`` ``session``: ``id``, a UUIDv7
that is never shortened, ``cwd``, ``timestamp``, ``version``); every later entry has an ``id`` and
a ``parentId`` (version 1 files have neither: each entry follows the one before it), so a file
holds a tree whose current branch ends in its last entry. Entries: ``message`` (an ``AgentMessage``:
``user``, ``assistant`` with ``text``, ``thinking`` and ``toolCall`` blocks, ``toolResult``,
``bashExecution``, ``custom``), ``compaction`` (a ``summary`` and the first entry kept after it),
``branch_summary``, ``custom``, ``custom_message``, ``label``, ``session_info`` (a ``name``),
``model_change`` and ``thinking_level_change``.

Mapping: the branch that ends in the last entry, as pi builds the model's context from it: after
the newest compaction on it, its summary as a compact checkpoint, then the entries it kept and those
after it. A user message's text becomes a prompt, an assistant message's text (not its thinking) an
answer; tool calls and results, the user's own shell commands and what extensions add are not on the
surface. The title is the newest ``session_info`` name, else the first prompt.

Where pi keeps them: ``$PI_CODING_AGENT_DIR`` (else ``~/.pi/agent``) holds ``sessions/``, a folder
per working directory; ``$PI_CODING_AGENT_SESSION_DIR`` (or ``--session-dir``) puts the files of
every folder in one folder. Either folder can be given: its ``sessions/`` when it has one, else its
own files and those one folder down are read.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

from core.sessions.models import SessionHeader
from core.sessions.sources.files import (
    ASSISTANT,
    CHECKPOINT,
    HEAD_BYTES,
    SKIP,
    USER,
    ExternalSession,
    FileSource,
    LinkedRecord,
    SurfaceBuilder,
    epoch_millis,
    json_lines,
    millis,
    newest_branch,
    plain_folder,
    prompt_title,
    text_of,
)

PI_PREFIX = "pi:"


def pi_root() -> Path:
    """``$PI_CODING_AGENT_SESSION_DIR``, else ``$PI_CODING_AGENT_DIR``, else ``~/.pi/agent``."""
    for variable in ("PI_CODING_AGENT_SESSION_DIR", "PI_CODING_AGENT_DIR"):
        configured = os.environ.get(variable)
        if configured:
            return Path(configured).expanduser()
    return Path.home() / ".pi" / "agent"


class PiSource(FileSource):
    """pi's sessions: ``<agent dir>/sessions/--<cwd>--/<time>_<id>.jsonl`` (read-only)."""

    prefix = PI_PREFIX
    name = "pi"
    follow_links = False

    def _files(self) -> Iterator[str]:
        sessions = self.root / "sessions"
        folder = sessions if plain_folder(sessions) else self.root
        try:
            entries = list(os.scandir(folder))
        except OSError:
            return
        for entry in entries:
            if entry.name.endswith(".jsonl"):
                yield entry.path
            elif entry.is_dir(follow_symlinks=False):
                try:
                    names = os.listdir(entry.path)
                except OSError:
                    continue
                for name in names:
                    if name.endswith(".jsonl"):
                        yield os.path.join(entry.path, name)

    def _header(self, path: Path) -> SessionHeader | None:
        return pi_header(path, self.prefix)

    def _read(self, path: Path, header: SessionHeader) -> ExternalSession:
        return pi_session(json_lines(path, follow=False), header)


def header_of(record: Any) -> tuple[int | None, str | None] | None:
    """A pi session header's time (``None`` when it has none) and folder; ``None`` when ``record``
    is not a header."""
    if type(record) is not dict or record.get("type") != "session":
        return None
    cwd = record.get("cwd")
    return millis(record.get("timestamp")), cwd if type(cwd) is str and cwd else None


def pi_header(path: Path, prefix: str) -> SessionHeader | None:
    """A pi-style file's session header, from its first line (after oh-my-pi's padded title line);
    the file's time when the header has none; ``None`` when the file does not open with one."""
    for _number, record in json_lines(path, HEAD_BYTES, follow=False):
        if type(record) is dict and record.get("type") == "title":
            continue
        found = header_of(record)
        session_id = record.get("id") if found is not None else None
        if found is None or type(session_id) is not str or not session_id.strip():
            return None  # (the header is the first line)
        created, cwd = found
        if created is None:
            created = path.stat().st_mtime_ns // 1_000_000
        return SessionHeader(id=prefix + session_id, created_at=created, cwd=cwd)
    return None


def pi_session(lines: Iterable[tuple[int, Any]], header: SessionHeader) -> ExternalSession:
    """A pi-style transcript (pi's own, and the agents built on its session format: OpenClaw,
    oh-my-pi, Letta Code) as dsh events: ``lines`` are (line or sequence number, parsed entry or
    ``None`` when malformed), in order.

    Beyond pi's own entries, two of OpenClaw's are honoured: ``reset`` (a boundary like a compaction
    without a summary: the context starts at the messages it kept) and ``leaf`` (the branch's tip moved
    to ``targetId``); a message with ``excludeFromContext`` is not in the model's context either.
    """
    records: dict[str, LinkedRecord] = {}
    order: list[str] = []
    boundaries: dict[str, tuple[str | None, str | None]] = {}  # entry id -> (summary, first kept entry id)
    names: list[str] = []
    problems = 0
    last_seq: int | None = None
    previous: str | None = None
    for number, record in lines:
        last_seq = number
        if type(record) is not dict or type(record.get("type")) is not str:
            problems += 1
            continue
        kind = record["type"]
        if kind == "title" and type(record.get("title")) is str and record["title"].strip():
            names.append(record["title"].strip())  # (oh-my-pi's title, kept in its padded first line)
        if kind in ("session", "title"):
            continue
        entry_id, parent = record.get("id"), record.get("parentId")
        if type(entry_id) is not str:  # a version 1 entry: it follows the one before it
            entry_id, parent = f"#{number}", previous
        previous = entry_id
        role, text = SKIP, ""
        if kind == "message" and type(record.get("message")) is dict:
            message = record["message"]
            if message.get("excludeFromContext") is True:
                pass
            elif message.get("role") == "user":
                role, text = USER, text_of(message.get("content"))
            elif message.get("role") == "assistant":
                role, text = ASSISTANT, text_of(message.get("content"))
        elif kind in ("compaction", "reset"):
            summary = record.get("summary") if kind == "compaction" else None
            if kind == "reset" or type(summary) is str:
                kept = record.get("firstKeptEntryId")
                boundaries[entry_id] = (summary if type(summary) is str else None, kept if type(kept) is str else None)
                role, text = CHECKPOINT, summary if type(summary) is str else ""
        elif kind == "leaf":
            target = record.get("targetId")
            parent = target if type(target) is str and target in records else None
        elif kind == "session_info" and type(record.get("name")) is str and record["name"].strip():
            names.append(record["name"].strip())
        when = _when(record, text)
        records[entry_id] = (number, parent if type(parent) is str else None, role, text, when)
        order.append(entry_id)
    chain = newest_branch(records, order, parents_first=True)  # (pi writes a parent first)
    builder = SurfaceBuilder()
    for number, role, text, time in _context(chain, records, boundaries):
        when = time if time is not None else header.created_at
        if not text.strip():
            continue
        if role == USER:
            builder.user(number, when, text)
        elif role == ASSISTANT:
            builder.assistant(number, when, text)
        elif role == CHECKPOINT:
            builder.checkpoint(number, when, text)
    # The title: the newest name, else the branch's first prompt (a compaction may have dropped it).
    prompts = (prompt_title(records[entry_id][3]) for entry_id in chain if records[entry_id][2] == USER)
    title = names[-1] if names else next((prompt for prompt in prompts if prompt), None)
    return ExternalSession(header, builder.events, title, problems, last_seq)


def _when(record: dict[str, Any], text: str) -> int | None:
    """When an entry with text was written: its ``timestamp``, else its message's epoch milliseconds."""
    if not text:
        return None
    found = millis(record.get("timestamp"))
    if found is not None:
        return found
    message = record.get("message")
    stamp = message.get("timestamp") if type(message) is dict else None
    return epoch_millis(stamp)


def _context(
    chain: list[str], records: dict[str, LinkedRecord], boundaries: dict[str, tuple[str | None, str | None]]
) -> list[tuple[int, int, str, int | None]]:
    """(line, role, text, time) of the branch's entries as pi puts them in the model's context: after
    its newest boundary (a compaction, or OpenClaw's reset), that compaction's checkpoint, the
    entries it kept (from its first kept entry on), then the rest."""
    shown = [records[entry_id] for entry_id in chain]
    at = next((index for index in range(len(chain) - 1, -1, -1) if chain[index] in boundaries), None)
    if at is None:
        return [(number, role, text, time) for number, _parent, role, text, time in shown if role != CHECKPOINT]
    summary, first_kept = boundaries[chain[at]]
    start = chain.index(first_kept) if first_kept in chain[:at] else at
    number, _parent, _role, _text, time = shown[at]
    if start < at:
        # Shown before the entries it kept, the checkpoint takes the line before the first of them
        # (a line of the file that is never on the surface: lines stay in order).
        number = shown[start - 1][0] if start else 0
    after = [(n, role, text, t) for n, _p, role, text, t in shown[start:at] + shown[at + 1 :] if role != CHECKPOINT]
    return after if summary is None else [(number, CHECKPOINT, summary, time), *after]


OMP_PREFIX = "omp:"


def omp_root() -> Path:
    """oh-my-pi's agent folder: ``$XDG_DATA_HOME/omp/agent`` when oh-my-pi made that folder, else
    ``~/.omp/agent``."""
    data = os.environ.get("XDG_DATA_HOME", "").strip()
    if data and os.path.isdir(os.path.join(data, "omp")):
        return Path(data) / "omp" / "agent"
    return Path.home() / ".omp" / "agent"


class OhMyPiSource(PiSource):
    """oh-my-pi's sessions (``@oh-my-pi/pi-coding-agent``, pi's fork): pi's format, version 3, in
    ``<agent dir>/sessions/-<cwd>-/<time>_<uuid v7>.jsonl``, each file opening with a padded
    ``title`` line (rewritten in place when the session is named) before the header."""

    prefix = OMP_PREFIX
    name = "oh-my-pi"
