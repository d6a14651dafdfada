"""The ``sessionref`` command line: options, one-line errors and exit codes (no traceback, ever)."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

import pytest

from core.sessions.sources.registry import AGENTS
from tui.cli.command import EXIT_ROOT, EXIT_SESSION, EXIT_USAGE, main


def run_cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "tui.cli", *args], capture_output=True, text=True, timeout=60, check=False
    )


def test_help_explains_every_option() -> None:
    done = run_cli("--help")
    assert done.returncode == 0
    options = ["--root", "--cwd", "--session", "--compression", "--model", "--base-url", "--model-name", "--demo"]
    for option in [*options, "--max-reference-bytes", "--max-references", "--candidate-limit", "--no-pack"]:
        assert option in done.stdout


def test_no_pack_reaches_the_store(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    import tui.cli.command as cli

    seen: list[bool] = []

    def recording(**options: Any) -> Any:
        seen.append(options["pack_chunks"])
        raise OSError(13, "stop here")

    import core.stores

    monkeypatch.setattr(core.stores, "open_store", recording)  # (the command imports it when it runs)
    assert cli.main(["--root", str(tmp_path), "--no-pack"]) == cli.EXIT_ROOT
    assert cli.main(["--root", str(tmp_path)]) == cli.EXIT_ROOT
    assert seen == [False, True]


@pytest.mark.parametrize(
    ("args", "words"),
    [
        (["--compression", "gzip"], "invalid choice: 'gzip'"),
        (["--model", "gpt"], "invalid choice: 'gpt'"),
        (["--cwd", "relative/dir"], "--cwd must be an absolute path"),
        (["--base-url", "http://x"], "only apply to --model openai"),
        (["--demo", "--session", "x"], "leave out --session"),
        (["--bogus"], "unrecognized arguments: --bogus"),
        (["--max-references", "5"], "--max-references must be a number from 1 to 3, not 5 (SESSIONREF_CONFIG_INVALID)"),
        (["--max-reference-bytes", "0"], "--max-reference-bytes must be a positive number of bytes, not 0"),
        (["--context-window", "-5"], "--context-window must be a positive number of tokens, not -5"),
        (["--compaction-threshold", "1.5"], "--compaction-threshold must be a ratio in (0, 1], not 1.5"),
        (["--candidate-limit", "many"], "invalid int value: 'many'"),
    ],
)
def test_bad_arguments_give_one_clear_line_and_exit_2(
    capsys: pytest.CaptureFixture[str], args: list[str], words: str
) -> None:
    with pytest.raises(SystemExit) as exit_info:
        main(args)
    assert exit_info.value.code == EXIT_USAGE
    error = capsys.readouterr().err
    assert words in error and "Traceback" not in error


def test_a_root_that_is_a_file_is_refused(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    root = tmp_path / "file"
    root.write_text("not a folder")
    assert main(["--root", str(root)]) == EXIT_ROOT
    error = capsys.readouterr().err.strip()
    assert error.startswith("sessionref: cannot use the store folder") and "\n" not in error


def test_a_missing_session_is_refused(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["--root", str(tmp_path), "--session", "nope"]) == EXIT_SESSION
    error = capsys.readouterr().err.strip()
    assert error == 'sessionref: cannot open session: session "nope" not found (SESSION_QUERY_SESSION_NOT_FOUND)'


def test_a_corrupt_session_is_refused_with_its_code(demo_template: Path, tmp_path: Path) -> None:
    root = tmp_path / "store"
    shutil.copytree(demo_template, root)
    from core import JsonlSessionStore

    JsonlSessionStore(root).session_path("design-notes", "/home/demo/projects/sessionref").write_bytes(b"junk")
    done = run_cli("--root", str(root), "--session", "design-notes")
    assert done.returncode == EXIT_SESSION
    assert "SESSION_QUERY_CORRUPT_SESSION" in done.stderr and "Traceback" not in done.stderr
    assert len(done.stderr.strip().splitlines()) == 1


def test_a_session_locked_by_another_writer_is_refused(demo_template: Path, tmp_path: Path) -> None:
    root = tmp_path / "store"
    shutil.copytree(demo_template, root)
    from core import JsonlSessionStore

    holder = JsonlSessionStore(root)
    holder.get("design-notes")
    try:
        done = run_cli("--root", str(root), "--session", "design-notes")
    finally:
        holder.close()
    assert done.returncode == EXIT_SESSION
    assert "SESSION_QUERY_SESSION_LOCKED" in done.stderr


def test_demo_refuses_a_folder_that_is_not_empty(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "something").write_text("x")
    assert main(["--demo", "--root", str(tmp_path)]) == EXIT_ROOT
    assert "not empty" in capsys.readouterr().err


def test_other_agents_roots_come_from_options_then_environment_then_home(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from core.sessions.sources.claude import ClaudeCodeSource
    from core.sessions.sources.codex import CodexSource
    from core.settings import effective_settings, external_sources, given, load_config
    from tui.cli.options import build_parser

    def sources(*argv: str) -> dict[str, Path]:
        args = build_parser().parse_args(list(argv))
        effective = effective_settings(load_config(str(config)), given(args), dict(os.environ))
        return {source.name: source.root for source in external_sources(effective, demo=args.demo)}

    config = tmp_path / "config.toml"
    config.write_text("")
    monkeypatch.setenv("HOME", str(tmp_path))
    for variable in (
        "CLAUDE_CONFIG_DIR",
        "CODEX_HOME",
        "GEMINI_CLI_HOME",
        "QWEN_RUNTIME_DIR",
        "QWEN_HOME",
        "COPILOT_HOME",
        "PI_CODING_AGENT_DIR",
        "PI_CODING_AGENT_SESSION_DIR",
        "CONTINUE_GLOBAL_DIR",
        "CLINE_SESSION_DATA_DIR",
        "CLINE_DATA_DIR",
        "CLINE_DIR",
        "HERMES_HOME",
        "VIBE_HOME",
        "OPENHANDS_CONVERSATIONS_DIR",
        "OPENHANDS_PERSISTENCE_DIR",
        "OPENCLAW_STATE_DIR",
        "KIMI_CODE_HOME",
        "KIMI_SHARE_DIR",
        "GPTME_LOGS_HOME",
        "LLM_USER_PATH",
        "CODEBUDDY_CONFIG_DIR",
        "MSWEA_GLOBAL_CONFIG_DIR",
        "NANOCODER_DATA_DIR",
        "CRUSH_GLOBAL_DATA",
        "GOOSE_PATH_ROOT",
        "LETTA_LOCAL_BACKEND_DIR",
    ):
        monkeypatch.delenv(variable, raising=False)
    for variable in ("XDG_DATA_HOME", "XDG_CONFIG_HOME", "XDG_CACHE_HOME"):
        monkeypatch.delenv(variable, raising=False)
    # Each agent's folder when nothing names another: the table's ``unset``, under this home.
    assert sources() == {agent.label: tmp_path / agent.unset.removeprefix("~").lstrip("/") for agent in AGENTS}
    # Each agent's own variable, as the agent itself reads it.
    monkeypatch.setenv("CLAUDE_CONFIG_DIR", str(tmp_path / "cc"))
    monkeypatch.setenv("CODEX_HOME", str(tmp_path / "cx"))
    monkeypatch.setenv("GEMINI_CLI_HOME", str(tmp_path / "gh"))
    monkeypatch.setenv("QWEN_HOME", str(tmp_path / "qh"))
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "data"))
    monkeypatch.setenv("COPILOT_HOME", str(tmp_path / "cp"))
    monkeypatch.setenv("PI_CODING_AGENT_DIR", str(tmp_path / "pi"))
    monkeypatch.setenv("CONTINUE_GLOBAL_DIR", str(tmp_path / "cn"))
    monkeypatch.setenv("VIBE_HOME", str(tmp_path / "vb"))
    monkeypatch.setenv("OPENHANDS_PERSISTENCE_DIR", str(tmp_path / "oh"))
    monkeypatch.setenv("OPENCLAW_STATE_DIR", str(tmp_path / "ow"))
    monkeypatch.setenv("KIMI_CODE_HOME", str(tmp_path / "kc"))
    found = sources()
    assert found["OpenClaw"] == tmp_path / "ow" and found["Kimi Code"] == tmp_path / "kc"
    assert found["Mistral Vibe"] == tmp_path / "vb" and found["OpenHands"] == tmp_path / "oh" / "conversations"
    assert found["pi"] == tmp_path / "pi" and found["Continue"] == tmp_path / "cn"
    assert found["GitHub Copilot CLI"] == tmp_path / "cp"
    assert found["Claude Code"] == tmp_path / "cc" and found["Codex CLI"] == tmp_path / "cx"
    assert found["Gemini CLI"] == tmp_path / "gh" / ".gemini" and found["Qwen Code"] == tmp_path / "qh"
    assert found["opencode"] == tmp_path / "data" / "opencode" and found["Kilo CLI"] == tmp_path / "data" / "kilo"
    # Flags win.
    flags = [part for index, agent in enumerate(AGENTS) for part in (agent.flag, f"/{index}")]
    found = sources(*flags)
    assert {agent.label: str(found[agent.label]) for agent in AGENTS} == {
        agent.label: f"/{index}" for index, agent in enumerate(AGENTS)
    }
    assert sources("--no-external") == {}
    monkeypatch.delenv("COPILOT_HOME")
    monkeypatch.delenv("PI_CODING_AGENT_DIR")
    monkeypatch.delenv("CONTINUE_GLOBAL_DIR")
    monkeypatch.delenv("VIBE_HOME")
    monkeypatch.delenv("OPENHANDS_PERSISTENCE_DIR")
    monkeypatch.delenv("OPENCLAW_STATE_DIR")
    monkeypatch.delenv("KIMI_CODE_HOME")
    assert sources("--demo") == {}  # the demo stays the demo (the agents' own variables do not count)
    assert list(sources("--demo", "--codex-root", "/b")) == ["Codex CLI"]
    # The config file's [sources] table gives the same (a flag still wins; enabled = false turns all off).
    config.write_text('[sources]\nclaude = "/from-file"\ngemini = "~/g"\n')
    monkeypatch.delenv("CLAUDE_CONFIG_DIR")
    assert sources()["Claude Code"] == Path("/from-file")
    assert sources()["Gemini CLI"] == tmp_path / "g"  # ~ is the user's home
    assert sources("--demo") == {"Claude Code": Path("/from-file"), "Gemini CLI": tmp_path / "g"}
    config.write_text("[sources]\nenabled = false\n")
    assert sources() == {}
    assert isinstance(ClaudeCodeSource(tmp_path), ClaudeCodeSource) and isinstance(CodexSource(tmp_path), CodexSource)


def test_served_pages_run_the_app_with_the_other_options() -> None:
    from tui.cli.command import served_options

    argv = ["--serve", "--root", "/r", "--host", "0.0.0.0", "--port=9000", "--session", "s", "--port", "1"]
    assert served_options(argv) == ["--root", "/r", "--session", "s"]


def test_serve_refuses_a_bad_port(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as stop:
        main(["--serve", "--port", "70000"])
    assert stop.value.code == EXIT_USAGE
    assert "--port must be between 1 and 65535" in capsys.readouterr().err


def test_a_store_folder_others_can_read_is_reported_not_changed(tmp_path: Path) -> None:
    from tui.cli.command import loose_permissions

    tmp_path.chmod(0o755)
    warning = loose_permissions(tmp_path)
    assert warning is not None and "mode 755" in warning and "chmod 700" in warning
    assert (tmp_path.stat().st_mode & 0o777) == 0o755
    tmp_path.chmod(0o700)
    assert loose_permissions(tmp_path) is None


def test_version_comes_from_the_package_metadata() -> None:
    from importlib.metadata import version

    done = run_cli("--version")
    assert (done.returncode, done.stdout) == (0, f"sessionref {version('sessionref')}\n")


def test_check_start_opens_the_app_headless_on_the_store_and_exits(demo_template: Path, tmp_path: Path) -> None:
    shutil.copytree(demo_template, tmp_path / "store")
    done = run_cli("--root", str(tmp_path / "store"), "--session", "today", "--no-external", "--check-start")
    assert done.returncode == 0, done.stderr
    assert done.stdout.endswith(" started: 7 sessions listed, on today\n"), done.stdout
    # A temporary demo store that served only the check is not left behind.
    before = set(Path(tempfile.gettempdir()).glob("sessionref-demo-*"))
    done = run_cli("--demo", "--check-start")
    assert done.returncode == 0 and "started: 7 sessions listed" in done.stdout
    assert set(Path(tempfile.gettempdir()).glob("sessionref-demo-*")) == before


def test_check_start_and_serve_do_not_go_together(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exited:
        main(["--serve", "--check-start"])
    assert exited.value.code == EXIT_USAGE
    assert "--check-start starts the app itself; leave out --serve" in capsys.readouterr().err


def test_one_parser_names_every_command_in_usage_help_and_errors(capsys: pytest.CaptureFixture[str]) -> None:
    from tui.cli.command import main

    with pytest.raises(SystemExit) as exited:
        main(["--help"])
    assert exited.value.code == 0
    said = capsys.readouterr().out
    for command in ("config", "doctor", "db", "import", "export", "share", "unshare", "mcp"):
        assert f"    {command} " in said, command  # listed with its one-line help
    with pytest.raises(SystemExit) as exited:
        main(["mpc"])
    assert exited.value.code == 2
    error = capsys.readouterr().err
    assert "invalid choice: 'mpc'" in error and "'mcp'" in error
    with pytest.raises(SystemExit) as exited:
        main(["mcp", "--demo"])  # an app option is not mcp's
    assert exited.value.code == 2 and "unrecognized arguments: --demo" in capsys.readouterr().err
