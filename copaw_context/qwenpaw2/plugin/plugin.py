"""copaw-context's QwenPaw 2.2 plugin (backend entry; copied to QwenPaw's
``plugins/copaw-context`` by ``copaw-context qwenpaw install``). The code lives in the
installed package."""

from copaw_context.qwenpaw2.plugin_entry import plugin

__all__ = ["plugin"]
