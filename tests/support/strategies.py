"""Hypothesis strategies for JavaScript strings (any sequence of UTF-16 code units)."""

from __future__ import annotations

import struct

from hypothesis import strategies as st


def from_units(units: list[int]) -> str:
    """The Python string JavaScript means by these UTF-16 code units (pairs joined, lone kept)."""
    return struct.pack(f"<{len(units)}H", *units).decode("utf-16-le", "surrogatepass")


_unit = st.one_of(
    st.integers(0x20, 0x7E),
    st.integers(0, 0xFFFF),
    st.sampled_from([0x5C, 0x5D, 0x5B, 0x28, 0x29, 0x40, 0x0A, 0x0D, 0x2028, 0x3C, 0xD800, 0xDC00, 0xD83D, 0xDE00]),
)

js_strings = st.lists(_unit, max_size=40).map(from_units)
"""Arbitrary JavaScript strings, lone surrogates and pairs included."""
