"""The recall benchmark's seeded archive: many agent sessions (English and Chinese, prose, code,
tool calls and their results) and facts planted in exactly one message each, with a question
per fact worded differently from the message that answers it.

Each fact is a combination no other message has (a service with a setting and its value, an
error code, a file of one feature of one service, a choice between two tools for one service,
a function's name, a rule about one service), while the filler mentions the same services,
settings, tools, codes and paths in other combinations: the question has to be answered by
the combination, not by a word that only the answer holds. Nothing here touches the disk.
"""

from __future__ import annotations

import random
import re
from dataclasses import dataclass, field
from typing import Any

from benchmarks.recall_vocab import (
    EN_WORDS,
    ERRORS,
    EVENTS,
    FEATURES,
    NOUNS,
    REASONS,
    SERVICES,
    SETTINGS,
    TOOLS,
    VERBS,
    WINDOWS,
    ZH_PHRASES,
)

__all__ = ["Fact", "Message", "Session", "copied_run", "make_corpus"]


@dataclass
class Message:
    """One archived message: role, content blocks (AgentScope 2.x form), and the fact it answers."""

    role: str
    blocks: list[dict[str, Any]]
    fact: int | None = None


@dataclass
class Session:
    """One agent session: its id, day offset, language and messages."""

    session_id: str
    day: int
    lang: str
    messages: list[Message] = field(default_factory=list)


@dataclass(frozen=True)
class Fact:
    """A planted fact: its kind and language, the question, and the text that answers it."""

    number: int
    kind: str
    lang: str
    question: str
    answer_text: str


def _text(text: str) -> list[dict[str, Any]]:
    return [{"type": "text", "text": text}]


def _call(rng: random.Random, name: str, args: str) -> list[dict[str, Any]]:
    return [
        {"type": "tool_call", "id": f"call_{rng.getrandbits(48):x}", "name": name, "input": args}
    ]


def _result(name: str, text: str) -> list[dict[str, Any]]:
    return [
        {"type": "tool_result", "id": "r", "name": name, "output": [{"type": "text", "text": text}]}
    ]


def _value(rng: random.Random, kind: str) -> str:
    if kind == "ms":
        return f"{rng.randrange(150, 30000, 50)}ms"
    if kind == "s":
        return f"{rng.randrange(5, 7200)}s"
    if kind == "mb":
        return f"{rng.randrange(256, 16384, 64)}MB"
    if kind == "small":
        return str(rng.randrange(2, 40))
    return str(rng.randrange(8, 5000))


def _module(service: str) -> str:
    return service.replace("-", "_")


class _Maker:
    """Builds the filler and the facts of one seed; remembers the combinations facts took."""

    def __init__(self, seed: int) -> None:
        self.rng = random.Random(seed)
        self.taken: set[tuple[str, ...]] = set()
        self.codes: set[str] = set()

    def pick(self, *pools: list[Any]) -> tuple[Any, ...]:
        return tuple(self.rng.choice(pool) for pool in pools)

    def code(self) -> str:
        while True:
            code = self.rng.choice(["E", "ERR-", "PG", "K8S-"]) + str(
                self.rng.randrange(1000, 99999)
            )
            if code not in self.codes:
                self.codes.add(code)
                return code

    def free(self, key: tuple[str, ...]) -> bool:
        return key not in self.taken

    # --- filler ------------------------------------------------------------------------------

    def prose(self, lang: str, words: int) -> str:
        if lang == "zh":
            return "，".join(self.rng.choice(ZH_PHRASES) for _ in range(max(1, words // 6))) + "。"
        return " ".join(self.rng.choice(EN_WORDS) for _ in range(words)).capitalize() + "."

    def filler(self, lang: str) -> list[Message]:
        """A short exchange of the kind that fills a session (2-4 messages)."""
        rng = self.rng
        service = rng.choice(SERVICES)
        key, _para, _zh, _zh_q, kind = rng.choice(SETTINGS)
        roll = rng.random()
        if roll < 0.22:  # a config statement about another combination
            while not self.free(("config", service, key)):
                service = rng.choice(SERVICES)
            value = _value(rng, kind)
            if lang == "zh":
                say = f"{service} 的 {key} 现在是 {value}，{self.prose('zh', 8)}"
            else:
                say = f"Checked {key} on {service}: it is {value} for now. {self.prose('en', 10)}"
            return [Message("assistant", _text(say))]
        if roll < 0.45:  # a shell call and its log
            command = rng.choice(
                [
                    f"kubectl logs deploy/{service} --tail 200",
                    f"pytest tests/{_module(service)} -q",
                    f"grep -rn {key} config/{service}.yaml",
                    f"journalctl -u {service} --since -1h",
                ]
            )
            lines = [
                f"2024-0{rng.randrange(1, 9)}-1{rng.randrange(0, 9)}"
                f"T0{rng.randrange(0, 9)}:1{rng.randrange(0, 9)} "
                f"{rng.choice(['INFO', 'WARN', 'DEBUG'])} {rng.choice(SERVICES)} "
                f"{rng.choice(EVENTS)} "
                f"in {rng.randrange(1, 900)}ms"
                for _ in range(rng.randrange(3, 40))
            ]
            if rng.random() < 0.3:
                message = rng.choice(ERRORS)[0]
                lines.insert(
                    rng.randrange(len(lines)), f"ERROR {service}: {self.code()}: {message}"
                )
            if rng.random() < 0.3:
                lines.append(f"== {rng.randrange(1, 300)} passed, {rng.randrange(0, 3)} failed ==")
            return [
                Message("assistant", _call(rng, "shell", f'{{"command": "{command}"}}')),
                Message("system", _result("shell", "\n".join(lines))),
            ]
        if roll < 0.62:  # a file read: code (never the file a fact names)
            feature = rng.choice(FEATURES)[0]
            while not (
                self.free(("path", service, feature)) and self.free(("code", service, feature))
            ):
                feature = rng.choice(FEATURES)[0]
            verb, noun = self.pick(VERBS, NOUNS)
            path = f"src/{_module(service)}/{feature}.py"
            body = "\n".join(
                [
                    f"def {verb}_{noun}_{rng.randrange(1, 99)}"
                    f"(items, limit={rng.randrange(1, 99)}):",
                    f'    """{self.prose("en", 8)}"""',
                    f"    total = sum(item.{noun} for item in items)",
                    "    if total > limit:",
                    f"        raise ValueError('{noun} over limit')",
                    "    return total",
                ]
            )
            return [
                Message("assistant", _call(rng, "read_file", f'{{"file_path": "{path}"}}')),
                Message("system", _result("read_file", body)),
            ]
        if roll < 0.72:  # a choice talked about
            first, second = self.pick(TOOLS, TOOLS)
            if lang == "zh":
                say = f"{service} 可以考虑 {first} 或者 {second}，{self.prose('zh', 8)}"
            else:
                say = f"For {service} we could try {first} or {second}; {self.prose('en', 8)}"
            return [Message("assistant", _text(say))]
        request = (
            f"{service} 又出问题了，{self.prose('zh', 10)}"
            if lang == "zh"
            else f"Can you look at {service} again? {self.prose('en', 12)}"
        )
        reply = self.prose(lang, rng.randrange(10, 60))
        return [Message("user", _text(request)), Message("assistant", _text(reply))]

    # --- facts ------------------------------------------------------------------------------

    def fact(self, number: int, kind: str, lang: str) -> tuple[list[Message], Fact]:
        """The message(s) of one fact (the answer is the one with ``fact`` set) and its question."""
        rng = self.rng
        zh = lang == "zh"
        while True:
            service = rng.choice(SERVICES)
            key, para, zh_para, zh_ask, vkind = rng.choice(SETTINGS)
            feature, feat_en, feat_zh = rng.choice(FEATURES)
            first, second = rng.sample(TOOLS, 2)
            combo = {
                "config": (kind, service, key),
                "error": (kind, service),
                "path": (kind, service, feature),
                "decision": (kind, service, first, second),
                "code": (kind, service, feature),
                "rule": (kind, service),
            }[kind]
            if self.free(combo):
                self.taken.add(combo)
                if kind == "config":
                    self.taken.add(("config", service, key))
                break
        before: list[Message] = []
        if kind == "config":
            value = _value(rng, vkind)
            name = rng.choice([key, para])
            if zh:
                answer = (
                    f"好的，已经把 {service} 的{zh_para}（{key}）改成 {value}，"
                    f"写在 config/{service}.yaml 里了。"
                )
                question = f"{service} 的{zh_ask}后来定成多少？"
            else:
                answer = (
                    f"Done: {key} for {service} is now {value} (config/{service}.yaml), "
                    "the old value was too low."
                )
                question = f"What did we end up configuring as the {name} of {service}?"
            message = Message("assistant", _text(answer), number)
        elif kind == "error":
            code, (cause, _) = self.code(), rng.choice(ERRORS)
            log = [f"INFO {service} starting deploy {rng.randrange(100, 999)}"] * rng.randrange(
                1, 6
            )
            log.append(f"ERROR {service}: {code}: {cause}")
            answer = "\n".join(log)
            question = (
                f"{code} 这个错误是什么原因？"
                if zh
                else f"What was behind the {code} failure we hit?"
            )
            before.append(
                Message("assistant", _call(rng, "shell", f'{{"command": "deploy {service}"}}'))
            )
            message = Message("system", _result("shell", answer), number)
        elif kind == "path":
            path = f"src/{_module(service)}/{feature}_impl.py"
            if zh:
                answer = f"{service} 的{feat_zh}逻辑在 {path}，入口是 run()。"
                question = f"{service} 里负责{feat_zh}的代码放在哪个文件？"
            else:
                answer = (
                    f"The {feat_en} logic of {service} lives in {path}; run() is the entry point."
                )
                question = f"Which file implements {feat_en} for {service}?"
            message = Message("assistant", _text(answer), number)
        elif kind == "decision":
            reason, reason_zh = rng.choice(REASONS)
            if zh:
                answer = f"{service} 决定用 {first}，不用 {second}，因为{reason_zh}。"
                question = f"当初 {service} 为什么选了 {first} 而没选 {second}？"
            else:
                answer = (
                    f"Let's go with {first} instead of {second} for {service}, because {reason}."
                )
                question = f"Why did we prefer {first} to {second} on {service}?"
            message = Message("user" if rng.random() < 0.5 else "assistant", _text(answer), number)
        elif kind == "code":
            verb, noun = self.pick(VERBS, NOUNS)
            function = f"{verb}_{noun}_{feature}"
            default = rng.choice(["None", "0", "[]", "{}", "False", "-1"])
            path = f"src/{_module(service)}/{feature}.py"
            answer = "\n".join(
                [
                    f"def {function}(source, *, strict=False):",
                    f"    if not source.{noun}:",
                    f"        return {default}",
                    f"    return source.{noun}.{verb}()",
                ]
            )
            question = (
                f"{function} 在 {noun} 为空时返回什么？"
                if zh
                else f"What does {function} give back when the {noun} is empty?"
            )
            before.append(
                Message("assistant", _call(rng, "read_file", f'{{"file_path": "{path}"}}'))
            )
            message = Message("system", _result("read_file", answer), number)
        else:  # rule
            window, window_zh = rng.choice(WINDOWS)
            if zh:
                answer = f"记住：{window_zh}不要对 {service} 做数据库迁移，DBA 那边会锁表。"
                question = f"什么时候不能给 {service} 跑迁移？"
            else:
                answer = (
                    f"Please never run migrations on {service} {window}; "
                    "the DBA team locks the tables then."
                )
                question = f"When are we not allowed to migrate {service}?"
            message = Message("user", _text(answer), number)
        return [*before, message], Fact(number, kind, lang, question, answer)


KINDS = ("config", "error", "path", "decision", "code", "rule")


def make_corpus(
    seed: int, messages: int = 100_000, questions: int = 300, sessions: int = 400, days: int = 90
) -> tuple[list[Session], list[Fact]]:
    """``sessions`` sessions of about ``messages`` messages in all over ``days`` days (a third
    of them Chinese), with ``questions`` facts planted, half of their questions in Chinese."""
    maker = _Maker(seed)
    rng = maker.rng
    out = [
        Session(f"s{seed}-{n:04d}", rng.randrange(days), "zh" if rng.random() < 0.35 else "en")
        for n in range(sessions)
    ]
    per = max(1, messages // sessions)
    plan = [
        (KINDS[n % len(KINDS)], "zh" if (n // len(KINDS)) % 2 else "en") for n in range(questions)
    ]
    # The facts first: the filler then knows which combinations are taken.
    made = [maker.fact(number, kind, lang) for number, (kind, lang) in enumerate(plan)]
    planted = [fact for _, fact in made]
    homes: dict[int, list[list[Message]]] = {}
    for fact_messages, fact in made:
        candidates = [i for i, s in enumerate(out) if s.lang == fact.lang] or list(range(len(out)))
        homes.setdefault(rng.choice(candidates), []).append(fact_messages)
    for index, session in enumerate(out):
        target = rng.randrange(per // 2, per * 3 // 2 + 1)
        due = sorted(((rng.randrange(target), m) for m in homes.get(index, [])), key=lambda x: x[0])
        while len(session.messages) < target or due:
            while due and due[0][0] <= len(session.messages):
                session.messages += due.pop(0)[1]
            if len(session.messages) < target:
                session.messages += maker.filler(session.lang)
    while sum(len(s.messages) for s in out) < messages:  # top up to the size asked for
        session = rng.choice(out)
        session.messages += maker.filler(session.lang)
    return out, planted


_TOKEN = re.compile(r"[a-z0-9_]+|[\u4e00-\u9fff]")


def copied_run(question: str, answer: str, words: int = 5, chars: int = 6) -> str | None:
    """A run the question copies from its answer: ``words`` English words in a row, or
    ``chars`` Chinese characters in a row (names, paths and codes, the ASCII words of a
    Chinese question, are left out of the Chinese runs); None when there is none."""

    def runs(text: str, zh: bool, size: int) -> list[tuple[str, ...]]:
        found = _TOKEN.findall(text.casefold())
        if zh:
            found = [t for t in found if not t.isascii()]
        return [tuple(found[i : i + size]) for i in range(len(found) - size + 1)]

    zh = re.search(r"[\u4e00-\u9fff]", question) is not None
    size = chars if zh else words
    have = set(runs(answer, zh, size))
    for run in runs(question, zh, size):
        if run in have:
            return " ".join(run)
    return None
