"""Fixed values of the session-reference contract (CONTRACT §2, §7, §8, §10)."""

from __future__ import annotations

from types import MappingProxyType
from typing import Final, Mapping

MAX_REFERENCES: Final = 3
"""Hard ceiling on distinct sources in one prepared message."""

DEFAULT_CANDIDATE_LIMIT: Final = 50
"""Default number of candidates returned by ``list_candidates``."""

DEFAULT_MAX_REFERENCE_BYTES: Final = 65536
"""Default byte budget of one source's serialised data object."""

SESSION_REFERENCE_SCHEME: Final = "dsh-session:"
"""URI scheme of a session reference."""

PROMPT_REQUEST_DELIMITER: Final = "\n\n## My request:\n"
"""Text block placed between the baked prefix contexts and the user's own content."""

COMPACT_CHECKPOINT_SOURCE: Final[Mapping[str, str]] = MappingProxyType({"kind": "plugin", "plugin": "compact"})
"""Message source that marks the summary left behind by compaction (read-only)."""

SESSION_REFERENCE_SOURCE: Final[Mapping[str, str]] = MappingProxyType({"kind": "plugin", "plugin": "session-reference"})
"""Source of the aggregated context produced by ``prepare``."""

OMISSION_NOTICE_HEAD: Final = "\n[… omitted "
"""How every truncation notice starts (CONTRACT §6; hosts count cut messages by it)."""

OMISSION_NOTICE_TAIL: Final = " UTF-8 bytes …]"
"""How every truncation notice ends, after the count of UTF-8 bytes left out."""

MAX_SAFE_INTEGER: Final = 2**53 - 1
"""JavaScript's ``Number.MAX_SAFE_INTEGER``; limits and config values must not exceed it."""
