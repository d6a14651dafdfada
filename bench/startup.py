"""Start-up: a fresh process for ``import core``, ``sessionref --version``, ``sessionref --help`` and
``sessionref mcp``'s first answer (``initialize`` then ``tools/list`` over its pipes), each beside a
bare ``python -c pass`` measured in turn with it (the floor: the interpreter's own start on this
machine at this moment). Medians; the ratio to the floor says what is ours.

Bytecode is written for the sources first (``compileall``, as ``pip install`` does for a wheel): a
tree run with ``PYTHONDONTWRITEBYTECODE`` set would otherwise compile every module on every start.
"""

from __future__ import annotations

import compileall
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
_INITIALIZE = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "bench", "version": "0"}},
}


def _run(arguments: list[str]) -> Callable[[], float]:
    def once() -> float:
        began = time.perf_counter()
        subprocess.run([sys.executable, *arguments], cwd=REPO, capture_output=True, check=True, env=_environment())
        return time.perf_counter() - began

    return once


def _environment() -> dict[str, str]:
    return {**os.environ, "PYTHONPATH": str(REPO)}


def _first_answer(root: Path) -> Callable[[], float]:
    def once() -> float:
        began = time.perf_counter()
        server = subprocess.Popen(
            [sys.executable, "-m", "tui.cli", "mcp", "--root", str(root), "--no-external"],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, cwd=REPO, env=_environment(),
        )  # fmt: skip
        assert server.stdin is not None and server.stdout is not None
        server.stdin.write((json.dumps(_INITIALIZE) + "\n").encode())
        server.stdin.flush()
        assert b'"serverInfo"' in server.stdout.readline()
        server.stdin.write(b'{"jsonrpc":"2.0","method":"notifications/initialized"}\n')
        server.stdin.write(b'{"jsonrpc":"2.0","id":2,"method":"tools/list"}\n')
        server.stdin.flush()
        assert b'"tools"' in server.stdout.readline()
        took = time.perf_counter() - began
        server.stdin.close()
        server.wait(timeout=60)
        return took

    return once


def main(repeats: int = 5) -> None:
    from core import JsonlSessionStore

    compileall.compile_dir(str(REPO / "core"), quiet=1)
    compileall.compile_dir(str(REPO / "tui"), quiet=1)
    rounds = max(repeats, 5) * 2
    print(f"\n## Start-up: a fresh process each, beside a bare interpreter in turn (medians of {rounds})")
    with tempfile.TemporaryDirectory(prefix="sessionref-bench-startup-") as folder:
        root = Path(folder) / "store"
        store = JsonlSessionStore(root)
        store.create("one", cwd="/bench")
        store.close()
        floor = _run(["-c", "pass"])
        cases = [
            ("python -c 'import core'", _run(["-c", "import core"]), 150),
            ("sessionref --version", _run(["-m", "tui.cli", "--version"]), 100),
            ("sessionref --help", _run(["-m", "tui.cli", "--help"]), 100),
            ("sessionref mcp: start -> initialize + tools/list answered", _first_answer(root), 300),
        ]
        for name, measure, target in cases:
            theirs: list[float] = []
            bare: list[float] = []
            for _ in range(rounds):
                bare.append(floor())
                theirs.append(measure())
            took, base = statistics.median(theirs), statistics.median(bare)
            print(
                f"  {name:<58} {took * 1000:6.0f} ms = {took / base:4.1f}x a bare interpreter"
                f" ({base * 1000:.0f} ms)   (target <= {target} ms)"
            )
