"""``StoreLayout``: where a folder store keeps each session (STORE.md): ``<root>/<project key of the
cwd>/<encoded id>/<file of the encoding>``, found whatever project folder it is in, and a listed
file's header checked against the place it was found."""

from __future__ import annotations

import os
from pathlib import Path

from core.errors import SessionQueryError
from core.folder.jsonl_header import SESSION_QUERY_CORRUPT, read_header
from core.folder.jsonl_layout import (
    FILE_NAMES,
    SESSION_QUERY_WRONG_ENCODING,
    Compression,
    encode_session_segment,
    other_encoding,
    project_key,
    session_file,
    wrong_encoding_message,
)
from core.sessions.models import SessionRecord, trusted_record


class StoreLayout:
    """The folder layout of one store (``JsonlSessionStore`` has one).

    Args:
        root: the store folder.
        compression: its encoding (its files' name; the other encoding's files are not its own).
    """

    def __init__(self, root: Path, compression: Compression) -> None:
        self.root = root
        self.compression = compression
        self.file_name = FILE_NAMES[compression]
        self.other_name = FILE_NAMES[other_encoding(compression)]

    def session_path(self, session_id: str, cwd: str | None) -> Path:
        """Where a session's file lives."""
        return self.root / project_key(cwd) / encode_session_segment(session_id) / self.file_name

    def path_of(self, session_id: str) -> Path | None:
        """Where the session's file of this store's encoding is (whatever is there: a symlink or a
        FIFO too, refused on open), or ``None``; a file of the other encoding does not count."""
        return self._locate(session_id)[0]

    def find(self, session_id: str) -> Path | None:
        """``path_of``, refusing a session that is there only in the other encoding.

        Raises:
            SessionQueryError: ``SESSION_QUERY_WRONG_ENCODING``.
        """
        path, other = self._locate(session_id)
        if path is None and other is not None:
            raise SessionQueryError(self.wrong_encoding_text(other), SESSION_QUERY_WRONG_ENCODING)
        return path

    def _locate(self, session_id: str) -> tuple[Path | None, Path | None]:
        """The session's file of this encoding and the first one of the other, in one pass."""
        segment = encode_session_segment(session_id)
        other: Path | None = None
        for project in self._project_dirs():
            candidate = project / segment / self.file_name
            if os.path.lexists(candidate):
                return candidate, other
            if other is None and os.path.lexists(project / segment / self.other_name):
                other = project / segment / self.other_name
        return None, other

    def wrong_encoding_text(self, path: Path) -> str:
        """What to say of a file of the other encoding where this store looked."""
        return wrong_encoding_message(path, self.compression)

    def _project_dirs(self) -> list[Path]:
        # A symlinked project folder is never entered (the listing reports it).
        try:
            return [Path(entry.path) for entry in os.scandir(self.root) if entry.is_dir(follow_symlinks=False)]
        except FileNotFoundError:
            return []

    def read_record(self, path: str) -> SessionRecord:
        """A listed file's record from its header, which must lead back to where it was found (the
        listing's walk has just found it a regular file).

        Raises:
            SessionQueryError: ``SESSION_QUERY_CORRUPT_SESSION`` (and the header reader's codes).
        """
        header = read_header(path, self.compression, seen_regular=True)  # (the listing's walk lstat-ed it)
        expected = session_file(self.root, header.id, header.cwd, self.compression)
        if expected != path:
            raise SessionQueryError(f"{path}: its header (id and cwd) belongs at {expected}", SESSION_QUERY_CORRUPT)
        return trusted_record(header, False, True)
