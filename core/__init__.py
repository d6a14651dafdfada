"""sessionref engine: reference other chat sessions as bounded, read-only, injection-safe snapshots.

A byte-compatible Python implementation of ``@deepseek-ai/dsh-session-reference``. Nothing here
imports Textual; every host (the TUI, a CLI, a test) uses the names exported below.

Importing ``core`` costs next to nothing: each name is imported from its module the first time it
is used (PEP 562), so a command that needs a little of the engine never loads all of it (the
secret rules, the model clients, the search machinery).
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from core.abort import AbortController, AbortSignal
    from core.agent.chat_models import ChatModel, EchoModel, ModelError
    from core.agent.loop import AgentLoop
    from core.agent.openai_model import OpenAICompatibleModel
    from core.constants import (
        COMPACT_CHECKPOINT_SOURCE,
        DEFAULT_CANDIDATE_LIMIT,
        DEFAULT_MAX_REFERENCE_BYTES,
        MAX_REFERENCES,
        PROMPT_REQUEST_DELIMITER,
        SESSION_REFERENCE_SCHEME,
    )
    from core.errors import ReferenceCancelled, SessionQueryError, SessionReferenceError, SessionrefError
    from core.folder.jsonl_store import JsonlSessionStore
    from core.reference.baking import bake_prompt_message
    from core.reference.projection import project_conversation
    from core.reference.retention import retain_head_tail, retain_referenced_session, truncate_with_notice
    from core.reference.service import SessionReferenceService
    from core.reference.uri import (
        ParsedReferenceText,
        ReferenceInput,
        decode_session_reference_uri,
        encode_session_reference_uri,
        format_session_reference_mention,
        parse_session_reference_text,
    )
    from core.search.body_index import INDEX_FILE_NAME, BodyIndex, index_path_beside
    from core.search.finder import SearchConfig, SearchHit, SearchResult, SessionSearch
    from core.search.index_values import (
        IndexedSession,
        IndexStatus,
        IndexUnavailable,
        SyncReport,
        indexed_session,
        revision_key,
    )
    from core.search.matching import MIN_BODY_QUERY, Snippet
    from core.search.message_index import MessageIndex
    from core.serialization import js_json_stringify, stringify_tag_safe_json, utf8_length
    from core.sessions.models import (
        BakedPrompt,
        Candidate,
        HookContext,
        PreparedMessage,
        ProjectedItem,
        ReferenceConfig,
        RetainedSource,
        SessionEvent,
        SessionHeader,
        SessionRecord,
        StoredSession,
        StoreProblem,
        SurfaceSnapshot,
        TitleSnapshot,
    )
    from core.sessions.query import SessionQuery
    from core.sessions.session import MemorySessionStore, Session
    from core.sessions.sources.aider import AiderSource
    from core.sessions.sources.claude import ClaudeCodeSource
    from core.sessions.sources.cline import ClineSource
    from core.sessions.sources.codex import CodexSource
    from core.sessions.sources.continue_cli import ContinueSource
    from core.sessions.sources.copilot import CopilotCliSource
    from core.sessions.sources.gemini import GeminiCliSource
    from core.sessions.sources.hermes import HermesSource
    from core.sessions.sources.merged import MergedSessionQuery
    from core.sessions.sources.opencode import KiloSource, OpenCodeSource
    from core.sessions.sources.openhands import OpenHandsSource
    from core.sessions.sources.pi import PiSource
    from core.sessions.sources.qwen import QwenCodeSource
    from core.sessions.sources.vibe import VibeSource
    from core.sessions.surface import derive_messages, display_prompt_content, fold_surface

_MODULES: dict[str, str] = {
    "AbortController": "core.abort",
    "AbortSignal": "core.abort",
    "ChatModel": "core.agent.chat_models",
    "EchoModel": "core.agent.chat_models",
    "ModelError": "core.agent.chat_models",
    "AgentLoop": "core.agent.loop",
    "OpenAICompatibleModel": "core.agent.openai_model",
    "COMPACT_CHECKPOINT_SOURCE": "core.constants",
    "DEFAULT_CANDIDATE_LIMIT": "core.constants",
    "DEFAULT_MAX_REFERENCE_BYTES": "core.constants",
    "MAX_REFERENCES": "core.constants",
    "PROMPT_REQUEST_DELIMITER": "core.constants",
    "SESSION_REFERENCE_SCHEME": "core.constants",
    "ReferenceCancelled": "core.errors",
    "SessionQueryError": "core.errors",
    "SessionReferenceError": "core.errors",
    "SessionrefError": "core.errors",
    "JsonlSessionStore": "core.folder.jsonl_store",
    "bake_prompt_message": "core.reference.baking",
    "project_conversation": "core.reference.projection",
    "retain_head_tail": "core.reference.retention",
    "retain_referenced_session": "core.reference.retention",
    "truncate_with_notice": "core.reference.retention",
    "SessionReferenceService": "core.reference.service",
    "ParsedReferenceText": "core.reference.uri",
    "ReferenceInput": "core.reference.uri",
    "decode_session_reference_uri": "core.reference.uri",
    "encode_session_reference_uri": "core.reference.uri",
    "format_session_reference_mention": "core.reference.uri",
    "parse_session_reference_text": "core.reference.uri",
    "INDEX_FILE_NAME": "core.search.body_index",
    "BodyIndex": "core.search.body_index",
    "index_path_beside": "core.search.body_index",
    "SearchConfig": "core.search.finder",
    "SearchHit": "core.search.finder",
    "SearchResult": "core.search.finder",
    "SessionSearch": "core.search.finder",
    "IndexedSession": "core.search.index_values",
    "IndexStatus": "core.search.index_values",
    "IndexUnavailable": "core.search.index_values",
    "SyncReport": "core.search.index_values",
    "indexed_session": "core.search.index_values",
    "revision_key": "core.search.index_values",
    "MIN_BODY_QUERY": "core.search.matching",
    "Snippet": "core.search.matching",
    "MessageIndex": "core.search.message_index",
    "js_json_stringify": "core.serialization",
    "stringify_tag_safe_json": "core.serialization",
    "utf8_length": "core.serialization",
    "BakedPrompt": "core.sessions.models",
    "Candidate": "core.sessions.models",
    "HookContext": "core.sessions.models",
    "PreparedMessage": "core.sessions.models",
    "ProjectedItem": "core.sessions.models",
    "ReferenceConfig": "core.sessions.models",
    "RetainedSource": "core.sessions.models",
    "SessionEvent": "core.sessions.models",
    "SessionHeader": "core.sessions.models",
    "SessionRecord": "core.sessions.models",
    "StoredSession": "core.sessions.models",
    "StoreProblem": "core.sessions.models",
    "SurfaceSnapshot": "core.sessions.models",
    "TitleSnapshot": "core.sessions.models",
    "SessionQuery": "core.sessions.query",
    "MemorySessionStore": "core.sessions.session",
    "Session": "core.sessions.session",
    "AiderSource": "core.sessions.sources.aider",
    "ClaudeCodeSource": "core.sessions.sources.claude",
    "ClineSource": "core.sessions.sources.cline",
    "CodexSource": "core.sessions.sources.codex",
    "ContinueSource": "core.sessions.sources.continue_cli",
    "CopilotCliSource": "core.sessions.sources.copilot",
    "GeminiCliSource": "core.sessions.sources.gemini",
    "HermesSource": "core.sessions.sources.hermes",
    "MergedSessionQuery": "core.sessions.sources.merged",
    "KiloSource": "core.sessions.sources.opencode",
    "OpenCodeSource": "core.sessions.sources.opencode",
    "OpenHandsSource": "core.sessions.sources.openhands",
    "PiSource": "core.sessions.sources.pi",
    "QwenCodeSource": "core.sessions.sources.qwen",
    "VibeSource": "core.sessions.sources.vibe",
    "derive_messages": "core.sessions.surface",
    "display_prompt_content": "core.sessions.surface",
    "fold_surface": "core.sessions.surface",
}
"""Where each exported name lives."""

__all__ = [
    "COMPACT_CHECKPOINT_SOURCE",
    "DEFAULT_CANDIDATE_LIMIT",
    "DEFAULT_MAX_REFERENCE_BYTES",
    "INDEX_FILE_NAME",
    "MAX_REFERENCES",
    "MIN_BODY_QUERY",
    "PROMPT_REQUEST_DELIMITER",
    "SESSION_REFERENCE_SCHEME",
    "AbortController",
    "AbortSignal",
    "AgentLoop",
    "AiderSource",
    "BakedPrompt",
    "BodyIndex",
    "Candidate",
    "ChatModel",
    "ClaudeCodeSource",
    "ClineSource",
    "CodexSource",
    "ContinueSource",
    "CopilotCliSource",
    "EchoModel",
    "GeminiCliSource",
    "HermesSource",
    "HookContext",
    "IndexStatus",
    "IndexUnavailable",
    "IndexedSession",
    "JsonlSessionStore",
    "KiloSource",
    "MemorySessionStore",
    "MergedSessionQuery",
    "MessageIndex",
    "ModelError",
    "OpenAICompatibleModel",
    "OpenCodeSource",
    "OpenHandsSource",
    "ParsedReferenceText",
    "PiSource",
    "PreparedMessage",
    "ProjectedItem",
    "QwenCodeSource",
    "ReferenceCancelled",
    "ReferenceConfig",
    "ReferenceInput",
    "RetainedSource",
    "SearchConfig",
    "SearchHit",
    "SearchResult",
    "Session",
    "SessionEvent",
    "SessionHeader",
    "SessionQuery",
    "SessionQueryError",
    "SessionRecord",
    "SessionReferenceError",
    "SessionReferenceService",
    "SessionSearch",
    "SessionrefError",
    "Snippet",
    "StoreProblem",
    "StoredSession",
    "SurfaceSnapshot",
    "SyncReport",
    "TitleSnapshot",
    "VibeSource",
    "bake_prompt_message",
    "decode_session_reference_uri",
    "derive_messages",
    "display_prompt_content",
    "encode_session_reference_uri",
    "fold_surface",
    "format_session_reference_mention",
    "index_path_beside",
    "indexed_session",
    "js_json_stringify",
    "parse_session_reference_text",
    "project_conversation",
    "retain_head_tail",
    "retain_referenced_session",
    "revision_key",
    "stringify_tag_safe_json",
    "truncate_with_notice",
    "utf8_length",
]


def __getattr__(name: str) -> Any:
    module = _MODULES.get(name)
    if module is None:
        raise AttributeError(f"module 'core' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value  # (the next use is a plain lookup)
    return value


def __dir__() -> list[str]:
    return sorted(__all__)
