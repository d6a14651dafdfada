"""sessionref engine: reference other chat sessions as bounded, read-only, injection-safe snapshots.

A byte-compatible Python implementation of ``@deepseek-ai/dsh-session-reference``. Nothing here
imports Textual; every host (the TUI, a CLI, a test) uses the names exported below.
"""

from __future__ import annotations

from .abort import AbortController, AbortSignal
from .agent import AgentLoop
from .baking import bake_prompt_message
from .body_index import (
    INDEX_FILE_NAME,
    MIN_BODY_QUERY,
    BodyIndex,
    IndexedSession,
    IndexStatus,
    IndexUnavailable,
    Snippet,
    SyncReport,
    index_path_beside,
    indexed_session,
    revision_key,
)
from .chat_models import ChatModel, EchoModel, ModelError, OpenAICompatibleModel
from .constants import (
    COMPACT_CHECKPOINT_SOURCE,
    DEFAULT_CANDIDATE_LIMIT,
    DEFAULT_MAX_REFERENCE_BYTES,
    MAX_REFERENCES,
    PROMPT_REQUEST_DELIMITER,
    SESSION_REFERENCE_SCHEME,
)
from .errors import SessionQueryError, SessionReferenceError
from .external import ClaudeCodeSource, CodexSource, MergedSessionQuery
from .jsonl_store import JsonlSessionStore, StoredSession, StoreProblem
from .models import (
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
    SurfaceSnapshot,
    TitleSnapshot,
)
from .projection import project_conversation
from .query import SessionQuery
from .retention import retain_head_tail, retain_referenced_session, truncate_with_notice
from .search import SearchConfig, SearchHit, SearchResult, SessionSearch
from .serialization import js_json_stringify, stringify_tag_safe_json, utf8_length
from .service import SessionReferenceService
from .session import MemorySessionStore, Session
from .surface import derive_messages, display_prompt_content, fold_surface
from .uri import (
    ParsedReferenceText,
    ReferenceInput,
    decode_session_reference_uri,
    encode_session_reference_uri,
    format_session_reference_mention,
    parse_session_reference_text,
)

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
    "BakedPrompt",
    "BodyIndex",
    "Candidate",
    "ChatModel",
    "ClaudeCodeSource",
    "CodexSource",
    "EchoModel",
    "HookContext",
    "IndexStatus",
    "IndexUnavailable",
    "IndexedSession",
    "JsonlSessionStore",
    "MemorySessionStore",
    "MergedSessionQuery",
    "ModelError",
    "OpenAICompatibleModel",
    "ParsedReferenceText",
    "PreparedMessage",
    "ProjectedItem",
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
    "Snippet",
    "StoreProblem",
    "StoredSession",
    "SurfaceSnapshot",
    "SyncReport",
    "TitleSnapshot",
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
