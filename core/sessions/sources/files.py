"""What every read-only source of another tool shares: reading its JSONL files line by line up to
the last complete line (bounded, never following a link, malformed lines counted), the session it
yields as surface events, and the file-backed source base (listing by file revision, caching)."""

from __future__ import annotations

import itertools
import json
import os
import re
from abc import abstractmethod
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

from core.collector import collector_paused
from core.errors import SESSION_QUERY_INVALID_SURFACE, SessionQueryError
from core.files import Revision, file_revision, open_regular
from core.serialization import js_json_stringify
from core.sessions import event_types as ev
from core.sessions.models import (
    SessionEvent,
    SessionHeader,
    SessionRecord,
    StoreProblem,
    SurfaceSnapshot,
    TitleSnapshot,
    trusted_event,
)
from core.sessions.query import ReadsAsQuery, sort_listing
from core.sessions.session import not_found
from core.sessions.sources.oversized import STRUCTURE_BYTES, cut_json

HEAD_BYTES = 256 * 1024
"""How much of a file the listing reads for its header (first timestamp, cwd, Codex meta)."""
LINE_BYTES = 16 * 1024 * 1024
"""The longest line a reader parses (a tool's output or a pasted image fits); a longer one is
skipped as malformed, read past in pieces, never held whole."""
_SKIP_PIECE = 1024 * 1024
HEAD_LINE_BYTES = 64 * 1024 * 1024
"""How far a line that starts in a file's head is read for the listing, in pieces (a first prompt that
pastes a 20 MB log still gives the session its header)."""
HEAD_STRUCTURE_BYTES = 1024 * 1024
"""The most such a line may hold once its long strings are cut (a header is small)."""

UUID_AT_END = re.compile(r"([0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12})$")
TITLE_LENGTH = 80


def data_home() -> Path:
    """``$XDG_DATA_HOME``, else ``~/.local/share`` (where most agents keep their sessions)."""
    data = os.environ.get("XDG_DATA_HOME", "").strip()
    return Path(data) if data else Path.home() / ".local" / "share"


def config_home() -> Path:
    """``$XDG_CONFIG_HOME``, else ``~/.config``."""
    config = os.environ.get("XDG_CONFIG_HOME", "").strip()
    return Path(config) if config else Path.home() / ".config"


def millis(value: Any) -> int | None:
    """Epoch milliseconds of an ISO 8601 timestamp (``...Z`` or an offset), or ``None``."""
    if not isinstance(value, str) or not value:
        return None
    try:
        parsed = datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        return None
    if parsed.tzinfo is None:
        return None
    return int(parsed.timestamp() * 1000)


LATEST_MILLIS = 253_402_300_800_000
"""Epoch milliseconds of the year 10000: a time at or past it is not one a tool wrote."""


def epoch_millis(value: Any) -> int | None:
    """An epoch-milliseconds field (an integer from 1970 to the year 10000), or ``None``."""
    return value if type(value) is int and 0 <= value < LATEST_MILLIS else None


def local_millis(value: Any) -> int | None:
    """Epoch milliseconds of an ISO 8601 time, one without an offset taken as this machine's local
    time (as OpenHands and gptme write them), or ``None``."""
    if type(value) is not str or not value:
        return None
    try:
        stamp = int(datetime.fromisoformat(value.replace("Z", "+00:00")).timestamp() * 1000)
    except (ValueError, OverflowError, OSError):
        return None
    return stamp if 0 <= stamp < LATEST_MILLIS else None


def read_json(path: Path, limit: int) -> Any:
    """A JSON document read whole, up to ``limit`` bytes, never through a link.

    Raises:
        OSError: it cannot be opened, is not a regular file, or is larger than ``limit``.
        ValueError, RecursionError: it is not JSON.
    """
    with os.fdopen(open_regular(path, follow=False), "rb") as handle:
        raw = handle.read(limit + 1)
    if len(raw) > limit:
        raise OSError(f"larger than {limit // (1024 * 1024)} MiB")
    return json.loads(raw)


def read_json_object(path: Path, limit: int) -> dict[str, Any]:
    """``read_json`` of a document that should be an object: empty when it is missing, unreadable,
    too large or of another shape (a session's side file: its folder, title, state)."""
    try:
        document = read_json(path, limit)
    except (OSError, ValueError, RecursionError):
        return {}
    return document if type(document) is dict else {}


def plain_folder(path: Path) -> bool:
    """Whether ``path`` is a folder itself, not a link to one."""
    try:
        return path.is_dir() and not path.is_symlink()
    except OSError:
        return False


def subfolders(folder: Path) -> list[os.DirEntry[str]]:
    """The folders in ``folder`` (a session each, in most tools' layouts), links to folders left out;
    none when it cannot be listed."""
    try:
        with os.scandir(folder) as entries:
            return [entry for entry in entries if entry.is_dir(follow_symlinks=False)]
    except OSError:
        return []


def files_in(folder: Path, wanted: Callable[[str], bool]) -> Iterator[str]:
    """The regular files directly in ``folder`` whose names ``wanted`` accepts; none when ``folder`` is
    a link (no link out of the tool's folder is followed) or cannot be listed."""
    if os.path.islink(folder):
        return
    try:
        entries = list(os.scandir(folder))
    except OSError:
        return
    for entry in entries:
        if wanted(entry.name) and entry.is_file(follow_symlinks=False):
            yield entry.path


def uuid_files(projects: Path, suffix: str) -> Iterator[str]:
    """The files named ``<...uuid><suffix>`` in each project folder of ``projects`` (CodeBuddy's and
    Factory Droid's layout; a link among them is listed, and reported as one when read)."""
    for project in subfolders(projects):
        try:
            names = os.listdir(project.path)
        except OSError:
            continue
        for name in names:
            if name.endswith(suffix) and UUID_AT_END.search(name[: -len(suffix)]):
                yield os.path.join(project.path, name)


def texts_of(content: Any) -> list[str]:
    """A message's texts: a string content, or each of its non-empty ``text`` blocks (images, tool
    calls and reasoning left out)."""
    if type(content) is str:
        return [content]
    if type(content) is not list:
        return []
    return [
        block["text"]
        for block in content
        if type(block) is dict and block.get("type") == "text" and type(block.get("text")) is str and block["text"]
    ]


def text_of(content: Any) -> str:
    """A message's text: ``texts_of`` joined by line breaks."""
    return "\n".join(texts_of(content))


_scan: Callable[[str, int], tuple[Any, int]] = json.JSONDecoder().scan_once  # type: ignore[attr-defined]
_TRAILING = frozenset(" \t\r\n")


def unreadable(error: BaseException) -> str:
    """What a reader says of a file whose records it could not map (never a traceback)."""
    return f"unreadable: a record of an unexpected shape ({type(error).__name__})"


def cannot_read(session_id: str, error: BaseException) -> SessionQueryError:
    """``SESSION_QUERY_INVALID_SURFACE`` for a session whose records a reader could not map."""
    return SessionQueryError(
        f"session {js_json_stringify(session_id)} cannot be read: {unreadable(error)}", SESSION_QUERY_INVALID_SURFACE
    )


def decode_line(text: str) -> Any:
    """``json.loads`` of one line, minus its per-call setup (the C scanner, then only whitespace)."""
    start = 0
    length = len(text)
    while start < length and text[start] in _TRAILING:
        start += 1
    try:
        value, end = _scan(text, start)
    except StopIteration as error:
        raise ValueError(f"no JSON value at {error.value}") from None
    if text[end:].strip(" \t\r\n"):
        raise ValueError("extra data after the JSON value")
    return value


def json_lines(path: Path, limit: int | None = None, *, follow: bool = True) -> Iterator[tuple[int, Any]]:
    """(line number, parsed JSON or ``None`` when malformed) of every complete line, streamed.

    Only bytes present when the file was opened are read, and a last line without its newline
    (being written) is left out, so a file another program appends to reads as a consistent prefix.
    ``limit``: lines that start within its first bytes (a file's head, for the listing); one that
    starts there and runs past it is read to its end, up to ``HEAD_LINE_BYTES``.
    """
    # Another tool's files may be symlinks (people link ~/.claude; ``follow``), but only a regular file
    # is opened: a FIFO would block the listing, a device never end.
    with os.fdopen(open_regular(path, follow=follow), "rb") as handle:
        size = os.fstat(handle.fileno()).st_size
        budget = size if limit is None else min(size, limit)
        read = 0
        for number in itertools.count():
            if read >= budget:
                return
            end = size if limit is None else min(size, max(budget, read + HEAD_LINE_BYTES))
            # A line is read whole up to LINE_BYTES (in a head, up to the head's end): one endless
            # line (a gigabyte of zeros) is never held whole.
            cap = min(end - read, LINE_BYTES if limit is None else budget - read)
            raw = handle.readline(cap + 1)
            read += len(raw)
            if not raw or read > end:
                return
            if not raw.endswith(b"\n"):
                if len(raw) <= cap:
                    return  # the last line, still being written
                # Too long to parse whole: read on in pieces, its long strings cut (``oversized``).
                line, raw = _LongLine(handle, raw, end - read), b""
                cut = cut_json(line.pieces(), STRUCTURE_BYTES if limit is None else HEAD_STRUCTURE_BYTES)
                line.drain()
                read += line.read
                if not line.ended:
                    return  # the last line, still being written (or past a head's reach)
                yield number, None if cut is None else _parsed(cut)
                continue
            if not raw.isspace():
                yield number, _parsed(raw)


def _parsed(raw: bytes) -> Any:
    """One line's JSON, or ``None`` when malformed."""
    try:
        # (json.loads on bytes, minus its encoding sniffing: these files are UTF-8.)
        return decode_line(raw.decode("utf-8", "surrogatepass"))
    except (ValueError, UnicodeDecodeError, RecursionError):
        return None


class _LongLine:
    """The rest of a line longer than ``LINE_BYTES``, read in pieces of ``_SKIP_PIECE`` (never held
    whole), up to ``budget`` more bytes; ``ended``: its newline was reached."""

    def __init__(self, handle: Any, first: bytes, budget: int) -> None:
        self._handle, self._first, self._budget = handle, first, budget
        self.read = 0
        self.ended = False
        self._done = False

    def pieces(self) -> Iterator[bytes]:
        first, self._first = self._first, b""
        yield first
        del first
        while not self._done:
            piece = self._handle.readline(min(self._budget - self.read, _SKIP_PIECE) + 1)
            self.read += len(piece)
            if not piece or self.read > self._budget:
                self._done = True
                return
            if piece.endswith(b"\n"):
                self.ended = self._done = True
            yield piece

    def drain(self) -> None:
        """Read past what ``cut_json`` left unread (it stops early at a record too large)."""
        for _piece in self.pieces():
            pass


def text_blocks(value: str) -> list[dict[str, Any]]:
    return [{"type": "text", "text": value}]


def first_line_title(text: str) -> str:
    line = " ".join(text.split())
    return line if len(line) <= TITLE_LENGTH else line[: TITLE_LENGTH - 1] + "…"


CODEX_REQUEST = "## My request for Codex:"
"""What Codex's IDE and Desktop clients put before the words the user typed (after open tabs, files)."""


def prompt_title(text: str) -> str | None:
    """A title from a prompt; ``None`` for text a tool wrote in the user's turn (``<task-notification>``
    and other tag blocks)."""
    at = text.find(CODEX_REQUEST)
    if at >= 0:
        text = text[at + len(CODEX_REQUEST) :]
    if not text.strip() or text.lstrip().startswith("<"):
        return None
    return first_line_title(text)


SKIP, USER, ASSISTANT, CHECKPOINT = range(4)
"""What a record of a linked transcript is on the surface: nothing, a prompt, an answer, a checkpoint."""

LinkedRecord = tuple[int, str | None, int, str, int | None]
"""One record of a transcript whose records link to their parent (Claude Code, Qwen Code): its line,
its parent's uuid, its role (``SKIP``…), its text, and its time (only when it has text)."""


def newest_branch(
    records: Mapping[str, LinkedRecord], order: Sequence[str], *, parents_first: bool = False
) -> list[str]:
    """The branch that ends in the newest record, root first (``parentUuid`` links; a loop ends it;
    ``parents_first``: so does a link to a later line, for a tool that writes a parent before its
    children, so the branch's lines stay in order)."""
    if not order:
        return []
    chain: list[str] = []
    seen: set[str] = set()
    current: str | None = order[-1]
    while current is not None and current in records and current not in seen:
        seen.add(current)
        chain.append(current)
        parent = records[current][1]
        if parents_first and parent is not None and parent in records and records[parent][0] >= records[current][0]:
            break
        current = parent
    chain.reverse()
    return chain


def chats_files(projects: Path, wanted: Callable[[str], bool]) -> Iterator[str]:
    """The files ``wanted`` names in ``<projects>/<project>/chats/`` (Gemini CLI's and Qwen Code's
    layout); no link out of the tool's folder is followed, a project folder or its ``chats`` alike."""
    for folder in subfolders(projects):
        chats = os.path.join(folder.path, "chats")
        if os.path.islink(chats):
            continue
        try:
            names = os.listdir(chats)
        except OSError:
            continue
        for name in names:
            if wanted(name):
                yield os.path.join(chats, name)


@dataclass
class ExternalSession:
    """One session of another agent as read: its header, folded surface, title and problems."""

    header: SessionHeader
    events: list[SessionEvent]
    title: str | None
    problems: int = 0
    last_seq: int | None = None


def surface_of(session: ExternalSession) -> SurfaceSnapshot:
    """A session's surface as read. Its events were built from checked values (``trusted_event``):
    no validation pass again."""
    return SurfaceSnapshot.model_construct(
        session=session.header, captured_through_seq=session.last_seq, events=list(session.events)
    )


def title_of(session: ExternalSession) -> TitleSnapshot | None:
    """A session's title as read (``None``: it has none)."""
    if session.title is None:
        return None
    seq = session.last_seq or 0
    return TitleSnapshot(title=session.title, message_seqs=[], event_seq=seq, updated_at=session.header.created_at)


@dataclass
class Entry:
    path: Path
    revision: Revision
    header: SessionHeader | None
    session: ExternalSession | None = None
    problem: str | None = None
    hidden: bool = False
    """A session its tool keeps out of its own lists (archived, a sub-agent's): not listed, and no
    problem either."""


class NotListed(Exception):
    """Raised by a reader's ``_header`` for a session its tool keeps out of its own lists (archived,
    a sub-agent's): it is neither listed nor reported as unreadable."""


def surface_event(kind: str, seq: int, time: int, data: dict[str, Any]) -> SessionEvent:
    # Built here from checked values: no need to validate each of a long transcript's events again.
    return trusted_event(kind, seq, time, data, "append")


@dataclass
class SurfaceBuilder:
    """Collects surface events in order; a checkpoint drops everything before it."""

    events: list[SessionEvent] = field(default_factory=list)
    turn: int = 0

    def user(self, seq: int, time: int, text: str) -> None:
        self.turn += 1
        data = {"content": text_blocks(text), "source": {"kind": "user"}}
        self.events.append(surface_event(ev.USER_MESSAGE, seq, time, data))

    def assistant(self, seq: int, time: int, text: str) -> None:
        data = {"turn": max(1, self.turn), "step": 0, "content": text_blocks(text)}
        self.events.append(surface_event(ev.ASSISTANT_MESSAGE, seq, time, data))

    def checkpoint(self, seq: int, time: int, text: str) -> None:
        source = {"kind": "plugin", "plugin": "compact"}
        data = {"content": text_blocks(text), "source": source}
        self.events = [surface_event(ev.USER_MESSAGE, seq, time, data)]


class FileSource(ReadsAsQuery):
    """What both agents' sources share: a cached listing by file revision and lazy reads. Each
    agent's source is a kind of it: it says where its files are and how one reads."""

    prefix = ""
    name = ""
    follow_links = True
    """Whether a session file that is a symlink is read (Claude Code's and Codex's: people link their
    folders); the other agents' sources read only regular files inside their folders."""

    def __init__(self, root: str | os.PathLike[str]) -> None:
        self.root = Path(root)
        self._entries: dict[str, Entry] = {}
        self._by_path: dict[str, Entry] = {}
        self._records: list[SessionRecord] | None = None
        self.problems: list[StoreProblem] = []

    @abstractmethod
    def _files(self) -> Iterator[str]:
        """Every session file under the root."""

    @abstractmethod
    def _header(self, path: Path) -> SessionHeader | None:
        """A file's session header from its head (``None``: not a session this source lists)."""

    @abstractmethod
    def _read(self, path: Path, header: SessionHeader) -> ExternalSession:
        """A whole session file, mapped to dsh events."""

    def listing(self) -> list[SessionRecord]:
        """Every session, newest first: one ``stat`` per file; a file's head is read again only
        when its revision changed, and the same list object comes back while nothing did."""
        known = self._by_path
        fresh: dict[str, Entry] = {}
        changed = self._records is None
        for path in self._files():
            try:
                revision = file_revision(path, follow=self.follow_links)
            except OSError:
                changed = True
                continue  # gone meanwhile
            entry = known.get(path)
            if entry is None or entry.revision != revision:
                changed = True
                entry = self._entry(Path(path), revision)
            fresh[path] = entry
        self._by_path = fresh
        if not changed and len(fresh) == len(known) and self._records is not None:
            return self._records
        entries: dict[str, Entry] = {}
        problems: list[StoreProblem] = []
        records: list[SessionRecord] = []
        for entry in fresh.values():
            if entry.hidden:
                continue
            if entry.header is None:
                problems.append(StoreProblem(entry.path, entry.problem or f"no readable {self.name} record"))
                continue
            twin = entries.get(entry.header.id)
            # One session in two files (Gemini CLI resumes an older .json session into a new .jsonl
            # beside it): the file written last is the session.
            if twin is None or (entry.revision[3], str(entry.path)) > (twin.revision[3], str(twin.path)):
                entries[entry.header.id] = entry
        records = [
            SessionRecord.model_construct(header=entry.header, live=False, persisted=True)
            for entry in entries.values()
            if entry.header is not None
        ]
        sort_listing(records)
        self._entries, self.problems, self._records = entries, problems, records
        return records

    def _entry(self, path: Path, revision: Revision) -> Entry:
        try:
            return Entry(path, revision, self._header(path))
        except NotListed:
            return Entry(path, revision, None, hidden=True)
        except OSError as error:
            return Entry(path, revision, None, problem=f"cannot read: {error.strerror or error}")
        except Exception as error:  # a record of a shape no version of the tool writes
            return Entry(path, revision, None, problem=unreadable(error))

    def session(self, session_id: str) -> ExternalSession:
        """The session as read now (cached by file revision).

        Raises:
            SessionQueryError: ``SESSION_QUERY_SESSION_NOT_FOUND`` (not listed, or its file is gone).
        """
        entry = self._entries.get(session_id)
        if entry is None:
            self.listing()
            entry = self._entries.get(session_id)
        if entry is None or entry.header is None:
            raise not_found(session_id)
        try:
            revision = file_revision(entry.path, follow=self.follow_links)
            if entry.session is None or revision != entry.revision:
                entry.revision = revision
                with collector_paused():  # tens of thousands of small acyclic containers
                    entry.session = self._read(entry.path, entry.header)
        except OSError as error:
            raise not_found(session_id) from error
        except Exception as error:  # a record of a shape no version of the tool writes
            self.problems = [*self.problems, StoreProblem(entry.path, unreadable(error))]
            raise cannot_read(session_id, error) from error
        return entry.session

    def revision(self, session_id: str) -> Revision | None:
        """The file revision the last listing saw (``None`` when not listed)."""
        entry = self._entries.get(session_id)
        return entry.revision if entry is not None else None

    def surface(self, session_id: str) -> SurfaceSnapshot:
        """``read_surface``, synchronously (for a host's own threads)."""
        return surface_of(self.session(session_id))

    def title(self, session_id: str) -> TitleSnapshot | None:
        """``read_title``, synchronously (for a host's own threads)."""
        return title_of(self.session(session_id))
