"""Masking a session's projected conversation before it leaves its owner (a reference, the session
tools, ``sessionref mcp``, an export): each message's secrets, and a key split over two messages
(its halves at the end of one and the start of the next, written without a space between).

Only what can leave is looked at: ``mask_conversation`` takes the positions to mask (a reference's
budget reaches only the newest messages and the checkpoints; a page, its range), and finds the
secrets of many messages in one pass over them joined (``BATCH``).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass

from core.secrets.finder import Secret, find_secrets, mask_secrets
from core.sessions.models import ProjectedItem

JOIN_REACH = 200
"""Characters either side of a boundary between two messages looked at for a split key."""
SPLIT_HALF = 6
"""The least of a key a message must end with for the boundary to be looked at."""
_KEY_CHARACTERS = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_+/=")
"""What a key is written in: a boundary between two of these may split one."""
SEPARATOR = "\n\x1e\n"
"""Between two messages joined for one pass (a line of its own: no pattern matches across it)."""
BATCH = 256
"""Messages joined for one pass."""


@dataclass(frozen=True, slots=True)
class MaskedConversation:
    """The conversation with its secrets masked (in the positions asked for), and per message how
    many of each kind were."""

    items: list[ProjectedItem]
    masked: dict[int, Counter[str]]
    """Position -> kinds masked there (only positions with a secret)."""

    def kinds(self, positions: Iterable[int] | None = None) -> Counter[str]:
        """How many secrets of each kind were masked (in ``positions``, else in all)."""
        total: Counter[str] = Counter()
        chosen = self.masked.keys() if positions is None else positions
        for position in chosen:
            total.update(self.masked.get(position, ()))
        return total


def _find_many(texts: Sequence[str]) -> list[list[Secret]]:
    """Each text's secrets, found in passes over ``BATCH`` texts joined."""
    found: list[list[Secret]] = [[] for _ in texts]
    for first in range(0, len(texts), BATCH):
        chunk = texts[first : first + BATCH]
        starts = []
        position = 0
        for text in chunk:
            starts.append(position)
            position += len(text) + len(SEPARATOR)
        for secret in find_secrets(SEPARATOR.join(chunk)):
            # The text the secret starts in (a private key's reach may run past its end: cut there).
            index = max(0, _rightmost(starts, secret.start))
            start = secret.start - starts[index]
            end = min(secret.end - starts[index], len(chunk[index]))
            if end > start:
                found[first + index].append(Secret(start, end, secret.kind))
    return found


def _rightmost(starts: list[int], position: int) -> int:
    low, high = 0, len(starts)
    while low < high:
        middle = (low + high) // 2
        if starts[middle] <= position:
            low = middle + 1
        else:
            high = middle
    return low - 1


def _split_keys(items: Sequence[ProjectedItem], positions: Sequence[int]) -> list[tuple[int, Secret, Secret]]:
    """Secrets that span the boundary between two neighbouring messages (both among ``positions``):
    ``(position, its part there, its part in the next message)``. One pass over every boundary."""
    chosen = set(positions)
    joins: list[tuple[int, str, str]] = []
    for index in positions:
        if index + 1 not in chosen:
            continue
        before, after = items[index].text, items[index + 1].text
        if before and after and before[-1] in _KEY_CHARACTERS and after[0] in _KEY_CHARACTERS:
            run = 1  # the key-like word the first message ends with: a half worth joining is not short
            while run < SPLIT_HALF and run < len(before) and before[-run - 1] in _KEY_CHARACTERS:
                run += 1
            if run >= SPLIT_HALF:
                joins.append((index, before[-JOIN_REACH:], after[:JOIN_REACH]))
    if not joins:
        return []
    found: list[tuple[int, Secret, Secret]] = []
    for position, secrets in enumerate(_find_many([tail + head for _index, tail, head in joins])):
        index, tail, _head = joins[position]
        before = items[index].text
        for secret in secrets:
            if secret.start < len(tail) < secret.end:
                first = Secret(len(before) - len(tail) + secret.start, len(before), secret.kind)
                found.append((index, first, Secret(0, secret.end - len(tail), secret.kind)))
    return found


def _overlaps(part: Secret, secrets: list[Secret]) -> bool:
    return any(secret.start < part.end and part.start < secret.end for secret in secrets)


def mask_conversation(items: Sequence[ProjectedItem], positions: Iterable[int] | None = None) -> MaskedConversation:
    """``items`` with the secrets of those at ``positions`` (default: all) masked; the others are
    returned as they are (the caller sends none of them)."""
    chosen = sorted(set(range(len(items)) if positions is None else positions))
    secrets = dict(zip(chosen, _find_many([items[index].text for index in chosen]), strict=True))
    masked: dict[int, Counter[str]] = {}
    for index, found in secrets.items():
        if found:
            masked[index] = Counter(secret.kind for secret in found)
    for index, first, second in _split_keys(items, chosen):
        new = [(at, part) for at, part in ((index, first), (index + 1, second)) if not _overlaps(part, secrets[at])]
        for at, part in new:
            secrets[at] = sorted([*secrets[at], part], key=lambda secret: secret.start)
        if len(new) == 2:
            masked.setdefault(index, Counter())[first.kind] += 1  # one key, in two halves
        elif new:
            masked.setdefault(new[0][0], Counter())
    result = list(items)
    for index, found in secrets.items():
        if found:
            result[index] = items[index]._replace(text=mask_secrets(items[index].text, found).text)
    return MaskedConversation(result, masked)


def mask_for_budget(
    items: Sequence[ProjectedItem], size: Callable[[ProjectedItem], int], budget: int
) -> MaskedConversation:
    """Mask what a reference of ``budget`` bytes can send: every checkpoint, and the newest messages
    until, masked, their sizes (``size``: what the budget counts for each, or a lower bound of it)
    pass it. Masking can shorten a message, so the window grows until the masked ones alone overflow
    (or all are masked)."""
    count = len(items)
    checkpoints = [index for index, item in enumerate(items) if item.checkpoint]
    total, window = 0, 0
    while window < count and total <= budget:  # first guess: by the sizes as written
        window += 1
        total += size(items[count - window])
    while True:
        newest = range(count - window, count)
        masked = mask_conversation(items, [*checkpoints, *newest])
        total = 0
        for index in newest:
            item = masked.items[index]
            total += size(item)
        if window >= count or total > budget:
            return masked
        window = min(count, window * 2)


def describe_secrets(masked: dict[int, Counter[str]]) -> str:
    """Which kinds of secret, in which messages (never a value): ``anthropic-key (message 3),
    aws-secret-key ×2 (messages 5, 7)``; positions as ``read_session`` counts them."""
    where: dict[str, list[int]] = {}
    counts: Counter[str] = Counter()
    for position in sorted(masked):
        for kind, number in masked[position].items():
            where.setdefault(kind, []).append(position)
            counts[kind] += number
    parts = []
    for kind in sorted(where):
        times = f" ×{counts[kind]}" if counts[kind] > 1 else ""
        places = where[kind]
        label = "message" if len(places) == 1 else "messages"
        parts.append(f"{kind}{times} ({label} {', '.join(map(str, places))})")
    return ", ".join(parts)
