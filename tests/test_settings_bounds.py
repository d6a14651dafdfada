"""A setting's value from a flag or the environment is checked without pydantic (``within_bounds``:
``sessionref mcp`` and ``--help`` never import it); the config file's keys are checked by the schema
pydantic makes of the declarations. Both say the same of every value, for every setting."""

from __future__ import annotations

from typing import Annotated, Any

import pytest
from pydantic import ConfigDict, TypeAdapter, ValidationError

from core.settings.config_file import _bounded, within_bounds
from core.settings.declared import declaration_of, declarations

VALUES: list[Any] = [
    None, True, False, 0, 1, 2, 3, 4, -1, 1023, 1024, 65536, 0.0, 0.5, 1.0, 1.5, -0.5, float("inf"),
    "", "x", "echo", "openai", "https://api.example.com", "ftp://x", "http://", "MY_KEY", "1BAD",
    "postgresql://db/x", "host=db", "postgres://u@h/d", "/home/me/store", "  ", "ab-c",
]  # fmt: skip


@pytest.mark.parametrize("name", [name for name, _default, _declared in declarations()])
def test_the_plain_check_says_what_the_file_s_schema_says(name: str) -> None:
    kind, bounds = _bounded(name, declaration_of(name))
    schema: Any = TypeAdapter(Annotated[kind, bounds], config=ConfigDict(strict=True))
    for value in VALUES:
        try:
            schema.validate_python(value)
            allowed = True
        except ValidationError:
            allowed = False
        assert within_bounds(name, value) == allowed, (name, value)
