"""Shared fixtures: a store on a fixed clock and helpers that write realistic conversations."""

from __future__ import annotations

import itertools
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, settings

from core import JsonlSessionStore, MemorySessionStore, Session

settings.register_profile(
    "sessionref", deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large]
)
settings.load_profile("sessionref")


def text(value: str) -> dict[str, Any]:
    """A text content block."""
    return {"type": "text", "text": value}


def say_user(session: Session, words: str, *, source: dict[str, Any] | None = None) -> None:
    """Append a direct user prompt."""
    session.append(
        "user/message", {"content": [text(words)], "source": source or {"kind": "user"}}, surface_op="append"
    )


def say_assistant(session: Session, words: str) -> None:
    """Append an assistant reply."""
    session.append(
        "assistant/message",
        {"turn": 0, "step": 0, "content": [text(words)], "provenance": {"provider": "test", "model": "test"}},
        surface_op="append",
    )


def compact(session: Session, summary: str) -> None:
    """Replace the whole current surface with a compact checkpoint (what compaction does)."""
    surface = session.surface()
    seqs = [event.seq for event in surface]
    session.append(
        "user/message",
        {"content": [text(summary)], "source": {"kind": "plugin", "plugin": "compact"}},
        surface_op={"op": "replace", "start": seqs[0], "end": seqs[-1]},
        source_event_seqs=seqs,
    )


def frame_offsets(raw: bytes) -> list[int]:
    """Where each zstd frame of a session file starts."""
    import zstandard

    offsets, offset = [], 0
    while offset < len(raw):
        offsets.append(offset)
        decompressor = zstandard.ZstdDecompressor().decompressobj()
        decompressor.decompress(raw[offset:])
        offset = len(raw) - len(decompressor.unused_data)
    return offsets


@pytest.fixture
def clock() -> Callable[[], int]:
    """A clock that ticks one millisecond per call from a fixed epoch."""
    ticks: Iterator[int] = itertools.count(1_700_000_000_000)
    return lambda: next(ticks)


@pytest.fixture(params=["memory", "jsonl-zstd", "jsonl-none"])
def store(request: pytest.FixtureRequest, clock: Callable[[], int], tmp_path: Path) -> Iterator[Any]:
    """An empty store on the fixed clock: in memory, or durable on a temporary directory."""
    if request.param == "memory":
        yield MemorySessionStore(clock=clock)
        return
    compression = request.param.removeprefix("jsonl-")
    durable = JsonlSessionStore(tmp_path / "root", compression=compression, clock=clock)
    yield durable
    durable.close()


@pytest.fixture
def memory_store(clock: Callable[[], int]) -> MemorySessionStore:
    """An empty in-memory store (for tests about the in-memory store itself)."""
    return MemorySessionStore(clock=clock)


@pytest.fixture
def app(demo_template: Path, tmp_path: Path) -> Any:
    """The real app on a copy of the demo store, with a fixed clock (``tests.support.app_harness.open_app``)."""
    from tests.support.app_harness import open_app

    built, _ = open_app(demo_template, tmp_path / "store")
    return built


@pytest.fixture
def indexed(tmp_path: Path) -> Any:
    """A store on disk with a body index kept in line with it (``tests.support.indexed_store.Indexed``)."""
    from tests.support.indexed_store import Indexed

    return Indexed(tmp_path / "store")


@pytest.fixture(params=["zstd", "none"])
def compression(request: pytest.FixtureRequest) -> str:
    """Each encoding of a folder store in turn."""
    return str(request.param)


@pytest.fixture
def root(tmp_path: Path) -> Path:
    """Where a folder store lives (not created)."""
    return tmp_path / "root"


@pytest.fixture(scope="session")
def demo_template(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The demo store written once per test run (tests copy it)."""
    from tests.support.app_harness import seed_template

    folder = tmp_path_factory.mktemp("demo-template") / "store"
    seed_template(folder)
    return folder


def _store_snapshots_at_top_level() -> None:
    """Keep pytest-textual-snapshot's SVGs in ``<repo>/snapshots/`` rather than ``tests/__snapshots__``."""
    import pytest_textual_snapshot

    folder = Path(__file__).resolve().parent.parent / "snapshots"

    class TopLevelSVGExtension(pytest_textual_snapshot.SVGImageExtension):
        @classmethod
        def dirname(cls, *, test_location: Any) -> str:
            return str(folder)

    # The plugin's ``snap_compare`` fixture looks the extension up by this module-level name.
    pytest_textual_snapshot.SVGImageExtension = TopLevelSVGExtension  # type: ignore[misc]


_store_snapshots_at_top_level()


SLOW_MARKERS = {
    "tmux": "drives the app in a real terminal (tmux)",
    "browser": "drives the served app in headless Chromium",
    "postgres": "runs on a throwaway PostgreSQL cluster",
    "interop": "runs the real dsh packages under Node",
    "fuzz": "a bounded fuzzing campaign, or readers racing a writer process",
    "snapshots": "compares SVG screenshots of the app",
    "wheel": "builds the wheel and installs it into a fresh virtualenv",
    "long": "a workload that takes seconds by design (fifty turns, SIGKILLs at random moments, random steps)",
}
"""Markers of what ``make check`` leaves out (each also marks the test ``slow``); ``make test`` runs all."""

_MODULE_MARKERS = {
    "test_terminal": ("tmux",),
    "test_terminal_pg": ("tmux", "postgres"),
    "test_terminal_tools": ("tmux",),
    "test_agents_mcp": ("interop",),
    "test_agents_real": ("interop",),
    "test_agent_pi": ("interop",),
    "test_agent_kilo": ("interop",),
    "test_agent_continue": ("interop",),
    "test_agent_cline": ("interop",),  # (its resume in a real terminal is marked tmux itself)
    "test_agent_aider": ("interop",),
    "test_agent_hermes": ("interop",),
    "test_handoff_agents": ("interop",),
    "test_handoff_terminal": ("tmux",),
    "test_resume_terminal": ("tmux", "interop"),
    "test_browser": ("browser",),
    "test_interop": ("interop",),
    "test_interop_engine": ("interop",),
    "test_interop_fuzz": ("interop",),
    "test_fuzz": ("fuzz",),
    "test_readers_beside_writer": ("fuzz",),
    "test_snapshots": ("snapshots",),
    "test_wheel": ("wheel",),
}
_DATABASE_FIXTURES = {"cluster", "database", "team", "running_cluster"}


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", "slow: any of the markers below (make check runs -m 'not slow')")
    for name, what in SLOW_MARKERS.items():
        config.addinivalue_line("markers", f"{name}: {what}")


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Mark each test by what it needs: its module's kind, a database fixture; then ``slow`` for any."""
    for item in items:
        module = item.module.__name__.rsplit(".", 1)[-1] if item.module is not None else ""
        for name in _MODULE_MARKERS.get(module, ()):
            item.add_marker(name)
        database = module.startswith("test_pg_") or module.endswith("_pg")
        if database or _DATABASE_FIXTURES & set(getattr(item, "fixturenames", ())):
            item.add_marker("postgres")
        if any(item.get_closest_marker(name) is not None for name in SLOW_MARKERS):
            item.add_marker("slow")
