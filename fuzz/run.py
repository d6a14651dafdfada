"""One target under libFuzzer (atheris), coverage-guided over the instrumented ``core`` package.

    python -m fuzz.run TARGET RUNS SEED WORKDIR
    python -m fuzz.run TARGET RUNS SEED WORKDIR INPUT   # replay one saved input, with its traceback

Runs exactly RUNS inputs (the seed corpus first), then writes ``WORKDIR/summary.json``: the
outcome counts, the slowest input and the corpus size, and exits 0. A crash (an undocumented
exception or a broken invariant) or an input slower than 1 s makes libFuzzer print the Python
traceback, keep the input as ``WORKDIR/crash-*`` or ``timeout-*`` and exit non-zero.
``python -m fuzz`` drives this once per target.
"""

from __future__ import annotations

import json
import os
import sys
import time
from collections import Counter
from pathlib import Path

import atheris

TIMEOUT_SECONDS = 1
"""libFuzzer's per-input limit: an input still running after this is reported as a hang."""


def main(argv: list[str]) -> None:
    name, runs, seed, workdir = argv[0], int(argv[1]), int(argv[2]), Path(argv[3])
    if len(argv) > 4:
        from fuzz.targets import SELF_CHECKS, TARGETS

        print({**TARGETS, **SELF_CHECKS}[name].run(Path(argv[4]).read_bytes()))
        return
    with atheris.instrument_imports(include=["core", "tui"]):
        import core
        import core.mcp.wire  # noqa: F401  (the MCP server's line reader)
        import fuzz.display  # noqa: F401  (the app's renderers it drives, instrumented too)
    from fuzz.targets import SELF_CHECKS, TARGETS

    target = {**TARGETS, **SELF_CHECKS}[name]
    corpus = workdir / "corpus"
    corpus.mkdir(parents=True, exist_ok=True)
    for number, data in enumerate(target.seeds()):
        (corpus / f"seed-{number:03d}").write_bytes(data)
    dictionary = workdir / "tokens.dict"
    dictionary.write_text("".join('"' + "".join(f"\\x{b:02x}" for b in token) + '"\n' for token in target.tokens))

    outcomes: Counter[str] = Counter()
    slowest = [0.0]
    started = time.perf_counter()

    def one(data: bytes) -> None:
        began = time.perf_counter()
        outcome = target.run(data)
        slowest[0] = max(slowest[0], time.perf_counter() - began)
        outcomes[outcome] += 1
        if outcomes.total() >= runs:
            summary = {
                "target": name,
                "inputs": outcomes.total(),
                "outcomes": dict(sorted(outcomes.items())),
                "slowest_ms": round(slowest[0] * 1000, 1),
                "seconds": round(time.perf_counter() - started, 2),
                "corpus": len(os.listdir(corpus)),
            }
            (workdir / "summary.json").write_text(json.dumps(summary))
            sys.stdout.flush()
            os._exit(0)  # libFuzzer would otherwise go on; nothing else is left to flush

    options = [
        f"-seed={seed}",
        f"-timeout={TIMEOUT_SECONDS}",
        f"-max_len={target.max_len}",
        f"-dict={dictionary}",
        f"-artifact_prefix={workdir}/",
        "-rss_limit_mb=4096",
        "-print_final_stats=0",
        str(corpus),
    ]
    atheris.Setup([sys.argv[0], *options], one)
    atheris.Fuzz()


if __name__ == "__main__":
    main(sys.argv[1:])
