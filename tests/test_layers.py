"""The layers of ``core`` (README, *Layout*): each imports only the layers above it, never ``tui``."""

from __future__ import annotations

import ast
from pathlib import Path

CORE = Path(__file__).resolve().parent.parent / "core"
ORDER = ["base", "sessions", "reference", "search", "agent"]
ALLOWED = {
    "base": {"base"},
    "sessions": {"base", "sessions"},
    "reference": {"base", "sessions", "reference"},
    "search": {"base", "sessions", "reference", "search"},
    "agent": {"base", "sessions", "reference", "agent"},
}


def layer_of(module: str) -> str | None:
    parts = module.split(".")
    if parts[0] != "core" or len(parts) == 1:
        return None
    return parts[1] if parts[1] in ORDER else "base"


def test_every_core_module_imports_only_the_layers_above_it() -> None:
    wrong = []
    for path in CORE.rglob("*.py"):
        relative = path.relative_to(CORE.parent).with_suffix("")
        module = ".".join(relative.parts)
        if module in ("core.__init__",):
            continue  # the facade re-exports every layer
        own = layer_of(module.removesuffix(".__init__"))
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom) and node.module:
                names = [node.module]
            elif isinstance(node, ast.Import):
                names = [alias.name for alias in node.names]
            else:
                continue
            for name in names:
                if name.startswith(("tui", "textual")):
                    wrong.append(f"{module} imports {name}")
                layer = layer_of(name)
                if own is not None and layer is not None and layer not in ALLOWED[own]:
                    wrong.append(f"{module} ({own}) imports {name} ({layer})")
    assert wrong == []
