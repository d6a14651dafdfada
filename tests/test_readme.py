"""The README and the pages under docs/ are true: the engine example runs as written, every link
leads somewhere, the README stays a README, and no page speaks of how the project was built."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).parent.parent
README = ROOT / "README.md"
PAGES = sorted((ROOT / "docs").glob("*.md"))
LIBRARY = ROOT / "docs" / "library.md"


def test_the_engine_example_runs() -> None:
    blocks = re.findall(r"```python\n(.*?)```", LIBRARY.read_text(encoding="utf-8"), flags=re.S)
    assert blocks
    namespace: dict[str, object] = {"__name__": "readme"}
    exec(compile(blocks[0], str(LIBRARY), "exec"), namespace)
    target = namespace["target"]
    last = target.events[-1].data  # type: ignore[attr-defined]
    assert last["envelope"]["displayContent"] == [{"type": "text", "text": "Follow @notes please"}]
    assert "Use SQLite." in last["content"][0]["text"]


def _anchor(heading: str) -> str:
    """GitHub's anchor of a heading: lower case, punctuation dropped, spaces to hyphens."""
    return re.sub(r"[^\w\- ]", "", heading.strip().lower()).replace(" ", "-")


def _prose(text: str) -> str:
    """The text without fenced blocks and code spans (a mention such as `@[T](dsh-session:...)` is no link)."""
    return re.sub(r"`[^`\n]*`", "", re.sub(r"```.*?```", "", text, flags=re.S))


@pytest.mark.parametrize("page", [README, *PAGES], ids=lambda page: str(page.relative_to(ROOT)))
def test_every_link_leads_to_a_file_and_heading_that_exist(page: Path) -> None:
    links = re.findall(r"\]\(([^)\s]+)\)", _prose(page.read_text(encoding="utf-8")))
    assert links
    for link in links:
        if link.startswith(("http://", "https://")):
            continue
        target, _, anchor = link.partition("#")
        path = (page.parent / target).resolve() if target else page
        assert path.exists(), f"{page.name}: {link} leads nowhere"
        if anchor:
            headings = re.findall(r"^#+ (.+)$", path.read_text(encoding="utf-8"), flags=re.M)
            assert anchor in {_anchor(heading) for heading in headings}, f"{page.name}: no heading for {link}"


def test_the_readme_is_short_and_links_every_page() -> None:
    text = README.read_text(encoding="utf-8")
    assert len(text.splitlines()) <= 250
    for page in PAGES:
        if page.name != "README.md":
            assert f"(docs/{page.name})" in text, f"the README does not link {page.name}"
    assert "make run" in text and "make test" in text and "pipx install ." in text


def test_no_page_speaks_of_how_the_project_was_built() -> None:
    """Figures carry a date and a machine kind, never a work session or an issue number."""
    words = re.compile(r"\b(?:session [0-9]+\b|sessions? [0-9]+'s|issue [0-9]+\b)", re.I)
    for page in [README, *PAGES]:
        for number, line in enumerate(page.read_text(encoding="utf-8").splitlines(), 1):
            assert not words.search(line), f"{page.name}:{number}: {line}"
