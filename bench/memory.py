"""The app's memory with 10,000 sessions: resident set idle, after loading a 20,000-event log the way
a reference loads it, and across 20 more loads of that same session, each one a real parse (another
writer appends to the session between loads, so its revision changes and the log is read again).

It runs the real app headless in a fresh process and reads the kernel's figures for that process:
``VmRSS`` (resident now) and ``VmHWM`` (the peak so far).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

from bench.store import listing_root
from bench.workload import write_big_log

LOADS = 20
"""Loads of the same session after the first one."""
GROWTH_MIB = 8
"""How far the resident set or its peak may grow over the loads and still count as flat (the
allocator's own noise; a log kept twice would be about 100 MiB)."""
_PROJECT = "/home/user/project-0"

_IN_APP = """
import asyncio, json, subprocess, sys
from core import EchoModel, JsonlSessionStore, ReferenceInput
from tui.app.sessionref_app import make_app

APPEND = (
    "import sys; from core import JsonlSessionStore; store = JsonlSessionStore(sys.argv[1]); "
    "store.get('big').append('user/message', {'content': [{'type': 'text', 'text': 'one more'}]}, "
    "surface_op='append'); store.close()"
)


def kib(name):
    with open("/proc/self/status") as status:
        return next(int(line.split()[1]) for line in status if line.startswith(name + ":"))


def figures():
    return {"rss": kib("VmRSS"), "peak": kib("VmHWM")}


root, loads, cwd = sys.argv[1], int(sys.argv[2]), sys.argv[3]
app = make_app(JsonlSessionStore(root), EchoModel(), cwd=cwd, refresh_interval=3600, cursor_blink=False)


async def main():
    out = {}
    async with app.run_test(size=(120, 40)) as pilot:
        await asyncio.wait_for(app.workspace.catalog_loaded.wait(), 120)
        await pilot.pause(0.5)
        out["sessions"] = len(app.workspace.catalog.records)
        out["idle"] = figures()
        service, target = app.workspace.service, app.workspace.session
        content = [{"type": "text", "text": "what did we decide?"}]

        async def load():  # what a draft referencing the session does (the preview, a send)
            prepared = await service.prepare(target, content, [ReferenceInput("big")])
            return len(prepared.contexts[0].content[0]["text"])

        out["snapshot_bytes"] = await load()
        out["loaded"] = figures()
        steps = []
        for _ in range(loads):
            # Another writer (its own process) appends: the session has a new revision.
            subprocess.run([sys.executable, "-c", APPEND, root], check=True)
            await load()
            app.refresh_catalog(force=True)  # the app notices, and indexes the new revision: let it settle
            await pilot.pause(0.3)
            while app.indexer.running:
                await pilot.pause(0.05)
            steps.append(figures())
        out["steps"] = steps
    print(json.dumps(out), flush=True)


asyncio.run(main())
"""


def _mib(kib: int) -> float:
    return kib / 1024


def bench_memory() -> None:
    print(f"\n## App memory with 10,000 sessions (fresh process, headless; {LOADS} loads of one 20,000-event log)")
    with tempfile.TemporaryDirectory() as folder:
        root = Path(folder) / "store"
        shutil.copytree(listing_root(10_000), root, ignore=shutil.ignore_patterns(".complete"))
        write_big_log(root)
        env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parent.parent)}
        done = subprocess.run(
            [sys.executable, "-c", _IN_APP, str(root), str(LOADS), _PROJECT],
            capture_output=True,
            text=True,
            env=env,
            check=True,
            timeout=600,
        )
    out = json.loads(done.stdout.strip().splitlines()[-1])
    idle, loaded, steps = out["idle"], out["loaded"], out["steps"]
    rss = [step["rss"] for step in steps]
    peaks = [step["peak"] for step in steps]
    print(f"  sessions listed: {out['sessions']:,}")
    print(
        f"  idle, listing loaded:               RSS {_mib(idle['rss']):6.1f} MiB   peak {_mib(idle['peak']):6.1f} MiB"
    )
    print(
        f"  after loading the 20,000-event log: RSS {_mib(loaded['rss']):6.1f} MiB   "
        f"peak {_mib(loaded['peak']):6.1f} MiB   ({out['snapshot_bytes']:,}-byte snapshot)"
    )
    print(
        f"  after each of {LOADS} more loads:     RSS {_mib(min(rss)):6.1f}-{_mib(max(rss)):.1f} MiB, "
        f"peak {_mib(peaks[0]):.1f} -> {_mib(peaks[-1]):.1f} MiB (the app indexes each new revision too)"
    )
    grew, peak_grew = _mib(rss[-1] - rss[0]), _mib(peaks[-1] - peaks[0])
    verdict = "ok" if grew <= GROWTH_MIB and peak_grew <= GROWTH_MIB else "GROWS"  # (shrinking is fine)
    print(
        f"  from the 1st to the {LOADS}th load:       RSS {grew:+.1f} MiB, peak {peak_grew:+.1f} MiB   "
        f"{verdict} (flat: within {GROWTH_MIB} MiB)"
    )
