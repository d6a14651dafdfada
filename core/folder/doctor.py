"""``sessionref doctor``: a read-only health check of a session store on disk.

It reads every session file whole (both encodings), and reports each problem with the file, the
byte offset where one is known, and what is wrong: damaged or misplaced files, duplicate ids,
torn tails, folders and files others can read, locks held by a stopped process, temporary files
an interrupted create left. Nothing is written, created, locked or repaired.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Iterator
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Literal

from core.display import visible
from core.errors import SessionQueryError
from core.files import UNSAFE_PATH, UnsafeFile, describe, kind_of, read_regular
from core.folder.jsonl_codec import load_log
from core.folder.jsonl_layout import (
    ENCODING_NAMES,
    FILE_NAMES,
    SESSION_QUERY_WRONG_ENCODING,
    Compression,
    other_encoding,
    session_file,
)
from core.serialization import js_json_stringify

Severity = Literal["error", "warning", "info"]
"""``error`` and ``warning`` need attention (``doctor`` exits 1); ``info`` is only reported."""

_TEMPORARY_SUFFIX = ".tmp"
LOOSE_SHOWN = 5
"""Findings of a kind that comes by the thousand (loose permissions of a store written by an older
version, every file of a store in the other encoding) the text report shows one by one; the rest
are counted, and ``--json`` lists every one."""
_MANY = {
    "loose_permissions": "files and folders other users can read (--json lists them all); chmod -R go-rwx {root} "
    "makes the whole store private",
    "other_encoding": "session files in the other encoding (--json lists them all)",
}
_ZSTD_MAGIC = b"\x28\xb5\x2f\xfd"


@dataclass(frozen=True)
class Finding:
    """One thing ``doctor`` found: how bad, what kind, where, and what is wrong."""

    severity: Severity
    kind: str
    """``corrupt``, ``misplaced``, ``duplicate_id``, ``torn_tail``, ``loose_permissions``,
    ``stale_lock``, ``locked``, ``stale_temporary``, ``creating``, ``unreadable``, ``unsafe_path``
    (a symlink, FIFO, device or socket inside the store), ``missing_root``, ``other_encoding`` (a
    readable file of the encoding the store is not opened with), ``misnamed`` (a file whose bytes
    are the other encoding than its name says)."""
    path: str
    message: str
    offset: int | None = None
    code: str | None = None
    pid: int | None = None


@dataclass
class Diagnosis:
    """What ``diagnose`` found in a store."""

    root: str
    sessions: int = 0
    files: int = 0
    bytes: int = 0
    findings: list[Finding] = field(default_factory=list)
    heading: str | None = None
    """The report's first line when it is not a folder's (the database doctor's)."""

    @property
    def attention(self) -> bool:
        """Whether anything needs the user (an error or a warning)."""
        return any(finding.severity != "info" for finding in self.findings)

    def to_json(self) -> dict[str, Any]:
        return {
            "root": self.root,
            "sessions": self.sessions,
            "files": self.files,
            "bytes": self.bytes,
            "attention": self.attention,
            "findings": [{k: v for k, v in asdict(finding).items() if v is not None} for finding in self.findings],
        }


def _loose(path: str, mode: int, what: str) -> Finding | None:
    bits = stat.S_IMODE(mode)
    if not bits & 0o077:
        return None
    fix = "700" if what == "folder" else "600"
    return Finding(
        "warning",
        "loose_permissions",
        path,
        f"the {what} can be read by other users (mode {bits:o}); chmod {fix} keeps it private",
    )


@dataclass(frozen=True)
class _Holder:
    pid: int
    state: str
    command: str


def _lock_holders() -> dict[tuple[int, int], list[_Holder]] | None:
    """``(device, inode)`` -> the processes holding an ``flock``/``fcntl`` lock on it, from
    ``/proc/locks`` (Linux); ``None`` where that is not available."""
    try:
        lines = Path("/proc/locks").read_text().splitlines()
    except OSError:
        return None
    holders: dict[tuple[int, int], list[_Holder]] = {}
    for line in lines:
        parts = line.split()
        if "->" in parts:  # a waiter, not a holder
            continue
        try:
            pid = int(parts[4])
            major, minor, inode = parts[5].split(":")
            device = os.makedev(int(major, 16), int(minor, 16))
            key = (device, int(inode))
        except (IndexError, ValueError):
            continue
        holders.setdefault(key, []).append(_process(pid))
    return holders


def _process(pid: int) -> _Holder:
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        state = fields[0]
    except (OSError, IndexError):
        state = "?"
    try:
        command = Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace").strip()
    except OSError:
        command = ""
    return _Holder(pid, state, command)


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def _lock_findings(
    path: str, st: os.stat_result, holders: dict[tuple[int, int], list[_Holder]] | None
) -> Iterator[Finding]:
    if holders is None:
        return
    for holder in holders.get((st.st_dev, st.st_ino), []):
        who = f"pid {holder.pid}" + (f" ({holder.command[:80]})" if holder.command else "")
        if holder.state in ("T", "t", "Z", "X"):
            state = {"T": "stopped", "t": "stopped by a debugger", "Z": "a zombie", "X": "dead"}[holder.state]
            yield Finding(
                "warning",
                "stale_lock",
                path,
                f"locked by {who}, which is {state}: nothing else can write here until it is resumed or ended",
                pid=holder.pid,
            )
        else:
            yield Finding("info", "locked", path, f"being written by {who}", pid=holder.pid)


def _temporary(path: str) -> Finding | None:
    """A ``.<file>.<pid>.<hex>.tmp`` the store's create leaves only when killed mid-create."""
    name = os.path.basename(path)
    parts = name.split(".")
    if not name.startswith(".") or not name.endswith(_TEMPORARY_SUFFIX) or len(parts) < 4:
        return None
    try:
        pid = int(parts[-3])
    except ValueError:
        return None
    if _alive(pid):
        return Finding("info", "creating", path, f"pid {pid} is creating a session here", pid=pid)
    return Finding(
        "warning",
        "stale_temporary",
        path,
        f"left by an interrupted create (pid {pid} is gone); the session it was creating was never "
        "published, so this file can be deleted",
        pid=pid,
    )


def _check_session(
    path: str, compression: Compression, raw: bytes, root: str, opened_with: Compression
) -> tuple[list[Finding], str | None]:
    """The findings of one session file (named for ``compression``; the app opens the store with
    ``opened_with``), and its id when it reads."""
    try:
        log = load_log(raw, Path(path), compression)
    except SessionQueryError as error:
        misnamed = _misnamed(path, compression, raw)
        if misnamed is not None:
            return [misnamed], None
        message = error.detail or error.message
        return [Finding("error", "corrupt", path, message, offset=error.offset, code=error.code)], None
    findings = []
    if compression != opened_with:
        findings.append(
            Finding(
                "info",
                "other_encoding",
                path,
                f"{ENCODING_NAMES[compression]}, readable; sessionref lists it with --compression {compression} "
                f"(this check assumed --compression {opened_with}); sessionref import reads either",
                code=SESSION_QUERY_WRONG_ENCODING,
            )
        )
    header = log.header
    try:
        expected = session_file(root, header.id, header.cwd, compression)
    except SessionQueryError as error:
        return [Finding("error", "misplaced", path, error.message, code=error.code)], None
    if expected != path:
        findings.append(
            Finding(
                "error",
                "misplaced",
                path,
                f"its header (id {js_json_stringify(header.id)}) belongs at {expected}; it is not listed",
                offset=0,
            )
        )
        return findings, None
    if log.valid_length != len(raw):
        torn = len(raw) - log.valid_length
        findings.append(
            Finding(
                "info",
                "torn_tail",
                path,
                f"the last {torn} bytes are an unfinished append (a writer stopped mid-write); readers skip "
                "them and the next writer cuts them off"
                + (", keeping the complete lines inside" if log.recovered else ""),
                offset=log.valid_length,
            )
        )
    return findings, header.id


def _misnamed(path: str, compression: Compression, raw: bytes) -> Finding | None:
    """A file that does not read under its name's encoding but reads whole under the other one."""
    other = other_encoding(compression)
    if raw.startswith(_ZSTD_MAGIC) != (other == "zstd"):
        return None
    try:
        load_log(raw, Path(path), other)
    except SessionQueryError:
        return None
    right = os.path.join(os.path.dirname(path), FILE_NAMES[other])
    return Finding(
        "error",
        "misnamed",
        path,
        f"it holds {ENCODING_NAMES[other]} under the name of {ENCODING_NAMES[compression]}, so no reader opens it; "
        f"renamed to {right} it reads (with --compression {other})",
        offset=0,
    )


def diagnose(root: str | os.PathLike[str], compression: Compression = "zstd") -> Diagnosis:
    """Check the store at ``root`` (read-only) and return every finding, in path order.

    ``compression`` is the encoding the app opens the store with (``--compression``): files of the
    other one are reported as such (``other_encoding``, a note), not as damage.
    """
    root = os.path.abspath(root)
    diagnosis = Diagnosis(root=root)
    add = diagnosis.findings.append
    try:
        root_stat = os.stat(root)
    except FileNotFoundError:
        add(Finding("error", "missing_root", root, "there is no store here (the folder does not exist)"))
        return diagnosis
    if not stat.S_ISDIR(root_stat.st_mode):
        add(Finding("error", "missing_root", root, "this is a file, not a store folder"))
        return diagnosis
    holders = _lock_holders()
    if (finding := _loose(root, root_stat.st_mode, "folder")) is not None:
        add(finding)
    owners: dict[str, str] = {}
    names = set(FILE_NAMES.values())
    by_name: dict[str, Compression] = {FILE_NAMES["zstd"]: "zstd", FILE_NAMES["none"]: "none"}
    for folder, dirs, files in os.walk(root, onerror=lambda error: add(_unreadable(error))):
        dirs.sort()
        depth = 0 if folder == root else os.path.relpath(folder, root).count(os.sep) + 1
        for name in sorted(dirs):
            path = os.path.join(folder, name)
            try:
                mode = os.lstat(path).st_mode
                if stat.S_ISLNK(mode):
                    add(_unsafe(path, "symlink"))  # os.walk does not enter it; neither does the store
                elif (finding := _loose(path, mode, "folder")) is not None:
                    add(finding)
            except OSError as error:
                add(_unreadable(error))
        for name in sorted(files):
            path = os.path.join(folder, name)
            try:
                st = os.lstat(path)
            except OSError as error:
                add(_unreadable(error))
                continue
            kind = kind_of(st.st_mode)
            if kind != "regular":
                add(_unsafe(path, kind))  # never opened: a FIFO would block, a device never end
                continue
            if (finding := _loose(path, st.st_mode, "file")) is not None:
                add(finding)
            diagnosis.files += 1
            diagnosis.bytes += st.st_size
            diagnosis.findings.extend(_lock_findings(path, st, holders))
            if (finding := _temporary(path)) is not None:
                add(finding)
                continue
            if name not in names:
                if depth == 1 and ".jsonl" in name:
                    add(Finding("error", "misplaced", path, f"a flat session file; sessions are <project>/<id>/{name}"))
                continue
            if depth != 2:
                add(Finding("error", "misplaced", path, "a session file outside <project>/<id>/; it is not listed"))
                continue
            try:
                raw, _ = read_regular(path)
            except UnsafeFile as error:
                add(_unsafe(path, error.kind))
                continue
            except OSError as error:
                add(_unreadable(error))
                continue
            findings, session_id = _check_session(path, by_name[name], raw, root, compression)
            diagnosis.findings.extend(findings)
            if session_id is None:
                continue
            if session_id in owners:
                add(
                    Finding(
                        "error",
                        "duplicate_id",
                        path,
                        f"session {js_json_stringify(session_id)} is also in {owners[session_id]}; only one is listed",
                        offset=0,
                    )
                )
                continue
            owners[session_id] = path
            diagnosis.sessions += 1
    return diagnosis


def _unsafe(path: str, kind: str) -> Finding:
    return Finding(
        "error",
        "unsafe_path",
        path,
        f"{describe(kind)} inside the store: sessionref never follows or opens it (remove it, or put the "
        "real file in its place)",
        code=UNSAFE_PATH,
    )


def _unreadable(error: OSError) -> Finding:
    return Finding("error", "unreadable", str(error.filename), f"cannot read it: {error.strerror or error}")


def format_diagnosis(diagnosis: Diagnosis) -> str:
    """The human-readable report ``sessionref doctor`` prints."""
    lines = [
        diagnosis.heading
        or f"store {diagnosis.root}: {diagnosis.sessions} sessions in {diagnosis.files} files "
        f"({diagnosis.bytes / 1_048_576:.1f} MiB)"
    ]
    hidden: dict[str, int] = {}
    severities: dict[str, str] = {}
    for kind in _MANY:
        many = [finding for finding in diagnosis.findings if finding.kind == kind]
        if len(many) > LOOSE_SHOWN + 1:
            hidden[kind] = len(many) - LOOSE_SHOWN
            severities[kind] = many[0].severity
    seen: dict[str, int] = {}
    for finding in diagnosis.findings:
        seen[finding.kind] = seen.get(finding.kind, 0) + 1
        if finding.kind in hidden and seen[finding.kind] > LOOSE_SHOWN:
            continue
        where = finding.path + (f" at byte {finding.offset}" if finding.offset is not None else "")
        code = f" ({finding.code})" if finding.code else ""
        lines.append(f"{finding.severity}: {finding.kind}: {where}: {finding.message}{code}")
    for kind, count in hidden.items():
        lines.append(f"{severities[kind]}: {kind}: ... and {count} more {_MANY[kind].format(root=diagnosis.root)}")
    counts = {severity: sum(f.severity == severity for f in diagnosis.findings) for severity in ("error", "warning")}
    if diagnosis.attention:
        lines.append(f"needs attention: {counts['error']} errors, {counts['warning']} warnings")
    else:
        lines.append("healthy" + (f" ({len(diagnosis.findings)} notes)" if diagnosis.findings else ""))
    # File names and messages come from the disk: no control or reordering character reaches the terminal.
    return "\n".join(map(visible, lines))
