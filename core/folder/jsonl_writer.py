"""The JSONL store's durable writes (STORE.md): one locked file per session, appends that are whole
or rolled back, creation by temp file + link so a session file never exists half-written, and the
repair of a torn tail when a writer reopens a file. Works on file descriptors and bytes; which
sessions are open is the store's business (``JsonlSessionStore``)."""

from __future__ import annotations

import contextlib
import errno
import fcntl
import os
import secrets
from collections.abc import Callable
from pathlib import Path

from core.errors import SessionQueryError
from core.files import open_regular
from core.folder.jsonl_codec import LoadedLog
from core.serialization import js_json_stringify
from core.sessions.session import already_exists

SESSION_QUERY_LOCKED = "SESSION_QUERY_SESSION_LOCKED"
SESSION_QUERY_WRITE_FAILED = "SESSION_QUERY_WRITE_FAILED"


PRIVATE_FILE = 0o600
"""Session files: owner-only, whatever the umask (chat logs hold whatever people paste)."""
PRIVATE_DIR = 0o700
"""The store's folders: owner-only, as ssh and gpg keep theirs."""


def make_private_dirs(path: Path) -> None:
    """Create ``path`` and any missing parents as owner-only folders (existing ones are left as
    they are: this never changes the mode of a folder it did not create)."""
    missing: list[Path] = []
    current = path
    while not current.exists():
        missing.append(current)
        current = current.parent
    for folder in reversed(missing):
        with contextlib.suppress(FileExistsError):  # another writer made it meanwhile
            folder.mkdir()
            os.chmod(folder, PRIVATE_DIR)  # mkdir's mode is cut by the umask; this is not
    if not path.is_dir():
        raise FileExistsError(errno.EEXIST, os.strerror(errno.EEXIST), str(path))  # a file is in the way


def fsync_dir(path: Path) -> None:
    """Make a folder's entries (a new or removed file) durable."""
    fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def write_all(fd: int, data: bytes) -> None:
    """``os.write`` until every byte is written (a short write is not an error)."""
    view = memoryview(data)
    while view:
        written = os.write(fd, view)
        view = view[written:]


def read_fd(fd: int) -> bytes:
    """The whole file behind ``fd``, from its start."""
    os.lseek(fd, 0, os.SEEK_SET)
    chunks: list[bytes] = []
    while True:
        chunk = os.read(fd, 1 << 20)
        if not chunk:
            return b"".join(chunks)
        chunks.append(chunk)


def lock(fd: int, session_id: str) -> None:
    """Take the session's writer lock (``flock``, as dsh does).

    Raises:
        SessionQueryError: ``SESSION_QUERY_SESSION_LOCKED`` when another writer holds it.
    """
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        raise SessionQueryError(
            f"session {js_json_stringify(session_id)} is open elsewhere (another sessionref or dsh process "
            "is writing it); close it there first",
            SESSION_QUERY_LOCKED,
        ) from None


def open_for_append(
    path: Path, session_id: str, load: Callable[[bytes], LoadedLog], encode: Callable[[str], bytes]
) -> tuple[int, LoadedLog]:
    """Open, lock and read an existing session file, ready to append at its end.

    A torn tail (a writer that crashed mid-append) is cut off first; what could be recovered from a
    torn zstd frame is written again as a frame of its own (dsh's repair).

    Raises:
        SessionQueryError: locked by another writer, or the file is damaged (from ``load``).
    """
    fd = open_regular(path, os.O_RDWR)  # never through a symlink, never a FIFO or device
    try:
        lock(fd, session_id)
        raw = read_fd(fd)
        log = load(raw)
        if log.valid_length != len(raw):
            os.ftruncate(fd, log.valid_length)
            if log.recovered:
                os.lseek(fd, 0, os.SEEK_END)
                write_all(fd, encode(log.recovered.decode("utf-8")))
            os.fsync(fd)
        os.lseek(fd, 0, os.SEEK_END)
    except BaseException:
        os.close(fd)
        raise
    return fd, log


def append(fd: int, data: bytes, session_id: str) -> None:
    """Append ``data`` and ``fsync``; on failure the file is cut back to its old length.

    Raises:
        SessionQueryError: ``SESSION_QUERY_WRITE_FAILED`` (nothing of ``data`` stays).
    """
    before = os.fstat(fd).st_size
    try:
        write_all(fd, data)
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
            f"could not write session {js_json_stringify(session_id)}: {error.strerror or error}; nothing was saved",
            SESSION_QUERY_WRITE_FAILED,
        ) from error


def create(path: Path, payload: bytes, session_id: str, root: Path) -> int:
    """Write a new session file whole (a locked temp file, ``fsync``, then linked into place) and
    return its open, locked descriptor positioned at the end.

    Raises:
        SessionQueryError: ``SESSION_QUERY_SESSION_EXISTS`` if another writer created it meanwhile,
            ``SESSION_QUERY_WRITE_FAILED`` if it cannot be written.
    """
    make_private_dirs(path.parent)
    temporary = path.with_name(f".{path.name}.{os.getpid()}.{secrets.token_hex(4)}.tmp")
    fd = os.open(temporary, os.O_RDWR | os.O_CREAT | os.O_EXCL, PRIVATE_FILE)  # the umask only removes bits
    try:
        lock(fd, session_id)
        write_all(fd, payload)
        os.fsync(fd)
        try:
            os.link(temporary, path)
        except FileExistsError:
            raise already_exists(session_id) from None
    except OSError as error:
        os.close(fd)
        raise SessionQueryError(
            f"could not create session {js_json_stringify(session_id)}: {error.strerror or error}",
            SESSION_QUERY_WRITE_FAILED,
        ) from error
    except BaseException:
        os.close(fd)
        raise
    finally:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(temporary)
    fsync_dir(path.parent)
    fsync_dir(path.parent.parent)
    fsync_dir(root)
    os.lseek(fd, 0, os.SEEK_END)
    return fd
