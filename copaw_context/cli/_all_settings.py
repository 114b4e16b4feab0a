"""Every setting of a :class:`RunningConfig`, generated from its pydantic models, so that
``check-config`` can never leave one out."""

from __future__ import annotations

from collections.abc import Iterator

from pydantic import BaseModel

from copaw_context.core.errors import json_text
from copaw_context.core.store.lines import redact

__all__ = ["SettingRow", "json_text", "setting_rows"]

SettingRow = tuple[str, str, bool]
"""(dotted path under ``running``, the value as JSON, whether the file sets it)."""


def setting_rows(model: BaseModel, prefix: str = "") -> Iterator[SettingRow]:
    """Each leaf field of ``model`` (nested sections walked in declaration order); a DSN is
    shown without its password."""
    for name in type(model).model_fields:
        value = getattr(model, name)
        path = f"{prefix}{name}"
        if isinstance(value, BaseModel):
            yield from setting_rows(value, f"{path}.")
        else:
            shown = redact(value) if name == "dsn" and isinstance(value, str) else value
            yield path, json_text(shown), name in model.model_fields_set
