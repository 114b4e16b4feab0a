"""Seeded sessions with planted facts, in English and Chinese, for the quality recipe.

Each session is a realistic coding conversation: the user's goal and constraints, tool
calls reading and running files, a failing build or test with its exact error lines, a
decision stated with its reason, and the work the assistant said it would do next. Seeded
filler (file reads, chatter) makes it long enough to need summarising. Every planted fact
names the fragments a summary must hold to count it as kept.
"""

from __future__ import annotations

import json
import random
from dataclasses import dataclass, field

from copaw_context.core.summary.language import Language
from copaw_context.core.transcript import TranscriptMessage, TranscriptPart

__all__ = ["CATEGORIES", "Planted", "Session", "build_sessions"]

CATEGORIES = ("goal", "constraints", "paths", "errors", "decisions", "next_steps")


@dataclass(frozen=True)
class Planted:
    """A fact planted in a session: its category and what a summary must hold.

    ``fragments`` must all appear (case and spacing aside) in one line of the summary; for
    ``goal`` and ``next_steps`` that line must be in the Goal or Next Steps section; for
    ``paths`` and ``errors`` the one fragment must appear exactly."""

    category: str
    fragments: tuple[str, ...]


@dataclass
class Session:
    """A conversation to compact and the facts planted in it."""

    name: str
    language: Language
    messages: list[TranscriptMessage] = field(default_factory=list)
    planted: list[Planted] = field(default_factory=list)


class _Builder:
    def __init__(self, name: str, language: Language, seed: int, filler: int) -> None:
        self.session = Session(name, language)
        self.random = random.Random(f"{name}:{seed}")
        self.filler = filler
        self.calls = 0

    def user(self, text: str) -> None:
        part = TranscriptPart("text", text)
        self.session.messages.append(TranscriptMessage("user", "user", (part,)))

    def bot(self, text: str) -> None:
        part = TranscriptPart("text", text)
        self.session.messages.append(TranscriptMessage("assistant", "assistant", (part,)))

    def tool(self, name: str, args: dict[str, str], output: str, failed: bool = False) -> None:
        self.calls += 1
        call_id = f"call_{self.calls}"
        raw = json.dumps(args, ensure_ascii=False)
        call = TranscriptPart("tool_call", raw, name, call_id)
        result = TranscriptPart("tool_result", output, name, call_id, failed)
        self.session.messages.append(TranscriptMessage("assistant", "assistant", (call,)))
        self.session.messages.append(TranscriptMessage("user", "user", (result,)))

    def plant(self, category: str, *fragments: str) -> None:
        self.session.planted.append(Planted(category, fragments))

    def noise(self, files: list[str]) -> None:
        """Seeded file reads and chatter: the bulk a summary should not keep."""
        words = [
            "value",
            "item",
            "index",
            "count",
            "buffer",
            "state",
            "config",
            "handler",
            "result",
            "token",
        ]
        for _ in range(self.filler):
            path = self.random.choice(files)
            lines = [
                f"{n + 1:>4}  {' '.join(self.random.choices(words, k=self.random.randint(3, 9)))}"
                for n in range(self.random.randint(15, 30))
            ]
            self.tool("read_file", {"file_path": path}, "\n".join(lines))
            self.bot(self.random.choice(["Looking further.", "继续查看。", "Checked that file."]))


def _web(seed: int, filler: int) -> Session:
    b = _Builder("web-build", "en", seed, filler)
    b.user(
        "The dashboard build is red. Make the build pass again and ship the CSV export. "
        "Never edit files under vendor/. Please keep the public API of src/api.ts stable."
    )
    b.plant("goal", "CSV export")
    b.plant("constraints", "Never edit files under vendor/")
    b.plant("constraints", "keep the public API of src/api.ts stable")
    b.tool("read_file", {"file_path": "src/export/csv.ts"}, "export function toCsv(rows) {}")
    b.noise(["src/api.ts", "src/export/csv.ts", "src/components/IconButton.tsx"])
    b.tool(
        "execute_shell_command",
        {"command": "npm run build"},
        "> dashboard@2.3.0 build\n> tsc -p .\n\n"
        "src/api.ts:14:23 - error TS2345: Argument of type 'string' is not assignable to "
        "parameter of type 'number'.\n\n14   return fetchUser(id);\n\n"
        "Found 1 error in src/api.ts:14\n\nnpm ERR! code 2\nnpm ERR! path /srv/dashboard\n"
        "npm ERR! command failed",
        failed=True,
    )
    b.plant(
        "errors",
        "src/api.ts:14:23 - error TS2345: Argument of type 'string' is not assignable to "
        "parameter of type 'number'.",
    )
    b.plant("paths", "src/api.ts")
    b.plant("paths", "src/export/csv.ts")
    b.bot(
        "I decided to use papaparse for the CSV export because it handles quoted newlines. "
        "Now the accessibility tests."
    )
    b.plant("decisions", "papaparse", "quoted newlines")
    b.tool(
        "execute_shell_command",
        {"command": "npx jest src/components"},
        " FAIL  src/components/IconButton.test.tsx\n  ● IconButton › has no violations\n\n"
        "    expect(received).toHaveNoViolations(expected)\n\n    Received:\n\n"
        '    "Buttons must have discernible text (button-name)"\n\n'
        "Tests:       1 failed, 7 passed, 8 total",
        failed=True,
    )
    b.plant("errors", '"Buttons must have discernible text (button-name)"')
    b.plant("paths", "src/components/IconButton.test.tsx")
    b.bot("Next I will add an aria-label to the icon button and rerun the axe tests.")
    b.plant("next_steps", "aria-label")
    b.user("Noted.")
    return b.session


def _go(seed: int, filler: int) -> Session:
    b = _Builder("go-service", "en", seed, filler)
    b.user(
        "Fix the failing rate limiter tests in the Go service. Do not change the public "
        "function signatures. Always run go vet before committing."
    )
    b.plant("goal", "rate limiter")
    b.plant("constraints", "Do not change the public function signatures")
    b.plant("constraints", "Always run go vet before committing")
    b.noise(["internal/ratelimit/limiter.go", "internal/ratelimit/window.go"])
    b.tool(
        "execute_shell_command",
        {"command": "go test ./internal/ratelimit/"},
        "=== RUN   TestLimiterBurst\n--- FAIL: TestLimiterBurst (0.00s)\n"
        "    limiter_test.go:42: Allow() = true after 5 calls; want false\nFAIL\n"
        "FAIL\texample.com/svc/internal/ratelimit\t0.004s\nFAIL",
        failed=True,
    )
    b.plant("errors", "limiter_test.go:42: Allow() = true after 5 calls; want false")
    b.plant("errors", "--- FAIL: TestLimiterBurst (0.00s)")
    b.tool("read_file", {"file_path": "internal/ratelimit/limiter_test.go"}, "func TestX() {}")
    b.plant("paths", "internal/ratelimit/limiter_test.go")
    b.plant("paths", "internal/ratelimit/limiter.go")
    b.bot(
        "Decision: use a token bucket instead of a fixed window. Reason: bursts at the "
        "window edge let twice the traffic through."
    )
    b.plant("decisions", "token bucket", "window edge")
    b.bot("Plan:\n- [x] reproduce the failure\n- [ ] add a benchmark for Allow()")
    b.plant("next_steps", "benchmark")
    b.user("ok thanks")
    return b.session


def _export_zh(seed: int, filler: int) -> Session:
    b = _Builder("export-zh", "zh", seed, filler)
    b.user(
        "请修复数据导出脚本，让它能处理空表。我只想要一个能用的导出脚本。"
        "不要修改数据库结构。只改 scripts/export.py 这个文件。"
    )
    b.plant("goal", "数据导出")
    b.plant("constraints", "不要修改数据库结构")
    b.plant("constraints", "只改 scripts/export.py 这个文件")
    b.noise(["scripts/export.py", "scripts/db.py"])
    b.tool(
        "execute_shell_command",
        {"command": "python scripts/export.py --table orders"},
        'Traceback (most recent call last):\n  File "/app/scripts/export.py", line 31, in '
        "<module>\n    row['created_at']\nKeyError: 'created_at'\n退出码: 1",
        failed=True,
    )
    b.plant("errors", "KeyError: 'created_at'")
    b.tool(
        "execute_shell_command",
        {"command": "ls /data/exports"},
        "ls: 无法访问 '/data/exports': 没有那个文件或目录",
        failed=True,
    )
    b.plant("errors", "ls: 无法访问 '/data/exports': 没有那个文件或目录")
    b.plant("paths", "scripts/export.py")
    b.bot("决定改用 csv.DictWriter，因为它能按列名写入，空表也能写出表头。")
    b.plant("decisions", "DictWriter", "表头")
    b.bot("导出脚本已修好。接下来我会为空表补一个单元测试。")
    b.plant("next_steps", "单元测试")
    b.user("好的")
    return b.session


def _deploy_zh(seed: int, filler: int) -> Session:
    b = _Builder("deploy-zh", "zh", seed, filler)
    goal = "帮我把 web 服务部署到 staging 集群。"
    b.user(goal + "禁止直接操作 production 命名空间。务必先在 staging 验证。")
    b.plant("goal", "staging")
    b.plant("constraints", "禁止直接操作 production 命名空间")
    b.plant("constraints", "务必先在 staging 验证")
    b.tool(
        "read_file", {"file_path": "deploy/web.yaml"}, "kind: Deployment\nmetadata:\n  name: web"
    )
    b.noise(["deploy/web.yaml", "charts/web/values.yaml"])
    b.tool(
        "execute_shell_command",
        {"command": "kubectl -n staging rollout status deploy/web"},
        'Error from server (NotFound): deployments.apps "web" not found',
        failed=True,
    )
    b.plant("errors", 'Error from server (NotFound): deployments.apps "web" not found')
    b.plant("paths", "deploy/web.yaml")
    b.plant("paths", "charts/web/values.yaml")
    b.bot("我们采用 Helm 部署，因为团队已有 chart 模板。")
    b.plant("decisions", "Helm", "chart 模板")
    b.tool(
        "execute_shell_command",
        {"command": "kubectl -n staging get pods"},
        "NAME               READY   STATUS             RESTARTS   AGE\n"
        "web-7d4b9c-x2x9z   0/1     CrashLoopBackOff   5          3m",
        failed=True,
    )
    b.plant("errors", "web-7d4b9c-x2x9z   0/1     CrashLoopBackOff   5          3m")
    b.bot("下一步我将修复镜像标签并重新部署。")
    b.plant("next_steps", "镜像标签")
    b.user("收到")
    return b.session


def build_sessions(seed: int = 1, filler: int = 6) -> list[Session]:
    """The seeded sessions: two in English, two in Chinese."""
    return [f(seed, filler) for f in (_web, _go, _export_zh, _deploy_zh)]
