"""A fuzz target over the database store's read path: a teammate writes their rows with plain SQL,
so the rows a session and the listing are read from are as hostile as a file. Seeds are the same
corpus as the file readers' (the logs dsh wrote): the first line is the header column, each later
line a row, each with the ``first_seq`` its row says (or, mutated, another one)."""

from __future__ import annotations

import json
import random
from pathlib import Path
from typing import Any

from core import SessionQueryError, project_conversation
from core.database.listing import DatabaseListing
from core.database.reading import MAX_ROW_BYTES, session_from_rows
from core.folder.jsonl_codec import load_log
from core.folder.jsonl_header import HEADER_LIMIT
from fuzz.kit import check, outcome_of, rng_of

_SESSION_ID = "fuzzed"


def _first_seq(row: str, rng: random.Random) -> int:
    """The first seq a row says it holds, as the writer records it (any number for a row that says none)."""
    try:
        parsed = json.loads(row)
    except ValueError:
        parsed = None
    seq = parsed.get("seq0", parsed.get("seq")) if isinstance(parsed, dict) else None
    return seq if type(seq) is int else rng.randrange(-2, 50)


def database_rows(data: bytes) -> str:
    """Hostile rows through ``session_from_rows`` and the listing.

    - Every outcome is a session or a documented code; an oversized header or row is refused with
      its code, never parsed.
    - A session read names the session it was asked for, its seqs increase, every row's first seq
      is one of its events, and it projects.
    - Rows that say their own seqs read as the same lines read as a file (the same events, or both refuse).
    - The listing never raises for a row: it lists it (with its own id) or reports it.
    """
    rng = rng_of(data)
    text = data.decode("utf-8", "replace").replace("\x00", "\ufffd")  # what PostgreSQL text can hold
    header, *lines = text.split("\n")
    if rng.random() < 0.9:  # the row's own id in its header; else the header names another session
        header = _with_id(header)
    header_size = len(header.encode("utf-8", "surrogatepass"))
    shown_header: str | None = header if header_size <= HEADER_LIMIT else None
    if rng.random() < 0.03:
        shown_header, header_size = None, HEADER_LIMIT + rng.randrange(1, 1 << 20)
    rows: list[tuple[str | None, int, int]] = []
    for line in lines:
        if not line:
            continue
        size = len(line.encode("utf-8", "surrogatepass"))
        rows.append((line, size, _first_seq(line, rng)))
    if rows and rng.random() < 0.05:  # a row recorded under another first seq than it holds
        at = rng.randrange(len(rows))
        rows[at] = (rows[at][0], rows[at][1], rows[at][2] + rng.choice((-1, 1, 7)))
    if rows and rng.random() < 0.03:
        at = rng.randrange(len(rows))
        rows[at] = (None, MAX_ROW_BYTES + rng.randrange(1, 1 << 20), rows[at][2])
    rows.sort(key=lambda row: row[2])
    outcome = _read(shown_header, header_size, rows)
    _listing(shown_header, header_size)
    return outcome


def _with_id(header: str) -> str:
    try:
        parsed = json.loads(header)
    except ValueError:
        return header
    if not isinstance(parsed, dict):
        return header
    return json.dumps({**parsed, "id": _SESSION_ID}, ensure_ascii=False)


def _read(header: str | None, header_size: int, rows: list[tuple[str | None, int, int]]) -> str:
    try:
        loaded = session_from_rows(_SESSION_ID, header, header_size, rows, 1)
    except SessionQueryError as error:
        code = outcome_of(error)
        if header is None:
            check(code == "SESSION_QUERY_CORRUPT_SESSION", f"an oversized header read as {code}")
        return code
    check(header is not None and all(row is not None for row, _, _ in rows), "an oversized part was read")
    check(loaded.header.id == _SESSION_ID, "a session read names another session")
    seqs = [event.seq for event in loaded.events]
    check(seqs == sorted(set(seqs)), "seqs do not increase")
    check({first for _, _, first in rows} <= set(seqs), "a row's first seq is not one of the session's events")
    project_conversation(loaded.surface())
    # The same lines as a file: the same events.
    assert header is not None
    lines = [header] + [row for row, _, _ in rows if row is not None]
    as_file = load_log(("\n".join(lines) + "\n").encode("utf-8", "surrogatepass"), Path("fuzz.jsonl"), "none")
    check(as_file.events == loaded.events, "the rows read other events than the same lines as a file")
    return "ok"


def _listing(header: str | None, header_size: int) -> None:
    listing = DatabaseListing("alice")

    def run(statement: str, _parameters: tuple[Any, ...]) -> list[tuple[Any, ...]]:
        if statement.startswith("SELECT coalesce(max(revision)"):
            return [(1, 1)]
        return [(_SESSION_ID, header, header_size, "bob", 1, header)]

    records = listing.current(run, (), [])
    problems = listing.problems
    check(len(records) + len(problems) == 1, "a row neither listed nor reported")
    for record in records:
        check(record.header.id == _SESSION_ID and record.owner == "bob", "a row listed under another id or owner")
    for problem in problems:
        check(problem.code == "SESSION_QUERY_CORRUPT_SESSION", f"a listing problem with code {problem.code}")
