"""The model instructions of long-term memory, in English and Chinese.

``SILENT`` is the whole answer a model gives when nothing is worth keeping.
"""

from __future__ import annotations

from typing import Literal

__all__ = [
    "SILENT",
    "consolidation_request",
    "consolidation_system_prompt",
    "summariser_request",
    "summariser_system_prompt",
]

SILENT = "[SILENT]"

_SUMMARISER_EN = """You keep the long-term memory of an AI agent. Messages just left the agent's
context (they are archived verbatim; you are not summarising the conversation). Extract only
what will still matter in later sessions:

1. Preferences and habits of the user: how they like things done, tools, languages, styles,
   names, constraints they stated, things they dislike.
2. Try-error lessons: an attempt that failed, why, and what fixed it (commands, versions,
   settings, paths), so the agent does not repeat the mistake.

Rules:
- Write concise Markdown bullets, one fact per bullet, each starting with "- Preference: "
  or "- Lesson: ". Be specific (names, commands, values); no vague statements.
- Do not repeat anything the current MEMORY.md already says; do not record task progress,
  greetings, or facts about the current task that will not matter later.
- Never record secrets (passwords, keys, tokens).
- If nothing is worth keeping, answer exactly [SILENT] and nothing else."""

_SUMMARISER_ZH = """你负责维护一个 AI 智能体的长期记忆。下面这些消息刚刚离开智能体的
上下文（原文已存档，你不是在总结对话）。只提取以后的会话仍然用得上的内容：

1. 用户的偏好和习惯：喜欢的做事方式、工具、语言、风格、称呼、提出的约束、不喜欢的东西。
2. 试错经验：哪次尝试失败了、原因是什么、最后怎么解决的（命令、版本、配置、路径），
   让智能体不再犯同样的错误。

规则：
- 用简洁的 Markdown 列表，每条一个事实，以 "- 偏好：" 或 "- 经验：" 开头。
  写具体（名称、命令、数值），不要写空泛的话。
- 当前 MEMORY.md 已有的内容不要重复；不要记录任务进度、寒暄或以后用不上的当前任务细节。
- 不要记录任何密钥、密码、令牌。
- 如果没有值得保留的内容，只回答 [SILENT]，不要写别的。"""

_CONSOLIDATION_EN = """You maintain MEMORY.md, the long-term memory of an AI agent: lasting facts
about the user and the work (preferences, habits, project facts, lessons learned), in
"## " sections of "- " bullets. Fold the new daily-log entries into it and answer with the
complete new MEMORY.md, nothing else (no code fence, no comments).

Rules:
- Keep every existing entry that is still true; keep every existing "## " section heading.
- Add each new lasting fact once, in the section where it belongs (create a section if none
  fits). Leave out entries that only record task progress or will not matter later.
- Merge duplicates into one bullet. When entries conflict, the newest wins (daily logs are
  newer than MEMORY.md; later days are newer than earlier ones).
- Keep the wording short and specific; never add secrets."""

_CONSOLIDATION_ZH = """你负责维护 MEMORY.md，即 AI 智能体的长期记忆：关于用户和工作的
持久事实（偏好、习惯、项目事实、经验教训），按 "## " 分节、用 "- " 列表书写。
把新的每日日志条目合并进去，只回答完整的新 MEMORY.md，不要写别的（不要代码块，不要解释）。

规则：
- 保留所有仍然成立的已有条目；保留所有已有的 "## " 小节标题。
- 每条新的持久事实只加一次，放在合适的小节里（没有合适的就新建一节）。只记录任务进度或以后用不上的
  条目不要加。
- 合并重复的条目。条目冲突时以最新的为准（每日日志比 MEMORY.md 新，日期晚的比日期早的新）。
- 措辞简短具体；不要写入任何密钥。"""


def summariser_system_prompt(language: Literal["en", "zh"]) -> str:
    """The summariser's system prompt."""
    return _SUMMARISER_ZH if language == "zh" else _SUMMARISER_EN


def summariser_request(memory_text: str, transcript: str, language: Literal["en", "zh"]) -> str:
    """The summariser's request: the current MEMORY.md (bounded) and the removed messages."""
    memory_text = memory_text.strip()
    if language == "zh":
        memory_part = memory_text or "（MEMORY.md 还是空的）"
        return (
            f"## 当前 MEMORY.md\n\n{memory_part}\n\n## 离开上下文的消息\n\n{transcript}\n\n"
            "请列出值得长期记住的偏好与经验，或只回答 [SILENT]。"
        )
    memory_part = memory_text or "(MEMORY.md is empty so far)"
    return (
        f"## Current MEMORY.md\n\n{memory_part}\n\n## Messages that left the context\n\n"
        f"{transcript}\n\nList the preferences and lessons worth keeping, or answer only [SILENT]."
    )


def consolidation_system_prompt(language: Literal["en", "zh"]) -> str:
    """The consolidation's system prompt."""
    return _CONSOLIDATION_ZH if language == "zh" else _CONSOLIDATION_EN


def consolidation_request(memory_text: str, logs: str, language: Literal["en", "zh"]) -> str:
    """The consolidation's request: the whole current MEMORY.md and the new log entries."""
    memory_text = memory_text.strip()
    if language == "zh":
        return (
            f"## 当前 MEMORY.md\n\n{memory_text or '（空）'}\n\n"
            f"## 新的每日日志条目（按日期从旧到新）\n\n{logs}\n\n请回答完整的新 MEMORY.md。"
        )
    return (
        f"## Current MEMORY.md\n\n{memory_text or '(empty)'}\n\n## New daily-log entries "
        f"(oldest day first)\n\n{logs}\n\nAnswer with the complete new MEMORY.md."
    )
