"""The layers of ``core`` (docs/architecture.md): each imports only the layers above it, never ``tui``."""

from __future__ import annotations

import ast
from pathlib import Path

CORE = Path(__file__).resolve().parent.parent / "core"
ORDER = [
    "base",
    "sessions",
    "secrets",
    "folder",
    "reference",
    "search",
    "database",
    "stores",
    "catalog",
    "agent",
    "mcp",
    "export",
    "handoff",
    "settings",
]
ALLOWED = {
    "base": {"base"},
    "sessions": {"base", "sessions"},
    # What a secret looks like and masking a projected conversation.
    "secrets": {"base", "sessions", "secrets"},
    "folder": {"base", "sessions", "folder"},
    "reference": {"base", "sessions", "secrets", "reference"},
    # Search masks the secrets in what it sends a user's embeddings endpoint.
    "search": {"base", "sessions", "secrets", "folder", "reference", "search"},
    "database": {"base", "sessions", "folder", "reference", "search", "database"},
    # Opening a store names the database store (imported only when a database is named).
    "stores": {"base", "sessions", "folder", "reference", "search", "database", "stores"},
    # The session tools search as the picker searches (never the database layer: that stays optional).
    "agent": {"base", "sessions", "secrets", "reference", "search", "agent"},
    # The listing the app and the MCP server keep in memory, over any store and other tools' sources.
    "catalog": {"base", "sessions", "secrets", "folder", "reference", "search", "stores", "catalog"},
    # The session tools served over MCP, over a catalog.
    "mcp": {"base", "sessions", "folder", "reference", "search", "stores", "catalog", "agent", "mcp"},
    # A session as people read it (its secrets masked).
    "export": {"base", "sessions", "secrets", "reference", "export"},
    # Handing a session to another agent: a briefing over the catalog, a note in its store.
    "handoff": {
        "base",
        "agent",  # (the session tools' names, which the briefing allows)
        "sessions",
        "secrets",
        "folder",
        "reference",
        "search",
        "database",
        "stores",
        "catalog",
        "handoff",
    },
    # Each setting's default is the engine's own.
    "settings": {"base", "sessions", "reference", "search", "agent", "settings"},
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


def _imports(path: Path, package: str) -> list[str]:
    """Every module ``path`` imports, relative imports resolved against ``package`` (type-only ones
    and those inside functions too): ``from a.b import c`` names ``a.b`` and ``a.b.c``."""
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


def _modules() -> dict[str, Path]:
    """Every module of ``core`` and ``tui`` by dotted name (a package by its own name)."""
    modules = {}
    for top in (CORE, TUI):
        for path in top.rglob("*.py"):
            parts = path.relative_to(top.parent).with_suffix("").parts
            name = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
            modules[name] = path
    return modules


def _graph() -> dict[str, set[str]]:
    """Module -> the project modules it imports (a name imported from a module is that module,
    unless it is a submodule)."""
    modules = _modules()
    graph: dict[str, set[str]] = {}
    for name, path in modules.items():
        package = name if path.name == "__init__.py" else name.rpartition(".")[0]
        edges = set()
        for imported in _imports(path, package):
            if imported in modules:
                edges.add(imported)
            elif imported.rpartition(".")[0] in modules:
                edges.add(imported.rpartition(".")[0])
        edges.discard(name)
        graph[name] = edges
    return graph


def _cycles(graph: dict[str, set[str]], skip: frozenset[str] = frozenset()) -> list[list[str]]:
    """The import circles of ``graph`` (strongly connected components of more than one module, or a
    module importing itself), leaving out the edges into ``skip`` (facades that re-export)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(node: str) -> None:  # Tarjan's algorithm
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for target in sorted(graph.get(node, set()) - skip):
            if target not in index:
                visit(target)
                low[node] = min(low[node], low[target])
            elif target in on_stack:
                low[node] = min(low[node], index[target])
        if low[node] == index[node]:
            component = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                component.append(member)
                if member == node:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return found


def test_there_is_no_import_circle_in_core_or_tui() -> None:
    # Type-only imports and imports inside functions count: a circle is a circle to a reader too.
    assert _cycles(_graph()) == []


def test_core_modules_never_import_the_core_facade() -> None:
    # The facade imports every module, so a module importing it would close a circle through it.
    graph = _graph()
    assert sorted(name for name, edges in graph.items() if name.startswith("core.") and "core" in edges) == []


def test_the_circle_finder_finds_circles() -> None:
    graph = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}, "e": {"e"}}
    assert _cycles(graph) == [["a", "b", "c"]]
    assert _cycles(graph, skip=frozenset({"a"})) == []


TUI_LAYERS = ["services", "widgets", "screens", "app", "cli"]
"""``tui``'s sub-packages, lowest first (docs/architecture.md): each may import the ones before it,
never one after it, so a widget never reaches a screen and nothing but the entry points reaches
the app."""


def _tui_layer(module: str) -> str | None:
    parts = module.split(".")
    if parts[0] != "tui" or len(parts) == 1:
        return None
    assert parts[1] in TUI_LAYERS or parts[1] == "__init__", f"{module} is in no layer"
    return parts[1] if parts[1] in TUI_LAYERS else None


def test_every_tui_module_is_in_a_layer() -> None:
    loose = [path.name for path in TUI.glob("*.py") if path.name != "__init__.py"]
    assert loose == []
    assert sorted(path.name for path in TUI.iterdir() if path.is_dir() and path.name != "__pycache__") == sorted(
        TUI_LAYERS
    )


def test_tui_layers_import_only_the_layers_below_them() -> None:
    wrong = []
    for name, edges in _graph().items():
        own = _tui_layer(name)
        if own is None:
            continue
        for imported in edges:
            layer = _tui_layer(imported)
            if layer is not None and TUI_LAYERS.index(layer) > TUI_LAYERS.index(own):
                wrong.append(f"{name} ({own}) imports {imported} ({layer})")
    assert sorted(wrong) == []


def test_tui_services_import_no_widget_screen_or_app() -> None:
    # Services are what the screens and widgets use; Textual is allowed (workers, messages, colours).
    graph = _graph()
    services = [name for name in graph if name.startswith("tui.services")]
    assert len(services) >= 10
    assert all(
        not edge.startswith(("tui.widgets", "tui.screens", "tui.app", "tui.cli")) for n in services for edge in graph[n]
    )


def test_the_import_check_sees_relative_and_type_only_imports(tmp_path: Path) -> None:
    probe = tmp_path / "probe.py"
    probe.write_text(
        "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from ..app import SessionRefApp\nfrom . import app\n"
        "def later():\n    from tui.screens.chat import ChatScreen\n",
        encoding="utf-8",
    )
    assert "tui.app.SessionRefApp" in _imports(probe, "tui.widgets")
    assert "tui.app" in _imports(probe, "tui")
    assert "tui.screens.chat" in _imports(probe, "tui.widgets")


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
