"""The listing's memory across runs: every session file's header, keyed by the file's revision.

A cold listing of a big store spends nearly all its time opening files to read their headers (a
header never changes once written; a file that changes gets a new revision). The store keeps what
it listed in one file in its root, ``.sessionref-listing``, and a new process takes a header from
it whenever the file's revision (device, inode, size, mtime) is still the one recorded: only new
and changed files are opened. The file is a cache: written atomically, never trusted beyond the
revision match, and ignored (then rewritten) when it is missing, damaged, foreign or of another
version. dsh lists only folders in the root, so it never sees it.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterable, Mapping
from pathlib import Path

import msgspec

from core.collector import collector_paused
from core.files import UnsafeFile, open_regular
from core.sessions.models import SessionHeader, SessionRecord, trusted_header, trusted_record

CACHE_NAME = ".sessionref-listing"
CACHE_VERSION = 1
CACHE_LIMIT = 512 << 20
"""A cache file larger than this is not read (a million sessions take about 150 MB)."""

Revision = tuple[int, int, int, int]


class _Entry(msgspec.Struct, array_like=True):
    path: str
    """Relative to the root: ``<project>/<session>/<file>``."""
    dev: int
    ino: int
    size: int
    mtime_ns: int
    id: str
    created_at: int
    cwd: str | None
    version: int
    parent_session: str | None
    seed_length: int | None
    delegation_depth: int
    origin: str | None
    agent_preset: str | None


class _Cache(msgspec.Struct):
    version: int
    compression: str
    entries: list[_Entry]


_DECODER = msgspec.msgpack.Decoder(_Cache)
_ENCODER = msgspec.msgpack.Encoder()


def load_listing(root: Path, compression: str) -> dict[str, tuple[Revision, SessionRecord]]:
    """The cached listing of the store at ``root`` (absolute session path -> (revision, record)).

    Empty when there is no usable cache: missing, a symlink or special file, too big, damaged, of
    another version or compression. Never raises.
    """
    path = root / CACHE_NAME
    try:
        fd = open_regular(path)
    except (UnsafeFile, OSError):
        return {}
    try:
        with os.fdopen(fd, "rb") as file:
            if os.fstat(file.fileno()).st_size > CACHE_LIMIT:
                return {}
            cache = _DECODER.decode(file.read())
    except (OSError, msgspec.DecodeError, msgspec.ValidationError):
        return {}
    if cache.version != CACHE_VERSION or cache.compression != compression:
        return {}
    prefix = str(root) + os.sep
    listing: dict[str, tuple[Revision, SessionRecord]] = {}
    with collector_paused():
        for entry in cache.entries:
            header = trusted_header(
                entry.id,
                entry.created_at,
                entry.cwd,
                entry.version,
                entry.parent_session,
                entry.seed_length,
                entry.delegation_depth,
                entry.origin,
                entry.agent_preset,
            )
            revision = (entry.dev, entry.ino, entry.size, entry.mtime_ns)
            listing[prefix + entry.path] = (revision, trusted_record(header, False, True))
    return listing


def save_listing(
    root: Path, compression: str, listing: Mapping[str, tuple[Revision, SessionRecord]], paths: Iterable[str]
) -> bool:
    """Write the cache of ``paths`` (entries of ``listing``) atomically; whether it was written.

    A store whose root cannot be written (read-only, full) simply has no cache.
    """
    prefix = str(root) + os.sep
    entries = []
    for path in paths:
        cached = listing.get(path)
        if cached is None or not path.startswith(prefix):
            continue
        (dev, ino, size, mtime_ns), record = cached
        header: SessionHeader = record.header
        entries.append(
            _Entry(
                path[len(prefix) :],
                dev,
                ino,
                size,
                mtime_ns,
                header.id,
                header.created_at,
                header.cwd,
                header.version,
                header.parent_session,
                header.seed_length,
                header.delegation_depth,
                header.origin,
                header.agent_preset,
            )
        )
    payload = _ENCODER.encode(_Cache(CACHE_VERSION, compression, entries))
    target = root / CACHE_NAME
    temporary = root / f"{CACHE_NAME}.{os.getpid()}.tmp"
    try:
        fd = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
    except OSError:
        return False
    try:
        with os.fdopen(fd, "wb") as file:
            file.write(payload)
        os.replace(temporary, target)  # a symlink at the target is replaced, never followed
    except OSError:
        with contextlib.suppress(OSError):
            os.unlink(temporary)
        return False
    return True
