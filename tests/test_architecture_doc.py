"""``docs/architecture.md`` matches the tree: every package of ``core`` and ``tui`` has its row, every
module a row names exists, and every module of a row's folder is named in it."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
DOC = ROOT / "docs" / "architecture.md"


def _rows() -> dict[str, str]:
    """Folder -> what its row says (the second column), for the rows of ``core`` and ``tui``."""
    rows: dict[str, str] = {}
    for line in DOC.read_text(encoding="utf-8").splitlines():
        match = re.match(r"^\| `((?:core|tui)/[^`]*)`[^|]*\| (.*?) \| [^|]* \|$", line)
        if match:
            rows[match.group(1).rstrip("/")] = match.group(2)
    return rows


def _outside_parentheses(text: str) -> str:
    """``text`` without what stands in parentheses (nested ones too)."""
    kept, depth = [], 0
    for character in text.replace("\\|", ""):
        if character == "(":
            depth += 1
        elif character == ")":
            depth = max(depth - 1, 0)
        elif depth == 0:
            kept.append(character)
    return "".join(kept)


def _named_modules(text: str) -> set[str]:
    return set(re.findall(r"`([a-z_][a-z0-9_]*(?:\.tcss)?)`", _outside_parentheses(text)))


def test_every_package_has_its_row_and_every_module_is_named_and_exists() -> None:
    rows = _rows()
    packages = {
        str(path.parent.relative_to(ROOT))
        for top in ("core", "tui")
        for path in (ROOT / top).rglob("__init__.py")
        if any(module.name != "__init__.py" for module in path.parent.glob("*.py"))  # (tui/ holds only packages)
    }
    assert sorted(packages - set(rows)) == [], "packages without a row"
    missing, unnamed = [], []
    for folder, said in rows.items():
        named = _named_modules(said)
        base = ROOT / folder
        for name in named:
            if not ((base / f"{name}.py").exists() or (base / name).exists() or (base / name).is_dir()):
                missing.append(f"{folder}/{name}")
        for path in base.glob("*.py"):
            if path.stem not in ("__init__", "__main__") and path.stem not in named:
                unnamed.append(str(path.relative_to(ROOT)))
    assert sorted(missing) == [], "named in docs/architecture.md, not in the tree"
    assert sorted(unnamed) == [], "in the tree, not named in docs/architecture.md"


def test_every_file_a_recipe_names_exists() -> None:
    text = DOC.read_text(encoding="utf-8")
    recipes = text[text.index("## Recipes") : text.index("## Names")]
    named = set(re.findall(r"`((?:core|tui|tests)/[^`]+?\.py)`", recipes))
    assert len(named) >= 5
    assert sorted(path for path in named if not (ROOT / path).is_file()) == []
