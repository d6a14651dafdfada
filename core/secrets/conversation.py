"""Masking a session's projected conversation before it leaves its owner (a reference, the session
tools, ``sessionref mcp``, an export): each message's secrets, and a key split over two messages
(its halves at the end of one and the start of the next, written without a space between).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass

from core.secrets.finder import Secret, find_secrets, mask_secrets
from core.sessions.models import ProjectedItem

JOIN_REACH = 300
"""Characters either side of a boundary between two messages looked at for a split key."""


@dataclass(frozen=True, slots=True)
class MaskedConversation:
    """The conversation with its secrets masked, and how many of each kind were."""

    items: list[ProjectedItem]
    kinds: Counter[str]

    @property
    def count(self) -> int:
        """How many secrets were masked."""
        return sum(self.kinds.values())


def _split_keys(items: Sequence[ProjectedItem]) -> list[tuple[int, Secret, Secret]]:
    """Secrets that span the boundary between two neighbouring messages: ``(index, its part in
    message index, its part in message index + 1)``."""
    found: list[tuple[int, Secret, Secret]] = []
    for index in range(len(items) - 1):
        before, after = items[index].text, items[index + 1].text
        if not before or not after or before[-1].isspace() or after[0].isspace():
            continue
        tail, head = before[-JOIN_REACH:], after[:JOIN_REACH]
        for secret in find_secrets(tail + head):
            if secret.start < len(tail) < secret.end:
                offset = len(before) - len(tail)
                first = Secret(offset + secret.start, len(before), secret.kind)
                found.append((index, first, Secret(0, secret.end - len(tail), secret.kind)))
    return found


def _overlaps(part: Secret, secrets: list[Secret]) -> bool:
    return any(secret.start < part.end and part.start < secret.end for secret in secrets)


def mask_conversation(items: Sequence[ProjectedItem]) -> MaskedConversation:
    """``items`` with every secret masked (the same items when there is none)."""
    secrets = [find_secrets(item.text) for item in items]
    kinds: Counter[str] = Counter(secret.kind for found in secrets for secret in found)
    for index, first, second in _split_keys(items):
        new = [(at, part) for at, part in ((index, first), (index + 1, second)) if not _overlaps(part, secrets[at])]
        for at, part in new:
            secrets[at] = sorted([*secrets[at], part], key=lambda secret: secret.start)
        if len(new) == 2:
            kinds[first.kind] += 1  # one key, in two halves
    masked = [
        item if not found else item._replace(text=mask_secrets(item.text, found).text)
        for item, found in zip(items, secrets, strict=True)
    ]
    return MaskedConversation(masked, kinds)
