"""What a user installs is what runs: the built wheel, in a fresh virtualenv with only the runtime
dependencies (no dev extra) and no source tree on ``sys.path``, starts and answers.

The wheel is built from this checkout with ``pip wheel`` (build isolation, as ``pipx install .`` does),
installed with ``pip install <wheel>`` into a virtualenv of its own, and every command runs from an
empty folder with a clean environment (no ``PYTHONPATH``), so an import that only works from the
repository fails here.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import tomllib
import venv
import zipfile
from pathlib import Path

import pytest

from core.sessions.sources.registry import AGENTS

REPO = Path(__file__).resolve().parent.parent
_NOT_SOURCE = (".git", ".venv", "build", "dist", "*.egg-info", "node_modules", "__pycache__", ".*_cache", ".hypothesis")


def _run(command: list[str], cwd: Path, timeout: float = 600) -> subprocess.CompletedProcess[str]:
    environment = {key: value for key, value in os.environ.items() if not key.startswith(("PYTHON", "VIRTUAL_ENV"))}
    environment["HOME"] = str(cwd)  # no config file, state or store of the person running the tests
    environment.pop("SESSIONREF_STORE", None)
    return subprocess.run(command, cwd=cwd, env=environment, capture_output=True, text=True, timeout=timeout)


@pytest.fixture(scope="module")
def installed(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path, Path]:
    """(the virtualenv's bin folder, the wheel, an empty folder to run in)."""
    base = tmp_path_factory.mktemp("wheel")
    source, wheels, environment, outside = base / "source", base / "dist", base / "venv", base / "outside"
    outside.mkdir()
    # Built from a copy without what earlier builds left (setuptools packs a stale build/lib too).
    shutil.copytree(REPO, source, ignore=shutil.ignore_patterns(*_NOT_SOURCE))
    built = _run([sys.executable, "-m", "pip", "wheel", str(source), "--no-deps", "-q", "-w", str(wheels)], outside)
    assert built.returncode == 0, built.stderr
    (wheel,) = wheels.glob("sessionref-*.whl")
    venv.EnvBuilder(with_pip=True, clear=True).create(environment)
    bin_ = environment / "bin"
    done = _run([str(bin_ / "python"), "-m", "pip", "install", "--quiet", str(wheel)], outside)
    assert done.returncode == 0, done.stderr
    return bin_, wheel, outside


def _local_packages() -> set[str]:
    return {
        str(path.parent.relative_to(REPO)).replace(os.sep, ".")
        for top in ("core", "tui")
        for path in (REPO / top).rglob("__init__.py")
    }


def test_the_wheel_holds_every_package_and_its_data(installed: tuple[Path, Path, Path]) -> None:
    _, wheel, _ = installed
    names = set(zipfile.ZipFile(wheel).namelist())
    packages = {name.rsplit("/", 1)[0].replace("/", ".") for name in names if name.endswith("/__init__.py")}
    assert packages == _local_packages()
    assert {"core/py.typed", "tui/py.typed", "tui/app/app.tcss"} <= names
    assert not any(name.startswith(("tests/", "bench/", "fuzz/")) for name in names)


def test_the_installed_packages_come_from_the_virtualenv(installed: tuple[Path, Path, Path]) -> None:
    bin_, _, outside = installed
    script = "import core, tui.cli; print(core.__file__); print(tui.cli.__file__)"
    where = _run([str(bin_ / "python"), "-c", script], outside)
    assert where.returncode == 0, where.stderr
    for line in where.stdout.split():
        assert Path(line).is_relative_to(bin_.parent), line
    dev_only = _run([str(bin_ / "python"), "-c", "import pytest"], outside)
    assert dev_only.returncode != 0, "the dev extra leaked into the runtime install"


def test_version_is_the_package_metadata(installed: tuple[Path, Path, Path]) -> None:
    bin_, _, outside = installed
    expected = tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))["project"]["version"]
    shown = _run([str(bin_ / "sessionref"), "--version"], outside)
    assert (shown.returncode, shown.stdout.strip()) == (0, f"sessionref {expected}")


def test_help_and_doctor_run(installed: tuple[Path, Path, Path]) -> None:
    bin_, _, outside = installed
    shown = _run([str(bin_ / "sessionref"), "--help"], outside)
    assert shown.returncode == 0, shown.stderr
    assert "usage: sessionref" in shown.stdout and "--check-start" in shown.stdout
    empty = outside / "empty-store"
    empty.mkdir(mode=0o700)
    checked = _run([str(bin_ / "sessionref"), "doctor", "--root", str(empty)], outside)
    assert checked.returncode == 0, checked.stdout + checked.stderr
    lines = checked.stdout.splitlines()
    # The store, then a note per other agent's source (none is installed here), and healthy.
    assert lines[0] == f"store {empty}: 0 sessions in 0 files (0.0 MiB)"
    assert lines[-1] == f"healthy ({len(AGENTS)} notes)"
    assert [line.split(": ")[3] for line in lines[1:-1]] == [agent.label for agent in AGENTS]


def test_the_app_starts_headless_on_a_demo_store(installed: tuple[Path, Path, Path]) -> None:
    bin_, _, outside = installed
    root = outside / "demo-store"
    started = _run([str(bin_ / "sessionref"), "--demo", "--root", str(root), "--check-start"], outside, timeout=120)
    assert started.returncode == 0, started.stdout + started.stderr
    assert re.fullmatch(r"sessionref \S+ started: 7 sessions listed, on today\n", started.stdout), started.stdout
    # The demo store it seeded is a real store on disk, healthy by the installed doctor too: six
    # sessions in files (the seventh, the one the app opened, is written with its first message).
    checked = _run([str(bin_ / "sessionref"), "doctor", "--root", str(root)], outside)
    assert checked.returncode == 0, checked.stdout
    assert checked.stdout.startswith(f"store {root}: 6 sessions in "), checked.stdout


def test_the_installed_search_finds_by_meaning_offline(installed: tuple[Path, Path, Path]) -> None:
    """The shipped model comes with the wheel's dependencies and loads without a download (no
    network is asked: Hugging Face's offline switches are on), words alone never finding this."""
    bin_, _, outside = installed
    root = outside / "meaning-store"
    seed = (
        "import sys\n"
        "from core import JsonlSessionStore\n"
        "store = JsonlSessionStore(sys.argv[1])\n"
        "session = store.create('trip', cwd='/w')\n"
        "content = [{'type': 'text', 'text': 'The car broke down on the highway and we had to call a tow truck.'}]\n"
        "session.append('user/message', {'content': content, 'source': {'kind': 'user'}}, surface_op='append')\n"
        "store.close()\n"
    )
    seeded = _run([str(bin_ / "python"), "-c", seed, str(root)], outside)
    assert seeded.returncode == 0, seeded.stderr
    command = [str(bin_ / "sessionref"), "search", "automobile trouble roadside", "--root", str(root), "--no-external"]
    offline = {"HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1"}
    os.environ.update(offline)
    try:
        found = _run(command, outside, timeout=120)
        words_only = _run([*command, "--no-meaning"], outside, timeout=120)
    finally:
        for key in offline:
            os.environ.pop(key, None)
    assert found.returncode == 0, found.stdout + found.stderr
    assert found.stdout.splitlines()[:2] == [
        "1. trip  [trip]  /w",
        "   #0 you: The car broke down on the highway and we had to call a tow truck.",
    ]
    assert words_only.returncode == 1 and words_only.stdout.startswith('no session matches "automobile')
