"""The persistent listing cache: a new process opens only new and changed session files, and a
missing, damaged, foreign or hostile cache changes nothing but speed."""

from __future__ import annotations

import asyncio
import os
import threading
from pathlib import Path

import pytest

import core.folder.store_layout as store_layout
from core import JsonlSessionStore
from core.folder.listing_cache import CACHE_NAME
from tests.conftest import say_user


def _seed(root: Path, count: int, compression: str = "zstd") -> None:
    store = JsonlSessionStore(root, compression=compression)  # type: ignore[arg-type]
    for index in range(count):
        session = store.create(f"s{index}", cwd=f"/w/p{index % 3}" if index % 4 else None, created_at=index)
        say_user(session, f"hello {index}")
    store.close()


def _listing(root: Path, compression: str = "zstd") -> tuple[list[dict[str, object]], list[str]]:
    store = JsonlSessionStore(root, compression=compression)  # type: ignore[arg-type]
    records = asyncio.run(store.list_sessions())
    store.close()
    return [record.header.to_wire() for record in records], [problem.message for problem in store.problems]


@pytest.fixture
def header_reads(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Every session file whose header a listing opens."""
    reads: list[str] = []
    real = store_layout.read_header

    def counting(path: str, compression: str, **options: bool) -> object:
        reads.append(path)
        return real(path, compression, **options)  # type: ignore[arg-type]

    monkeypatch.setattr(store_layout, "read_header", counting)
    return reads


@pytest.mark.parametrize("compression", ["zstd", "none"])
def test_a_new_process_opens_only_new_and_changed_files(
    tmp_path: Path, header_reads: list[str], compression: str
) -> None:
    _seed(tmp_path, 12, compression)
    first, _ = _listing(tmp_path, compression)  # reads all 12 and writes the cache
    assert len(header_reads) == 12 and (tmp_path / CACHE_NAME).is_file()
    header_reads.clear()
    assert _listing(tmp_path, compression)[0] == first
    assert header_reads == []

    store = JsonlSessionStore(tmp_path, compression=compression)  # type: ignore[arg-type]
    session = store.get("s3")
    assert session is not None
    say_user(session, "an append changes the file's revision")
    store.delete("s5")
    say_user(store.create("new", cwd="/w/p0", created_at=99), "a new session")
    store.close()
    header_reads.clear()
    listed, problems = _listing(tmp_path, compression)
    assert sorted(Path(path).parent.name for path in header_reads) == ["new", "s3"]
    assert [header["id"] for header in listed] == ["new", *[h["id"] for h in first if h["id"] != "s5"]]
    assert problems == []


@pytest.mark.parametrize(
    "damage",
    ["garbage", "empty", "truncated", "other compression", "other version", "folder", "symlink", "fifo"],
)
def test_a_bad_cache_is_ignored_and_replaced(tmp_path: Path, header_reads: list[str], damage: str) -> None:
    _seed(tmp_path, 6)
    expected, _ = _listing(tmp_path)
    cache = tmp_path / CACHE_NAME
    good = cache.read_bytes()
    cache.unlink()
    outside = tmp_path.parent / "outside-target"
    outside.write_bytes(b"keep me")
    if damage == "garbage":
        cache.write_bytes(os.urandom(4096))
    elif damage == "empty":
        cache.write_bytes(b"")
    elif damage == "truncated":
        cache.write_bytes(good[: len(good) // 2])
    elif damage == "other compression":
        _seed(tmp_path / "plain", 6, "none")
        _listing(tmp_path / "plain", "none")
        cache.write_bytes((tmp_path / "plain" / CACHE_NAME).read_bytes())
    elif damage == "other version":
        cache.write_bytes(good.replace(b"\xa7version\x01", b"\xa7version\x63", 1))
    elif damage == "folder":
        cache.mkdir()
    elif damage == "symlink":
        cache.symlink_to(outside)
    elif damage == "fifo":
        os.mkfifo(cache)
    header_reads.clear()
    done: list[object] = []
    reader = threading.Thread(target=lambda: done.append(_listing(tmp_path)), daemon=True)
    reader.start()
    reader.join(30)  # a FIFO must never be opened for reading (it would block)
    assert done, "the listing hung on the cache"
    listed, problems = done[0]  # type: ignore[misc]
    assert listed == expected
    # A symlink in the store root is reported (as any is), then replaced by a real cache.
    assert problems == (
        [f"{cache} is a symbolic link: never followed or opened (SESSION_QUERY_UNSAFE_PATH)"]
        if damage == "symlink"
        else []
    )
    assert outside.read_bytes() == b"keep me"  # a symlinked cache is replaced, never written through
    if damage not in ("folder", "fifo"):
        assert cache.is_file() and not cache.is_symlink()
        header_reads.clear()
        assert _listing(tmp_path)[0] == expected and header_reads == []


def test_a_root_where_the_cache_cannot_be_written_lists_without_one(tmp_path: Path) -> None:
    """A read-only or full root (here: the temporary file's name is taken by a folder) has no cache."""
    _seed(tmp_path, 3)
    expected, _ = _listing(tmp_path)
    (tmp_path / CACHE_NAME).unlink()
    (tmp_path / f"{CACHE_NAME}.{os.getpid()}.tmp").mkdir()
    assert _listing(tmp_path) == (expected, [])
    assert not (tmp_path / CACHE_NAME).exists()


def test_dsh_lists_a_root_that_holds_the_cache(tmp_path: Path) -> None:
    """rc.8 lists only folders in the root: the cache file is invisible to it."""
    from tests.support.rc8 import NODE, dsh

    if NODE is None:
        if os.environ.get("SESSIONREF_REQUIRE_INTEROP") == "1":
            raise RuntimeError("SESSIONREF_REQUIRE_INTEROP=1 but the dsh packages are not installed")
        pytest.skip("the dsh packages are not installed (make interop)")
    _seed(tmp_path, 5)
    ours, _ = _listing(tmp_path)
    assert (tmp_path / CACHE_NAME).is_file()
    theirs = dsh("list", root=str(tmp_path), compression="zstd")
    assert sorted(theirs, key=lambda header: header["id"]) == sorted(ours, key=lambda header: str(header["id"]))


def test_the_remembered_listing_is_the_last_one_until_the_files_are_looked_at(
    tmp_path: Path, header_reads: list[str]
) -> None:
    """``remembered_sessions`` answers from the cache alone (a first paint); ``list_sessions`` then
    answers what the files say now, and nothing is remembered twice."""
    assert JsonlSessionStore(tmp_path).remembered_sessions() is None  # no cache yet
    _seed(tmp_path, 8)
    first, _ = _listing(tmp_path)
    changer = JsonlSessionStore(tmp_path)
    changer.delete("s2")
    say_user(changer.create("newer", cwd="/w/p1", created_at=50), "written after the cache")
    changer.release("newer")  # the changer stays open: its listing cache is not rewritten
    header_reads.clear()

    store = JsonlSessionStore(tmp_path)
    mine = store.create("mine", cwd="/w/p0", created_at=60)  # a session this store writes: live
    remembered = store.remembered_sessions()
    assert remembered is not None and header_reads == []
    assert [record.header.id for record in remembered] == ["mine"] + [header["id"] for header in first]
    assert remembered[0].live and not remembered[0].persisted
    assert store.problems == []
    listed = asyncio.run(store.list_sessions())
    assert [record.header.id for record in listed] == ["mine", "newer"] + [
        header["id"] for header in first if header["id"] != "s2"
    ]
    assert store.remembered_sessions() is None
    say_user(mine, "now on disk")
    store.close()
    changer.close()
    # The cache written at close forgets the deleted session and remembers the new one it listed
    # ("mine" reached the disk after that listing: the next listing reads it).
    again = JsonlSessionStore(tmp_path).remembered_sessions()
    assert again is not None and {record.header.id for record in again} == {
        "newer",
        *(header["id"] for header in first if header["id"] != "s2"),
    }


async def test_the_app_shows_what_the_files_say_after_what_the_cache_remembers(tmp_path: Path) -> None:
    from core import EchoModel
    from tui.app.sessionref_app import make_app

    _seed(tmp_path, 6)
    lister = JsonlSessionStore(tmp_path)
    await lister.list_sessions()
    lister.close()  # writes the listing cache
    assert (tmp_path / CACHE_NAME).is_file()
    changer = JsonlSessionStore(tmp_path)
    changer.delete("s4")
    say_user(changer.create("later", cwd="/w/p1", created_at=70), "after the cache")
    changer.release("later")
    app = make_app(JsonlSessionStore(tmp_path), EchoModel(), cwd="/w/p1", refresh_interval=3600)
    async with app.run_test(size=(120, 40)) as pilot:
        while not app.workspace.catalog_loaded.is_set():
            await pilot.pause(0.02)
        await pilot.pause(0.1)
        shown = {row.header.id for row in app.screen.query_one("#sidebar").rows if row.header is not None}
        assert "later" in shown and "s4" not in shown and {"s0", "s5"} <= shown
    changer.close()


def test_a_listing_that_only_misses_deleted_files_still_rewrites_the_cache(tmp_path: Path) -> None:
    """Nothing new to read, only a session gone: the cache must forget it, or every later start
    would first paint a session that no longer exists."""
    _seed(tmp_path, 5)
    _listing(tmp_path)  # writes the cache
    remover = JsonlSessionStore(tmp_path)
    remover.delete("s2")
    remover.close()
    _listing(tmp_path)  # lists without reading any header, then closes
    remembered = JsonlSessionStore(tmp_path).remembered_sessions()
    assert remembered is not None and sorted(record.header.id for record in remembered) == ["s0", "s1", "s3", "s4"]


def test_the_cache_is_written_in_listing_order(tmp_path: Path) -> None:
    """Newest first, whatever order the folders are walked in: the next start builds its records in
    the order it shows them (and its sort finds them sorted)."""
    from core.folder.listing_cache import _DECODER

    _seed(tmp_path, 30)
    listed, _ = _listing(tmp_path)
    cache = _DECODER.decode((tmp_path / CACHE_NAME).read_bytes())
    assert [entry.id for entry in cache.entries] == [header["id"] for header in listed]
    assert len(listed) == 30
