"""``SearchConfig``: the settings of ``SessionSearch`` (message search on or off, and what embeds for
search by meaning), checked as the contract's config errors are."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from pydantic import BaseModel, ConfigDict, model_validator

from core.errors import INVALID_CONFIG, SessionReferenceError


class SearchConfig(BaseModel):
    """Settings of ``SessionSearch``: ``bodySearch`` (``body_search``) turns message search on or off;
    ``embedder`` adds search by meaning to a folder or memory store's index.

    Raises:
        SessionReferenceError: ``SESSION_REFERENCE_INVALID_CONFIG`` naming the offending key.
    """

    model_config = ConfigDict(frozen=True, arbitrary_types_allowed=True)

    body_search: bool = True
    embedder: Any = None
    """What embeds messages and queries for search by meaning (an ``Embedder``, e.g.
    ``embedder_for(...)``; ``None``: words only). Set from Python, never from a config file."""

    @model_validator(mode="before")
    @classmethod
    def _check(cls, raw: Any) -> Any:
        if not isinstance(raw, Mapping):
            raise SessionReferenceError("search: config must be a mapping", INVALID_CONFIG)
        values: dict[str, Any] = {}
        for key, value in raw.items():
            if key == "embedder":
                if value is not None and not (hasattr(value, "embed") and hasattr(value, "name")):
                    raise SessionReferenceError("search: embedder must be an Embedder", INVALID_CONFIG)
                values["embedder"] = value
                continue
            if key not in ("body_search", "bodySearch"):
                raise SessionReferenceError(f"search: unknown config key {key!r}", INVALID_CONFIG)
            if value is None:
                continue
            if not isinstance(value, bool):
                raise SessionReferenceError("search: bodySearch must be true or false", INVALID_CONFIG)
            values["body_search"] = value
        return values
