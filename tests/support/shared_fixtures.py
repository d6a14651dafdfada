"""Real files other programs wrote (dsh logs, Claude Code and Codex transcripts), read where CI keeps
them: ``../shared/fixtures/`` beside the checkout, or ``$SESSIONREF_FIXTURES``.

They are other projects' data, so the project commits no copy. Without the folder the tests that
need it skip with the reason, unless ``SESSIONREF_REQUIRE_FIXTURES=1`` (``.ci/run`` sets it): then
they fail.
"""

from __future__ import annotations

import os
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent.parent


def fixtures_root() -> Path:
    """Where the shared fixtures are (whether or not they are there)."""
    configured = os.environ.get("SESSIONREF_FIXTURES")
    return Path(configured) if configured else REPO.parent / "shared" / "fixtures"


def shared_fixtures(name: str) -> Path:
    """``<fixtures>/<name>``; skips the calling test (or fails it, when required) without it."""
    import pytest  # (here: the fuzzers import ``fixtures_root`` without pytest's machinery)

    folder = fixtures_root() / name
    if not folder.is_dir():
        reason = f"the shared fixtures are not at {folder} (set SESSIONREF_FIXTURES)"
        if os.environ.get("SESSIONREF_REQUIRE_FIXTURES") == "1":
            pytest.fail(reason)
        pytest.skip(reason)
    return folder
