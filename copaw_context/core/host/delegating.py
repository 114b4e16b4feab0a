"""An object put in front of one of its host's objects (AgentScope 1.x's formatter and model,
which have no hook around them): what it does not keep itself is the host object's."""

from __future__ import annotations

from typing import Any, ClassVar

__all__ = ["Delegating"]


class Delegating:
    """Reads and writes every attribute it does not keep (:attr:`OWN`) on :attr:`inner`, so
    a flag the host sets on its formatter or model (QwenPaw's
    ``_qwenpaw_force_strip_media``, ReActAgent's ``model.stream = False``) reaches the real
    one."""

    OWN: ClassVar[frozenset[str]] = frozenset({"inner"})
    """The attributes this object keeps itself."""
    inner: Any

    def __init__(self, inner: Any, **own: Any) -> None:
        object.__setattr__(self, "inner", inner)
        for name, value in own.items():
            object.__setattr__(self, name, value)

    def __getattr__(self, name: str) -> Any:
        if name in type(self).OWN:  # not set yet (e.g. while copying)
            raise AttributeError(name)
        return getattr(self.inner, name)

    def __setattr__(self, name: str, value: Any) -> None:
        if name in type(self).OWN:
            object.__setattr__(self, name, value)
        else:
            setattr(self.inner, name, value)
