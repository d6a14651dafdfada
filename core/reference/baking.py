"""Baking prompt-prefix contexts into the prompt event itself (CONTRACT §8)."""

from __future__ import annotations

from typing import Any, Mapping, Sequence

from core.constants import PROMPT_REQUEST_DELIMITER
from core.serialization import plain_json_copy
from core.sessions.models import BakedPrompt, HookContext
from core.sessions.wire_shapes import ContentBlock

PROMPT_PREFIX_PLACEMENT = "prompt-prefix"
"""The placement of contexts that are baked into the prompt rather than sent on their own."""


def bake_prompt_message(
    content: list[ContentBlock],
    contexts: Sequence[HookContext],
    source: Mapping[str, Any] | None = None,
) -> BakedPrompt:
    """Build the ``user/message`` payload (``steering/message`` minus ``turn``) for a prompt.

    With at least one prompt-prefix context, the model-visible ``content`` is every prefix context's
    blocks, the ``## My request:`` delimiter, then the prompt; the model-hidden ``envelope`` keeps
    the prompt as typed and each prefix context's source and meta for replay. Other contexts are
    returned in ``separate_contexts`` to be appended as their own messages.

    Raises:
        NotPlainJsonError: ``content`` or a context is not plain JSON.
    """
    own = plain_json_copy(list(content), "$.content")
    prompt_source = plain_json_copy(dict(source) if source is not None else {"kind": "user"}, "$.source")
    prefix = [context for context in contexts if context.placement == PROMPT_PREFIX_PLACEMENT]
    separate = [context for context in contexts if context.placement != PROMPT_PREFIX_PLACEMENT]
    if not prefix:
        return BakedPrompt(data={"content": own, "source": prompt_source}, separate_contexts=separate)
    baked: list[dict[str, Any]] = []
    prefix_contexts: list[dict[str, Any]] = []
    for context in prefix:
        baked.extend(plain_json_copy(context.content, "$.context.content"))
        entry: dict[str, Any] = {"source": plain_json_copy(context.source, "$.context.source")}
        if context.meta is not None:
            entry["meta"] = plain_json_copy(context.meta, "$.context.meta")
        prefix_contexts.append(entry)
    baked.append({"type": "text", "text": PROMPT_REQUEST_DELIMITER})
    baked.extend(plain_json_copy(own, "$.content"))
    data = {
        "content": baked,
        "source": prompt_source,
        "envelope": {"displayContent": own, "prefixContexts": prefix_contexts},
    }
    return BakedPrompt(data=data, separate_contexts=separate)
