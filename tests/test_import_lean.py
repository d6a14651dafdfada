"""Start-up stays lean: ``import core`` and ``sessionref --version`` load none of the heavy
dependencies, which are imported when first used (the secret rules at the first scan, httpx at the
first model request, pydantic with the first model class, the search and database machinery when a
store needs them). A heavy import creeping back into either fails here, by name."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent

HEAVY = (
    "asyncio",
    "pydantic",
    "httpx",
    "detect_secrets",
    "ahocorasick_rs",
    "betterleaks",
    "numpy",
    "psycopg",
    "textual",
    "rich",
    "mcp",
    "msgspec",
    "zstandard",
    "tokenizers",
    "wordllama",
    "yaml",
)


def loaded(code: str) -> list[str]:
    """The modules a fresh interpreter holds after running ``code``."""
    script = f"{code}\nimport json, sys\nprint(json.dumps(sorted(sys.modules)))"
    done = subprocess.run([sys.executable, "-c", script], cwd=REPO, capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    return list(json.loads(done.stdout.splitlines()[-1]))


def heavy_in(modules: list[str]) -> list[str]:
    return sorted({name.split(".")[0] for name in modules if name.split(".")[0] in HEAVY})


def test_import_core_loads_nothing_heavy() -> None:
    modules = loaded("import core")
    assert heavy_in(modules) == []
    assert [name for name in modules if name.startswith("core.")] == []  # (each name on first use)


def test_sessionref_version_loads_nothing_of_the_engine() -> None:
    modules = loaded("from tui.cli import main\nmain(['--version'])")
    assert heavy_in(modules) == []
    assert [name for name in modules if name.startswith(("core.", "tui.app", "tui.cli.command"))] == []


def test_the_engine_s_names_still_come_from_core() -> None:
    import core

    assert set(core.__all__) <= set(dir(core))
    for name in ("SessionReferenceService", "JsonlSessionStore", "VibeSource", "OpenHandsSource", "AgentLoop"):
        assert getattr(core, name).__name__ == name
    modules = loaded("from core import SessionReferenceService")
    assert "httpx" not in heavy_in(modules) and "detect_secrets" not in heavy_in(modules)


def test_sessionref_mcp_answers_its_handshake_before_the_engine_loads() -> None:
    # What the main thread of ``sessionref mcp`` imports to read its flags and settings and make the
    # handshake's answers: no pydantic, no search, no store, no MCP SDK (the store opens on a thread
    # of its own once the tools were listed).
    code = (
        "import argparse\n"
        "from tui.cli.mcp import add_commands\n"
        "from tui.cli.options import command_effective\n"
        "from core.mcp.stdio import Opening, serve\n"
        "from core.mcp.protocol import listed_tools\n"
        "parser = argparse.ArgumentParser(prog='sessionref')\n"
        "add_commands(parser.add_subparsers(dest='command'))\n"
        "args = parser.parse_args(['mcp', '--root', '/tmp', '--no-external'])\n"
        "read_bytes = command_effective('mcp', args).settings.tool_read_bytes\n"
        "assert [tool['name'] for tool in listed_tools(read_bytes)]"
    )
    modules = loaded(code)
    assert heavy_in(modules) == ["asyncio"]  # (the protocol's loop)
    engine = ("core.search", "core.catalog", "core.stores", "core.folder", "core.reference", "core.sessions.models")
    assert [name for name in modules if name.startswith(engine)] == []
    assert [name for name in modules if name.startswith("core.sessions.sources.") and "registry" not in name] == []


def test_sessionref_help_builds_every_command_s_parser_without_the_engine() -> None:
    # The whole command line (every subcommand's flags, the settings' declarations) is built for
    # --help; what each command runs with is imported when it runs.
    modules = loaded("from tui.cli import main\ntry:\n    main(['--help'])\nexcept SystemExit:\n    pass")
    assert heavy_in(modules) == []
    engine = ("core.search", "core.catalog", "core.stores", "core.folder", "core.reference", "core.secrets")
    assert [name for name in modules if name.startswith((*engine, "core.sessions.models", "tui.app"))] == []
    assert "tomllib" not in modules  # (read only when a config file is)
