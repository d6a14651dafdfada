"""``JsonlSessionStore``: durable sessions in the DeepSeek Harness JSONL layout (STORE.md)."""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import re
import secrets
import shutil
from collections.abc import Generator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

import zstandard

from core.collector import collector_paused
from core.errors import SessionQueryError
from core.serialization import js_json_stringify
from core.sessions.chunk_rows import ROW_TYPES, MalformedRowError, expand_chunk_row, pack_chunk_runs
from core.sessions.models import (
    SessionEvent,
    SessionHeader,
    SessionRecord,
    SurfaceSnapshot,
    TitleSnapshot,
    trusted_event,
)
from core.sessions.query import listing_order_key
from core.sessions.session import (
    Clock,
    Session,
    already_exists,
    check_cwd,
    mint_session_id,
    not_found,
    system_clock,
    title_from_event,
)
from core.sessions.surface import SurfaceFolder, events_at

Compression = Literal["zstd", "none"]

SESSION_QUERY_INVALID_ID = "SESSION_QUERY_INVALID_ID"
SESSION_QUERY_CORRUPT = "SESSION_QUERY_CORRUPT_SESSION"
SESSION_QUERY_LOCKED = "SESSION_QUERY_SESSION_LOCKED"
SESSION_QUERY_WRITE_FAILED = "SESSION_QUERY_WRITE_FAILED"
SESSION_QUERY_WRONG_ENCODING = "SESSION_QUERY_WRONG_ENCODING"

_FILE_NAMES: dict[str, str] = {"zstd": "session.jsonl.zstd", "none": "session.jsonl"}
_NAME_LIMIT = 255
_NO_CWD = "_no-cwd"
_HEADER_PROBE = 4096


_UNSAFE = re.compile(r"[^A-Za-z0-9._-]")
_UNSAFE_OR_SEPARATORS = re.compile(r"[/\\:]+|[^A-Za-z0-9._-]")


def _escape_match(match: re.Match[str]) -> str:
    # One escape per UTF-16 code unit: an astral character becomes two.
    raw = match.group().encode("utf-16-be", "surrogatepass")
    return "".join(f"~{raw[i] << 8 | raw[i + 1]:04X}" for i in range(0, len(raw), 2))


def _slug_match(match: re.Match[str]) -> str:
    text = match.group()
    return "-" if text[0] in "/\\:" else _escape_match(match)


def encode_session_segment(session_id: str) -> str:
    """One safe path segment for a session id (injective over JavaScript strings).

    Raises:
        SessionQueryError: ``SESSION_QUERY_INVALID_ID`` for the empty id or a segment over 255 bytes.
    """
    if session_id == "":
        raise SessionQueryError("a session id must not be empty", SESSION_QUERY_INVALID_ID)
    if session_id in (".", ".."):
        return "~002E" * len(session_id)
    segment = _UNSAFE.sub(_escape_match, session_id)
    if len(segment) > _NAME_LIMIT:
        raise SessionQueryError(
            f"session id {js_json_stringify(session_id[:40])}... is too long to store: its file name would be "
            f"{len(segment)} bytes (the file system allows {_NAME_LIMIT})",
            SESSION_QUERY_INVALID_ID,
        )
    return segment


def project_key(cwd: str | None) -> str:
    """The project folder of a cwd: ``--<slug>--`` (lossy on purpose), or ``_no-cwd``."""
    if cwd is None:
        return _NO_CWD
    slug = _UNSAFE_OR_SEPARATORS.sub(_slug_match, cwd).lstrip("-") or "root"
    return f"--{slug[:251]}--"


def _corrupt(path: Path, offset: int, reason: str) -> SessionQueryError:
    return SessionQueryError(f"corrupt session file {path} at byte {offset}: {reason}", SESSION_QUERY_CORRUPT)


def header_line(header: SessionHeader) -> str:
    """The first line of a session file."""
    return js_json_stringify({"type": "session", **header.to_wire()}) + "\n"


def _header_from_row(row: Any, path: Path) -> SessionHeader:
    # Real dsh files may omit ``delegationDepth`` (it reads as 0, the model's default).
    if not isinstance(row, dict) or row.get("type") != "session":
        raise _corrupt(path, 0, "the first line is not a session header")
    try:
        return SessionHeader.model_validate({key: value for key, value in row.items() if key != "type"})
    except ValueError as error:
        raise _corrupt(path, 0, f"invalid header ({error.__class__.__name__})") from error


def _expand_row(row: Any, path: Path, offset: int) -> list[SessionEvent]:
    """One stored row as events: a plain event, or a packed chunk row expanded losslessly.

    Event types this version does not know (``command/run``, ``permission/preset``, ...) are kept
    as they are: they are log-only, so they never reach the surface or a projection.
    """
    if not isinstance(row, dict):
        raise _corrupt(path, offset, "a row is not an object")
    if row.get("type") in ROW_TYPES:
        try:
            return expand_chunk_row(row)
        except MalformedRowError as error:
            raise _corrupt(path, offset, str(error)) from error
    try:
        if type(row.get("seq")) is not int or type(row.get("time")) is not int or not isinstance(row.get("data"), dict):
            raise ValueError("seq, time and data are required")
        return [
            trusted_event(
                type=row["type"],
                seq=row["seq"],
                time=row["time"],
                data=row["data"],
                surface_op=row.get("surfaceOp"),
                source_event_seqs=row.get("sourceEventSeqs"),
            )
        ]
    except (KeyError, ValueError) as error:
        raise _corrupt(path, offset, f"malformed event row ({error})") from error


@dataclass
class LoadedLog:
    """A parsed session file: its header, events, and the byte length of the valid prefix."""

    header: SessionHeader
    events: list[SessionEvent]
    valid_length: int
    title: TitleSnapshot | None = None
    surface_seqs: list[int] = field(default_factory=list)
    recovered: bytes = b""
    """Complete lines read out of a torn last zstd frame (their events are in ``events``); a writer
    that reopens the file truncates to ``valid_length`` and writes them again as a frame of their own."""


def _frames(raw: bytes, path: Path) -> Generator[tuple[int, bytes, bool], None, int]:
    """Yield ``(offset, decompressed, complete)`` per zstd frame; a torn last frame ends the walk.

    A torn last frame (the footprint of a crash mid-write) is yielded with ``complete=False`` and
    what of it decompresses, as dsh reads it. The return value is the byte length of the complete
    frames.
    """
    offset = 0
    total = len(raw)
    view = memoryview(raw)
    while offset < total:
        decompressor = zstandard.ZstdDecompressor().decompressobj()
        try:
            content = decompressor.decompress(view[offset:])
        except zstandard.ZstdError as error:
            raise _corrupt(path, offset, f"damaged zstd frame ({error})") from error
        if not decompressor.eof:
            yield offset, content, False
            break
        consumed = total - offset - len(decompressor.unused_data)
        yield offset, content, True
        offset += consumed
    return offset


def _torn_rows(content: bytes, offset: int) -> tuple[list[tuple[int, Any]], bytes]:
    """The complete, parseable lines at the start of a torn frame's plaintext, and their bytes."""
    rows: list[tuple[int, Any]] = []
    lines, _ = _split_lines(content, offset)
    kept = 0
    for _, line in lines:
        try:
            rows.append((offset, json.loads(line)))
        except ValueError:
            break
        kept += len(line) + 1
    return rows, content[:kept]


def _split_lines(content: bytes, base: int) -> tuple[list[tuple[int, bytes]], int]:
    """Complete lines of ``content`` with their file offsets, and where the unterminated rest starts."""
    lines: list[tuple[int, bytes]] = []
    start = 0
    while (end := content.find(b"\n", start)) >= 0:
        lines.append((base + start, content[start:end]))
        start = end + 1
    return lines, start


def load_log(raw: bytes, path: Path, compression: Compression) -> LoadedLog:
    """Parse a whole session file (valid prefix only; damage before the tail raises)."""
    with collector_paused():
        return _load_log(raw, path, compression)


def _parse_rows(content: bytes, base: int, path: Path, per_line_offsets: bool) -> list[tuple[int, Any]]:
    """Parse a run of complete JSONL lines into ``(offset, row)`` pairs.

    Raw newlines only ever separate rows (JSON escapes those inside strings), so the whole run is
    parsed as one JSON array in a single C call; only when that fails is it re-parsed line by line
    to name the damaged line's offset.
    """
    if not content:
        return []
    try:
        rows = json.loads(b"[" + content[:-1].replace(b"\n", b",") + b"]")
        if len(rows) == content.count(b"\n"):
            if per_line_offsets:
                lines, _ = _split_lines(content, base)
                return [(offset, row) for (offset, _), row in zip(lines, rows, strict=True)]
            return [(base, row) for row in rows]
    except ValueError:
        pass
    lines, _ = _split_lines(content, base)
    parsed = []
    for offset, line in lines:
        try:
            parsed.append((offset if per_line_offsets else base, json.loads(line)))
        except ValueError as error:
            raise _corrupt(path, offset if per_line_offsets else base, f"a line is not JSON ({error})") from error
    return parsed


def _load_log(raw: bytes, path: Path, compression: Compression) -> LoadedLog:
    rows: list[tuple[int, Any]] = []
    recovered = b""
    if compression == "zstd":
        frames = _frames(raw, path)
        while True:
            try:
                offset, content, complete = next(frames)
            except StopIteration as done:
                valid = done.value
                break
            if not complete:
                if rows:  # a torn header frame leaves nothing to recover
                    torn, recovered = _torn_rows(content, offset)
                    rows.extend(torn)
                continue
            if not content.endswith(b"\n"):
                raise _corrupt(path, offset, "a frame does not end with a complete line")
            rows.extend(_parse_rows(content, offset, path, per_line_offsets=False))
            del content
    else:
        valid = raw.rfind(b"\n") + 1  # a last line without its newline is a torn tail
        rows = _parse_rows(raw[:valid], 0, path, per_line_offsets=True)
    if not rows:
        raise _corrupt(path, 0, "the file has no complete header")
    header = None
    events: list[SessionEvent] = []
    folder = SurfaceFolder(allow_gaps=True)
    title: TitleSnapshot | None = None
    for offset, row in rows:
        if header is None:
            header = _header_from_row(row, path)
            continue
        for event in _expand_row(row, path, offset):
            try:
                folder.push(event.type, event.seq, event.surface_op, event.source_event_seqs)
            except SessionQueryError as error:
                raise _corrupt(path, offset, str(error)) from error
            events.append(event)
            title = title_from_event(event) or title
    assert header is not None
    return LoadedLog(
        header=header,
        events=events,
        valid_length=valid,
        title=title,
        surface_seqs=folder.seqs,
        recovered=recovered,
    )


def _header_bytes(probe: bytes, path: Path, compression: Compression) -> bytes | None:
    """The header line inside ``probe`` (the start of the file), or ``None`` if it needs more bytes."""
    if compression == "zstd":
        decompressor = zstandard.ZstdDecompressor().decompressobj()
        try:
            content = decompressor.decompress(probe)
        except zstandard.ZstdError as error:
            raise _corrupt(path, 0, f"damaged header frame ({error})") from error
        line, newline, _ = content.partition(b"\n")
        if decompressor.eof and not newline:
            raise _corrupt(path, 0, "the header frame holds no complete line")
        return line if newline else None
    line, newline, _ = probe.partition(b"\n")
    return line if newline else None


def _read_header(path: str, compression: Compression) -> SessionHeader:
    """Read only the header frame/line of a session file (growing the read only if it is long)."""
    size = _HEADER_PROBE
    where = Path(path)
    with open(path, "rb") as handle:
        probe = handle.read(size)
        while (line := _header_bytes(probe, where, compression)) is None:
            more = handle.read(size)
            if not more:
                raise _corrupt(where, 0, "the header is incomplete")
            probe += more
            size *= 2
    try:
        row = json.loads(line)
    except ValueError as error:
        raise _corrupt(where, 0, "the header is not JSON") from error
    return _header_from_row(row, where)


Revision = tuple[int, int, int, int]


def _revision(path: Path) -> Revision:
    stat = path.stat()
    return (stat.st_dev, stat.st_ino, stat.st_size, stat.st_mtime_ns)


@dataclass
class StoreProblem:
    """A session file that could not be listed or read, with the reason."""

    path: Path
    message: str


@dataclass
class _Cached:
    revision: Revision
    header: SessionHeader
    log: LoadedLog | None = None


@dataclass
class _Owned:
    """A session this store instance writes: its open, locked file (``None`` until materialised)."""

    session: Session
    path: Path
    fd: int | None = None


def _fsync_dir(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        written = os.write(fd, view)
        view = view[written:]


class JsonlSessionStore:
    """Durable, dsh-compatible sessions on disk (STORE.md), with the ``MemorySessionStore`` surface.

    Args:
        root: the store folder (created when missing).
        compression: ``"zstd"`` (default, multi-frame with checksums) or ``"none"`` (plain JSONL).
        clock: epoch-milliseconds clock for new events and headers.
        pack_chunks: write runs of three or more streamed deltas as one packed chunk row, as dsh does
            (default); ``False`` writes one line per event. Reading accepts both.
    """

    def __init__(
        self,
        root: str | os.PathLike[str],
        *,
        compression: Compression = "zstd",
        clock: Clock = system_clock,
        pack_chunks: bool = True,
    ) -> None:
        if compression not in _FILE_NAMES:
            raise ValueError(f"compression must be 'zstd' or 'none', not {compression!r}")
        self.root = Path(root)
        self.compression: Compression = compression
        self._file_name = _FILE_NAMES[compression]
        self._other_name = _FILE_NAMES["none" if compression == "zstd" else "zstd"]
        self._clock = clock
        self.pack_chunks = pack_chunks
        self._compressor = zstandard.ZstdCompressor(level=3, write_checksum=True, write_content_size=True)
        self._owned: dict[str, _Owned] = {}
        self._cache: dict[Path, _Cached] = {}
        self._listing: dict[str, tuple[Revision, SessionRecord]] = {}
        self._projects: dict[str, tuple[int, list[os.DirEntry[str]]]] = {}
        self._last_listing: tuple[object, list[SessionRecord], list[StoreProblem]] | None = None
        self._revisions: dict[str, Revision] = {}
        self.problems: list[StoreProblem] = []
        self.root.mkdir(parents=True, exist_ok=True)

    # -- paths ------------------------------------------------------------------------------------

    def session_path(self, session_id: str, cwd: str | None) -> Path:
        """Where a session's file lives."""
        return self.root / project_key(cwd) / encode_session_segment(session_id) / self._file_name

    def _find(self, session_id: str) -> Path | None:
        segment = encode_session_segment(session_id)
        for project in self._project_dirs():
            candidate = project / segment / self._file_name
            if candidate.exists():
                return candidate
            if (project / segment / self._other_name).exists():
                raise self._wrong_encoding(project / segment / self._other_name)
        return None

    def _wrong_encoding(self, path: Path) -> SessionQueryError:
        other = "none" if self.compression == "zstd" else "zstd"
        return SessionQueryError(
            f"{path} uses compression {other!r} but this store was opened with {self.compression!r}; "
            f"open the root with compression={other!r}",
            SESSION_QUERY_WRONG_ENCODING,
        )

    def _project_dirs(self) -> list[Path]:
        try:
            return [entry for entry in self.root.iterdir() if entry.is_dir()]
        except FileNotFoundError:
            return []

    # -- writing ----------------------------------------------------------------------------------

    def create(
        self, session_id: str | None = None, *, cwd: str | None = None, created_at: int | None = None
    ) -> Session:
        """Create a session; nothing is written until its first append.

        Raises:
            SessionQueryError: ``SESSION_QUERY_SESSION_EXISTS``, ``SESSION_QUERY_INVALID_ID``, or
                ``SESSION_QUERY_INVALID_EVENT`` for a non-absolute cwd.
        """
        if session_id is None:
            session_id = mint_session_id()
        path = self.session_path(session_id, check_cwd(cwd))
        if session_id in self._owned or self._find(session_id) is not None:
            raise already_exists(session_id)
        header = SessionHeader(id=session_id, cwd=cwd, created_at=self._clock() if created_at is None else created_at)
        session = Session(header, clock=self._clock, sink=self)
        self._owned[session_id] = _Owned(session=session, path=path)
        return session

    def get(self, session_id: str) -> Session | None:
        """The session with this id, opened for writing (locked) by this store; ``None`` when absent.

        Raises:
            SessionQueryError: ``SESSION_QUERY_SESSION_LOCKED`` when another writer holds it,
                ``SESSION_QUERY_CORRUPT_SESSION`` when its file is damaged.
        """
        owned = self._owned.get(session_id)
        if owned is not None:
            return owned.session
        path = self._find(session_id)
        if path is None:
            return None
        fd = os.open(path, os.O_RDWR)
        try:
            self._lock(fd, session_id)
            raw = _read_fd(fd)
            log = load_log(raw, path, self.compression)
            if log.valid_length != len(raw):
                # A writer recovering from a crash: drop the torn tail before appending after it, and
                # write what was recovered from a torn zstd frame again as a frame of its own (dsh's repair).
                os.ftruncate(fd, log.valid_length)
                if log.recovered:
                    os.lseek(fd, 0, os.SEEK_END)
                    _write_all(fd, self._encode(log.recovered.decode("utf-8")))
                os.fsync(fd)
            os.lseek(fd, 0, os.SEEK_END)
        except BaseException:
            os.close(fd)
            raise
        session = Session(log.header, log.events, clock=self._clock, sink=self)
        self._owned[session_id] = _Owned(session=session, path=path, fd=fd)
        return session

    def _lock(self, fd: int, session_id: str) -> None:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            raise SessionQueryError(
                f"session {js_json_stringify(session_id)} is open elsewhere (another sessionref or dsh process "
                "is writing it); close it there first",
                SESSION_QUERY_LOCKED,
            ) from None

    def close(self) -> None:
        """Release every session this store writes (their locks and files)."""
        for owned in self._owned.values():
            if owned.fd is not None:
                os.close(owned.fd)
                owned.fd = None
        self._owned.clear()

    def release(self, session_id: str) -> None:
        """Stop writing one session (its lock is released; the data stays)."""
        owned = self._owned.pop(session_id, None)
        if owned is not None and owned.fd is not None:
            os.close(owned.fd)

    def delete(self, session_id: str) -> None:
        """Delete a session and its folder (a missing id is not an error)."""
        owned = self._owned.pop(session_id, None)
        path = owned.path if owned is not None else self._find(session_id)
        if owned is not None and owned.fd is not None:
            os.close(owned.fd)
        if path is not None and path.parent.exists():
            shutil.rmtree(path.parent)
            self._cache.pop(path, None)
            _fsync_dir(path.parent.parent)

    def _encode(self, text: str) -> bytes:
        data = text.encode("utf-8")
        return self._compressor.compress(data) if self.compression == "zstd" else data

    def write(self, session: Session, events: Any) -> None:
        """Persist one append batch durably (the ``EventSink`` of owned sessions).

        Raises:
            SessionQueryError: ``SESSION_QUERY_WRITE_FAILED`` after truncating back to the old length.
        """
        owned = self._owned.get(session.id)
        if owned is None or owned.session is not session:
            raise SessionQueryError(
                f"session {js_json_stringify(session.id)} is not open for writing here", SESSION_QUERY_LOCKED
            )
        rows = pack_chunk_runs(events) if self.pack_chunks else [event.to_wire() for event in events]
        batch = "".join(js_json_stringify(row) + "\n" for row in rows)
        if owned.fd is None:
            self._materialise(owned, batch)
            return
        fd = owned.fd
        before = os.fstat(fd).st_size
        try:
            _write_all(fd, self._encode(batch))
            os.fsync(fd)
        except OSError as error:
            # Roll back to the previous length; if even that cannot be synced the truncation still
            # holds in the page cache, and the reader ignores a torn tail after a crash anyway.
            try:
                os.ftruncate(fd, before)
                with contextlib.suppress(OSError):
                    os.fsync(fd)
            finally:
                os.lseek(fd, 0, os.SEEK_END)
            raise SessionQueryError(
                f"could not write session {js_json_stringify(session.id)}: {error.strerror or error}; "
                "nothing was saved",
                SESSION_QUERY_WRITE_FAILED,
            ) from error

    def _materialise(self, owned: _Owned, batch: str) -> None:
        path = owned.path
        path.parent.mkdir(parents=True, exist_ok=True)
        temporary = path.with_name(f".{path.name}.{os.getpid()}.{secrets.token_hex(4)}.tmp")
        fd = os.open(temporary, os.O_RDWR | os.O_CREAT | os.O_EXCL, 0o644)
        try:
            self._lock(fd, owned.session.id)
            if self.compression == "zstd":
                payload = self._encode(header_line(owned.session.header)) + self._encode(batch)
            else:
                payload = self._encode(header_line(owned.session.header) + batch)
            _write_all(fd, payload)
            os.fsync(fd)
            try:
                os.link(temporary, path)
            except FileExistsError:
                raise already_exists(owned.session.id) from None
        except OSError as error:
            os.close(fd)
            raise SessionQueryError(
                f"could not create session {js_json_stringify(owned.session.id)}: {error.strerror or error}",
                SESSION_QUERY_WRITE_FAILED,
            ) from error
        except BaseException:
            os.close(fd)
            raise
        finally:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(temporary)
        _fsync_dir(path.parent)
        _fsync_dir(path.parent.parent)
        _fsync_dir(self.root)
        os.lseek(fd, 0, os.SEEK_END)
        owned.fd = fd

    # -- reading ----------------------------------------------------------------------------------

    def _session_files(self, problems: list[StoreProblem]) -> list[tuple[str, Revision]]:
        """Every ``<project>/<session>/<file>`` with its revision; misplaced files go to ``problems``."""
        files: list[tuple[str, Revision]] = []
        try:
            projects = [entry for entry in os.scandir(self.root) if entry.is_dir()]
        except FileNotFoundError:
            return files
        for project in projects:
            try:
                entries = self._project_entries(project)
            except OSError as error:
                problems.append(StoreProblem(Path(project.path), f"cannot list {project.path}: {error.strerror}"))
                continue
            for entry in entries:
                if not entry.is_dir():
                    if ".jsonl" in entry.name:
                        problems.append(
                            StoreProblem(
                                Path(entry.path),
                                f"{entry.path} is a flat session file; "
                                f"sessions must be <project>/<id>/{self._file_name}",
                            )
                        )
                    continue
                candidate = entry.path + os.sep + self._file_name
                try:
                    stat = os.stat(candidate)
                except FileNotFoundError:
                    other = Path(entry.path) / self._other_name
                    if other.is_file():
                        problems.append(StoreProblem(other, str(self._wrong_encoding(other))))
                    continue
                files.append((candidate, (stat.st_dev, stat.st_ino, stat.st_size, stat.st_mtime_ns)))
        return files

    def _project_entries(self, project: os.DirEntry[str]) -> list[os.DirEntry[str]]:
        """The entries of a project folder, re-read only when the folder's mtime changed.

        Adding or removing a session folder changes the project folder's mtime; files inside a
        session folder are still stat'ed on every listing, so appends and replacements are seen.
        """
        mtime = project.stat().st_mtime_ns
        cached = self._projects.get(project.path)
        if cached is not None and cached[0] == mtime:
            return cached[1]
        entries = list(os.scandir(project.path))
        self._projects[project.path] = (mtime, entries)
        return entries

    def _listed_record(self, path: str, revision: Revision) -> SessionRecord:
        cached = self._listing.get(path)
        if cached is not None and cached[0] == revision:
            return cached[1]
        header = _read_header(path, self.compression)
        expected = os.path.join(self.root, project_key(header.cwd), encode_session_segment(header.id), self._file_name)
        if expected != path:
            raise SessionQueryError(f"{path}: its header (id and cwd) belongs at {expected}", SESSION_QUERY_CORRUPT)
        record = SessionRecord.model_construct(header=header, live=False, persisted=True)
        self._listing[path] = (revision, record)
        return record

    async def list_sessions(self) -> list[SessionRecord]:
        """Every readable session, newest first; unreadable files are reported in ``self.problems``.

        Only header frames are read, and only for files whose revision changed since the last call.
        """
        problems: list[StoreProblem] = []
        files = self._session_files(problems)
        fingerprint = (files, tuple((sid, o.fd is not None) for sid, o in self._owned.items()), len(problems))
        if self._last_listing is not None and self._last_listing[0] == fingerprint:
            self.problems = list(self._last_listing[2])
            return list(self._last_listing[1])
        records: dict[str, SessionRecord] = {}
        revisions: dict[str, Revision] = {}
        for path, revision in files:
            try:
                record = self._listed_record(path, revision)
            except (SessionQueryError, OSError) as error:
                problems.append(StoreProblem(Path(path), str(error)))
                continue
            session_id = record.header.id
            if session_id in records:
                problems.append(
                    StoreProblem(Path(path), f"{path}: duplicate session id {js_json_stringify(session_id)}")
                )
                continue
            if session_id in self._owned:
                record = SessionRecord.model_construct(header=record.header, live=True, persisted=True)
            records[session_id] = record
            revisions[session_id] = revision
        for session_id, owned in self._owned.items():
            if session_id not in records:
                records[session_id] = SessionRecord.model_construct(
                    header=owned.session.header, live=True, persisted=False
                )
        self.problems = problems
        self._revisions = revisions
        listing = sorted(records.values(), key=listing_order_key)
        self._last_listing = (fingerprint, listing, list(problems))
        return list(listing)

    def listed_revisions(self) -> Mapping[str, Revision]:
        """Session id -> file revision, as the last ``list_sessions`` saw them.

        The same object until a listing sees any file change, so hosts can tell "nothing changed"
        by identity.
        """
        return self._revisions

    def listed_revision(self, header: SessionHeader) -> Revision | None:
        """The file revision (device, inode, size, mtime) the last ``list_sessions`` saw for a session.

        Hosts use it to keep per-session caches (titles) fresh without reading logs again.
        """
        return self._revisions.get(header.id)

    def written_revision(self, session_id: str) -> Revision | None:
        """The file revision of a session this store writes, as of its last append (``None`` when it
        is not written here or has no file yet).

        Every append reaches the file before it returns, so this is the revision another process
        listing the store sees for the same events.
        """
        owned = self._owned.get(session_id)
        if owned is None or owned.fd is None:
            return None
        stat = os.fstat(owned.fd)
        return (stat.st_dev, stat.st_ino, stat.st_size, stat.st_mtime_ns)

    def _load(self, session_id: str) -> LoadedLog:
        path = self._find(session_id)
        if path is None:
            raise not_found(session_id)
        revision = _revision(path)
        cached = self._cache.get(path)
        if cached is not None and cached.revision == revision and cached.log is not None:
            return cached.log
        with open(path, "rb") as handle:
            raw = handle.read()
        log = load_log(raw, path, self.compression)
        self._cache[path] = _Cached(revision=revision, header=log.header, log=log)
        return log

    async def read_surface(self, session_id: str) -> SurfaceSnapshot:
        """The folded current surface, from memory for sessions this store writes, else from disk.

        Raises:
            SessionQueryError: ``SESSION_QUERY_SESSION_NOT_FOUND`` or ``SESSION_QUERY_CORRUPT_SESSION``.
        """
        owned = self._owned.get(session_id)
        if owned is not None:
            return owned.session.snapshot()
        log = self._load(session_id)
        return SurfaceSnapshot.model_construct(
            session=log.header,
            captured_through_seq=log.events[-1].seq if log.events else None,
            events=events_at(log.events, log.surface_seqs),
        )

    async def read_title(self, session_id: str) -> TitleSnapshot | None:
        """The latest ``session/title`` of the raw log, or ``None``."""
        owned = self._owned.get(session_id)
        if owned is not None:
            return owned.session.title
        return self._load(session_id).title

    def read_stored(self, header: SessionHeader) -> StoredSession:
        """One listed session read straight from its file, bypassing the log cache.

        For bulk readers (the search index reads every session once): nothing stays in memory.
        The revision is taken before reading, so it never claims more than what was read.

        Raises:
            SessionQueryError: ``SESSION_QUERY_SESSION_NOT_FOUND`` when the file is gone,
                ``SESSION_QUERY_CORRUPT_SESSION`` when it cannot be read.
        """
        path = self.session_path(header.id, header.cwd)
        try:
            with open(path, "rb") as handle:
                stat = os.fstat(handle.fileno())
                raw = handle.read()
        except FileNotFoundError:
            raise not_found(header.id) from None
        log = load_log(raw, path, self.compression)
        surface = SurfaceSnapshot.model_construct(
            session=log.header,
            captured_through_seq=log.events[-1].seq if log.events else None,
            events=events_at(log.events, log.surface_seqs),
        )
        revision = (stat.st_dev, stat.st_ino, stat.st_size, stat.st_mtime_ns)
        return StoredSession(revision=revision, surface=surface, title=log.title)


@dataclass(frozen=True, slots=True)
class StoredSession:
    """A session as ``JsonlSessionStore.read_stored`` read it: file revision, surface, latest title."""

    revision: Revision
    surface: SurfaceSnapshot
    title: TitleSnapshot | None


def _read_fd(fd: int) -> bytes:
    os.lseek(fd, 0, os.SEEK_SET)
    chunks: list[bytes] = []
    while True:
        chunk = os.read(fd, 1 << 20)
        if not chunk:
            return b"".join(chunks)
        chunks.append(chunk)
