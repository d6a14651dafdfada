"""Where a JSONL store's session files are: ``<root>/<project>/<session>/<file>``, with revisions.

``SessionFiles`` keeps the answer between listings. ``walk`` looks at everything (one ``lstat`` per
session; a project folder is re-read only when its mtime changed); ``update`` looks only at the
paths a file-system watcher named, so noticing one change in a store of 100,000 sessions costs a
few system calls instead of 100,000.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path

from core.files import UNSAFE_PATH, Revision, describe, kind_of
from core.folder.jsonl_layout import SESSION_QUERY_WRONG_ENCODING
from core.sessions.models import StoreProblem


def unsafe_problem(path: str, kind: str) -> StoreProblem:
    """A symlink or special file where the store expects a folder or a session file."""
    return StoreProblem(Path(path), f"{path} is {describe(kind)}: never followed or opened ({UNSAFE_PATH})")


Found = tuple[str, Revision] | StoreProblem
"""What one entry of a project folder holds: a session file and its revision, or a problem."""

Changes = dict[str, Revision | None]
"""Session files that changed: path -> its new revision, or ``None`` when it is gone."""

Entry = tuple[str, bool, bool, str]
"""An entry of a project folder: path, is a symlink, is a folder, name."""


@dataclass
class _Project:
    mtime: int
    entries: list[Entry]
    """Everything the folder held at ``mtime`` (session folders without a file yet too)."""
    found: dict[str, Found]


class SessionFiles:
    """The session files under a store root, kept between listings (see the module docstring).

    Args:
        root: the store folder.
        file_name: the session file name of this store's compression.
        other_name: the other compression's file name (its presence is a problem).
        wrong_encoding: the problem text for a session file of the other compression.
    """

    def __init__(self, root: Path, file_name: str, other_name: str, wrong_encoding: Callable[[Path], str]) -> None:
        self.root = root
        self._root_prefix = str(root) + os.sep
        self._file_name = file_name
        self._other_name = other_name
        self._wrong_encoding = wrong_encoding
        self._root_problems: list[StoreProblem] = []
        self._projects: dict[str, _Project | StoreProblem] = {}
        self.walked = False

    # -- looking ----------------------------------------------------------------------------------

    def walk(self) -> None:
        """Look at every project and session folder."""
        self._root_problems = []
        projects: dict[str, _Project | StoreProblem] = {}
        try:
            entries = list(os.scandir(self.root))
        except FileNotFoundError:
            entries = []
        for entry in entries:
            if entry.is_symlink():
                self._root_problems.append(unsafe_problem(entry.path, "symlink"))
            elif entry.is_dir(follow_symlinks=False):
                projects[entry.path] = self._walk_project(entry.path, self._projects.get(entry.path))
        self._projects = projects
        self.walked = True

    def update(self, paths: Iterable[str]) -> Changes | None:
        """Look again only at what ``paths`` (anything under the root a watcher named) touch.

        Returns the session files that changed, or ``None`` when more than files did (a problem
        appeared or went, the root itself changed): then only ``files`` says what is there.
        """
        changes: Changes = {}
        root_problems = list(self._root_problems)
        whole = False
        for path in paths:
            if not path.startswith(self._root_prefix):
                self.walk()  # the root itself changed (moved, deleted, recreated)
                return None
            parts = path[len(self._root_prefix) :].split(os.sep)
            project = self._root_prefix + parts[0]
            known = self._projects.get(project)
            if len(parts) == 1 or not isinstance(known, _Project):
                before = known
                self._update_project(project)
                whole = _diff(before, self._projects.get(project), changes) or whole
            else:
                before_found = known.found.get(project + os.sep + parts[1])
                self._update_session(known, project + os.sep + parts[1])
                after_found = known.found.get(project + os.sep + parts[1])
                whole = _diff_found(before_found, after_found, changes) or whole
        return None if whole or root_problems != self._root_problems else changes

    def files(self, problems: list[StoreProblem]) -> list[tuple[str, Revision]]:
        """Every session file with its revision; what is misplaced is appended to ``problems``."""
        problems.extend(self._root_problems)
        files: list[tuple[str, Revision]] = []
        for project in self._projects.values():
            if isinstance(project, StoreProblem):
                problems.append(project)
                continue
            for found in project.found.values():
                if isinstance(found, StoreProblem):
                    problems.append(found)
                else:
                    files.append(found)
        return files

    # -- one folder -------------------------------------------------------------------------------

    def _walk_project(self, path: str, known: _Project | StoreProblem | None) -> _Project | StoreProblem:
        try:
            mtime = os.lstat(path).st_mtime_ns
            if isinstance(known, _Project) and known.mtime == mtime:
                entries = known.entries  # the same folders: only their files are looked at again
            else:
                entries = [
                    (entry.path, entry.is_symlink(), entry.is_dir(follow_symlinks=False), entry.name)
                    for entry in os.scandir(path)
                ]
        except OSError as error:
            return StoreProblem(Path(path), f"cannot list {path}: {error.strerror}")
        found: dict[str, Found] = {}
        for session, is_symlink, is_dir, name in entries:
            result = self._examine(session, is_symlink, is_dir, name)
            if result is not None:
                found[session] = result
        return _Project(mtime, entries, found)

    def _update_project(self, project: str) -> None:
        try:
            mode = os.lstat(project).st_mode
        except OSError:
            self._projects.pop(project, None)
            return
        kind = kind_of(mode)
        self._root_problems = [p for p in self._root_problems if str(p.path) != project]
        if kind == "symlink":
            self._projects.pop(project, None)
            self._root_problems.append(unsafe_problem(project, "symlink"))
        elif kind == "directory":
            self._projects[project] = self._walk_project(project, None)
        else:
            self._projects.pop(project, None)

    def _update_session(self, project: _Project, session: str) -> None:
        name = os.path.basename(session)
        try:
            kind = kind_of(os.lstat(session).st_mode)
        except OSError:
            project.found.pop(session, None)
            project.entries = [entry for entry in project.entries if entry[0] != session]
            return
        entry = (session, kind == "symlink", kind == "directory", name)
        project.entries = [known for known in project.entries if known[0] != session] + [entry]
        result = self._examine(*entry)
        if result is None:
            project.found.pop(session, None)
        else:
            project.found[session] = result

    def _examine(self, path: str, is_symlink: bool, is_dir: bool, name: str) -> Found | None:
        """One entry of a project folder: its session file, a problem, or nothing to list."""
        if is_symlink:
            return unsafe_problem(path, "symlink")
        if not is_dir:
            if ".jsonl" in name:
                return StoreProblem(
                    Path(path), f"{path} is a flat session file; sessions must be <project>/<id>/{self._file_name}"
                )
            return None
        candidate = path + os.sep + self._file_name
        try:
            stat = os.lstat(candidate)
        except FileNotFoundError:
            other = Path(path) / self._other_name
            if other.is_file() and not other.is_symlink():
                return StoreProblem(other, self._wrong_encoding(other), SESSION_QUERY_WRONG_ENCODING)
            return None
        except OSError as error:
            return StoreProblem(Path(candidate), f"cannot read {candidate}: {error.strerror}")
        kind = kind_of(stat.st_mode)
        if kind != "regular":
            # A symlink, FIFO, device or socket where the session file belongs: never opened.
            return unsafe_problem(candidate, kind)
        return candidate, (stat.st_dev, stat.st_ino, stat.st_size, stat.st_mtime_ns)


def _diff_found(before: Found | None, after: Found | None, changes: Changes) -> bool:
    """Add what changed between two states of one session folder; ``True`` if a problem is involved."""
    if before == after:
        return False
    if isinstance(before, StoreProblem) or isinstance(after, StoreProblem):
        return True
    if before is not None:
        changes[before[0]] = None
    if after is not None:
        changes[after[0]] = after[1]
    return False


def _diff(before: _Project | StoreProblem | None, after: _Project | StoreProblem | None, changes: Changes) -> bool:
    """Add what changed between two states of one project folder; ``True`` if a problem is involved."""
    if isinstance(before, StoreProblem) or isinstance(after, StoreProblem):
        return True
    old = before.found if before is not None else {}
    new = after.found if after is not None else {}
    whole = False
    for session in old.keys() | new.keys():
        whole = _diff_found(old.get(session), new.get(session), changes) or whole
    return whole
