"""``RunConfig``: the settings of a run grouped as the engine's own config objects, made from the flat
settings in one place (``run_config``). The app (``make_app``) and the session tools' commands take it."""

from __future__ import annotations

from dataclasses import dataclass, field

from core.agent.defaults import CompactionPolicy
from core.agent.tokens import WindowMemory
from core.agent.tool_steps import ToolSettings
from core.agent.window_keeper import ContextSettings
from core.search.search_config import SearchConfig
from core.sessions.models import ReferenceConfig
from core.sessions.sources.merged import ExternalSource
from core.sessions.store_location import StoreLocation
from core.settings.config_file import window_memory_path
from core.settings.effective import Effective, embedder_of
from core.settings.sources import external_sources


@dataclass(frozen=True)
class RunConfig:
    """What a run is configured with, one engine object a group (the defaults are the engine's, with
    no other agent's sessions and no search by meaning: what a test or a library user starts from).

    Attributes:
        reference: the reference limits (``maxReferences``, ``maxReferenceBytes``, ``candidateLimit``).
        compaction: the model's window, where learned windows are kept, the compaction policy, the
            reasoning kept.
        tools: how the session tools read (``read_bytes``) and how many steps a turn may take.
        offer_tools: whether the model is offered the session tools at all (``--no-tools``).
        sources: the other agents' sessions listed beside the store, read-only.
        store: where the sessions live (a folder, or a database's URL); ``root=None``: the default folder.
        search: message search on or off, and what embeds for search by meaning.
        redact: mask secrets in what leaves a session (references, tools, hand-offs, exports).
    """

    reference: ReferenceConfig = field(default_factory=ReferenceConfig)
    compaction: ContextSettings = field(default_factory=ContextSettings)
    tools: ToolSettings = field(default_factory=ToolSettings)
    offer_tools: bool = True
    sources: tuple[ExternalSource, ...] = ()
    store: StoreLocation = field(default_factory=StoreLocation)
    search: SearchConfig = field(default_factory=SearchConfig)
    redact: bool = True

    @property
    def offered_tools(self) -> ToolSettings | None:
        """The session tools' settings when the model is offered them, else ``None``."""
        return self.tools if self.offer_tools else None


def run_config(effective: Effective, *, demo: bool = False) -> RunConfig:
    """The run's config from its settings (``demo``: list another agent's sessions only when its folder
    was given, see ``external_sources``).

    Raises:
        SessionReferenceError: a reference limit the engine refuses (its code says which).
    """
    settings = effective.settings
    policy = CompactionPolicy(
        threshold_ratio=settings.compaction_threshold,
        retain_ratio=min(settings.compaction_retain, settings.compaction_threshold / 2),
        auto=settings.auto_compact,
        summary_max_chars=settings.max_summary_chars,
    )
    return RunConfig(
        reference=ReferenceConfig.model_validate(
            {
                "max_reference_bytes": settings.max_reference_bytes,
                "max_references": settings.max_references,
                "candidate_limit": settings.candidate_limit,
            }
        ),
        compaction=ContextSettings(
            window=settings.context_window,
            memory=WindowMemory(window_memory_path()),
            policy=policy,
            max_reasoning_chars=settings.max_reasoning_chars,
        ),
        tools=ToolSettings(read_bytes=settings.tool_read_bytes, max_steps=settings.max_steps),
        offer_tools=settings.tools,
        sources=external_sources(effective, demo=demo),
        store=StoreLocation(root=settings.root, url=settings.store),
        search=SearchConfig(body_search=settings.body_search, embedder=embedder_of(settings)),
        redact=settings.redaction,
    )
