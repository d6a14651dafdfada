"""Moving sessions between a JSONL store (dsh's layout) and the PostgreSQL store.

``import_jsonl`` copies every readable session of a JSONL store into the database: idempotent (a
session already there gains only the events past its last seq) and resumable (each session is
one transaction, so an interrupted import leaves whole sessions and the next run goes on).
``export_jsonl`` writes the database's sessions as a JSONL store that dsh lists and loads: each
file is created whole (private temp file, ``fsync``, linked into place); a session whose file
exists already is skipped when it holds the same events and reported otherwise, never overwritten.
Either way every event, seq and time is kept exactly.
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor, as_completed
from dataclasses import dataclass, field
from pathlib import Path

import zstandard

from core.database.store import PostgresSessionStore
from core.errors import SessionQueryError
from core.folder import jsonl_writer
from core.folder.either_encoding import EitherEncoding
from core.folder.jsonl_header import header_line
from core.folder.jsonl_layout import Compression, session_file
from core.serialization import js_json_stringify
from core.sessions.chunk_rows import pack_chunk_runs
from core.sessions.models import SessionEvent, SessionHeader, SessionRecord

Progress = Callable[[int, int], None]
"""Called after each session with (sessions done, sessions in all)."""


@dataclass
class TransferReport:
    """What an import or an export did."""

    copied: int = 0
    """Sessions written whole."""
    extended: int = 0
    """Sessions that were there already and gained the events past their last seq (import)."""
    unchanged: int = 0
    """Sessions that were there already with the same events."""
    events: int = 0
    """Events written."""
    problems: list[str] = field(default_factory=list)
    """Sessions left out, each with the reason (unreadable files, conflicting copies)."""


IMPORT_WORKERS = 4
"""Sessions imported side by side (each on a pooled connection: the server's work runs in parallel)."""


def import_jsonl(
    root: str | os.PathLike[str],
    store: PostgresSessionStore,
    progress: Progress | None = None,
    workers: int = IMPORT_WORKERS,
) -> TransferReport:
    """Copy the sessions of the JSONL store at ``root`` into ``store`` (see the module docstring),
    whatever the encoding of each file (a folder may mix zstd and plain files)."""
    source = EitherEncoding(root)
    report = TransferReport()

    def put(record: SessionRecord) -> tuple[int, int]:
        header, events = source.read_log(record.header.id)
        return store.put_events(header, events), len(events)

    try:
        records = [entry.record for entry in source.list_sessions()]
        report.problems.extend(problem.message for problem in source.problems)
        with ThreadPoolExecutor(max_workers=max(1, workers), thread_name_prefix="import") as pool:
            futures = {pool.submit(put, record): record for record in records}
            for done, future in enumerate(as_completed(futures), 1):
                record = futures[future]
                try:
                    added, total = future.result()
                except SessionQueryError as error:
                    report.problems.append(f"{js_json_stringify(record.header.id)}: {error.line}")
                else:
                    report.events += added
                    if added == total and added:
                        report.copied += 1
                    elif added:
                        report.extended += 1
                    else:
                        report.unchanged += 1
                if progress is not None:
                    progress(done, len(records))
    finally:
        source.close()
    return report


def export_jsonl(
    store: PostgresSessionStore,
    root: str | os.PathLike[str],
    *,
    compression: Compression = "zstd",
    progress: Progress | None = None,
) -> TransferReport:
    """Write every session of ``store`` into a JSONL store at ``root`` (see the module docstring)."""
    target = Path(root)
    jsonl_writer.make_private_dirs(target)
    existing = EitherEncoding(target)  # a session already there in either encoding is compared, not doubled
    compressor = zstandard.ZstdCompressor(level=3, write_checksum=True, write_content_size=True)
    report = TransferReport()
    try:
        records = asyncio.run(store.list_sessions())
        for done, record in enumerate(records, 1):
            session_id = record.header.id
            try:
                header, events = store.read_log(session_id)
                path = Path(session_file(target, session_id, header.cwd, compression))
                there = existing.find(session_id)
                if there is not None:
                    if [event.to_wire() for event in there[1]] != [event.to_wire() for event in events]:
                        raise SessionQueryError(
                            f"session {js_json_stringify(session_id)} in {target} holds other events; "
                            "it was left as it is",
                            "SESSION_QUERY_SESSION_EXISTS",
                        )
                    report.unchanged += 1
                else:
                    os.close(
                        jsonl_writer.create(
                            path, _file_bytes(header, events, compression, compressor), session_id, target
                        )
                    )
                    report.copied += 1
                    report.events += len(events)
            except SessionQueryError as error:
                report.problems.append(f"{js_json_stringify(session_id)}: {error.line}")
            if progress is not None:
                progress(done, len(records))
    finally:
        existing.close()
    return report


def _file_bytes(
    header: SessionHeader, events: list[SessionEvent], compression: Compression, compressor: zstandard.ZstdCompressor
) -> bytes:
    """A session file as the JSONL store writes it: the header, then the rows (chunk runs packed);
    with zstd the header is a frame of its own, as dsh writes it."""
    rows = "".join(js_json_stringify(row) + "\n" for row in pack_chunk_runs(events))
    if compression == "zstd":
        return compressor.compress(header_line(header).encode()) + (compressor.compress(rows.encode()) if rows else b"")
    return (header_line(header) + rows).encode()
