"""One error base: every error of the engine is a ``SessionrefError(message, code)``, and a
cancellation is its own kind (still the contract's ``SESSION_REFERENCE_CANCELLED``)."""

from __future__ import annotations

import asyncio

import pytest

from core import AbortController, MemorySessionStore, ReferenceCancelled, SessionReferenceService, SessionrefError
from core.agent.chat_models import ModelError
from core.agent.compaction import CompactionError
from core.errors import CANCELLED, SessionQueryError, SessionReferenceError
from core.search.index_values import IndexUnavailable
from core.settings import ConfigError


@pytest.mark.parametrize(
    "error",
    [
        SessionReferenceError("too many", "SESSION_REFERENCE_TOO_MANY"),
        SessionQueryError("gone", "SESSION_QUERY_SESSION_NOT_FOUND"),
        ModelError("refused", "MODEL_UNAUTHORIZED"),
        CompactionError("nothing to compact", "COMPACTION_NOTHING"),
        IndexUnavailable("disk full", "SEARCH_INDEX_DISK_FULL"),
        ConfigError("bad key"),
        ReferenceCancelled("stopped"),
    ],
)
def test_every_error_is_one_base_with_message_then_code(error: SessionrefError) -> None:
    assert isinstance(error, SessionrefError)
    assert str(error) == error.message and error.code.isupper() and "_" in error.code


def test_a_cancelled_preparation_is_its_own_kind_with_the_contract_code() -> None:
    controller = AbortController()
    controller.abort("stop")
    store = MemorySessionStore()
    target = store.create("me")
    store.create("other")
    with pytest.raises(ReferenceCancelled) as cancelled:
        asyncio.run(SessionReferenceService(store).prepare(target, [], [{"sessionId": "other"}], controller.signal))
    assert isinstance(cancelled.value, SessionReferenceError) and cancelled.value.code == CANCELLED
