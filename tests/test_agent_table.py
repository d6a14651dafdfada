"""The agents' table (``core.sessions.sources.registry``) is the one record of each agent: the sources
a run lists, the settings and flags, the badges, the tool's description and ``docs/other-tools.md``
all follow it."""

from __future__ import annotations

import re
from pathlib import Path

from core.agent.tool_specs import SEARCH_SESSIONS
from core.sessions.sources.registry import AGENTS, badge_of
from core.settings import effective_settings, load_config
from core.settings.declared import declaration_of
from core.settings.sources import external_sources

ROOT = Path(__file__).resolve().parent.parent


def test_each_agent_has_a_setting_a_flag_and_a_config_key() -> None:
    for agent in AGENTS:
        declared = declaration_of(agent.setting)
        assert declared.flag == agent.flag and declared.file == ("sources", agent.key)
        assert agent.label in declared.help


def test_each_row_names_its_reader_as_the_reader_names_itself() -> None:
    # The table says an agent's name and prefix itself (the settings and --help read it without
    # importing every reader); each reader, imported on first use, says the same.
    for agent in AGENTS:
        reader = agent.reader
        assert (reader.name, reader.prefix) == (agent.label, agent.prefix)
        assert callable(agent.default_root) and isinstance(agent.default_root(), Path)


def test_the_sources_a_run_lists_are_the_table_s_in_order(tmp_path: Path) -> None:
    flags = {agent.setting: str(tmp_path / agent.key) for agent in AGENTS}
    config = tmp_path / "config.toml"
    config.write_text("")
    sources = external_sources(effective_settings(load_config(str(config)), flags, {}))
    assert [source.prefix for source in sources] == [agent.prefix for agent in AGENTS]
    assert [str(source.root) for source in sources] == [str(tmp_path / agent.key) for agent in AGENTS]


def test_badges_and_the_tool_description_name_every_agent() -> None:
    description = SEARCH_SESSIONS.describe(65536)
    for agent in AGENTS:
        assert badge_of(agent.prefix + "x") == agent.badge
        assert agent.label in description
    assert badge_of("design-notes") is None
    assert len({agent.badge for agent in AGENTS}) == len(AGENTS) == len({agent.prefix for agent in AGENTS})


def test_docs_other_tools_has_a_row_per_agent_as_the_table_says() -> None:
    text = (ROOT / "docs" / "other-tools.md").read_text(encoding="utf-8")
    table = text[text.index("| agent (version tried)") :]
    rows = [line for line in table.splitlines()[2:] if line.startswith("| ")]
    rows = rows[: next((i for i, row in enumerate(rows) if not row.startswith("| ") or "---" in row), len(rows))]
    named = {}
    for row in rows:
        match = re.search(r"\| ([A-Z]{2}), `([a-z]+:)` \|", row)
        if match:
            named[match.group(2)] = (match.group(1), row)
    assert sorted(named) == sorted(agent.prefix for agent in AGENTS)
    for agent in AGENTS:
        badge, row = named[agent.prefix]
        assert badge == agent.badge
        assert f"`{agent.flag}`" in row and f"`[sources] {agent.key}`" in row
