"""The demo's tools: deterministic large outputs (HTML pages up to 300 KB, build logs ending
in a compiler error, Chinese documents, a single-line JSON log search)."""

from __future__ import annotations

import random
from dataclasses import dataclass
from typing import Any, cast

from agentscope.permission import PermissionBehavior, PermissionDecision
from agentscope.tool import FunctionTool

from copaw_context.cli.demo.content import (
    BIG_PAGE_BYTES,
    BIG_PAGE_URL,
    BUILD_ERROR_LINE,
    MAKE_ERROR_LINE,
    build_log,
    chinese_doc,
    dir_listing,
    html_page,
    log_search,
)

__all__ = [
    "BIG_PAGE_BYTES",
    "BIG_PAGE_URL",
    "BUILD_ERROR_LINE",
    "MAKE_ERROR_LINE",
    "DemoTools",
    "make_demo_tools",
]


def _allow() -> PermissionDecision:
    return PermissionDecision(behavior=PermissionBehavior.ALLOW, message="demo tool")


@dataclass(frozen=True)
class DemoTools:
    """Deterministic demo tools; the same seed and argument give the same output."""

    seed: int = 0

    def _rng(self, *parts: str) -> random.Random:
        return random.Random("|".join((str(self.seed), *parts)))

    @property
    def tools(self) -> list[FunctionTool]:
        """The tools as `FunctionTool`s with ALLOW permission."""
        read_only = (self.fetch_page, self.read_doc, self.list_dir, self.search_logs)
        # cast: FunctionTool accepts plain str-returning functions, its annotation does not.
        tools = [
            FunctionTool(cast(Any, func), is_read_only=True, permission=_allow())
            for func in read_only
        ]
        return [*tools, FunctionTool(cast(Any, self.run_build), permission=_allow())]

    def fetch_page(self, url: str) -> str:
        """Fetch a web page and return its raw HTML.

        Args:
            url (`str`):
                The absolute URL of the page.
        """
        return html_page(self._rng("page", url), url)

    def run_build(self, target: str) -> str:
        """Run `make` for a build target and return the build log.

        Args:
            target (`str`):
                The make target, e.g. "all" or "parser".
        """
        return build_log(self._rng("build", target), target)

    def read_doc(self, name: str) -> str:
        """Read an internal design document (in Chinese) by name.

        Args:
            name (`str`):
                The document name, e.g. "部署指南".
        """
        return chinese_doc(self._rng("doc", name), name)

    def list_dir(self, path: str) -> str:
        """List the entries of a directory in the project.

        Args:
            path (`str`):
                The directory path, relative to the project root.
        """
        return dir_listing(self._rng("dir", path), path)

    def search_logs(self, query: str) -> str:
        """Search the service logs; returns the hits as one line of JSON.

        Args:
            query (`str`):
                The search query, e.g. "timeout".
        """
        return log_search(self._rng("logs", query), query)


def make_demo_tools(seed: int = 0) -> list[FunctionTool]:
    """The demo tools for `seed`, each a `FunctionTool` with ALLOW permission."""
    return DemoTools(seed).tools
