"""The patterns behind :mod:`.errors`, each behind the words it cannot match without.

A line of a log is tried against dozens of patterns; one big alternation of them costs
Python's regex engine a scan of the whole line per alternative. Here each pattern carries the
lower-case words one of which a match must contain (a *guard*), and is only run when the line
holds one of them; a pattern anchored at the start of the line (``^``) costs next to nothing
and has no guard. The result is the same as searching the whole alternation.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

__all__ = [
    "DECISIVE_RULES",
    "EXIT_CODE_RE",
    "EXIT_CODE_RULES",
    "FAILURE_RULES",
    "OTHER_RULES",
    "WRAPPER_RULES",
    "RuleSet",
]


class RuleSet:
    """Patterns with guards; :meth:`search` says whether any of them matches a text.

    The patterns without a guard must be anchored (``^``): they are joined into one.
    """

    def __init__(self, rules: Iterable[tuple[tuple[str, ...], str]]) -> None:
        rules = list(rules)
        anchored = [pattern for guards, pattern in rules if not guards]
        self.anchored = re.compile("|".join(f"(?:{p})" for p in anchored)) if anchored else None
        self.guarded = tuple((guards, re.compile(pattern)) for guards, pattern in rules if guards)

    def search(self, text: str, lower: str | None = None) -> bool:
        """Whether a pattern matches ``text`` (``lower`` is ``text.lower()``, if known)."""
        if self.anchored is not None and self.anchored.search(text):
            return True
        lower = text.lower() if lower is None else lower
        for guards, pattern in self.guarded:
            for word in guards:
                if word in lower:
                    if pattern.search(text):
                        return True
                    break
        return False


_EXIT_CODE = (
    r"(?i:\b(?:exit(?:ed)?(?:\s+with)?\s+(?:code|status)|exit_code|return\s*code|returncode)"
    r"\s*[:=]?\s*)-?[1-9]\d*\b|(?:退出码|退出代码|退出状态|返回码)\s*[:：]?\s*-?[1-9]\d*"
)
EXIT_CODE_RE = re.compile(_EXIT_CODE)
EXIT_CODE_RULES = RuleSet([(("exit", "return", "退出", "返回码"), _EXIT_CODE)])

DECISIVE_RULES = RuleSet(
    [
        ((), r"^(?:[a-z_]\w*+\.)++[A-Z]\w+: \S"),  # a dotted exception name (django, sqlalchemy)
        ((), r"^E\s{2,}\S|^FAILED \S+::\S+|^ERROR \S+(?:::\S+)? - \S"),  # pytest
        ((), r"^(?:FAIL|ERROR): \w+ \("),  # unittest
        (("[type=",), r"\[type=\w+"),  # pydantic's detail line
        (("●",), r"^\s*●\s+(?:\S.* › \S|Test suite failed to run)"),  # jest test title
        (("×", "✕", "✗"), r"^\s*(?:×|✕|✗)\s+\S"),  # vitest / jest failing test
        (("expect(",), r"^\s*expect\((?:received|locator|page)\)\.\w+"),  # jest / playwright
        (("›",), r"^\s*\d+\) \[[\w-]+\] › "),  # playwright test title
        (("to have no violations:",), r"to have no violations:"),  # jest-axe
        ((')"',), r"^\s*\"[^\"]+ \([a-z0-9-]+\)\"\s*$"),  # jest-axe rule
        (("error ts",), r"\berror TS\d+:"),  # tsc
        (("error",), r"^\s*\d+:\d+\s+error\s+\S"),  # eslint
        ((), r"^error(?:\[E\d+\])?: |^thread '[^']*' panicked at|^assertion .* failed"),  # rust
        ((), r"^\s*--- FAIL: \S+|^panic: |^fatal error: |^e: (?:file://)?\S+:\d+"),  # go, kotlin
        ((".go:",), r"^\s*\S+\.go:\d+(?::\d+)?: \S"),  # go test
        (("failed",), r"^\S+ > .+ FAILED$"),  # gradle
        ((".java:[", ".kt:[", ".scala:["), r"\.(?:java|kt|scala):\[\d+,\d+\] "),  # maven
        (("test",), r"^\s*\w+Test\w*\.\w+:\d+ "),  # junit
        (
            ("undefined reference to", "multiple definition of", "undefined symbols for arch"),
            r"undefined reference to|multiple definition of|Undefined symbols for architecture",
        ),
        (
            ("error c", "error lnk", "warning c", "warning lnk"),
            r"\b(?:error|warning) (?:C|LNK)\d{4}:",  # msvc
        ),
        (("***",), r"\*\*\* No rule to make target|\*\*\* missing separator|\*\*\* .*Stop\."),
        (("error response from daemon: ",), r"^(?:\w+: )?Error response from daemon: "),
        ((), r"^Error from server(?: \(\w+\))?: |^The \w+ \"[^\"]+\" is invalid: "),  # kubectl
        (
            (
                *("crashloopbackoff", "imagepullbackoff", "errimagepull", "oomkilled"),
                *("createcontainerconfigerror", "runcontainererror", "invalidimagename"),
            ),
            r"\b(?:CrashLoopBackOff|ImagePullBackOff|ErrImagePull|OOMKilled|"
            r"CreateContainerConfigError|RunContainerError|InvalidImageName)\b",
        ),
        (("error:", "error["), r"(?i:\b(?:fatal )?error(?:\[\w+\])?:)\s*\S"),  # compilers
        (("fatal:", "panic:"), r"\bfatal:|\bpanic:"),  # git, go
        (
            (
                *("command not found", ": not found", "no such file or directory"),
                *("permission denied", "connection refused", "operation not permitted"),
                *("segmentation fault", "core dumped", "cannot access", "killed"),
            ),
            r"command not found|: not found$|No such file or directory|Permission denied"
            r"|Connection refused|Operation not permitted|Segmentation fault|core dumped"
            r"|cannot access|^Killed$",  # shell
        ),
        (
            (
                *("错误:", "错误：", "未找到命令", "没有那个文件或目录", "权限不够", "拒绝连接"),
                *("不允许的操作", "段错误", "无法访问", "未定义的引用", "编译失败", "断言失败"),
                *("找不到或无法加载主类", "没有规则可制作目标"),
            ),
            r"(?:致命)?错误[:：]|未找到命令|没有那个文件或目录|权限不够|拒绝连接|不允许的操作"
            r"|段错误|无法访问|未定义的引用|编译失败|断言失败|找不到或无法加载主类|没有规则可制作目标",
        ),
    ]
)

WRAPPER_RULES = RuleSet(
    [
        (
            (),
            r"^npm (?:ERR!|error\b) *(?:code |errno |path |command |syscall |signal |Exit status"
            r"|Failed at|This is probably|A complete log|Lifecycle script|\S+@\S+ \w+:"
            r"|in workspace\b|workspace |(?:at )?location\b|(?:Error: )?command failed|$)"
            r"|^\s*ELIFECYCLE\b|^error Command failed with exit code",  # npm, yarn
        ),
        (("err_pnpm_recursive_run_first_fail",), r"ERR_PNPM_RECURSIVE_RUN_FIRST_FAIL"),  # pnpm
        (("***",), r"\*\*\*\s*\[[^\]]*\]\s*(?:Error|错误)\s*\d+"),  # make
        ((), r"^make(?:\[\d+\])?: .*(?:Error|错误) \d+\s*$"),
        (
            ("collect2", "linker command failed", "compilation terminated", "ninja: build stopped"),
            r"collect2(?:\.exe)?: (?:error|错误)|linker command failed|compilation terminated"
            r"|ninja: build stopped",
        ),
        ((), r"^\d+ errors? generated|^error: could not compile|^error: aborting due to"),
        (
            (),
            r"^FAILURE: Build failed|^> Compilation failed|^[1-9]\d* errors?$"
            r"|^[1-9]\d* 个错误$",  # gradle, javac
        ),
        (
            (
                *("execution failed for task", "failed to execute goal", "build failure"),
                *("test failures", "compilation error"),
            ),
            r"Execution failed for task|Failed to execute goal|BUILD FAILURE"
            r"|There (?:are|were) test failures|COMPILATION ERROR",  # gradle, maven
        ),
        (("did not complete successfully",), r"did not complete successfully"),  # docker
        ((), r"^FAIL\s*$|^FAIL\t|^exit status \d+$"),  # go
        (
            (),
            r"^Tests?:?\s+[1-9]\d* failed|^Test (?:Files|Suites:)\s+[1-9]\d* failed"
            r"|^\s*[1-9]\d* failing\b"
            r"|^Tests run: \d+, Failures:|^FAILED \((?:failures|errors)=|^Found [1-9]\d* errors?\b"
            r"|^=+ .*\b[1-9]\d* failed\b.* =+$"
            r"|^\s*[1-9]\d* failed(?:[,|] .*| in \d[\d.]*\s*m?s\b.*)?$",  # tallies
        ),
        (("test result: failed",), r"test result: FAILED"),  # cargo test
        (("✖",), r"✖ \d+ problems?"),  # eslint
    ]
)

# Lines that only mention an error: kept, ranked below the decisive ones.
OTHER_RULES = RuleSet(
    [
        ((), r"^Exception in thread|^\s*FAIL\s+\S+|^\s*on \S+\.tf line \d+"),
        (("错误", "失败", "异常"), r"错误|失败|异常"),
        (("error",), r"\bERROR\b"),
        (("failed",), r"\bFAILED\b"),
        ((" failed",), r"\b[1-9]\d* failed\b"),
        (("err!",), r"\bERR!"),
        (("traceback (most recent call last)",), r"Traceback \(most recent call last\)"),
        (("error: ", "exception: "), r"\b\w+(?:Error|Exception): \S"),
        (("error",), r"\b\w+Error\b\s*$"),
        (("***",), r"\*\*\*.*\bError \d+\b"),
        (("error ",), r"\bError \d+\s*$"),
    ]
)

# Lines that mean the command itself failed (not just that its output mentions an error).
FAILURE_RULES = RuleSet(
    [
        (
            (),
            r"^FAILED\b|^\s*--- FAIL: |^FAIL\b|^npm (?:ERR!|error)\b|^error(?:\[E\d+\])?: "
            r"|^Error from server",
        ),
        (("traceback (most recent call last)",), r"Traceback \(most recent call last\)"),
        (("***",), r"\*\*\*.*\bError \d+\b"),
        ((" failed",), r"\b[1-9]\d* failed\b"),
        (
            ("segmentation fault", "command not found", "panicked at", "未找到命令", "段错误"),
            r"Segmentation fault|command not found|panicked at|未找到命令|段错误",
        ),
        (("build failure", "build failed", "编译失败"), r"BUILD FAILURE|Build failed|编译失败"),
        (("error ts",), r"\berror TS\d+:"),
    ]
)
