"""The chain benchmark's seeded sessions: long coding sessions (English and Chinese, one per
toolchain of ``benchmarks/chain_data.py``) with facts planted at different depths.

A session is a list of turns: the user's request, then the agent's steps (tool calls, then
its answer). Its facts: the goal (turn 0), constraints stated at seeded turns (early, middle,
late), and per task its exact error line (open from the failing run until a passing one),
the file the fix changed, a decision with its reason, the plan stated after it and, once a
run passes, that the task is done. Seeded filler (source files read) makes the session long
enough for 10 to 20 automatic compactions in the benchmark's window. Each fact names a
``carrier``: a text that is in the context while the fact is; once no message of the
context holds it, the summary must.
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field

from benchmarks.chain_data import TOOLCHAINS, Task, Toolchain

__all__ = ["KINDS", "Fact", "Session", "Step", "Turn", "build_sessions"]

KINDS = ("goal", "constraints", "open_errors", "paths", "decisions", "next_steps", "done")
"""The kinds of fact scored; ``open_errors`` only while its task is open, ``next_steps`` only
the newest plan, ``done`` once the task's passing run is stated."""

Step = tuple[tuple[str, dict[str, str]], ...] | str  # parallel tool calls, or the answer


@dataclass(frozen=True)
class Turn:
    """A user request and the agent's steps answering it."""

    request: str
    steps: tuple[Step, ...]


@dataclass(frozen=True)
class Fact:
    """A planted fact: its kind, what a summary must hold (``fragments``, all in one line;
    a ``section`` of the summary for goal, next steps and done), the text that carries it in
    the context, the turn it was planted in and, for an open error, the turn that closes it."""

    kind: str
    fragments: tuple[str, ...]
    carrier: str
    turn: int
    task: int = -1
    closed_at: int | None = None
    section: str = ""


@dataclass
class Session:
    """One seeded session: its turns, facts and the outputs its tools return."""

    name: str
    language: str
    toolchain: str
    turns: list[Turn] = field(default_factory=list)
    facts: list[Fact] = field(default_factory=list)
    outputs: list[str] = field(default_factory=list)  # the tools' outputs, in call order


_WORDS = (
    *("value", "index", "count", "buffer", "state", "config", "handler", "result", "token"),
    *("cache", "entry", "limit", "offset", "parse", "render", "client", "request", "retry"),
)


class _Builder:
    def __init__(self, chain: Toolchain, language: str, seed: int, filler: int) -> None:
        self.chain, self.zh = chain, language == "zh"
        self.session = Session(f"{chain.key}-{language}", language, chain.key)
        self.random = random.Random(f"{chain.key}:{language}:{seed}")
        self.filler = filler
        self.steps: list[Step] = []

    def say(self, en: str, zh: str) -> str:
        return zh if self.zh else en

    def pick(self, pair: tuple[str, str]) -> str:
        return pair[1] if self.zh else pair[0]

    def call(self, tool: str, args: dict[str, str], output: str) -> None:
        self.session.outputs.append(output)
        self.steps.append(((tool, args),))

    def source(self, path: str) -> str:
        lines = []
        for n in range(self.random.randint(60, 110)):
            words = " ".join(self.random.choices(_WORDS, k=self.random.randint(3, 8)))
            code = f"{words.replace(' ', '_')}({self.random.randint(0, 999)})"
            note = f"  {self.chain.comment} {words}" if n % 7 == 0 else ""
            lines.append(f"{n + 1:>4}  {code}{note}")
        return f"{path}\n" + "\n".join(lines)

    def noise(self, reads: int | None = None) -> None:
        for _ in range(self.filler if reads is None else reads):
            path = self.random.choice(self.chain.sources)
            self.call("cat", {"file_path": path}, self.source(path))

    def turn(self, request: str, answer: str) -> int:
        self.steps.append(answer)
        self.session.turns.append(Turn(request, tuple(self.steps)))
        self.steps = []
        return len(self.session.turns) - 1

    def plant(self, kind: str, fragments: tuple[str, ...], carrier: str, **more: object) -> None:
        turn = len(self.session.turns)
        self.session.facts.append(Fact(kind, fragments, carrier, turn, **more))  # type: ignore[arg-type]


def _task_turns(b: _Builder, number: int, task: Task, closes: bool, extra: str) -> None:
    """The three turns of one task: its failing run, the fix with its decision and plan,
    and the check (passing when ``closes``, the same failure again otherwise)."""
    name = b.pick(task.name)
    request = b.say(f"Next task: {name}.", f"下一个任务：{name}。") + extra
    b.noise(1)
    b.call("shell", {"command": task.command}, task.failing)
    b.plant("open_errors", (task.error,), task.failing, task=number)
    b.turn(request, b.say("The run fails; I will look at the cause.", "运行失败，我来查原因。"))
    b.noise()
    wrote = f"Wrote {b.random.randint(20, 90)} lines to {task.path}"
    b.call("write_file", {"file_path": task.path, "content": "..."}, wrote)
    b.plant("paths", (task.path,), wrote, task=number)
    choice, reason, plan = b.pick(task.choice), b.pick(task.reason), b.pick(task.plan)
    decision = b.say(f"I decided to {choice} because {reason}.", f"决定{choice}，因为{reason}。")
    stated = b.say(f"Next I will {plan}.", f"接下来我会{plan}。")
    b.plant("decisions", (choice, reason), decision, task=number)
    b.plant("next_steps", (plan,), stated, task=number, section="next_steps")
    b.turn(b.say("Go on.", "继续。"), f"{decision} {stated}")
    b.noise()
    if closes:
        out = task.passing
        answer = b.say(
            f"Done: `{task.command}` passes now.", f"已完成：`{task.command}` 现在通过了。"
        )
        b.call("shell", {"command": task.command}, out)
        b.plant("done", (task.command,), answer, task=number, section="done")
    else:
        b.call("shell", {"command": task.command}, task.failing)
        answer = b.say(
            "Not fixed yet: the run still fails the same way.",
            "还没修好：运行仍然以同样的方式失败。",
        )
    b.turn(b.say("Did that work?", "好了吗？"), answer)


def _session(chain: Toolchain, language: str, seed: int, filler: int) -> Session:
    b = _Builder(chain, language, seed, filler)
    rng = b.random
    tasks = list(enumerate(chain.tasks))
    rng.shuffle(tasks)
    still_open = set(rng.sample([n for n, _ in tasks], 2))  # one of them is often early
    later = list(chain.constraints[1:])
    # where the other constraints are stated: early, middle, late (by task slot)
    slots = sorted(rng.sample(range(1, len(tasks)), len(later) - 1)) + [len(tasks) - 1]
    goal, first = b.pick(chain.goal), b.pick(chain.constraints[0])
    request = b.say(f"Goal for this session: {goal}. {first}.", f"这次的目标：{goal}。{first}。")
    b.plant("goal", (goal,), request, section="goal")
    b.plant("constraints", (first,), request)
    b.noise()
    b.turn(request, b.say("Understood. I will start with the code.", "明白。我先看代码。"))
    for slot, (number, task) in enumerate(tasks):
        extra = ""
        while later and slots and slots[0] == slot:
            slots.pop(0)
            stated = b.pick(later.pop(0))
            extra += f" {stated}."
            b.plant("constraints", (stated,), f"{stated}.")
        _task_turns(b, number, task, number not in still_open, extra)
        for _ in range(rng.randint(0, 1)):
            b.noise()
            b.turn(b.say("Continue.", "继续。"), b.say("Checked those files.", "这些文件看过了。"))
    return _closing(b)


def _closing(b: _Builder) -> Session:
    """Each open error's ``closed_at`` (the turn of its passing run), from the done facts."""
    done = {fact.task: fact.turn for fact in b.session.facts if fact.kind == "done"}
    b.session.facts = [
        Fact(f.kind, f.fragments, f.carrier, f.turn, f.task, done.get(f.task), f.section)
        if f.kind == "open_errors"
        else f
        for f in b.session.facts
    ]
    return b.session


def build_sessions(seed: int = 1, filler: int = 15, languages: str = "all") -> list[Session]:
    """One session per toolchain and language (EN, ZH), seeded."""
    wanted = ("en", "zh") if languages == "all" else (languages,)
    return [_session(chain, lang, seed, filler) for chain in TOOLCHAINS for lang in wanted]
