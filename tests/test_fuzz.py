"""The bounded fuzzing profile (seeded, a few seconds): every target of ``python -m fuzz`` runs its
inputs under libFuzzer with no crash, broken invariant, undocumented error or input over 1 s; and
the harness itself reports a planted hang and a planted crash, with the input that caused it."""

from __future__ import annotations

from pathlib import Path

import pytest

from fuzz.__main__ import QUICK_PROFILE, run_target
from fuzz.targets import DOCUMENTED_CODES, TARGETS

REJECTING = {"mention_text", "uri", "config", "prepare", "dsh_log", "database_rows"}
"""Targets whose bounded run must also meet inputs that are refused with a code."""


@pytest.mark.parametrize("name", list(TARGETS))
def test_target_survives_its_bounded_campaign(name: str, tmp_path: Path) -> None:
    result = run_target(name, QUICK_PROFILE[name], seed=1, workdir=tmp_path)
    assert result.returncode == 0, result.report
    summary = result.summary
    assert summary is not None
    assert summary["inputs"] == QUICK_PROFILE[name]
    assert float(str(summary["slowest_ms"])) < 1000
    assert int(str(summary["corpus"])) > len(TARGETS[name].seeds()), "coverage feedback found nothing new"
    outcomes: dict[str, int] = summary["outcomes"]  # type: ignore[assignment]
    assert any(outcome.startswith(("ok", "unreadable")) for outcome in outcomes)
    for outcome in outcomes:
        for part in outcome.split("+"):
            assert part.startswith(("ok", "unreadable")) or part in DOCUMENTED_CODES, outcome
    if name in REJECTING:
        assert any(outcome in DOCUMENTED_CODES for outcome in outcomes), outcomes
    assert not result.artifacts


def test_a_planted_hang_is_reported_with_its_input(tmp_path: Path) -> None:
    result = run_target("self_check_hang", 100_000, seed=1, workdir=tmp_path)
    assert result.returncode != 0
    assert "libFuzzer: timeout" in result.report
    (saved,) = result.artifacts
    assert saved.name.startswith("timeout-") and saved.read_bytes().startswith(b"hang")


def test_a_planted_crash_is_reported_with_its_traceback_and_input(tmp_path: Path) -> None:
    result = run_target("self_check_crash", 100_000, seed=1, workdir=tmp_path)
    assert result.returncode != 0
    assert "KeyError: 'an undocumented error'" in result.report
    assert "_self_check_crash" in result.report  # the Python traceback
    (saved,) = result.artifacts
    assert saved.name.startswith("crash-") and b"crash" in saved.read_bytes()
