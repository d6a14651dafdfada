"""``sessionref doctor``: every store problem with its file, byte offset and what is wrong; loose
permissions; locks held by a stopped process; leftovers of an interrupted create; exit codes and
``--json``; and it never changes the store."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path
from typing import Any

import pytest

from core import JsonlSessionStore
from core.folder.doctor import diagnose
from tests.conftest import frame_offsets, say_assistant, say_user
from tests.support.external_fixtures import tree_state
from tui.cli.command import main


def make_store(root: Path, compression: Any = "zstd") -> JsonlSessionStore:
    store = JsonlSessionStore(root, compression=compression)
    for number in range(3):
        session = store.create(f"s{number}", cwd="/work/app", created_at=number)
        say_user(session, f"question {number}")
        say_assistant(session, f"answer {number}")
        say_user(session, f"follow-up {number}")
    store.close()
    return store


def doctor(root: Path, capsys: pytest.CaptureFixture[str], *extra: str) -> tuple[int, str]:
    # The store alone: the other agents' sources have their own test (tests/test_other_agents.py).
    code = main(["doctor", "--root", str(root), "--no-external", *extra])
    return code, capsys.readouterr().out


def kinds(root: Path) -> list[tuple[str, str]]:
    return [(finding.severity, finding.kind) for finding in diagnose(root).findings]


def test_a_healthy_store(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    make_store(tmp_path / "store")
    code, out = doctor(tmp_path / "store", capsys)
    assert code == 0
    assert out.splitlines() == [f"store {tmp_path / 'store'}: 3 sessions in 3 files (0.0 MiB)", "healthy"]
    code, out = doctor(tmp_path / "store", capsys, "--json")
    report = json.loads(out)
    assert code == 0
    assert report["attention"] is False
    assert report["sessions"] == 3
    assert report["findings"] == []


def test_a_damaged_zstd_frame_is_named_with_its_offset(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    store = make_store(tmp_path / "store")
    path = store.session_path("s1", "/work/app")
    raw = bytearray(path.read_bytes())
    third = frame_offsets(bytes(raw))[2]
    raw[third + 8] ^= 0xFF
    path.write_bytes(bytes(raw))
    before = tree_state(tmp_path)
    code, out = doctor(tmp_path / "store", capsys, "--json")
    assert code == 1
    (finding,) = json.loads(out)["findings"]
    assert finding["kind"] == "corrupt" and finding["severity"] == "error"
    assert finding["path"] == str(path)
    assert finding["offset"] == third
    assert finding["code"] == "SESSION_QUERY_CORRUPT_SESSION"
    assert finding["message"].startswith("damaged zstd frame")
    assert tree_state(tmp_path) == before  # read-only: nothing repaired, moved or created
    code, out = doctor(tmp_path / "store", capsys)
    assert f"error: corrupt: {path} at byte {third}: damaged zstd frame" in out
    assert out.splitlines()[-1] == "needs attention: 1 errors, 0 warnings"


def test_a_broken_plain_line_and_a_torn_tail(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    store = make_store(tmp_path / "store", "none")
    broken = store.session_path("s0", "/work/app")
    lines = broken.read_bytes().splitlines(keepends=True)
    lines[2] = b'{"type":"user/message","seq":' + b"\n"
    broken.write_bytes(b"".join(lines))
    torn = store.session_path("s2", "/work/app")
    whole = torn.read_bytes()
    torn.write_bytes(whole + b'{"type":"user/message","se')
    findings = {finding.path: finding for finding in diagnose(tmp_path / "store").findings}
    assert findings[str(broken)].kind == "corrupt"
    assert findings[str(broken)].offset == len(lines[0]) + len(lines[1])
    assert "a line is not JSON" in findings[str(broken)].message
    assert findings[str(torn)].severity == "info"
    assert findings[str(torn)].kind == "torn_tail"
    assert findings[str(torn)].offset == len(whole)
    assert "the last 26 bytes are an unfinished append" in findings[str(torn)].message


def test_a_torn_tail_alone_needs_no_attention(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    store = make_store(tmp_path / "store", "none")
    path = store.session_path("s2", "/work/app")
    path.write_bytes(path.read_bytes() + b'{"type":')
    code, out = doctor(tmp_path / "store", capsys, "--compression", "none")
    assert code == 0
    assert out.splitlines()[-1] == "healthy (1 notes)"


def test_loose_permissions_are_reported_not_changed(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    store = make_store(tmp_path / "store")
    root = tmp_path / "store"
    os.chmod(root, 0o755)
    path = store.session_path("s0", "/work/app")
    os.chmod(path, 0o644)
    code, out = doctor(root, capsys, "--json")
    assert code == 1
    loose = [f for f in json.loads(out)["findings"] if f["kind"] == "loose_permissions"]
    assert [(f["path"], f["severity"]) for f in loose] == [(str(root), "warning"), (str(path), "warning")]
    assert "mode 755" in loose[0]["message"] and "chmod 700" in loose[0]["message"]
    assert "mode 644" in loose[1]["message"] and "chmod 600" in loose[1]["message"]
    assert os.stat(root).st_mode & 0o777 == 0o755 and os.stat(path).st_mode & 0o777 == 0o644


def test_many_loose_files_are_counted_in_the_text_report(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    make_store(tmp_path / "store")
    for path in (tmp_path / "store").rglob("*"):
        os.chmod(path, 0o755 if path.is_dir() else 0o644)
    code, out = doctor(tmp_path / "store", capsys)
    assert code == 1
    assert out.count("warning: loose_permissions: /") == 5
    assert "... and 2 more files and folders other users can read (--json lists them all)" in out


def test_leftovers_of_an_interrupted_create(tmp_path: Path) -> None:
    store = make_store(tmp_path / "store")
    folder = store.session_path("s0", "/work/app").parent
    dead = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True)
    stale = folder / f".session.jsonl.zstd.{int(dead.stdout)}.0badc0de.tmp"
    stale.write_bytes(b"half")
    os.chmod(stale, 0o600)
    ongoing = folder / f".session.jsonl.zstd.{os.getpid()}.12345678.tmp"
    ongoing.write_bytes(b"")
    os.chmod(ongoing, 0o600)
    findings = {f.path: f for f in diagnose(tmp_path / "store").findings}
    assert (findings[str(stale)].severity, findings[str(stale)].kind) == ("warning", "stale_temporary")
    assert "can be deleted" in findings[str(stale)].message
    assert (findings[str(ongoing)].severity, findings[str(ongoing)].kind) == ("info", "creating")


def test_misplaced_flat_and_duplicate_files(tmp_path: Path) -> None:
    store = make_store(tmp_path / "store")
    root = tmp_path / "store"
    original = store.session_path("s0", "/work/app")
    copy = root / "--elsewhere--" / original.parent.name / original.name
    copy.parent.mkdir(parents=True)
    copy.write_bytes(original.read_bytes())
    flat = root / "--work-app--" / "old.jsonl"
    flat.write_bytes(b"{}\n")
    findings = {f.path: f for f in diagnose(root).findings if f.kind != "loose_permissions"}
    assert findings[str(copy)].kind == "misplaced"
    assert f"belongs at {original}" in findings[str(copy)].message
    assert findings[str(flat)].kind == "misplaced"
    twin = root / "--work-app--" / "s0-copy" / original.name
    twin.parent.mkdir()
    twin.write_bytes(original.read_bytes())  # the same id in a folder that does not match it
    assert ("error", "misplaced") in kinds(root)


def test_the_same_id_in_two_projects(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    store = make_store(tmp_path / "store")
    other = JsonlSessionStore(tmp_path / "other")
    say_user(other.create("s0", cwd="/elsewhere", created_at=9), "another s0")
    other.close()
    source = other.session_path("s0", "/elsewhere")
    target = tmp_path / "store" / source.relative_to(tmp_path / "other")
    target.parent.mkdir(parents=True)
    target.write_bytes(source.read_bytes())
    code, out = doctor(tmp_path / "store", capsys, "--json")
    duplicates = [f for f in json.loads(out)["findings"] if f["kind"] == "duplicate_id"]
    first, second = sorted([str(target), str(store.session_path("s0", "/work/app"))])
    assert code == 1
    assert [(f["path"], f["message"]) for f in duplicates] == [
        (second, f'session "s0" is also in {first}; only one is listed')
    ]


_WRITER = textwrap.dedent(
    """
    import sys, time
    from core import JsonlSessionStore
    store = JsonlSessionStore(sys.argv[1])
    store.get("s1")
    print("holding", flush=True)
    time.sleep(60)
    """
)


def test_a_lock_held_by_a_stopped_process_is_stale(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    if not Path("/proc/locks").exists():
        pytest.skip("lock holders are read from /proc/locks (Linux)")
    store = make_store(tmp_path / "store")
    path = store.session_path("s1", "/work/app")
    env = os.environ | {"PYTHONPATH": str(Path(__file__).resolve().parent.parent)}
    writer = subprocess.Popen([sys.executable, "-c", _WRITER, str(tmp_path / "store")], stdout=subprocess.PIPE, env=env)
    try:
        assert writer.stdout is not None and writer.stdout.readline() == b"holding\n"
        code, out = doctor(tmp_path / "store", capsys, "--json")
        (finding,) = json.loads(out)["findings"]
        assert code == 0
        assert (finding["kind"], finding["severity"], finding["pid"], finding["path"]) == (
            "locked",
            "info",
            writer.pid,
            str(path),
        )
        writer.send_signal(signal.SIGSTOP)
        deadline = time.monotonic() + 10
        while Path(f"/proc/{writer.pid}/stat").read_text().rsplit(")", 1)[1].split()[0] != "T":
            assert time.monotonic() < deadline
            time.sleep(0.01)
        code, out = doctor(tmp_path / "store", capsys)
        assert code == 1
        assert f"warning: stale_lock: {path}: locked by pid {writer.pid}" in out
        assert "which is stopped: nothing else can write here until it is resumed or ended" in out
    finally:
        writer.send_signal(signal.SIGCONT)
        writer.kill()
        writer.wait()
    assert kinds(tmp_path / "store") == []  # the lock died with its process


def test_no_store_folder(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, out = doctor(tmp_path / "missing", capsys)
    assert code == 3
    assert "there is no store here" in out
    assert not (tmp_path / "missing").exists()  # never created
    (tmp_path / "file").write_text("x")
    code, out = doctor(tmp_path / "file", capsys)
    assert code == 3 and "this is a file, not a store folder" in out


def test_doctor_help_and_the_main_help_mention_it(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exit_:
        main(["doctor", "--help"])
    assert exit_.value.code == 0
    assert "--json" in capsys.readouterr().out
    with pytest.raises(SystemExit):
        main(["--help"])
    said = " ".join(capsys.readouterr().out.split())
    assert "doctor check a store without changing it" in said and "COMMAND: config, doctor," in said


def test_files_of_the_other_encoding_are_noted_with_the_flag_that_opens_them(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A store written with ``--compression none``, checked as the app opens it by default (zstd):
    every file reads, so nothing is damage; each says what it is and which flag lists it."""
    root = tmp_path / "store"
    make_store(root, "none")
    code, out = doctor(root, capsys)
    assert code == 0
    lines = out.splitlines()
    assert lines[0] == f"store {root}: 3 sessions in 3 files (0.0 MiB)"
    assert lines[-1] == "healthy (3 notes)"
    for number, line in enumerate(lines[1:-1]):
        assert line == (
            f"info: other_encoding: {root / '--work-app--' / f's{number}' / 'session.jsonl'}: plain JSONL, readable; "
            "sessionref lists it with --compression none (this check assumed --compression zstd); sessionref "
            "import reads either (SESSION_QUERY_WRONG_ENCODING)"
        )
    healthy = f"store {root}: 3 sessions in 3 files (0.0 MiB)\nhealthy\n"
    assert doctor(root, capsys, "--compression", "none") == (0, healthy)
    # A mixed folder: the zstd files are the notes when the check assumes plain.
    make_store(tmp_path / "zstd")
    for session in ("s1", "s2"):
        (root / "--work-app--" / session / "session.jsonl").unlink()
        os.replace(tmp_path / "zstd" / "--work-app--" / session / "session.jsonl.zstd",
                   root / "--work-app--" / session / "session.jsonl.zstd")  # fmt: skip
    assert [(f.severity, f.kind, Path(f.path).parent.name) for f in diagnose(root, "none").findings] == [
        ("info", "other_encoding", "s1"),
        ("info", "other_encoding", "s2"),
    ]


def test_many_files_of_the_other_encoding_are_counted_past_the_first_five(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    store = JsonlSessionStore(tmp_path / "store", compression="none")
    for number in range(9):
        say_user(store.create(f"s{number}", cwd="/w"), "hi")
    store.close()
    code, out = doctor(tmp_path / "store", capsys)
    assert code == 0
    assert out.count("info: other_encoding:") == 6  # five, then the count
    assert "info: other_encoding: ... and 4 more session files in the other encoding (--json lists them all)" in out
    code, out = doctor(tmp_path / "store", capsys, "--json")
    assert sum(finding["kind"] == "other_encoding" for finding in json.loads(out)["findings"]) == 9


@pytest.mark.parametrize(("written", "named"), [("none", "session.jsonl.zstd"), ("zstd", "session.jsonl")])
def test_a_file_whose_bytes_are_the_other_encoding_is_called_misnamed(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], written: Any, named: str
) -> None:
    root = tmp_path / "store"
    make_store(root, written)
    folder = root / "--work-app--" / "s1"
    (only,) = folder.iterdir()
    only.rename(folder / named)
    code, out = doctor(root, capsys)
    assert code == 1
    right = folder / only.name
    kind = {"none": "plain JSONL", "zstd": "zstd frames"}
    assert (
        f"error: misnamed: {folder / named} at byte 0: it holds {kind[written]} under the name of "
        f"{kind['zstd' if written == 'none' else 'none']}, so no reader opens it; renamed to {right} it reads "
        f"(with --compression {written})"
    ) in out.splitlines()
    assert "corrupt" not in out
