"""Every setting of a :class:`RunningConfig`, generated from its pydantic models, so that
``check-config`` can never leave one out."""

from __future__ import annotations

import json
import math
from collections.abc import Iterator
from typing import Any

from pydantic import BaseModel

__all__ = ["SettingRow", "json_text", "setting_rows"]

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
            yield path, json_text(value), name in model.model_fields_set


def json_text(value: Any) -> str:
    """``value`` as an agent.json spells it: ``null``, ``true``, ``"text"``, and ``NaN`` or
    ``Infinity`` for the non-finite numbers Python's JSON reader accepts (never ``nan``)."""
    if isinstance(value, float) and not math.isfinite(value):
        return "NaN" if math.isnan(value) else "Infinity" if value > 0 else "-Infinity"
    try:
        return json.dumps(value, ensure_ascii=False, allow_nan=False, default=str)
    except (TypeError, ValueError):
        return str(value)
