"""The fuzzing campaign: every target under libFuzzer (atheris), then a table of what happened.

    python -m fuzz                  # the long profile (make fuzz): 100,000 inputs in all
    python -m fuzz --quick          # the bounded one make test runs: seeded, a few seconds
    python -m fuzz --only prepare --inputs 50000 --seed 7

Exit 0 when every target ran all its inputs with no crash, no broken invariant, no undocumented
error and no input slower than 1 s; otherwise 1, with libFuzzer's report and the saved input.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

LONG_PROFILE = {
    "mention_text": 25_000,
    "uri": 20_000,
    "config": 15_000,
    "prepare": 15_000,
    "dsh_log": 15_000,
    "database_rows": 15_000,
    "external": 10_000,
    "agent_rows": 5_000,
    "agent_yaml": 5_000,
    "display": 10_000,
    "mcp_frame": 20_000,
    "oversized": 20_000,
}
"""Inputs per target in the long profile (``make fuzz``): 175,000 in all."""

QUICK_PROFILE = {name: 1_000 for name in LONG_PROFILE} | {"prepare": 300, "display": 300, "agent_rows": 500}
"""Inputs per target in the bounded profile ``make test`` runs (``agent_rows`` makes nine databases an
input: half as many)."""


@dataclass
class Result:
    """One target's run: its summary, or why it failed."""

    name: str
    returncode: int
    summary: dict[str, object] | None
    report: str
    artifacts: list[Path]


def run_target(name: str, inputs: int, seed: int, workdir: Path, timeout: float = 1800) -> Result:
    """Run one target in its own process (libFuzzer owns the process it runs in)."""
    workdir.mkdir(parents=True, exist_ok=True)
    command = [sys.executable, "-m", "fuzz.run", name, str(inputs), str(seed), str(workdir)]
    root = Path(__file__).resolve().parent.parent
    env = os.environ | {"PYTHONPATH": str(root) + os.pathsep + os.environ.get("PYTHONPATH", "")}
    try:
        done = subprocess.run(command, capture_output=True, text=True, timeout=timeout, env=env, cwd=workdir)
        returncode, output = done.returncode, done.stdout + done.stderr
    except subprocess.TimeoutExpired as expired:
        returncode, output = -1, f"the whole target ran past {timeout:.0f} s\n{expired.stdout or ''}"
    summary_path = workdir / "summary.json"
    summary = json.loads(summary_path.read_text()) if summary_path.exists() else None
    artifacts = sorted(p for p in workdir.iterdir() if p.name.startswith(("crash-", "timeout-", "oom-", "leak-")))
    return Result(name, returncode, summary, _report(output), artifacts)


def _report(output: str) -> str:
    """libFuzzer's output without its progress lines: the Python traceback, the input, the verdict."""
    noise = ("#", "INFO:", "WARNING: Failed to find function", "Dictionary:")
    return "\n".join(line for line in output.splitlines() if line.strip() and not line.startswith(noise))


def _table(results: list[Result], seconds: float) -> str:
    lines = [f"{'target':<14}{'inputs':>9}{'corpus':>8}{'slowest':>10}{'seconds':>9}  outcomes"]
    total = 0
    for result in results:
        summary = result.summary
        if summary is None:
            lines.append(f"{result.name:<14}{'FAILED':>9}")
            continue
        total += int(str(summary["inputs"]))
        outcomes = ", ".join(f"{key} {value:,}" for key, value in dict(summary["outcomes"]).items())  # type: ignore[call-overload]
        lines.append(
            f"{result.name:<14}{summary['inputs']:>9,}{summary['corpus']:>8}"
            f"{str(summary['slowest_ms']) + ' ms':>10}{summary['seconds']:>9}  {outcomes}"
        )
    lines.append(f"{'total':<14}{total:>9,}{'':>27}  in {seconds:.0f} s of wall time")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m fuzz", description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="the bounded profile make test runs")
    parser.add_argument("--only", action="append", metavar="TARGET", help="run only this target (repeatable)")
    parser.add_argument("--inputs", type=int, help="inputs per target instead of the profile's")
    parser.add_argument("--seed", type=int, default=1, help="libFuzzer's seed (default 1: runs replay)")
    parser.add_argument("--jobs", type=int, default=os.cpu_count() or 1, help="targets run at once")
    parser.add_argument("--keep", metavar="DIR", help="keep corpora and saved inputs in DIR")
    args = parser.parse_args(argv)

    from fuzz.targets import SELF_CHECKS, TARGETS

    profile = dict(QUICK_PROFILE if args.quick else LONG_PROFILE)
    names = args.only or list(profile)
    unknown = [name for name in names if name not in TARGETS and name not in SELF_CHECKS]
    if unknown:
        parser.error(f"unknown target {unknown[0]!r}; targets: {', '.join(TARGETS)}")
    base = Path(args.keep) if args.keep else Path(tempfile.mkdtemp(prefix="sessionref-fuzz-"))
    started = time.perf_counter()
    with ThreadPoolExecutor(max_workers=max(1, args.jobs)) as pool:
        futures = [
            pool.submit(run_target, name, args.inputs or profile.get(name, 1000), args.seed, base / name)
            for name in names
        ]
        results = [future.result() for future in futures]
    print(_table(results, time.perf_counter() - started))
    failed = [result for result in results if result.returncode != 0 or result.summary is None]
    for result in failed:
        print(f"\n--- {result.name} failed (exit {result.returncode}) ---\n{result.report}")
        for artifact in result.artifacts:
            print(f"saved input: {artifact}")
    if not args.keep and not failed:
        shutil.rmtree(base, ignore_errors=True)
    elif failed:
        print(f"\ncorpora and inputs are kept in {base}; replay one with: python -m fuzz.run TARGET 1 1 DIR INPUT")
    return 1 if failed else 0


if __name__ == "__main__":
    raise SystemExit(main())
