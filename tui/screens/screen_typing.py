"""The chat screen's parts are mixed into ``ChatScreen``; for the type checker each is the Screen it
is mixed into (so ``notify``, ``query_one``, ``app`` type-check), at run time a plain class (so no
second Screen base reaches the screen's MRO)."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from textual.screen import Screen

    MixedIntoScreen = Screen[None]
else:
    MixedIntoScreen = object

__all__ = ["MixedIntoScreen"]
