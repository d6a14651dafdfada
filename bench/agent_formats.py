"""The sessions of the twenty-two agents ``bench.agents`` adds to its first fourteen, each in its tool's
own format, written with the tests' own writers of that format (``tests/test_agent_*.py``): the
shapes each reader is tested against, the real tools' files where they could be run.

``WRITERS[key](root, indexes, turns)`` writes one session a number in ``indexes`` under ``root``,
each ``turns`` prompts and as many answers (``2 * turns`` messages on the surface).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

from tests import test_agent_amp as amp
from tests import test_agent_codebuddy as codebuddy
from tests import test_agent_codepuppy as codepuppy
from tests import test_agent_crush as crush
from tests import test_agent_cursor as cursor
from tests import test_agent_factory as droid
from tests import test_agent_goose as goose
from tests import test_agent_gptme as gptme
from tests import test_agent_kimi as kimi
from tests import test_agent_kimi_code as kimicode
from tests import test_agent_kiro as kiro
from tests import test_agent_letta as letta
from tests import test_agent_llm as llm
from tests import test_agent_minisweagent as mini
from tests import test_agent_nanocoder as nanocoder
from tests import test_agent_openclaw as openclaw
from tests import test_agent_roo as roo
from tests import test_agent_zed as zed

Writer = Callable[[Path, range, int], None]


def _asked(index: int, turn: int) -> str:
    return f"question {turn} of session {index}: " + "why does the release build fail? " * 6


def _answered(turn: int) -> str:
    return f"answer {turn}: " + "because the lock is held by the writer. " * 8


def _uuid(index: int) -> str:
    return f"{index:08x}-0000-4000-8000-000000000000"


def _openclaw(root: Path, indexes: range, turns: int) -> None:
    db = openclaw._database(root / "agents" / "main")
    db.execute("BEGIN")
    for index in indexes:
        entries, parent = [], None
        for turn in range(turns):
            for role, text in (("user", _asked(index, turn)), ("assistant", _answered(turn))):
                entry = f"e{len(entries)}"
                entries.append(openclaw._message(entry, parent, role, text))
                parent = entry
        openclaw._entries(db, f"s{index}", entries)
    db.execute("COMMIT")
    db.close()


def _kimicode(root: Path, indexes: range, turns: int) -> None:
    for index in indexes:
        records = [
            record
            for t in range(turns)
            for record in (kimicode._typed(_asked(index, t)), kimicode._said(_answered(t), f"s{t}"))
        ]
        kimicode._session(root, f"session_{_uuid(index)}", records)


def _kimi(root: Path, indexes: range, turns: int) -> None:
    for index in indexes:
        records = [kimi._said(role, text) for t in range(turns)
                   for role, text in (("user", _asked(index, t)), ("assistant", _answered(t)))]  # fmt: skip
        kimi._session(root, records, name=_uuid(index), cwd=f"/home/user/project-{index % 40}")


def _gptme(root: Path, indexes: range, turns: int) -> None:
    for index in indexes:
        records = [gptme._said(role, text) for t in range(turns)
                   for role, text in (("user", _asked(index, t)), ("assistant", _answered(t)))]  # fmt: skip
        gptme._conversation(root / "logs", records, name=f"2026-12-07-session-{index:06d}")


def _llm(root: Path, indexes: range, turns: int) -> None:
    db = llm._database(root, llm.LEGACY + llm.THREADS)
    db.execute("BEGIN")
    for index in indexes:
        parent = None
        for turn in range(turns):
            for role, text in (("user", _asked(index, turn)), ("assistant", _answered(turn))):
                message = f"h{index}-{turn}-{role}"
                llm._message(db, message, parent, role, ("text", text, None))
                parent = message
        thread = f"t{index:06d}"
        db.execute("INSERT INTO threads VALUES (?, ?, ?, NULL, '2026-12-07 19:10:54+00:00')", (thread, None, parent))
    db.execute("COMMIT")
    db.close()


def _codebuddy(root: Path, indexes: range, turns: int) -> None:
    for index in indexes:
        items = [codebuddy._item(role, text) for t in range(turns)
                 for role, text in (("user", _asked(index, t)), ("assistant", _answered(t)))]  # fmt: skip
        codebuddy._session(root, items, name=_uuid(index))


def _codepuppy(root: Path, indexes: range, turns: int) -> None:
    for index in indexes:
        messages = []
        for turn in range(turns):
            messages.append({"kind": "request", "parts": [codepuppy._part("user-prompt", _asked(index, turn))]})
            messages.append({"kind": "response", "parts": [codepuppy._part("text", _answered(turn))]})
        codepuppy._session(root, messages, name=f"auto_session_20261207_192503_{index:06d}_1")


def _mini(root: Path, indexes: range, turns: int) -> None:
    for index in indexes:
        # One task a run, then the model's steps, each followed by its command's output (not on the
        # surface): as many messages on the surface as the others have.
        task = mini.TEMPLATE.replace("{{task}}", _asked(index, 0)).replace("{{", "")
        messages = [{"role": "user", "content": task}]
        for step in range(2 * turns - 1):
            messages += [mini._answer(_answered(step)), {"role": "tool", "content": "ok", "tool_call_id": f"c{step}"}]
        mini._trajectory(root / f"run-{index:06d}" / f"run-{index:06d}.traj.json", messages)


def _nanocoder(root: Path, indexes: range, turns: int) -> None:
    listed = []
    for index in indexes:
        messages = [{"role": role, "content": text} for t in range(turns)
                    for role, text in (("user", _asked(index, t)), ("assistant", _answered(t)))]  # fmt: skip
        listed.append(nanocoder._saved_session(root / "sessions", messages, name=_uuid(index)))
    (root / "sessions" / "sessions.json").write_text(json.dumps(listed))


def _crush(root: Path, indexes: range, turns: int) -> None:
    project = crush.Project(root / "work" / "app")
    project.db.execute("BEGIN")
    for index in indexes:
        project.session(f"s{index}", f"Session {index}")
        for turn in range(turns):
            project.message(f"s{index}", f"m{index}-{turn}u", "user", crush.text(_asked(index, turn)))
            project.message(f"s{index}", f"m{index}-{turn}a", "assistant", crush.text(_answered(turn)))
    project.db.execute("COMMIT")
    project.db.close()
    crush._projects(root / "data", project)


def _goose(root: Path, indexes: range, turns: int) -> None:
    store = goose.Goose(root)
    store.db.execute("BEGIN")
    for index in indexes:
        store.session(f"20261207_{index}", f"Session {index}", f"/home/user/project-{index % 40}")
        for turn in range(turns):
            store.message(f"20261207_{index}", "user", [goose.text(_asked(index, turn))])
            store.message(f"20261207_{index}", "assistant", [goose.text(_answered(turn))])
    store.db.execute("COMMIT")
    store.db.close()


def _cursor(root: Path, indexes: range, turns: int) -> None:
    store = cursor.Cursor(root)
    store.db.execute("BEGIN")
    for index in indexes:
        bubbles = [cursor.bubble(kind, text) for t in range(turns)
                   for kind, text in ((1, _asked(index, t)), (2, _answered(t)))]  # fmt: skip
        store.chat(f"c{index}", bubbles, folder=f"/home/user/project-{index % 40}")
    store.db.execute("COMMIT")
    store.db.close()


def _letta(root: Path, indexes: range, turns: int) -> None:
    for index in indexes:
        entries, parent = [], None
        for turn in range(turns):
            for role, text in (("user", _asked(index, turn)), ("assistant", _answered(turn))):
                entry = f"e{len(entries)}"
                entries.append(letta._message(entry, parent, role, text))
                parent = entry
        letta._conversation(root, f"conversation:c{index:06d}", entries)


def _interpreter(root: Path, indexes: range, turns: int) -> None:
    folder = root / "conversations"
    folder.mkdir(parents=True, exist_ok=True)
    for index in indexes:
        messages = [{"role": role, "type": "message", "content": text} for t in range(turns)
                    for role, text in (("user", _asked(index, t)), ("assistant", _answered(t)))]  # fmt: skip
        (folder / f"session_{index:06d}__December_07_2026_20-16-35.json").write_text(json.dumps(messages))


def _amp(root: Path, indexes: range, turns: int) -> None:
    for index in indexes:
        messages = [amp.said(role, amp.text(text)) for t in range(turns)
                    for role, text in (("user", _asked(index, t)), ("assistant", _answered(t)))]  # fmt: skip
        amp.thread(root, messages, name=f"T-{_uuid(index)}")


def _droid(root: Path, indexes: range, turns: int) -> None:
    for index in indexes:
        records = [droid.message(role, droid.text(text)) for t in range(turns)
                   for role, text in (("user", _asked(index, t)), ("assistant", _answered(t)))]  # fmt: skip
        droid.session(root, records, name=_uuid(index), title=f"Session {index}")


def _roo(root: Path, indexes: range, turns: int) -> None:
    for index in indexes:
        said = [roo.say("text", _asked(index, 0))] if turns else []
        for turn in range(turns):
            if turn:
                said.append(roo.say("user_feedback", _asked(index, turn)))
            said.append(roo.say("text", _answered(turn)))
        roo.task(root, said, name=_uuid(index))


def _omp(root: Path, indexes: range, turns: int) -> None:
    for index in indexes:
        folder = root / "sessions" / f"-home-user-project-{index % 40}-"
        folder.mkdir(parents=True, exist_ok=True)
        lines: list[dict[str, object]] = [
            {"type": "title", "v": 1, "title": f"Session {index}", "updatedAt": "2026-12-07T18:02:43.083Z",
             "pad": " " * 64},
            {"type": "session", "version": 3, "id": f"01{index:06d}", "timestamp": "2026-12-07T18:02:43.083Z",
             "cwd": f"/home/user/project-{index % 40}"},
        ]  # fmt: skip
        parent = None
        for turn in range(turns):
            for role, text in (("user", _asked(index, turn)), ("assistant", _answered(turn))):
                entry = f"e{len(lines)}"
                content: object = text if role == "user" else [{"type": "text", "text": text}]
                lines.append({"type": "message", "id": entry, "parentId": parent,
                              "message": {"role": role, "content": content}})  # fmt: skip
                parent = entry
        path = folder / f"2026-12-07T18-02-43-083Z_01{index:06d}.jsonl"
        path.write_text("".join(json.dumps(line) + "\n" for line in lines))


def _zed(root: Path, indexes: range, turns: int) -> None:
    store = zed.Zed(root)
    store.db.execute("BEGIN")
    for index in indexes:
        messages: list[object] = []
        for turn in range(turns):
            messages += [zed.user({"Text": _asked(index, turn)}), zed.agent({"Text": _answered(turn)})]
        store.save(f"t{index:06d}", f"Session {index}", messages, folders=(f"/home/user/project-{index % 40}",))
    store.db.execute("COMMIT")
    store.db.close()


def _kiro(root: Path, indexes: range, turns: int) -> None:
    store = kiro.Kiro(root)
    store.db.execute("BEGIN")
    for index in indexes:
        history = [kiro.entry(kiro.prompt(_asked(index, turn)), _answered(turn)) for turn in range(turns)]
        store.save(f"/home/user/project-{index % 40}", f"c{index:06d}", history)
    store.db.execute("COMMIT")
    store.db.close()


WRITERS: dict[str, Writer] = {
    "openclaw": _openclaw,
    "kimicode": _kimicode,
    "kimi": _kimi,
    "gptme": _gptme,
    "llm": _llm,
    "codebuddy": _codebuddy,
    "codepuppy": _codepuppy,
    "mini": _mini,
    "nanocoder": _nanocoder,
    "crush": _crush,
    "goose": _goose,
    "cursor": _cursor,
    "letta": _letta,
    "interpreter": _interpreter,
    "amp": _amp,
    "droid": _droid,
    "roo": _roo,
    "clinevsc": _roo,  # (Cline's and Kilo Code's extensions keep Roo Code's folders)
    "kilocode": _roo,
    "omp": _omp,
    "zed": _zed,
    "kiro": _kiro,
}
"""Each added agent's writer, by its key in ``core.sessions.sources.registry.AGENTS``."""

ROOTS: dict[str, Callable[[Path], Path]] = {"crush": lambda root: root / "data", "gptme": lambda root: root / "logs"}
"""The folder an agent's reader is given, when it is not the one written to."""
