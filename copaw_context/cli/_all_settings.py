"""Every setting of a :class:`RunningConfig`, generated from its pydantic models, so that
``check-config`` can never leave one out."""

from __future__ import annotations

import json
from collections.abc import Iterator

from pydantic import BaseModel

__all__ = ["SettingRow", "setting_rows"]

SettingRow = tuple[str, str, bool]
"""(dotted path under ``running``, the value as JSON, whether the file sets it)."""


def setting_rows(model: BaseModel, prefix: str = "") -> Iterator[SettingRow]:
    """Each leaf field of ``model`` (nested sections walked in declaration order)."""
    for name in type(model).model_fields:
        value = getattr(model, name)
        path = f"{prefix}{name}"
        if isinstance(value, BaseModel):
            yield from setting_rows(value, f"{path}.")
        else:
            text = json.dumps(value, ensure_ascii=False, default=str)
            yield path, text, name in model.model_fields_set
