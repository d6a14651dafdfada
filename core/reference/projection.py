"""What of a source session is shown: the projected conversation (CONTRACT §5)."""

from __future__ import annotations

from typing import Any, Mapping

from core.constants import COMPACT_CHECKPOINT_SOURCE
from core.sessions import event_types as ev
from core.sessions.models import ProjectedItem, SurfaceSnapshot
from core.sessions.surface import display_prompt_content, message_content, text_of_blocks


def is_compact_checkpoint_source(source: Any) -> bool:
    """Whether a message source is the compaction marker ``{kind: "plugin", plugin: "compact"}``."""
    return (
        (type(source) is dict or isinstance(source, Mapping))
        and source.get("kind") == COMPACT_CHECKPOINT_SOURCE["kind"]
        and source.get("plugin") == COMPACT_CHECKPOINT_SOURCE["plugin"]
    )


_PROJECTED = frozenset({ev.ASSISTANT_MESSAGE, ev.USER_MESSAGE, ev.STEERING_MESSAGE})
"""The event types a projection reads."""


def _is_user_source(source: Any) -> bool:
    return (type(source) is dict or isinstance(source, Mapping)) and source.get("kind") == "user"


def project_conversation(snapshot: SurfaceSnapshot) -> list[ProjectedItem]:
    """Project a folded surface into ``{role, text, checkpoint}`` items.

    Direct user prompts (display content only, so baked snapshots never propagate), compact
    checkpoints and assistant text are kept; plugin-injected context, tools, reasoning and empty
    items are dropped.
    """
    items: list[ProjectedItem] = []
    for event in snapshot.events:
        event_type = event.type
        if event_type not in _PROJECTED:
            continue  # (a tool's result, however large, is never decoded for a projection)
        data = event.data
        if event_type == ev.ASSISTANT_MESSAGE:
            text = text_of_blocks(message_content(data))
            if text:
                items.append(ProjectedItem("assistant", text, False))
        elif event_type == ev.USER_MESSAGE:
            source = data.get("source")
            checkpoint = is_compact_checkpoint_source(source)
            if checkpoint or _is_user_source(source):
                text = text_of_blocks(display_prompt_content(data))
                if text:
                    items.append(ProjectedItem("user", text, checkpoint))
        elif event_type == ev.STEERING_MESSAGE and _is_user_source(data.get("source")):
            text = text_of_blocks(display_prompt_content(data))
            if text:
                items.append(ProjectedItem("user", text, False))
    return items
