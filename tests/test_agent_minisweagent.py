"""mini-swe-agent (``mini-swe-agent``, pinned in ``tests/interop/python/minisweagent.txt``, in its own
virtualenv), run offline against a local stub of an OpenAI-compatible API (litellm's
``OPENAI_API_BASE``): a task whose first step lists the files with its ``bash`` tool, two more tasks
typed when it wants to finish (the second with hostile text), then a second run. The stub answers
every step with reasoning text and a bash call, as mini-swe-agent requires (a reply without one is a
format error). sessionref lists the trajectories, finds one by a word through ``sessionref mcp
--mini-root`` and references it. mini-swe-agent cannot resume a run. Then the files' corners: the task
cut out of its template, format errors and the user's commands, odd documents, links out."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest

from core import SessionQueryError, project_conversation
from core.sessions.sources.mini_swe_agent import NEW_TASK, MiniSweAgentSource, mini_root, task_of
from tests.support.rc8 import INTEROP
from tests.test_agents_real import (
    HOSTILE,
    Script,
    _OpenAI,
    base_environment,
    check_search,
    check_sessions,
    setup_work,
    stub,
    tool_turn_made,
)

MINI = INTEROP / "python" / ".venv-minisweagent" / "bin" / "mini"
_OPTIONAL = os.environ.get("SESSIONREF_REQUIRE_INTEROP") != "1"
needs_mini = pytest.mark.skipif(_OPTIONAL and not MINI.exists(), reason="mini-swe-agent is not installed (make agents)")
SUBMIT = "echo COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT"


class _Mini(Script):
    """Every step a bash call beside its reasoning: ``ls`` when asked to use a tool (once), else the
    command that submits."""

    reasoning = True

    def decide(self, users: list[str], answered: bool, tools: list[str]) -> tuple[str, str, dict[str, Any]] | None:
        if "USE A TOOL" in users[-1] and not answered:
            return ("call", "bash", {"command": "ls"})
        return ("call", "bash", {"command": SUBMIT})


def mini(home: Path, work: Path, port: int, task: str, typed: str, output: Path) -> str:
    import subprocess

    environment = {
        **base_environment(home),
        "OPENAI_API_KEY": "stub",
        "OPENAI_API_BASE": f"http://127.0.0.1:{port}/v1",
        "MSWEA_COST_TRACKING": "ignore_errors",
        "MSWEA_CONFIGURED": "true",
    }
    command = [str(MINI), "-y", "-m", "openai/stub-model", "-l", "0", "-t", task, "-o", str(output)]
    done = subprocess.run(command, cwd=work, env=environment, input=typed, capture_output=True, text=True, timeout=240)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    return done.stdout


def _texts(source: MiniSweAgentSource, session_id: str) -> list[str]:
    return [item.text for item in project_conversation(source.surface(session_id))]


@needs_mini
def test_mini_swe_agent_trajectories_list_search_and_reference(tmp_path: Path) -> None:
    home, work = setup_work(tmp_path)
    runs = home / ".config" / "mini-swe-agent"
    with stub(_OpenAI) as (port, script):
        script.__class__ = _Mini
        typed = f"MS-MARK-2 a second task\nMS-MARK-3 a third task. {HOSTILE}\n\n"
        mini(home, work, port, "MS-MARK-1 please USE A TOOL to list the files", typed, runs / "first.traj.json")
        mini(home, work, port, "a second run about quokkas", "\n", runs / "last_mini_run.traj.json")
    assert tool_turn_made(script)
    source = MiniSweAgentSource(runs)
    ids = check_sessions(source, "MS", None)  # (a trajectory keeps no folder)
    assert sorted(ids) == ["mini:first", "mini:last_mini_run"]
    assert _texts(source, "mini:first")[0] == "MS-MARK-1 please USE A TOOL to list the files"
    assert source.title("mini:last_mini_run").title == "a second run about quokkas"  # type: ignore[union-attr]
    check_search("--mini-root", runs, "quokkas", "mini:last_mini_run", tmp_path)


# -- the files' corners -------------------------------------------------------------------------------------

TEMPLATE = "Please solve this issue: {{task}}\n\nYou can execute bash commands.\n{{system}} {{release}}"


def _trajectory(path: Path, messages: Any, template: Any = TEMPLATE) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    info = {"config": {"agent": {"instance_template": template}}, "exit_status": "Submitted"}
    path.write_text(json.dumps({"info": info, "messages": messages, "trajectory_format": "mini-swe-agent-1.1"}))
    return path


def _answer(text: str, created: Any = 1_796_671_662) -> dict[str, Any]:
    return {"role": "assistant", "content": text, "extra": {"response": {"created": created}}}


def test_what_a_trajectory_holds_is_read_as_its_tasks_and_reasoning(tmp_path: Path) -> None:
    root = tmp_path / "runs"
    _trajectory(
        root / "django__django-1" / "django__django-1.traj.json",
        [
            {"role": "system", "content": "You are a helpful assistant"},
            {"role": "user", "content": TEMPLATE.replace("{{task}}", "Fix the flaky lock").replace("{{", "")},
            _answer("Let me look."),
            {"role": "tool", "content": "SECRET-TOOL-OUTPUT", "tool_call_id": "c1"},
            {"role": "user", "content": "No tool call found.", "extra": {"interrupt_type": "FormatError"}},
            {"role": "user", "content": "User command: \nls", "extra": {"interrupt_type": "UserInterruption"}},
            _answer([{"type": "text", "text": "Found it."}], created="noon"),
            {"role": "user", "content": NEW_TASK + "and the docs", "extra": {"interrupt_type": "UserNewTask"}},
            "not a message",
            _answer("Done.", created=1e30),
            {"role": "exit", "content": "", "extra": {"exit_status": "Submitted"}},
        ],
    )  # fmt: skip
    source = MiniSweAgentSource(root)
    (record,) = source.listing()
    assert record.header.id == "mini:django__django-1" and record.header.cwd is None
    assert _texts(source, record.header.id) == [
        "Fix the flaky lock",
        "Let me look.",
        "Found it.",
        "and the docs",
        "Done.",
    ]
    assert {event.time for event in source.surface(record.header.id).events} == {1_796_671_662_000}
    assert source.title(record.header.id).title == "Fix the flaky lock"  # type: ignore[union-attr]


def test_a_task_is_cut_out_of_its_template_only_where_the_template_says() -> None:
    assert task_of("Please solve this issue: X\n\nYou can execute bash commands.\nLinux", TEMPLATE) == "X"
    assert task_of("Something else entirely", TEMPLATE) == "Something else entirely"
    assert task_of("{% if x %}A{% endif %} X", "{% if x %}A{% endif %} {{task}}") == "{% if x %}A{% endif %} X"
    assert task_of("Do: X", "Do: {{task}}") == "X"
    assert task_of("Do: X", None) == "Do: X"


def test_odd_documents_deep_folders_and_links_out_are_read_around(tmp_path: Path) -> None:
    root = tmp_path / "runs"
    _trajectory(root / "odd.traj.json", {"not": "a list"}, template=5)
    _trajectory(root / "a" / "b" / "c" / "d" / "too-deep.traj.json", [{"role": "user", "content": "deep"}])
    outside = _trajectory(tmp_path / "outside" / "x.traj.json", [{"role": "user", "content": "SECRET"}])
    (root / "linked.traj.json").symlink_to(outside)
    (root / "linked-folder").symlink_to(outside.parent)
    source = MiniSweAgentSource(root)
    (record,) = source.listing()
    assert record.header.id == "mini:odd"
    with pytest.raises(SessionQueryError) as refused:
        source.surface("mini:odd")
    assert refused.value.code == "SESSION_QUERY_INVALID_SURFACE"


def test_mini_swe_agent_s_folder_comes_from_its_environment(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("MSWEA_GLOBAL_CONFIG_DIR", str(tmp_path / "m"))
    assert mini_root() == tmp_path / "m"
    monkeypatch.delenv("MSWEA_GLOBAL_CONFIG_DIR")
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "c"))
    assert mini_root() == tmp_path / "c" / "mini-swe-agent"
    monkeypatch.delenv("XDG_CONFIG_HOME")
    monkeypatch.setenv("HOME", str(tmp_path))
    assert mini_root() == tmp_path / ".config" / "mini-swe-agent"
