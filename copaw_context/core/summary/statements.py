"""What a sentence of the conversation states: a constraint, a decision, a plan, a reason.

Classified by meaning, not by one word: a constraint is a prohibition ("never", "don't",
"不要"), an obligation ("must", "always", "必须"), a preference ("I prefer", "尽量") or a
restriction of the work ("only modify src/", "只改 src 目录"); "I only want a CSV export" or
"我只想要一个脚本" state a goal. A decision keeps the sentence that gives its reason.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator, Sequence

__all__ = [
    "has_reason",
    "is_acknowledgement",
    "is_sign_off",
    "is_constraint",
    "is_decision",
    "is_plan",
    "is_plan_heading",
    "join_reasons",
    "last_nonempty",
    "unchecked_items",
]

_PROHIBITION_RE = re.compile(
    r"\b(?:never|must not|mustn't|should not|shouldn't|may not|avoid|not allowed)\b"
    r"|(?:^|\b(?:please|and|but|just|so|you|also|then)\s+)(?:don't|don’t|do not)\b"
    r"|不要|不准|不许|不得|禁止|请勿|切勿|千万别|千万不要|避免|别(?:再|动|改|碰|用|删)|不能(?:改|动|用|删|碰)",
    re.IGNORECASE,
)
_OBLIGATION_RE = re.compile(
    r"\b(?:must|always|make sure|ensure|be sure to|have to|needs? to stay|required)\b"
    r"|\bkeep\b.{0,60}?\b(?:stable|unchanged|intact|as it is|as is|the same|compatible)\b"
    r"|\bleave\b.{0,40}?\b(?:alone|untouched|as it is|as is)\b"
    r"|必须|务必|一定要|始终|总是|确保|记得|保持[^。！？]{0,20}(?:不变|稳定|兼容)",
    re.IGNORECASE,
)
_PREFERENCE_RE = re.compile(
    r"\b(?:I prefer|we prefer|prefer(?:ably|red)?|I'd rather|I would rather|no need to)\b"
    r"|偏好|更喜欢|倾向于|尽量|优先|不需要|无需",
    re.IGNORECASE,
)
_RESTRICTION_RE = re.compile(
    r"\bonly (?:use|modify|change|touch|edit|run|write|read|commit|target|support|work|add|"
    r"depend|call|test)\b|\b(?:use|modify|change|touch|edit) only\b"
    r"|只(?:改|修改|动|用|使用|能|允许|在|读|写|保留|提交|针对|支持|依赖|调用|测)"
    r"|仅(?:限|允许|使用|修改|改|在)",
    re.IGNORECASE,
)
_DECISION_RE = re.compile(
    r"\b(?:I will|I'll|I am going to|I'm going to|I decided|we decided|decided to|I chose|"
    r"we chose|chose to|going with|go with|instead of|we will|we'll|let's|switch(?:ed)? to)\b"
    r"|^(?:Decision|Decided)\s*:|决定|我将|我会|改用|采用|选用|换成|^决策[:：]",
    re.IGNORECASE,
)
_REASON_RE = re.compile(
    r"\b(?:because|since|so that|as it|as this|due to|in order to)\b"
    r"|\b(?:Reason|Rationale|Why)\s*:|因为|由于|为了|原因[:：是]|理由[:：是]",
    re.IGNORECASE,
)
_REASON_START_RE = re.compile(
    r"^(?:Reason|Rationale|Why)\s*:|^(?:because|this is because|that's because|since)\b"
    r"|^(?:原因|理由)[:：是]|^(?:因为|由于|这是因为|为了)",
    re.IGNORECASE,
)
_PLAN_RE = re.compile(
    r"^(?:next|then|after that|afterwards|once that(?:'s| is) done)\b[ ,]*(?:I|we)(?:'ll| will| "
    r"am going to| are going to| plan to| need to)\b"
    r"|^(?:I|we) (?:still )?(?:need|have) to\b|^(?:I|we) still\b|\b(?:still to do|next steps?|"
    r"next up|remaining work|left to do|TODO)\s*:|^the next step is\b|^(?:my|the) plan\b"
    r"|^(?:接下来|下一步|然后|之后)[，,]?(?:我|我们)?(?:会|将|要|需要|打算)?|^还(?:需要|要|剩)"
    r"|^(?:待办|剩下的|计划)[:：]"
    r"|^(?:(?:still )?pending|next|to ?do(?: next)?|remaining|open items?)\s*:\s*\S"
    r"|^(?:未完成|待完成|还没做|尚未完成|下一步)[:：]\s*\S",
    re.IGNORECASE,
)
# A line that opens a list of the work still to do: "Pending:", "Still pending:", "Next:",
# "To do next:", "Next steps:", "未完成：", "待办：", "下一步：".
_PLAN_HEAD_RE = re.compile(
    r"^\s*(?:[*_#]+\s*)?(?:(?:still )?pending|next(?: steps?)?|to ?do(?: next)?"
    r"|remaining(?: work)?|left to do|still to do|open items?|plan"
    r"|未完成|待完成|尚未完成|待办|下一步|接下来|剩下的|计划)"
    r"(?:[*_]+)?\s*[:：](?:[*_]+)?\s*$",
    re.IGNORECASE,
)
# "Next: 1. run the suite 2. tag it": a plan head with its numbered items on its line.
_INLINE_PLAN_RE = re.compile(
    r"^\s*(?:[*_#]+\s*)?(?:(?:still )?pending|next(?: steps?)?|to ?do(?: next)?"
    r"|remaining(?: work)?|left to do|still to do|open items?|plan"
    r"|未完成|待完成|尚未完成|待办|下一步|接下来|剩下的|计划)"
    r"(?:[*_]+)?\s*[:：](?:[*_]+)?\s*1[.)、]\s+(\S.*)$",
    re.IGNORECASE,
)
_BARE_NUMBER_RE = re.compile(r"\s*\d{1,2}[.)、]\s*$")
_INLINE_NUMBER_RE = re.compile(r"\s+\d{1,2}[.)、]\s+")
_LIST_ITEM_RE = re.compile(r"^\s*(?:[-*+•]|\d+[.)、])\s+(?:\[ \]\s+)?(\S.*)$")
_UNCHECKED_RE = re.compile(r"^\s*(?:[-*+]|\d+[.)])\s+\[ \]\s+(\S.*)$")
_GOAL_START_RE = re.compile(
    r"^(?:please\s+)?(?:I (?:only )?(?:want|need|would like)|we (?:only )?(?:want|need)|"
    r"help me|can you|could you|build|write|create|implement)\b|^(?:请)?(?:帮我|我只?想|我只?需要|"
    r"我要|我们要|目标是)",
    re.IGNORECASE,
)
_ACK_RE = re.compile(
    r"^(?:ok(?:ay)?|noted|thanks?(?: you)?|thx|got it|sure|great|cool|nice|perfect|"
    r"sounds good|yes|yep|fine|good|go on|continue|好的?|收到|谢谢|明白了?|嗯|可以|行|继续)"
    r"[\s.!。！~，,]*(?:thanks?(?: you)?|谢谢)?[\s.!。！~]*$",
    re.IGNORECASE,
)
# An acknowledgement with a promise to remember and nothing else: "Understood, I'll keep
# that in mind.", "Got it, will do.", "好的，我记住了", "明白，我会注意的".
_ACK_LEAD = (
    r"(?:ok(?:ay)?|noted|understood|got it|sure|alright|all right|of course|certainly|"
    r"will do|thanks?(?: you)?|great|perfect|好的?|收到|明白了?|了解|知道了|没问题|嗯)"
)
_ACK_PROMISE_RE = re.compile(
    rf"^{_ACK_LEAD}(?:[\s.!。！~，,]+(?:{_ACK_LEAD}|I(?:'ll| will) (?:keep (?:that|this|it) in mind"
    r"|remember (?:that|this|it)|do (?:that|so)|note (?:that|this|it))|will do|noted"
    r"|我(?:会|已经?)?(?:记住|记下|注意)了?(?:的|这一点|这点)?|我会照做|会注意的?))*[\s.!。！~，,]*$",
    re.IGNORECASE,
)


def is_constraint(sentence: str) -> bool:
    """Whether a user's sentence states a prohibition, an obligation, a preference or a
    restriction. A goal ("I only want ...", "我只想 ...") is not one unless it also forbids or
    requires something."""
    if _PROHIBITION_RE.search(sentence) or _OBLIGATION_RE.search(sentence):
        return True
    if _GOAL_START_RE.search(sentence.strip()):
        return False
    return bool(_PREFERENCE_RE.search(sentence) or _RESTRICTION_RE.search(sentence))


def is_plan(sentence: str) -> bool:
    """Whether a sentence states work still to do ("Next I will ...", "接下来我会 ...")."""
    return bool(_PLAN_RE.search(sentence.strip()))


def is_plan_heading(line: str) -> bool:
    """Whether a line (or sentence) only opens a list of work to do ("Next steps:",
    "未完成：", the "Next: 1." of "Next: 1. run the suite 2. tag it"): no step."""
    return bool(_PLAN_HEAD_RE.match(line) or _PLAN_HEAD_RE.match(_BARE_NUMBER_RE.sub("", line)))


def is_decision(sentence: str) -> bool:
    """Whether a sentence states a choice ("I decided to ...", "Decision: ...", "改用 ...")."""
    return bool(_DECISION_RE.search(sentence.strip())) and not is_plan(sentence)


def has_reason(sentence: str) -> bool:
    """Whether a sentence gives a justification ("because", "so that", "Reason:", "因为")."""
    return bool(_REASON_RE.search(sentence))


def is_acknowledgement(text: str) -> bool:
    """Whether a message only acknowledges ("Noted.", "ok thanks", "好的", "Understood, I'll
    keep that in mind.", "好的，我记住了")."""
    text = text.strip()
    return bool(_ACK_RE.match(text) or _ACK_PROMISE_RE.match(text))


# A model's closing offer after its answer: "Let me know if you need anything else!", "Hope
# this helps.", "如果还有其他需要，请告诉我。", "希望对你有帮助！".
_SIGN_OFF_RE = re.compile(
    r"^(?:(?:please\s+)?(?:let me know|feel free to|don't hesitate to)\b"
    r"|(?:I\s+)?hope (?:this|that|it|the above) helps\b|(?:I'm |I am )?happy to help\b"
    r"|(?:is there )?anything else\b[^\n]*\?$"
    r"|if you (?:need|have|want|would like)\b[^\n]*\b(?:let me know|ask|happy to)\b)"
    r"|^(?:如果?|若)(?:您|你)?还?(?:有|需要)[^\n]{0,16}(?:告诉我|告知|联系我|提问|问我)"
    r"|^希望(?:这|以上|这些)?(?:内容|总结)?(?:对你|对您|能)?有所?帮助|^(?:请)?随时告诉我",
    re.IGNORECASE,
)


_RULE_LINE_RE = re.compile(r"^(?:[-*_]\s*){3,}$")  # "---": a rule above the sign-off


def is_sign_off(text: str) -> bool:
    """Whether ``text`` is only a model's closing offer ("Let me know if you need anything
    else!", "Hope this helps.", "如果还有其他需要，请告诉我。"), emphasised or under a rule
    (``---``) or not: talk to the reader, no fact."""
    lines = [line.strip() for line in text.split("\n") if line.strip()]
    lines = [line.strip("*_ ") for line in lines if not _RULE_LINE_RE.match(line)]
    return len(lines) == 1 and len(lines[0]) <= 200 and bool(_SIGN_OFF_RE.search(lines[0]))


def _glue(first: str, second: str) -> str:
    cjk = bool(re.search(r"[\u3000-\u9fff]$", first))
    return f"{first}{'' if cjk else ' '}{second}"


def join_reasons(sentences: Iterable[str]) -> Iterator[str]:
    """``sentences`` with each sentence that only gives a reason ("Reason: ...",
    "Because ...", "原因：...") joined to the sentence before it."""
    held: str | None = None
    for sentence in sentences:
        if held is not None and _REASON_START_RE.search(sentence):
            held = _glue(held, sentence)
            continue
        if held is not None:
            yield held
        held = sentence
    if held is not None:
        yield held


def unchecked_items(text: str) -> list[str]:
    """The text of each unchecked task item ("- [ ] write the migration"), and each item of
    a list under a plan heading ("Pending:", "Still pending:", "Next:", "To do next:",
    "未完成：") that is not checked, or numbered on the heading's line ("Next: 1. a 2. b")."""
    out: list[str] = []
    under_plan = False
    for line in text.split("\n"):
        if _PLAN_HEAD_RE.match(line):
            under_plan = True
            continue
        inline = _INLINE_PLAN_RE.match(line)
        if inline:
            out += [item.strip() for item in _INLINE_NUMBER_RE.split(inline.group(1))]
            under_plan = False
            continue
        unchecked = _UNCHECKED_RE.match(line)
        if unchecked:
            out.append(unchecked.group(1).strip())
            continue
        item = _LIST_ITEM_RE.match(line)
        if under_plan and item and not re.match(r"\[[xX]\]", item.group(1)):
            out.append(item.group(1).strip())
        elif line.strip() and not item:
            under_plan = False
    return out


def last_nonempty(groups: Sequence[list[str]]) -> list[str]:
    """The last non-empty list of ``groups`` (empty when all are)."""
    return next((group for group in reversed(groups) if group), [])
