"""``sessionref resume``: another agent's session opened in the agent that wrote it, in the session's
folder, with the agent's own way to resume it; an agent that cannot is said so with what to do; the
agent's program missing, or the session unknown, is one coded line. A stand-in program on PATH records
what it was started with (the real tools' resumes are tried in their own tests: Kimi CLI's)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from core.handoff.resume import RESUME, RESUME_NOT_INSTALLED, RESUME_NOT_SUPPORTED, Cannot, ResumeError, resume_plan
from core.sessions.sources.registry import AGENTS
from tests.test_external import UUID, c_assistant, c_user, text, write

REPO = Path(__file__).resolve().parent.parent


def test_every_agent_of_the_table_says_how_it_resumes_or_why_it_cannot() -> None:
    assert set(RESUME) == {agent.key for agent in AGENTS}
    for agent in AGENTS:
        how = RESUME[agent.key]
        if isinstance(how, Cannot):
            assert how.why.startswith(agent.label), agent.key  # (said of the agent, by its name)


def _stand_in(folder: Path, program: str) -> Path:
    """A program that records its arguments and folder in ``<folder>/<program>.json``."""
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / program
    record = folder / f"{program}.json"
    path.write_text(
        f"#!{sys.executable}\nimport json, os, sys\n"
        f"open({str(record)!r}, 'w').write(json.dumps({{'argv': sys.argv[1:], 'cwd': os.getcwd()}}))\n"
    )
    path.chmod(0o755)
    return record


def test_a_plan_names_the_agent_s_program_and_its_own_id(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    _stand_in(tmp_path / "bin", "claude")
    _stand_in(tmp_path / "bin", "letta")
    monkeypatch.setenv("PATH", str(tmp_path / "bin"))
    assert resume_plan(f"claude:{UUID}", extra=("-p", "hi")) == ["claude", "--resume", UUID, "-p", "hi"]
    assert resume_plan("letta:conversation-local-conv-1") == [
        "letta", "--backend", "local", "--conversation", "local-conv-1"
    ]  # fmt: skip
    for session_id, code in (
        ("codex:0f8e", RESUME_NOT_INSTALLED),
        ("cursor:c1", RESUME_NOT_SUPPORTED),
        ("mini:last_mini_run", RESUME_NOT_SUPPORTED),
        ("design-notes", RESUME_NOT_SUPPORTED),
    ):
        with pytest.raises(ResumeError) as refused:
            resume_plan(session_id)
        assert refused.value.code == code


def _sessionref(*arguments: str, path: str) -> subprocess.CompletedProcess[str]:
    environment = {**os.environ, "PATH": path, "PYTHONPATH": str(REPO)}
    return subprocess.run(
        [sys.executable, "-m", "tui.cli", "resume", *arguments], capture_output=True, text=True, env=environment
    )


def test_sessionref_resume_starts_the_agent_in_the_session_s_folder(tmp_path: Path) -> None:
    claude = tmp_path / "claude"
    work = tmp_path / "work" / "app"
    work.mkdir(parents=True)
    records = [c_user("u1", None, "first question"), c_assistant("a1", "u1", [text("an answer")])]
    for record in records:
        record["cwd"] = str(work)
    write(claude / "projects" / "-work-app" / f"{UUID}.jsonl", records)
    recorded = _stand_in(tmp_path / "bin", "claude")
    path = f"{tmp_path / 'bin'}{os.pathsep}{os.environ['PATH']}"
    printed = _sessionref(f"claude:{UUID}", "--claude-root", str(claude), "--print", path=path)
    assert printed.returncode == 0 and printed.stdout.strip() == f"cd {work} && claude --resume {UUID}"
    assert not recorded.exists()
    done = _sessionref(f"claude:{UUID}", "--claude-root", str(claude), "--", "-p", "one more thing", path=path)
    assert done.returncode == 0, done.stderr
    assert json.loads(recorded.read_text()) == {"argv": ["--resume", UUID, "-p", "one more thing"], "cwd": str(work)}
    # An unknown session, an agent that cannot, a missing program: one line each, with its code.
    unknown = _sessionref("claude:0b9e2c3d-0000-4000-8000-000000000000", "--claude-root", str(claude), path=path)
    assert unknown.returncode == 1 and unknown.stderr.strip().endswith("(RESUME_SESSION_NOT_FOUND)")
    assert "Traceback" not in unknown.stderr
    gone = _sessionref(f"claude:{UUID}", "--claude-root", str(claude), path=str(tmp_path / "empty"))
    assert gone.returncode == 1 and gone.stderr.strip().endswith("(RESUME_AGENT_NOT_INSTALLED)")
