"""copaw-context's QwenPaw plugin (backend entry; copied to QwenPaw's ``plugins/copaw-context``
by ``copaw-context qwenpaw install``). The code lives in the installed package."""

from copaw_context.qwenpaw.plugin_entry import plugin

__all__ = ["plugin"]
