"""Opening files that other programs can tamper with: the store's, the index's, other tools'.

The policy (docs/security.md):

- **No symlinks inside the store or the index.** A session file, a session or project folder, an
  index folder, shard or lock file that is a symbolic link is never followed: it is reported
  (``SESSION_QUERY_UNSAFE_PATH``, ``sessionref doctor``), never read, written, truncated or created
  through. The root folder itself may be a link (that is the user's own choice).
- **Only regular files are opened.** A FIFO, a device, a socket or a folder where a file belongs is
  reported and never opened for reading: a FIFO would block, a device never end. Files are checked
  with ``lstat`` before opening and again with ``fstat`` on what was opened (``O_NOFOLLOW |
  O_NONBLOCK``), so a file swapped in between is caught too.
- **Reads sized by the data are bounded** by the caller (``read_head``): header probes, other tools'
  heads.
"""

from __future__ import annotations

import errno
import fcntl
import os
import stat
from pathlib import Path

UNSAFE_PATH = "SESSION_QUERY_UNSAFE_PATH"
"""A symbolic link or a special file where the store expects its own regular file or folder."""


class UnsafeFile(OSError):
    """``path`` is not a regular file (or folder) that may be opened: ``kind`` says what it is."""

    def __init__(self, path: str | os.PathLike[str], kind: str) -> None:
        self.path_name = os.fspath(path)
        self.kind = kind
        super().__init__(errno.EPERM, f"{self.path_name} is {describe(kind)}, not a regular file; it is left alone")


def kind_of(mode: int) -> str:
    """What a ``st_mode`` is: ``regular``, ``directory``, ``symlink``, ``fifo``, ``socket``, ``device``."""
    if stat.S_ISREG(mode):
        return "regular"
    if stat.S_ISDIR(mode):
        return "directory"
    if stat.S_ISLNK(mode):
        return "symlink"
    if stat.S_ISFIFO(mode):
        return "fifo"
    if stat.S_ISSOCK(mode):
        return "socket"
    return "device"


def describe(kind: str) -> str:
    """``a symbolic link``, ``a FIFO (named pipe)``..."""
    return {
        "symlink": "a symbolic link",
        "fifo": "a FIFO (named pipe)",
        "socket": "a socket",
        "device": "a device",
        "directory": "a folder",
        "regular": "a regular file",
    }.get(kind, kind)


def open_regular(path: str | os.PathLike[str], flags: int = os.O_RDONLY, *, follow: bool = False) -> int:
    """A descriptor of ``path`` when it is a regular file (a symlink is refused unless ``follow``).

    Never blocks on a FIFO and never opens a device, socket or folder.

    Raises:
        UnsafeFile: ``path`` is a symlink (without ``follow``) or not a regular file.
        OSError: it cannot be opened (missing, permissions).
    """
    return open_regular_sized(path, flags, follow=follow)[0]


def open_regular_sized(
    path: str | os.PathLike[str],
    flags: int = os.O_RDONLY,
    *,
    follow: bool = False,
    seen_regular: bool = False,
    blocking: bool = True,
) -> tuple[int, int]:
    """``open_regular``, and the file's size when it was opened (its ``fstat``, taken anyway).
    ``seen_regular``: the caller has just ``lstat``-ed it as a regular file (a listing's walk), so it
    is not looked at again before the open; the ``fstat`` after it still refuses what was swapped in.
    ``blocking=False``: the descriptor keeps the ``O_NONBLOCK`` it was opened with (which nothing
    done to a regular file heeds): two calls fewer for a caller that only reads and closes it.

    Raises:
        UnsafeFile, OSError: as ``open_regular``.
    """
    if not seen_regular:
        kind = kind_of((os.stat(path) if follow else os.lstat(path)).st_mode)
        if kind != "regular":
            raise UnsafeFile(path, kind)
    extra = os.O_NONBLOCK | os.O_CLOEXEC | (0 if follow else os.O_NOFOLLOW)
    try:
        fd = os.open(path, flags | extra)
    except OSError as error:
        if error.errno == errno.ELOOP:
            raise UnsafeFile(path, "symlink") from None
        raise
    try:
        status = os.fstat(fd)
        kind = kind_of(status.st_mode)
        if kind != "regular":
            raise UnsafeFile(path, kind)  # swapped in after the lstat
        if blocking:
            fcntl.fcntl(fd, fcntl.F_SETFL, fcntl.fcntl(fd, fcntl.F_GETFL) & ~os.O_NONBLOCK)
    except BaseException:
        os.close(fd)
        raise
    return fd, status.st_size


def read_head(fd: int, limit: int) -> bytes:
    """At most ``limit`` bytes from the start of ``fd`` (read where they are: the file offset is
    neither used nor moved)."""
    chunks: list[bytes] = []
    done = 0
    while done < limit:
        chunk = os.pread(fd, min(limit - done, 1 << 20), done)
        if not chunk:
            break
        chunks.append(chunk)
        done += len(chunk)
    return chunks[0] if len(chunks) == 1 else b"".join(chunks)


def read_regular(path: str | os.PathLike[str], *, follow: bool = False) -> tuple[bytes, os.stat_result]:
    """The whole of a regular file and its ``fstat`` (taken before reading).

    Raises:
        UnsafeFile, OSError: as ``open_regular``.
    """
    fd = open_regular(path, follow=follow)
    try:
        status = os.fstat(fd)
        chunks: list[bytes] = []
        while chunk := os.read(fd, 1 << 22):
            chunks.append(chunk)
        return b"".join(chunks), status
    finally:
        os.close(fd)


def check_folders(root: str | os.PathLike[str], path: str | os.PathLike[str]) -> None:
    """Every existing folder between ``root`` (excluded) and ``path`` (included) is a real folder,
    not a symlink or a file: writing under ``path`` cannot land outside ``root``.

    Raises:
        UnsafeFile: a component is a symlink or not a folder.
    """
    root_path, current = Path(root), Path(path)
    parts: list[Path] = []
    while current != root_path and current != current.parent:
        parts.append(current)
        current = current.parent
    for folder in reversed(parts):
        try:
            mode = os.lstat(folder).st_mode
        except FileNotFoundError:
            return  # what is missing will be created, as a real folder
        kind = kind_of(mode)
        if kind != "directory":
            raise UnsafeFile(folder, kind)


Revision = tuple[int, int, int, int]
"""A file's revision: device, inode, size, mtime (ns)."""


def file_revision(path: str | os.PathLike[str], *, follow: bool = False) -> Revision:
    """A file's revision (device, inode, size, mtime): another one means the file changed.

    The store's own files are never symlinks (``lstat``); other tools' may be (``follow``).

    Raises:
        OSError: the file cannot be stat'ed (gone, say).
    """
    stat_ = os.stat(path) if follow else os.lstat(path)
    return (stat_.st_dev, stat_.st_ino, stat_.st_size, stat_.st_mtime_ns)
