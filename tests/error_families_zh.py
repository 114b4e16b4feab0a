"""Tool outputs with Chinese messages and the error lines a summary must keep."""

from __future__ import annotations

__all__ = ["FAMILIES_ZH"]


# (family, output, the decisive line(s) that must be carried, the line the outcome names)
FAMILIES_ZH: list[tuple[str, str, list[str], str]] = [
    (
        "python-zh",
        """Traceback (most recent call last):
  File "/srv/app/settings.py", line 31, in load
    raise ValueError(f"配置文件缺少字段 {key!r}")
ValueError: 配置文件缺少字段 'port'""",
        ["ValueError: 配置文件缺少字段 'port'"],
        "ValueError: 配置文件缺少字段 'port'",
    ),
    (
        "pytest-zh",
        """=================================== FAILURES ===================================
_________________________________ test_get_user ________________________________

    def test_get_user(client):
        resp = client.get("/users/7")
>       assert resp.status_code == 200, "期望返回 200"
E       AssertionError: 期望返回 200
E       assert 500 == 200

tests/test_api.py:14: AssertionError
=========================== short test summary info ============================
FAILED tests/test_api.py::test_get_user - AssertionError: 期望返回 200
========================= 1 failed, 2 passed in 0.31s ==========================""",
        ["E       AssertionError: 期望返回 200", "E       assert 500 == 200"],
        "AssertionError: 期望返回 200",
    ),
    (
        "java-launcher-zh",
        """错误: 找不到或无法加载主类 com.example.App
原因: java.lang.ClassNotFoundException: com.example.App""",
        ["错误: 找不到或无法加载主类 com.example.App", "原因: java.lang.ClassNotFoundException"],
        "ClassNotFoundException: com.example.App",
    ),
    (
        "javac-zh",
        """src/main/java/com/example/App.java:12: 错误: 找不到符号
        Strin name = "x";
        ^
  符号:   类 Strin
  位置: 类 App
1 个错误""",
        ["src/main/java/com/example/App.java:12: 错误: 找不到符号"],
        "App.java:12: 错误: 找不到符号",
    ),
    (
        "git-zh",
        "致命错误：不是 git 仓库（或者任何父目录）：.git",
        ["致命错误：不是 git 仓库（或者任何父目录）：.git"],
        "不是 git 仓库",
    ),
    (
        "go-test-zh",
        """--- FAIL: TestParse (0.00s)
    parse_test.go:18: 解析结果错误: got 3, want 4
FAIL
FAIL	example.com/parser	0.012s""",
        ["--- FAIL: TestParse (0.00s)", "parse_test.go:18: 解析结果错误: got 3, want 4"],
        "parse_test.go:18: 解析结果错误",
    ),
    (
        "jest-zh",
        """ FAIL  src/LoginForm.test.tsx
  ● 登录表单 › 提交空密码时显示错误提示

    expect(received).toBeInTheDocument()

    received value must be an HTMLElement or an SVGElement.

Tests:       1 failed, 4 passed, 5 total""",
        ["● 登录表单 › 提交空密码时显示错误提示", "expect(received).toBeInTheDocument()"],
        "expect(received).toBeInTheDocument()",
    ),
    (
        "shell-permission-zh",
        "bash: ./deploy.sh: 权限不够\n命令执行失败，退出码 126",
        ["bash: ./deploy.sh: 权限不够", "命令执行失败，退出码 126"],
        "bash: ./deploy.sh: 权限不够",
    ),
    (
        "make-zh",
        "make: *** 没有规则可制作目标“install”。 停止。",
        ["make: *** 没有规则可制作目标“install”。 停止。"],
        "没有规则可制作目标",
    ),
    (
        "segfault-zh",
        "./server --port 8080\n段错误 (核心已转储)",
        ["段错误 (核心已转储)"],
        "段错误 (核心已转储)",
    ),
]
