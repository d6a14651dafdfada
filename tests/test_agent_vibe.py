"""Mistral Vibe (``mistral-vibe``, pinned in ``tests/interop/python/vibe.txt``, in its own virtualenv
on Python 3.12), run offline against a local stub of an OpenAI-compatible API (``config.toml``'s
``[[providers]]``): a plain chat, a resumed turn calling its ``bash`` tool, a resumed turn with hostile
text, then its own compaction. sessionref lists what it wrote in its unified session store with its
folder, finds it by a word through ``sessionref mcp --vibe-root`` and references it. Then the store's
corners, in files as Vibe writes them: an older store's inline checkpoint, a sub-agent's session, links
out of its folders, odd values in every file."""

from __future__ import annotations

import json
import os
import re
import shutil
from pathlib import Path
from typing import Any

import pytest

from core import project_conversation
from core.errors import SessionQueryError
from core.sessions.sources.vibe import VibeSource, vibe_root
from tests.support.rc8 import INTEROP
from tests.test_agents_real import HOSTILE as HOSTILE_TEXT
from tests.test_agents_real import (
    Script,
    _OpenAI,
    base_environment,
    check_search,
    check_sessions,
    run,
    setup_work,
    stub,
    tool_turn_made,
)
from tests.test_readers_hostile import HOSTILE, _list_and_read, _paths, _set

VIBE = INTEROP / "python" / ".venv-vibe" / "bin" / "vibe"
_OPTIONAL = os.environ.get("SESSIONREF_REQUIRE_INTEROP") != "1"
needs_vibe = pytest.mark.skipif(_OPTIONAL and not VIBE.exists(), reason="Mistral Vibe is not installed (make agents)")


def vibe_config(home: Path, port: int, model: str = "") -> None:
    """``~/.vibe/config.toml`` with the stub as its one provider and model (``model``: more of the
    model's keys, as TOML lines)."""
    config = home / ".vibe" / "config.toml"
    config.parent.mkdir(parents=True, exist_ok=True)
    config.write_text(
        'active_model = "stub"\n\n[[providers]]\nname = "stub"\n'
        f'api_base = "http://127.0.0.1:{port}/v1"\napi_key_env_var = "STUB_API_KEY"\napi_style = "openai"\n\n'
        f'[[models]]\nname = "stub-model"\nprovider = "stub"\nalias = "stub"\n{model}'
    )


def vibe(home: Path, work: Path, *arguments: str) -> str:
    environment = {**base_environment(home), "STUB_API_KEY": "stub"}
    return run([str(VIBE), "--trust", "--auto-approve", *arguments], work, environment)


def _only_session(home: Path) -> str:
    (folder,) = [p for p in (home / ".vibe" / "logs" / "session" / "unified").iterdir() if p.is_dir()]
    return folder.name


def _conversation(source: VibeSource, session_id: str) -> list[str]:
    return [item.text for item in project_conversation(source.surface(session_id))]


@needs_vibe
def test_vibe_sessions_list_search_and_reference(tmp_path: Path) -> None:
    home, work = setup_work(tmp_path)
    with stub(_OpenAI) as (port, script):
        vibe_config(home, port)
        vibe(home, work, "-p", "VB-MARK-1 hello, what is a wombat?")
        session = _only_session(home)
        vibe(home, work, "--resume", session, "-p", "VB-MARK-2 please USE A TOOL to list the files")
        vibe(home, work, "--resume", session, "-p", f"VB-MARK-3 resumed. {HOSTILE_TEXT}")
    assert tool_turn_made(script)
    folder = home / ".vibe"
    (session_id,) = check_sessions(VibeSource(folder), "VB", work)
    assert session_id == f"vibe:{session}"
    check_search("--vibe-root", folder, "wombat", session_id, tmp_path)


@needs_vibe
def test_vibe_s_own_compaction_is_a_checkpoint(tmp_path: Path) -> None:
    # A 30,000-token threshold: the second prompt's 40,000 words make Vibe compact its context before
    # answering (it asks the model for the summary), keeping the newest prompts verbatim.
    home, work = setup_work(tmp_path)
    with stub(_OpenAI) as (port, _script):
        vibe_config(home, port, "auto_compact_threshold = 30000\n")
        vibe(home, work, "-p", "VB-MARK-1 a first turn")
        session = _only_session(home)
        (tmp_path / "long.txt").write_text("VB-MARK-2 " + "quokka words " * 20_000)
        vibe(home, work, "--resume", session, "--prompt-file", str(tmp_path / "long.txt"))
        vibe(home, work, "--resume", session, "-p", "VB-MARK-3 after the compaction")
    source = VibeSource(home / ".vibe")
    snapshot = source.surface(f"vibe:{session}")
    assert snapshot.events[0].data["source"] == {"kind": "plugin", "plugin": "compact"}
    said = _conversation(source, f"vibe:{session}")
    assert "<compaction_summary>" in said[0] and "VB-MARK-1" not in " ".join(said[1:])
    assert said[1:] == ["ANSWER VB-MARK-2", "VB-MARK-3 after the compaction", "ANSWER VB-MARK-3"]
    assert source.title(f"vibe:{session}").title == "VB-MARK-3 after the compaction"  # type: ignore[union-attr]


class _Programmatic(Script):
    """The stub as a model using Vibe's MCP tools, which it offers only through its TypeScript sandbox:
    asked to reference the design session, it looks the tool up (``search_tool_functions``), then
    calls it from ``run_typescript``."""

    def decide(self, users: list[str], answered: bool, tools: list[str]) -> tuple[str, str, dict[str, Any]] | None:
        results = sum(1 for m in self.requests[-1].get("messages", []) if m.get("role") == "tool")
        if "REFERENCE DESIGN" not in (users[-1] if users else "") or results > 1:
            return None
        if results == 0:
            return ("call", "search_tool_functions", {"mode": "best_match", "query": "reference session"})
        code = 'async function main() { return await tools.mcp_sessionref.reference_session({session: "design"}); }'
        return ("call", "run_typescript", {"code": code})


@needs_vibe
def test_vibe_references_a_session_through_sessionref_mcp(tmp_path: Path) -> None:
    from tests.test_agents_real import _said, docs_command, sessionref_on_path, tool_messages
    from tests.test_mcp import snapshot

    home, work = setup_work(tmp_path)
    path, root = sessionref_on_path(tmp_path, home)
    with stub(_OpenAI) as (port, script):
        script.__class__ = _Programmatic
        vibe_config(home, port)
        environment = {**base_environment(home), "STUB_API_KEY": "stub", "PATH": path}
        run([str(VIBE), *docs_command("vibe")], work, environment)
        run([str(VIBE), "--trust", "--auto-approve", "-p", "REFERENCE DESIGN please"], work, environment)
    found, called = [_said(m.get("content")) for m in tool_messages(script)][-2:]
    assert "mcp_sessionref.reference_session" in found, found
    # A result over 16,000 characters reaches Vibe's model as an excerpt (its start and end); Vibe keeps
    # it whole in the session's folder, where its model can read it: the snapshot is there, whole.
    kept = re.search(r"saved to the file system under (\S+\.json)\.", called)
    assert kept is not None, called[:500]
    assert json.loads(Path(kept.group(1)).read_text()).endswith("\n\n" + snapshot(root))


# -- the store's corners ---------------------------------------------------------------------------------

SESSION = "e65c2abf-9651-9647-0da0-3b046f359384"
GENERATION = "0000000000000008"
DIGEST = "5fbe14a3f3b925527f49e31f872e2088816e69591733665252de2cd7d357e5bc"


def said(role: str, text: str, source: str = "history") -> dict[str, Any]:
    """One item of a checkpoint's context, as Vibe 3.0.2 writes it."""
    return {"message": {"content": [{"text": text, "type": "text"}], "role": role}, "source": source, "turn_index": 0}


def write_store(root: Path, context: list[Any], session: str = SESSION, **meta: Any) -> Path:
    """A session folder as Vibe 3.0.2 publishes one: ``meta.json``, ``CURRENT``, the generation's
    manifest and the context's one chunk. Returns the session's folder."""
    folder = root / "logs" / "session" / "unified" / session
    (folder / "generations" / GENERATION).mkdir(parents=True)
    (folder / "chunks").mkdir()
    about = {"session_id": session, "parent_session_id": None, "start_time": "2026-12-06T16:33:10.808000+00:00",
             "environment": {"working_directory": "/work/vb"}, "title": None, **meta}  # fmt: skip
    (folder / "meta.json").write_text(json.dumps(about))
    pointer = {"generation": GENERATION, "manifest_sha256": "0" * 64, "session_id": session, "snapshot_sequence": 8,
               "store_format": "mistral.vibe.unified-session-store/v1", "store_format_minor": 9}  # fmt: skip
    (folder / "CURRENT").write_text(json.dumps(pointer))
    manifest = {"checkpoint": {"checkpoint_version": 1, "chunks": [DIGEST], "path": "checkpoint.json",
                               "sha256": "0" * 64}, "generation": GENERATION, "session_id": session}  # fmt: skip
    (folder / "generations" / GENERATION / "manifest.json").write_text(json.dumps(manifest))
    (folder / "chunks" / f"{DIGEST}.json").write_text(json.dumps(context))
    return folder


PREFACE = "You are continuing a trajectory after a context compaction.\n\n<previous_user_messages>"
SUMMARY = "</previous_user_messages>\n\n<compaction_summary>\nwhat was said\n</compaction_summary>"
CONTEXT = [
    said("user", PREFACE, "injection"),
    said("user", "a kept prompt"),
    said("user", SUMMARY, "injection"),
    said("assistant", "an answer to it"),
    said("user", "first question"),
    {"message": {"content": [{"arguments": {"raw": "{}", "type": "json", "value": {"command": "ls"}}, "id": "call_1",
                              "name": "bash", "type": "tool_call"}], "role": "assistant"}, "source": "history"},
    {"message": {"content": [{"text": "SECRET-TOOL-OUTPUT", "type": "text"}], "name": "bash", "outcome": "success",
                 "role": "tool", "tool_call_id": "call_1"}, "source": "history"},
    said("user", "<agents_md>a hook's context</agents_md>", "injection"),
    said("assistant", "an answer"),
]  # fmt: skip


def test_the_context_as_vibe_s_model_reads_it(tmp_path: Path) -> None:
    write_store(tmp_path, CONTEXT)
    source = VibeSource(tmp_path)
    (record,) = source.listing()
    assert (record.header.id, record.header.cwd, record.header.created_at) == (
        f"vibe:{SESSION}",
        "/work/vb",
        1_796_574_790_808,
    )
    conversation = _conversation(source, f"vibe:{SESSION}")
    assert conversation[0].startswith("You are continuing") and "a kept prompt" in conversation[0]
    assert "what was said" in conversation[0]
    assert conversation[1:] == ["an answer to it", "first question", "an answer"]
    assert source.title(f"vibe:{SESSION}").title == "first question"  # type: ignore[union-attr]


def test_an_older_store_s_inline_checkpoint_a_sub_agent_and_the_folders_vibe_s_settings_name(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A store written before chunks (minor < 4) keeps the context inside the checkpoint document.
    older = write_store(tmp_path, [], title="Storage design")
    manifest = older / "generations" / GENERATION / "manifest.json"
    manifest.write_text(json.dumps({"checkpoint": {"path": "checkpoint.json", "sha256": "0" * 64}}))
    checkpoint = {"context": {"messages": [said("user", "first question"), said("assistant", "an answer")]}}
    (older / "generations" / GENERATION / "checkpoint.json").write_text(json.dumps(checkpoint))
    # A sub-agent's session is part of the one that spawned it.
    write_store(tmp_path, [said("user", "a task")], session="sub-1", parent_session_id=SESSION)
    for root in (tmp_path, tmp_path / "logs" / "session", tmp_path / "logs" / "session" / "unified"):
        source = VibeSource(root)
        assert [r.header.id for r in source.listing()] == [f"vibe:{SESSION}"]
        assert _conversation(source, f"vibe:{SESSION}") == ["first question", "an answer"]
        assert source.title(f"vibe:{SESSION}").title == "Storage design"  # type: ignore[union-attr]
    monkeypatch.delenv("VIBE_HOME", raising=False)
    monkeypatch.setenv("HOME", str(tmp_path))
    assert vibe_root() == tmp_path / ".vibe"
    monkeypatch.setenv("VIBE_HOME", str(tmp_path / "v"))
    assert vibe_root() == tmp_path / "v"


def test_no_link_out_of_its_folders_is_followed(tmp_path: Path) -> None:
    outside = write_store(tmp_path / "outside", [said("user", "not yours")], session="elsewhere")
    store = tmp_path / "store"
    folder = write_store(store, [said("user", "first question")])
    unified = folder.parent
    (unified / "linked").symlink_to(outside)  # a session folder that is a link
    other = write_store(store, [], session="chunk-link")
    (other / "chunks" / f"{DIGEST}.json").unlink()
    (other / "chunks" / f"{DIGEST}.json").symlink_to(outside / "chunks" / f"{DIGEST}.json")
    third = write_store(store, [], session="generation-link")
    shutil.rmtree(third / "generations")
    (third / "generations").symlink_to(outside / "generations")
    source = VibeSource(store)
    listed = sorted(r.header.id for r in source.listing())
    assert listed == ["vibe:chunk-link", f"vibe:{SESSION}", "vibe:generation-link"]
    assert _conversation(source, f"vibe:{SESSION}") == ["first question"]
    for session in ("vibe:chunk-link", "vibe:generation-link"):
        outcome = _read_or_refused(source, session)
        assert outcome in ("read", "SESSION_QUERY_SESSION_NOT_FOUND")
        if outcome == "read":
            assert "not yours" not in str(source.surface(session))


def _read_or_refused(source: VibeSource, session_id: str) -> str:
    """``read`` when the session reads and projects, else the code it was refused with."""
    try:
        project_conversation(source.surface(session_id))
        source.title(session_id)
    except SessionQueryError as error:
        return error.code
    return "read"


@pytest.mark.parametrize("name", ["meta.json", "CURRENT", f"generations/{GENERATION}/manifest.json"])
def test_every_value_of_its_documents_replaced_by_every_other_type_is_read_or_refused(
    name: str, tmp_path: Path
) -> None:
    folder = write_store(tmp_path / "base", CONTEXT)
    document = json.loads((folder / name).read_text())
    for number, path in enumerate(_paths(document)):
        for at, replacement in enumerate(HOSTILE):
            root = tmp_path / f"{number}-{at}"
            shutil.copytree(tmp_path / "base", root)
            changed = json.dumps(_set(document, path, replacement)).encode("utf-8", "surrogatepass")
            (root / "logs" / "session" / "unified" / SESSION / name).write_bytes(changed)
            _list_and_read(VibeSource(root), (name, path, replacement))
            shutil.rmtree(root)
