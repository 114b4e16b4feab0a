"""The fenced code blocks of README.md, with the section each sits in."""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
README = ROOT / "README.md"

_FENCE = re.compile(r"^```(\w*)\n(.*?)^```", re.S | re.M)


@dataclass(frozen=True)
class Block:
    """One fenced block: its language tag ("" for none), text, section and first line."""

    language: str
    text: str
    section: str
    line: int

    @property
    def name(self) -> str:
        return f"README.md:{self.line} ({self.section})"


def readme_blocks(path: Path = README) -> list[Block]:
    text = path.read_text(encoding="utf-8")
    blocks = []
    for match in _FENCE.finditer(text):
        before = text[: match.start()]
        headings = re.findall(r"^## (.+)$", before, re.M)
        line = before.count("\n") + 2  # the first line inside the fence
        blocks.append(Block(match.group(1), match.group(2), headings[-1] if headings else "", line))
    return blocks
