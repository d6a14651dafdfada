"""sessionref engine: reference other chat sessions as bounded, read-only, injection-safe snapshots.

A byte-compatible Python implementation of ``@deepseek-ai/dsh-session-reference``. Nothing here
imports Textual; every host (the TUI, a CLI, a test) uses the names exported below.
"""

from __future__ import annotations

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
