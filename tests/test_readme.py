"""The README's example is real code: it runs against the engine as written."""

from __future__ import annotations

import re
from pathlib import Path

README = Path(__file__).parent.parent / "README.md"


def test_readme_python_example_runs() -> None:
    blocks = re.findall(r"```python\n(.*?)```", README.read_text(encoding="utf-8"), flags=re.S)
    assert blocks
    namespace: dict[str, object] = {"__name__": "readme"}
    exec(compile(blocks[0], str(README), "exec"), namespace)
    target = namespace["target"]
    last = target.events[-1].data  # type: ignore[attr-defined]
    assert last["envelope"]["displayContent"] == [{"type": "text", "text": "Follow @notes please"}]
    assert "Use SQLite." in last["content"][0]["text"]
