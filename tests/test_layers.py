"""The layers of ``core`` (docs/architecture.md): each imports only the layers above it, never ``tui``."""

from __future__ import annotations

import ast
from pathlib import Path

CORE = Path(__file__).resolve().parent.parent / "core"
ORDER = ["base", "sessions", "reference", "search", "database", "agent"]
ALLOWED = {
    "base": {"base"},
    "sessions": {"base", "sessions"},
    "reference": {"base", "sessions", "reference"},
    "search": {"base", "sessions", "reference", "search"},
    "database": {"base", "sessions", "reference", "search", "database"},
    # The session tools search as the picker searches (never the database layer: that stays optional).
    "agent": {"base", "sessions", "reference", "search", "agent"},
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


TUI = CORE.parent / "tui"
MARKUP_WIDGETS = {"Static", "Label", "Button"}
"""Widgets that parse a string first argument as markup unless told ``markup=False``."""


def test_no_widget_of_the_app_parses_text_that_is_not_a_literal_as_markup() -> None:
    # Text from data must never be markup: a widget given anything but a literal string either gets
    # ``markup=False`` or a ``Text`` / ``Content`` object (which Textual does not parse).
    wrong = []
    for path in TUI.rglob("*.py"):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            if not isinstance(node, ast.Call) or not node.args:
                continue
            name = node.func.id if isinstance(node.func, ast.Name) else getattr(node.func, "attr", None)
            if name not in MARKUP_WIDGETS:
                continue
            first = node.args[0]
            literal = isinstance(first, ast.Constant) and isinstance(first.value, str)
            plain = any(
                keyword.arg == "markup" and isinstance(keyword.value, ast.Constant) and keyword.value.value is False
                for keyword in node.keywords
            )
            if not literal and not plain:
                wrong.append(f"{path.relative_to(TUI.parent)}:{node.lineno} {name}(...) without markup=False")
    assert wrong == []


ENTRY_POINT = "tui.cli"
"""The one module that may import the app (it starts it)."""


def _imports(path: Path, package: str) -> list[str]:
    """Every module ``path`` imports, relative imports resolved against ``package`` (type-only ones too)."""
    found = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parent = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join([*parent, base] if base else parent)
            found.append(base)
            found.extend(f"{base}.{alias.name}" for alias in node.names)
        elif isinstance(node, ast.Import):
            found.extend(alias.name for alias in node.names)
    return found


def test_no_tui_module_but_the_entry_point_imports_the_app() -> None:
    # Screens, widgets and services get what they need at construction and post messages; they never
    # reach the app's object, not even for types (docs/architecture.md).
    wrong = []
    for path in TUI.rglob("*.py"):
        relative = path.relative_to(TUI.parent).with_suffix("")
        module = ".".join(relative.parts)
        if module in (ENTRY_POINT, "tui.app"):
            continue
        package = module.removesuffix(".__init__") if path.name == "__init__.py" else module.rpartition(".")[0]
        for name in _imports(path, package):
            if name == "tui.app" or name.startswith("tui.app."):
                wrong.append(f"{module} imports {name}")
    assert wrong == []


def test_the_import_check_sees_relative_and_type_only_imports(tmp_path: Path) -> None:
    probe = tmp_path / "probe.py"
    probe.write_text(
        "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from ..app import SessionRefApp\nfrom . import app\n",
        encoding="utf-8",
    )
    assert "tui.app.SessionRefApp" in _imports(probe, "tui.widgets")
    assert "tui.app" in _imports(probe, "tui")


def test_no_colour_is_written_into_the_app_s_python() -> None:
    # Colours follow the theme (docs/user-guide.md): widgets' CSS uses its tokens and Python
    # code paints by role through ``tui/palette.py``; a hex or named colour there would stay put
    # when the theme changes.
    import re

    colour = re.compile(
        r"#[0-9a-fA-F]{6}\b|#[0-9a-fA-F]{3}\b|[\"'][^\"'\n]*\b(red|green|yellow|blue|magenta|cyan|white|black)\b[^\"'\n]*[\"']"
    )
    wrong = []
    for path in TUI.rglob("*.py"):
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            code = line.split(" # ", 1)[0]
            if colour.search(code) and not code.lstrip().startswith(("#", '"""')):
                wrong.append(f"{path.relative_to(TUI.parent)}:{number}: {line.strip()}")
    assert wrong == []
