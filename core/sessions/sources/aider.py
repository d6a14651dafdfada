"""Aider's chats: each project's ``.aider.chat.history.md``, Markdown aider appends to, read-only.

What aider 0.86 writes (``aider/io.py``), line by line:

- ``# aider chat started at <local time>`` when a run starts;
- its notices as ``> …`` lines (the command line first, the version, the model, token counts,
  confirmations), each ending in a Markdown line break (two spaces);
- what the user typed as ``#### …`` lines, one a line of the prompt, each ending in two spaces
  (an empty prompt is ``#### <blank>``);
- the model's reply as it is, after a blank line.

Two things in it are ambiguous, and how they are read here:

- **A reply line that starts with ``#### `` or ``> ``** (a Markdown heading or quote the model
  wrote) looks like a prompt or a notice. Aider's own ``--restore-chat-history`` reads it so. Here
  a line is aider's own only when it also ends in the two spaces aider puts after each of its lines;
  a reply's lines keep their own endings, so its headings and quotes stay in the reply. (A reply
  line that ends in exactly two spaces and starts so is still read as aider's.)
- **Where a conversation ends.** Each run is a session, except that a run which restored the chat
  history (its notices say ``Restored previous conversation history.``, or its command line, the
  first notice, has ``--restore-chat-history``) gave the model everything before it: it continues
  the session before it.

Mapping: prompts become user prompts and replies answers; notices (commands' output, confirmations,
token counts, the command line) are not on the surface. A session's folder is the project's; its
time is its first run's, read in this machine's time zone; its title is its first prompt.

Where the files are: aider writes one in the folder it runs in. This source reads the folder it is
given (by default the home folder) and each folder directly inside it, and every folder other
sessions say they ran in (``learn_folders``), never following a link.
"""

from __future__ import annotations

import hashlib
import os
import time
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

from core.files import Revision, file_revision, open_regular
from core.sessions.models import (
    SessionHeader,
    SessionRecord,
    StoreProblem,
    SurfaceSnapshot,
    TitleSnapshot,
)
from core.sessions.query import ReadsAsQuery, sort_listing
from core.sessions.session import not_found
from core.sessions.sources.files import LINE_BYTES, SurfaceBuilder, prompt_title, subfolders

AIDER_PREFIX = "aider:"
HISTORY_NAME = ".aider.chat.history.md"
HISTORY_BYTES = 256 * 1024 * 1024
"""How much of a history file is read (a longer one: its first part, and a problem said)."""
STARTED = "# aider chat started at "
RESTORE = "--restore-chat-history"
RESTORED = "> Restored previous conversation history."
"""The notice of a run that gave its model the file's earlier chats (however the restore was set)."""
_SKIP_PIECE = 1024 * 1024


def aider_root() -> Path:
    """The home folder: its projects are the folders directly inside it."""
    return Path.home()


def raw_lines(handle: object, start: int, budget: int) -> Iterator[tuple[int, bytes | None]]:
    """(offset, line) of each complete line of an open binary file from ``start`` up to ``budget``
    bytes in all; an over-long line (over ``LINE_BYTES``) is ``None``, read past in pieces and never
    held whole; a last line without its newline (being written) is left out."""
    read_line = handle.readline  # type: ignore[attr-defined]
    offset = start
    while offset < budget:
        raw = read_line(min(budget - offset, LINE_BYTES) + 1)
        if not raw or not raw.endswith(b"\n"):
            if not raw or len(raw) <= LINE_BYTES:
                return  # the end, or a last line still being written
            skipped = len(raw)
            while not raw.endswith(b"\n"):
                raw = read_line(_SKIP_PIECE)
                if not raw:
                    return
                skipped += len(raw)
            yield offset, None
            offset += skipped
            continue
        yield offset, raw
        offset += len(raw)


@dataclass
class _Run:
    """One run of aider in a project's file: where it is, when it started, what it said first."""

    line: int
    start: int
    end: int
    started: str
    restores: bool = False
    noticed: bool = False
    first_prompt: str | None = None


@dataclass
class _Project:
    """A project's history file as read so far (it only grows: what was added is read next time)."""

    path: str
    folder: str
    revision: Revision
    runs: list[_Run] = field(default_factory=list)
    read_to: int = 0
    lines: int = 0
    problems: int = 0
    cut: bool = False


@dataclass
class _Session:
    header: SessionHeader
    project: _Project
    runs: list[_Run]
    title: str | None

    @property
    def revision(self) -> Revision:
        return (self.project.revision[0], self.project.revision[1], self.runs[0].start, self.runs[-1].end)


class AiderSource(ReadsAsQuery):
    """Aider's chats in projects' ``.aider.chat.history.md`` files (read-only).

    Args:
        root: the folder whose projects are read (itself and each folder directly inside it).
    """

    prefix = AIDER_PREFIX
    name = "Aider"

    def __init__(self, root: str | os.PathLike[str]) -> None:
        self.root = Path(root)
        self.problems: list[StoreProblem] = []
        self._learned: frozenset[str] = frozenset()
        self._projects: dict[str, _Project] = {}
        self._sessions: dict[str, _Session] = {}
        self._records: list[SessionRecord] | None = None

    def learn_folders(self, folders: Iterable[str | None]) -> None:
        """The folders other sessions ran in: their history files are read too."""
        self._learned = frozenset(folder for folder in folders if folder)

    def _candidates(self) -> Iterator[str]:
        seen: set[str] = set()
        # (no such folder: the learned ones only)
        folders = [str(self.root), *(entry.path for entry in subfolders(self.root))]
        for folder in [*folders, *sorted(self._learned)]:
            path = os.path.join(folder, HISTORY_NAME)
            if path not in seen and os.path.lexists(path):
                seen.add(path)
                yield path

    def listing(self) -> list[SessionRecord]:
        """Every run or restored conversation, newest first; a file is read again only past what
        was read of it before (it only grows), or whole when it was replaced."""
        changed = self._records is None
        fresh: dict[str, _Project] = {}
        problems: list[StoreProblem] = []
        for path in self._candidates():
            known = self._projects.get(path)
            try:
                revision = file_revision(path)
                if known is None or known.revision != revision:
                    known = self._read_project(path, revision, known)
                    changed = True
            except OSError as error:
                problems.append(StoreProblem(Path(path), f"cannot read: {getattr(error, 'strerror', None) or error}"))
                continue
            fresh[path] = known
            if known.cut:
                problems.append(
                    StoreProblem(Path(path), f"only its first {HISTORY_BYTES // (1024 * 1024)} MiB are read")
                )
        changed = changed or fresh.keys() != self._projects.keys()
        self._projects, self.problems = fresh, problems
        if not changed and self._records is not None:
            return self._records
        sessions: dict[str, _Session] = {}
        for project in fresh.values():
            for session in _sessions_of(project):
                sessions[session.header.id] = session
        self._sessions = sessions
        records = [
            SessionRecord.model_construct(header=session.header, live=False, persisted=True)
            for session in sessions.values()
        ]
        sort_listing(records)
        self._records = records
        return records

    def _read_project(self, path: str, revision: Revision, known: _Project | None) -> _Project:
        """The file's runs: only what it gained since ``known`` when it is the same file, grown."""
        grown = known is not None and known.revision[:2] == revision[:2] and revision[2] >= known.read_to
        project = known if grown and known is not None else _Project(path, os.path.dirname(path), revision)
        project.revision = revision
        with os.fdopen(open_regular(path), "rb") as handle:
            size = os.fstat(handle.fileno()).st_size
            handle.seek(project.read_to)
            budget = min(size, HISTORY_BYTES)
            project.cut = size > HISTORY_BYTES
            for offset, raw in raw_lines(handle, project.read_to, budget):
                number = project.lines
                project.lines += 1
                end = offset + (len(raw) if raw is not None else 0)
                project.read_to = end if raw is not None else handle.tell()
                if raw is None:
                    project.problems += 1
                    continue
                line = raw.decode("utf-8", "replace").rstrip("\r\n")
                if not project.runs and not line.strip():
                    continue  # (aider begins its file with a blank line)
                if line.startswith(STARTED) or not project.runs:
                    started = line[len(STARTED) :].strip() if line.startswith(STARTED) else ""
                    project.runs.append(_Run(number, offset, end, started))
                    if line.startswith(STARTED):
                        continue
                run = project.runs[-1]
                run.end = end
                if _is_notice(line) and run.first_prompt is None:
                    run.restores = run.restores or line.rstrip() == RESTORED or (not run.noticed and RESTORE in line)
                    run.noticed = True
                elif run.first_prompt is None and _is_prompt(line):
                    run.first_prompt = prompt_title(line[5:-2])
        return project

    def _session(self, session_id: str) -> _Session:
        session = self._sessions.get(session_id)
        if session is None:
            self.listing()
            session = self._sessions.get(session_id)
        if session is None:
            raise not_found(session_id)
        return session

    def revision(self, session_id: str) -> Revision | None:
        """Where the session's runs lie in its file: another range means it changed."""
        session = self._sessions.get(session_id)
        return session.revision if session is not None else None

    def surface(self, session_id: str) -> SurfaceSnapshot:
        """The session's prompts and replies, read from its part of the file."""
        session = self._session(session_id)
        builder = SurfaceBuilder()
        last: int | None = None
        try:
            with os.fdopen(open_regular(session.project.path), "rb") as handle:
                for run in session.runs:
                    handle.seek(run.start)
                    when = _started(run.started) or session.header.created_at
                    lines = (raw for _offset, raw in raw_lines(handle, run.start, run.end))
                    last = _fold(lines, run.line, when, builder)
        except OSError as error:
            raise not_found(session_id) from error
        return SurfaceSnapshot.model_construct(session=session.header, captured_through_seq=last, events=builder.events)

    def title(self, session_id: str) -> TitleSnapshot | None:
        session = self._session(session_id)
        if session.title is None:
            return None
        return TitleSnapshot(
            title=session.title, message_seqs=[], event_seq=session.runs[0].line, updated_at=session.header.created_at
        )


def _is_notice(line: str) -> bool:
    return line.startswith(">") and line.endswith("  ")


def _is_prompt(line: str) -> bool:
    return line.startswith("#### ") and line.endswith("  ")


def _fold(lines: Iterable[bytes | None], number: int, when: int, builder: SurfaceBuilder) -> int:
    """Add one run's prompts and replies (its lines from its ``# aider chat started at`` line, the
    ``number``-th of the file) to ``builder``; the number of its last line."""
    prompt: list[str] = []
    reply: list[str] = []
    at = number - 1
    prompt_at = reply_at = number

    def flush() -> None:
        nonlocal prompt, reply
        if prompt:
            said = "\n".join("" if piece == "<blank>" else piece for piece in prompt)
            if said.strip():
                builder.user(prompt_at, when, said)
        if reply and "\n".join(reply).strip():
            builder.assistant(reply_at, when, "\n".join(reply).strip("\n"))
        prompt, reply = [], []

    for raw in lines:
        at += 1
        if raw is None:
            continue
        line = raw.decode("utf-8", "replace").rstrip("\r\n")
        if at == number and line.startswith(STARTED):
            continue
        if _is_prompt(line):
            if reply or not prompt:
                flush()
                prompt_at = at
            prompt.append(line[5:-2])
        elif _is_notice(line):
            flush()
        elif prompt or reply:
            if not reply:
                reply_at = at
            reply.append(line)
    flush()
    return at


def _started(text: str) -> int | None:
    """Epoch milliseconds of aider's local ``%Y-%m-%d %H:%M:%S`` (``None`` when it is not one)."""
    try:
        return int(time.mktime(time.strptime(text, "%Y-%m-%d %H:%M:%S")) * 1000)
    except (ValueError, OverflowError):
        return None


def _sessions_of(project: _Project) -> Iterator[_Session]:
    """A project's sessions: each run, a restoring run joined to the one before it."""
    groups: list[list[_Run]] = []
    for run in project.runs:
        if groups and run.restores:
            groups[-1].append(run)
        else:
            groups.append([run])
    seen: dict[str, int] = {}
    mtime = project.revision[3] // 1_000_000
    for runs in groups:
        first = runs[0]
        twin = seen.get(first.started, 0)
        seen[first.started] = twin + 1
        key = f"{project.folder}\0{first.started}\0{twin}".encode("utf-8", "surrogatepass")
        session_id = AIDER_PREFIX + hashlib.sha256(key).hexdigest()[:20]
        created = _started(first.started) or mtime
        title = next((run.first_prompt for run in runs if run.first_prompt), None)
        header = SessionHeader(id=session_id, created_at=created, cwd=project.folder)
        yield _Session(header, project, runs, title)
