"""``import_jsonl`` / ``export_jsonl``: a JSONL store into PostgreSQL and back, every event, seq and
time exactly; idempotent and resumable; what is exported, dsh rc.8 lists and loads."""

from __future__ import annotations

import asyncio
import itertools
from pathlib import Path
from typing import Any

import pytest
import zstandard

from core import JsonlSessionStore
from core.database.store import PostgresSessionStore
from core.database.transfer import export_jsonl, import_jsonl
from tests.conftest import compact, say_assistant, say_user
from tests.support.pg_cluster import cluster, database
from tests.support.rc8 import NODE, dsh

__all__ = ["cluster", "database"]  # the fixtures


def _seed(root: Path) -> JsonlSessionStore:
    store = JsonlSessionStore(root, clock=itertools.count(1_700_000_000_000, 3).__next__)
    for index in range(6):
        session = store.create(f"s{index}", cwd=f"/w/p{index % 2}" if index % 3 else None)
        say_user(session, f"question {index} 界 😀 <b>")
        chunks = [{"turn": 1, "step": 0, "chunk": {"type": "text-delta", "index": 0, "text": w}} for w in "abcd"]
        session.append_batch([("assistant/chunk", data, None, None) for data in chunks])
        say_assistant(session, f"answer {index}")
        if index == 2:
            session.append("session/title", {"title": "titled", "messageSeqs": [0], "source": "user"})
            compact(session, "the summary")
    return store


def _everything(store: Any) -> dict[str, tuple[dict[str, Any], list[dict[str, Any]]]]:
    records = asyncio.run(store.list_sessions())
    out = {}
    for record in records:
        header, events = store.read_log(record.header.id)
        out[record.header.id] = (header.to_wire(), [event.to_wire() for event in events])
    return out


def test_a_round_trip_gives_back_every_event_seq_and_time(database: str, tmp_path: Path) -> None:
    _seed(tmp_path / "from").close()
    original = _everything(JsonlSessionStore(tmp_path / "from"))
    store = PostgresSessionStore(database)
    seen: list[tuple[int, int]] = []
    report = import_jsonl(tmp_path / "from", store, progress=lambda done, total: seen.append((done, total)))
    assert (report.copied, report.extended, report.unchanged, report.problems) == (6, 0, 0, [])
    assert seen == [(done, 6) for done in range(1, 7)]
    assert _everything(store) == original
    exported = export_jsonl(store, tmp_path / "to")
    assert (exported.copied, exported.problems) == (6, [])
    assert _everything(JsonlSessionStore(tmp_path / "to")) == original
    for path in (tmp_path / "to").rglob("session.jsonl.zstd"):
        assert path.stat().st_mode & 0o777 == 0o600
    store.close()


def test_import_is_idempotent_and_picks_up_what_was_added_since(database: str, tmp_path: Path) -> None:
    source = _seed(tmp_path)
    store = PostgresSessionStore(database)
    import_jsonl(tmp_path, store)
    again = import_jsonl(tmp_path, store)
    assert (again.copied, again.extended, again.unchanged, again.events) == (0, 0, 6, 0)
    session = source.get("s4")
    assert session is not None
    say_user(session, "said later")
    source.release("s4")
    later = import_jsonl(tmp_path, store)
    assert (later.copied, later.extended, later.unchanged, later.events) == (0, 1, 5, 1)
    assert _everything(store) == _everything(JsonlSessionStore(tmp_path))
    # A session being written in the database is not imported into meanwhile.
    writing = store.get("s5")
    assert writing is not None
    blocked = import_jsonl(tmp_path, store)
    assert len(blocked.problems) == 1 and "SESSION_QUERY_SESSION_LOCKED" in blocked.problems[0]
    store.close()
    source.close()


def test_export_never_overwrites_another_copy(database: str, tmp_path: Path) -> None:
    _seed(tmp_path / "from").close()
    store = PostgresSessionStore(database)
    import_jsonl(tmp_path / "from", store)
    export_jsonl(store, tmp_path / "to")
    assert export_jsonl(store, tmp_path / "to").unchanged == 6  # the same events: nothing to do
    other = JsonlSessionStore(tmp_path / "to")
    session = other.get("s1")
    assert session is not None
    say_user(session, "only in the file")
    other.close()
    before = (tmp_path / "to").joinpath("--w-p1--", "s1", "session.jsonl.zstd").read_bytes()
    report = export_jsonl(store, tmp_path / "to")
    assert report.unchanged == 5 and len(report.problems) == 1 and "holds other events" in report.problems[0]
    assert (tmp_path / "to").joinpath("--w-p1--", "s1", "session.jsonl.zstd").read_bytes() == before
    store.close()


@pytest.mark.skipif(NODE is None, reason="the dsh packages are not installed (make interop)")
def test_dsh_rc8_lists_and_loads_an_export_with_the_same_events(database: str, tmp_path: Path) -> None:
    _seed(tmp_path / "from").close()
    store = PostgresSessionStore(database)
    import_jsonl(tmp_path / "from", store)
    export_jsonl(store, tmp_path / "to")
    ours = _everything(JsonlSessionStore(tmp_path / "to"))
    listed = dsh("list", root=str(tmp_path / "to"), compression="zstd")
    assert sorted(header["id"] for header in listed) == sorted(ours)
    loaded = dsh("load", root=str(tmp_path / "to"), compression="zstd", ids=sorted(ours))
    for session_id, (_header, events) in ours.items():
        assert loaded[session_id]["events"] == events
    store.close()


def _uri(conninfo: str) -> str:
    """The same database as a postgresql:// URI (what a user types)."""
    parts = dict(item.split("=", 1) for item in conninfo.split())
    return f"postgresql://{parts['user']}@/{parts['dbname']}?host={parts['host']}"


def test_the_import_and_export_commands(database: str, tmp_path: Path) -> None:
    import subprocess
    import sys

    _seed(tmp_path / "from").close()
    command = [sys.executable, "-m", "tui.cli"]
    repo = Path(__file__).resolve().parent.parent
    done = subprocess.run(
        [*command, "import", str(tmp_path / "from"), "--store", _uri(database)],
        capture_output=True,
        text=True,
        cwd=repo,
    )
    assert (done.returncode, done.stdout) == (0, "6 sessions imported, 38 events; 0 extended; 0 already there\n")
    done = subprocess.run(
        [*command, "export", str(tmp_path / "to"), "--store", _uri(database)], capture_output=True, text=True, cwd=repo
    )
    assert (done.returncode, done.stdout) == (0, "6 sessions exported, 38 events; 0 already there\n")
    assert _everything(JsonlSessionStore(tmp_path / "to")) == _everything(JsonlSessionStore(tmp_path / "from"))
    absent = _uri(database).replace("postgres@", "postgres:hunter2-secret@").replace("/t", "/absent_t")
    done = subprocess.run(
        [*command, "import", str(tmp_path / "from"), "--store", absent], capture_output=True, text=True, cwd=repo
    )
    assert done.returncode == 3 and "SESSION_QUERY_DATABASE_UNAVAILABLE" in done.stderr
    assert "hunter2" not in done.stderr + done.stdout


def _seed_plain_and_mixed(root: Path) -> dict[str, Any]:
    """Sessions s0..s5 as plain JSONL (``--compression none``), then z0, z1 as zstd beside them in the
    same project folders, and s1 also as a zstd twin with the same events: what each holds."""
    _seed(root).close()  # zstd, to be rewritten as plain below
    expected = _everything(JsonlSessionStore(root))
    for path in list(root.rglob("session.jsonl.zstd")):
        plain = path.with_name("session.jsonl")
        plain.write_bytes(zstandard.ZstdDecompressor().stream_reader(path.read_bytes(), read_across_frames=True).read())
        plain.chmod(0o600)
        if path.parent.name != "s1":
            path.unlink()
    zstd = JsonlSessionStore(root, clock=itertools.count(1_800_000_000_000, 3).__next__)
    for index in range(2):
        say_user(zstd.create(f"z{index}", cwd="/w/p1"), f"zstd {index}")
    zstd.close()
    expected.update({key: value for key, value in _everything(JsonlSessionStore(root)).items() if key[0] == "z"})
    return expected


def test_a_plain_and_a_mixed_folder_store_import_in_full(database: str, tmp_path: Path) -> None:
    expected = _seed_plain_and_mixed(tmp_path / "from")
    assert sorted(expected) == ["s0", "s1", "s2", "s3", "s4", "s5", "z0", "z1"]
    store = PostgresSessionStore(database)
    report = import_jsonl(tmp_path / "from", store)
    # s1 is there twice (zstd and plain) with the same events: imported once.
    assert (report.copied, report.problems) == (8, [])
    assert _everything(store) == expected
    assert import_jsonl(tmp_path / "from", store).unchanged == 8
    store.close()


def test_a_session_in_both_encodings_with_other_events_is_left_out_and_named(database: str, tmp_path: Path) -> None:
    _seed_plain_and_mixed(tmp_path / "from")
    twin = JsonlSessionStore(tmp_path / "from")  # zstd: s1's zstd file
    session = twin.get("s1")
    assert session is not None
    say_user(session, "only in the zstd copy")
    twin.close()
    store = PostgresSessionStore(database)
    report = import_jsonl(tmp_path / "from", store)
    assert report.copied == 7 and len(report.problems) == 1
    folder = tmp_path / "from" / "--w-p1--" / "s1"
    assert report.problems[0] == (
        f'session "s1" is both {folder / "session.jsonl.zstd"} and {folder / "session.jsonl"}, with different '
        "events; neither was read (keep the one you want, remove the other)"
    )
    assert "s1" not in _everything(store)
    store.close()


def test_export_compression_names_the_files_it_writes_and_never_doubles_a_session(
    database: str, tmp_path: Path
) -> None:
    _seed(tmp_path / "from").close()
    store = PostgresSessionStore(database)
    import_jsonl(tmp_path / "from", store)
    exported = export_jsonl(store, tmp_path / "to", compression="none")
    assert exported.copied == 6
    assert sorted(path.name for path in (tmp_path / "to").rglob("session.*")) == ["session.jsonl"] * 6
    assert _everything(JsonlSessionStore(tmp_path / "to", compression="none")) == _everything(store)
    # Exporting as zstd into the same folder finds each session there already (in the other encoding).
    again = export_jsonl(store, tmp_path / "to", compression="zstd")
    assert (again.copied, again.unchanged, again.problems) == (0, 6, [])
    assert not list((tmp_path / "to").rglob("session.jsonl.zstd"))
    store.close()


def test_the_import_command_reads_a_plain_store(database: str, tmp_path: Path) -> None:
    import subprocess
    import sys

    _seed_plain_and_mixed(tmp_path / "from")
    done = subprocess.run(
        [sys.executable, "-m", "tui.cli", "import", str(tmp_path / "from"), "--store", _uri(database)],
        capture_output=True,
        text=True,
        cwd=Path(__file__).resolve().parent.parent,
    )
    assert (done.returncode, done.stdout) == (0, "8 sessions imported, 40 events; 0 extended; 0 already there\n")
