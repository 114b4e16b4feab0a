"""The toolchains of the chain benchmark's sessions (``benchmarks/chain_sessions.py``): per
toolchain a goal, constraints and tasks, each task with its command, its exact error line in
a realistic failing output, the file it changes, a decision with its reason and a plan, in
English and Chinese. Tool output stays in English, as the tools print it.
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["TOOLCHAINS", "Task", "Toolchain"]


@dataclass(frozen=True)
class Task:
    """One piece of work: it fails with ``error`` (in ``failing``) until ``path`` is changed."""

    name: tuple[str, str]  # (English, Chinese): what the user asks for
    command: str
    failing: str  # the whole failing output; ``error`` is one of its lines, exactly
    error: str
    passing: str
    path: str  # the file the fix changes
    choice: tuple[str, str]  # the decision, EN and ZH ...
    reason: tuple[str, str]  # ... and its reason
    plan: tuple[str, str]  # the next step stated after the fix


@dataclass(frozen=True)
class Toolchain:
    """A project: its goal, constraints, tasks and the source files read as filler."""

    key: str
    goal: tuple[str, str]
    constraints: tuple[tuple[str, str], ...]
    tasks: tuple[Task, ...]
    sources: tuple[str, ...]
    comment: str  # the line comment of its language, for the filler


_PY = Toolchain(
    "python",
    ("ship the invoice service's PDF export", "完成发票服务的 PDF 导出功能"),
    (
        ("Never edit files under vendor/", "不要修改 vendor/ 下的文件"),
        ("Keep Python 3.9 compatibility", "必须保持对 Python 3.9 的兼容"),
        ("Do not add new dependencies to requirements.txt", "不要在 requirements.txt 里添加新依赖"),
        ("Always run ruff check before committing", "提交前务必运行 ruff check"),
    ),
    (
        Task(
            ("fix the rounding of invoice totals", "修复发票总额的舍入问题"),
            "pytest tests/test_totals.py",
            "============================= test session starts ==============================\n"
            "collected 23 items\n\ntests/test_totals.py ..F....................          [100%]\n\n"
            "=================================== FAILURES ===================================\n"
            "____________________________ test_total_rounding ____________________________\n"
            "    def test_total_rounding():\n>       assert total([0.1, 0.2]) == Decimal('0.30')\n"
            "E       AssertionError: assert Decimal('0.30000000000000004') == Decimal('0.30')\n\n"
            "tests/test_totals.py:42: AssertionError\n"
            "=========================== short test summary info ============================\n"
            "FAILED tests/test_totals.py::test_total_rounding - AssertionError\n"
            "1 failed, 22 passed in 0.31s",
            "E       AssertionError: assert Decimal('0.30000000000000004') == Decimal('0.30')",
            "23 passed in 0.29s",
            "invoice/totals.py",
            ("sum the amounts as Decimal", "用 Decimal 累加金额"),
            ("binary floats cannot hold cents exactly", "二进制浮点数无法精确表示分"),
            ("add a test for negative credit notes", "为负数的贷项通知单补一个测试"),
        ),
        Task(
            ("make the PDF renderer import again", "让 PDF 渲染模块重新可以导入"),
            "python -m invoice.pdf --check",
            'Traceback (most recent call last):\n  File "/srv/invoice/invoice/pdf.py", line 8, '
            "in <module>\n    from weasyprint import HTML\n"
            "ModuleNotFoundError: No module named 'weasyprint'",
            "ModuleNotFoundError: No module named 'weasyprint'",
            "pdf renderer: ok (reportlab 3.6)",
            "invoice/pdf.py",
            ("render the PDF with reportlab", "改用 reportlab 渲染 PDF"),
            (
                "it is already pinned and weasyprint needs system libraries",
                "它已经锁定了版本，而 weasyprint 需要系统库",
            ),
            ("render the sample invoice and compare it", "渲染示例发票并对比结果"),
        ),
        Task(
            ("fix the tax lookup for Swiss addresses", "修复瑞士地址的税率查询"),
            "pytest tests/test_tax.py -q",
            "..F.\n================================== FAILURES ==================================\n"
            "    rate = RATES[address.country]\nE   KeyError: 'CH'\n\n"
            "invoice/tax.py:61: KeyError\n"
            "FAILED tests/test_tax.py::test_swiss_rate - KeyError: 'CH'\n"
            "1 failed, 3 passed in 0.08s",
            "E   KeyError: 'CH'",
            "4 passed in 0.07s",
            "invoice/tax.py",
            ("load the rates from rates.toml", "从 rates.toml 读取税率"),
            ("finance edits that file without a release", "财务无需发版就能修改那个文件"),
            ("ask finance to review rates.toml", "请财务审核 rates.toml"),
        ),
        Task(
            ("stop the mailer from crashing on empty CC lists", "修复抄送列表为空时邮件发送崩溃"),
            "python -m invoice.mailer --dry-run",
            'Traceback (most recent call last):\n  File "/srv/invoice/invoice/mailer.py", '
            "line 112, in send\n    header = ', '.join(cc) + count\n"
            'TypeError: can only concatenate str (not "int") to str',
            'TypeError: can only concatenate str (not "int") to str',
            "dry run: 3 messages built, 0 sent",
            "invoice/mailer.py",
            ("build the headers with email.message", "用 email.message 构造邮件头"),
            ("it quotes and folds long headers itself", "它会自己处理长邮件头的引号和折行"),
            ("send a test mail to the staging inbox", "给 staging 邮箱发一封测试邮件"),
        ),
        Task(
            ("speed up the monthly report query", "加快月度报表的查询"),
            "pytest tests/test_report.py --timeout=5",
            "tests/test_report.py F\n"
            "E   Failed: Timeout >5.0s\n"
            "FAILED tests/test_report.py::test_monthly_report - Failed: Timeout >5.0s\n"
            "1 failed in 5.12s",
            "E   Failed: Timeout >5.0s",
            "1 passed in 0.41s",
            "invoice/report.py",
            ("add an index on invoices.issued_at", "给 invoices.issued_at 加索引"),
            ("the query scans every invoice of every month", "这个查询会扫描每个月的所有发票"),
            ("measure the report on the production snapshot", "在生产快照上测一下报表耗时"),
        ),
    ),
    ("invoice/models.py", "invoice/api.py", "invoice/settings.py", "tests/conftest.py"),
    "#",
)

_NODE = Toolchain(
    "node",
    (
        "get the dashboard build green and ship the CSV export",
        "让 dashboard 构建通过并上线 CSV 导出",
    ),
    (
        ("Keep the public API of src/api.ts stable", "保持 src/api.ts 的公开接口不变"),
        ("Never commit package-lock.json changes", "禁止提交 package-lock.json 的改动"),
        ("Use pnpm, not npm, for installs", "安装依赖只用 pnpm，不要用 npm"),
        ("Do not disable eslint rules", "不要关闭任何 eslint 规则"),
    ),
    (
        Task(
            ("fix the type error in the user fetch", "修复获取用户时的类型错误"),
            "npm run build",
            "> dashboard@2.3.0 build\n> tsc -p .\n\nsrc/api.ts:14:23 - error TS2345: Argument "
            "of type 'string' is not assignable to parameter of type 'number'.\n\n14   return "
            "fetchUser(id);\n\nFound 1 error in src/api.ts:14\n\nnpm ERR! code 2\n"
            "npm ERR! path /srv/dashboard\nnpm ERR! command failed",
            "src/api.ts:14:23 - error TS2345: Argument of type 'string' is not assignable to "
            "parameter of type 'number'.",
            "> dashboard@2.3.0 build\n> tsc -p .\n\nbuild finished in 4.1s",
            "src/users/fetch.ts",
            ("parse the id with Number() at the route", "在路由处用 Number() 解析 id"),
            ("the route is the only place that gets a string", "只有路由拿到的是字符串"),
            ("run the e2e smoke test", "跑一遍 e2e 冒烟测试"),
        ),
        Task(
            ("fix the accessibility test of the icon button", "修复图标按钮的无障碍测试"),
            "npx jest src/components",
            " FAIL  src/components/IconButton.test.tsx\n  ● IconButton › has no violations\n\n"
            "    expect(received).toHaveNoViolations(expected)\n\n    Received:\n\n"
            '    "Buttons must have discernible text (button-name)"\n\n'
            "Tests:       1 failed, 7 passed, 8 total",
            '"Buttons must have discernible text (button-name)"',
            "Tests:       8 passed, 8 total",
            "src/components/IconButton.tsx",
            ("give the icon button an aria-label prop", "给图标按钮加一个 aria-label 属性"),
            ("a visible label would break the toolbar layout", "可见的文字标签会破坏工具栏布局"),
            ("rerun the axe tests on every component", "对所有组件重跑 axe 测试"),
        ),
        Task(
            ("make the CSV export handle quoted newlines", "让 CSV 导出支持带引号的换行"),
            "npx jest src/export",
            " FAIL  src/export/csv.test.ts\n  ● toCsv › keeps quoted newlines\n\n"
            "    TypeError: Cannot read properties of undefined (reading 'map')\n\n"
            "      at toCsv (src/export/csv.ts:21:18)\n\nTests:       1 failed, 4 passed, 5 total",
            "TypeError: Cannot read properties of undefined (reading 'map')",
            "Tests:       5 passed, 5 total",
            "src/export/csv.ts",
            ("use papaparse for the CSV export", "CSV 导出改用 papaparse"),
            ("it handles quoted newlines", "它能处理带引号的换行"),
            ("export the 50k-row sample and diff it", "导出 5 万行样例并做比对"),
        ),
        Task(
            ("fix the lint script", "修复 lint 脚本"),
            "npm run lint",
            'npm ERR! Missing script: "lint"\nnpm ERR!\nnpm ERR! To see a list of scripts, run:\n'
            "npm ERR!   npm run\n\nnpm ERR! A complete log of this run can be found in: "
            "/root/.npm/_logs/2026-12-01T10_00_00_000Z-debug-0.log",
            'npm ERR! Missing script: "lint"',
            "> dashboard@2.3.0 lint\n> eslint src\n\n(no problems)",
            "package.json",
            (
                "run eslint through a lint script in package.json",
                "在 package.json 里加 lint 脚本调用 eslint",
            ),
            ("the CI job calls npm run lint", "CI 任务调用的是 npm run lint"),
            ("wire the lint script into the pre-push hook", "把 lint 脚本接入 pre-push 钩子"),
        ),
        Task(
            ("fix the date column in the export", "修复导出中的日期列"),
            "npx jest src/export/dates",
            " FAIL  src/export/dates.test.ts\n  ● formatDate › uses the user's zone\n\n"
            '    Expected: "2026-03-01"\n    Received: "2026-02-28"\n\n'
            "      at Object.<anonymous> (src/export/dates.test.ts:12:30)\n\n"
            "Tests:       1 failed, 2 passed, 3 total",
            'Received: "2026-02-28"',
            "Tests:       3 passed, 3 total",
            "src/export/dates.ts",
            (
                "format dates with Intl.DateTimeFormat in the user's zone",
                "用 Intl.DateTimeFormat 按用户时区格式化日期",
            ),
            ("toISOString always prints UTC", "toISOString 总是输出 UTC"),
            ("check the export in the Tokyo zone", "在东京时区检查导出结果"),
        ),
    ),
    ("src/api.ts", "src/app.tsx", "src/store/index.ts", "src/components/Toolbar.tsx"),
    "//",
)

_CARGO = Toolchain(
    "cargo",
    ("finish the config loader of the CLI", "完成命令行工具的配置加载器"),
    (
        ("Do not use unsafe code", "不要使用 unsafe 代码"),
        ("Keep the MSRV at 1.70", "最低支持的 Rust 版本必须保持 1.70"),
        ("Never change the config file format", "禁止修改配置文件格式"),
        ("Always run cargo clippy before committing", "提交前务必运行 cargo clippy"),
    ),
    (
        Task(
            ("fix the borrow error in main", "修复 main 里的借用错误"),
            "cargo build",
            "   Compiling appcfg v0.4.0 (/srv/appcfg)\nerror[E0382]: borrow of moved value: "
            "`config`\n  --> src/main.rs:27:20\n   |\n24 |     let loader = Loader::new(config);\n"
            '   |                              ------ value moved here\n27 |     println!("{}", '
            "config.name);\n   |                    ^^^^^^^^^^^ value borrowed here after move\n\n"
            'error: could not compile `appcfg` (bin "appcfg") due to 1 previous error',
            "error[E0382]: borrow of moved value: `config`",
            "   Compiling appcfg v0.4.0 (/srv/appcfg)\n    Finished dev [unoptimized] in 2.31s",
            "src/main.rs",
            ("pass the config to the loader by reference", "把配置按引用传给加载器"),
            ("main still prints its name afterwards", "main 之后还要打印它的名字"),
            ("add a test for a missing config file", "为缺失配置文件的情况补一个测试"),
        ),
        Task(
            ("fix the parser test for empty files", "修复空文件的解析测试"),
            "cargo test parser",
            "running 6 tests\ntest parser::tests::parses_keys ... ok\n"
            "test parser::tests::parses_empty ... FAILED\n\nfailures:\n\n---- "
            "parser::tests::parses_empty stdout ----\nthread 'parser::tests::parses_empty' "
            "panicked at src/parser.rs:88:9:\ncalled `Option::unwrap()` on a `None` value\n\n"
            "test result: FAILED. 5 passed; 1 failed; 0 ignored",
            "called `Option::unwrap()` on a `None` value",
            "running 6 tests\ntest result: ok. 6 passed; 0 failed; 0 ignored",
            "src/parser.rs",
            ("return an empty table for an empty file", "空文件返回一个空表"),
            ("an empty config is valid and means the defaults", "空配置是合法的，表示使用默认值"),
            ("document the defaults in the README", "在 README 里写明默认值"),
        ),
        Task(
            ("fix the type mismatch in the port setting", "修复端口设置的类型不匹配"),
            "cargo check",
            "    Checking appcfg v0.4.0 (/srv/appcfg)\nerror[E0308]: mismatched types\n"
            "  --> src/settings.rs:41:16\n   |\n41 |         port: value,\n   |"
            "                ^^^^^ expected `u16`, found `i64`\n\nerror: could not compile "
            "`appcfg` (lib) due to 1 previous error",
            "error[E0308]: mismatched types",
            "    Checking appcfg v0.4.0 (/srv/appcfg)\n    Finished dev [unoptimized] in 0.98s",
            "src/settings.rs",
            ("convert the port with u16::try_from", "用 u16::try_from 转换端口"),
            (
                "a port above 65535 must be an error, not a wrap",
                "超过 65535 的端口必须报错而不是回绕",
            ),
            ("test a port of 70000", "测试端口 70000 的情况"),
        ),
        Task(
            ("make the env override work", "让环境变量覆盖生效"),
            "cargo test env_override",
            "running 1 test\ntest env::tests::env_override ... FAILED\n\n---- "
            "env::tests::env_override stdout ----\nthread 'env::tests::env_override' panicked "
            "at src/env.rs:19:5:\nassertion `left == right` failed\n  left: 8080\n right: 9090\n\n"
            "test result: FAILED. 0 passed; 1 failed",
            "assertion `left == right` failed",
            "running 1 test\ntest result: ok. 1 passed; 0 failed",
            "src/env.rs",
            ("read APPCFG_ variables after the file", "在读取文件之后再读取 APPCFG_ 环境变量"),
            ("the environment must win over the file", "环境变量必须覆盖文件里的值"),
            ("list the variables in --help", "在 --help 里列出这些变量"),
        ),
        Task(
            ("fix the clippy warning that fails CI", "修复导致 CI 失败的 clippy 警告"),
            "cargo clippy -- -D warnings",
            "    Checking appcfg v0.4.0 (/srv/appcfg)\nerror: this `if` has identical blocks\n"
            "  --> src/merge.rs:33:9\n   |\n   = note: `-D clippy::if-same-then-else` implied "
            "by `-D warnings`\n\nerror: could not compile `appcfg` (lib) due to 1 previous error",
            "error: this `if` has identical blocks",
            "    Checking appcfg v0.4.0 (/srv/appcfg)\n    Finished dev [unoptimized] in 1.20s",
            "src/merge.rs",
            ("merge the two branches into one", "把两个分支合并成一个"),
            ("both set the same default", "两个分支设置的是同一个默认值"),
            ("tag the 0.4.1 release", "打 0.4.1 的发布标签"),
        ),
    ),
    ("src/lib.rs", "src/loader.rs", "Cargo.toml", "tests/cli.rs"),
    "//",
)

_GO = Toolchain(
    "go",
    ("fix the cache service before the release", "在发布前修好缓存服务"),
    (
        ("Do not change the public function signatures", "不要修改公开函数的签名"),
        ("Always run go vet before committing", "提交前务必运行 go vet"),
        ("Never touch the generated files in internal/pb/", "禁止改动 internal/pb/ 里的生成文件"),
        ("Keep the service free of cgo", "服务必须保持不依赖 cgo"),
    ),
    (
        Task(
            ("fix the LRU eviction", "修复 LRU 淘汰逻辑"),
            "go test ./internal/cache/",
            "=== RUN   TestLRUEvict\n--- FAIL: TestLRUEvict (0.00s)\n"
            "    lru_test.go:31: got 3 entries, want 2\nFAIL\n"
            "FAIL\texample.com/svc/internal/cache\t0.004s\nFAIL",
            "lru_test.go:31: got 3 entries, want 2",
            "ok  \texample.com/svc/internal/cache\t0.003s",
            "internal/cache/lru.go",
            ("evict from the list tail", "从链表尾部淘汰"),
            ("the tail is always the least recently used entry", "尾部总是最久未使用的条目"),
            ("add a benchmark for Get", "给 Get 加一个基准测试"),
        ),
        Task(
            ("fix the build of the metrics package", "修复 metrics 包的编译"),
            "go build ./...",
            "# example.com/svc/internal/metrics\n"
            "internal/metrics/export.go:57:14: undefined: evictOldest\n",
            "internal/metrics/export.go:57:14: undefined: evictOldest",
            "(no output)",
            "internal/metrics/export.go",
            ("read the evictions from the cache's Stats()", "从缓存的 Stats() 读取淘汰次数"),
            ("the metrics package must not reach into the cache", "metrics 包不能直接访问缓存内部"),
            ("graph the evictions on the dashboard", "在仪表盘上画出淘汰次数"),
        ),
        Task(
            ("fix the panic in the shard router", "修复分片路由的 panic"),
            "go test ./internal/shard/",
            "--- FAIL: TestRoute (0.00s)\npanic: runtime error: index out of range [5] with "
            "length 5 [recovered]\n\ngoroutine 7 [running]:\n"
            "example.com/svc/internal/shard.(*Router).Route(...)\n"
            "\t/srv/svc/internal/shard/router.go:44 +0x1d\nFAIL\texample.com/svc/internal/shard"
            "\t0.006s",
            "panic: runtime error: index out of range [5] with length 5 [recovered]",
            "ok  \texample.com/svc/internal/shard\t0.004s",
            "internal/shard/router.go",
            ("take the hash modulo the shard count", "哈希值对分片数取模"),
            ("the hash can exceed the number of shards", "哈希值可能超过分片数量"),
            ("test with a single shard", "用单个分片测试一遍"),
        ),
        Task(
            ("fix the data race in the stats counter", "修复统计计数器的数据竞争"),
            "go test -race ./internal/stats/",
            "==================\nWARNING: DATA RACE\nWrite at 0x00c000120008 by goroutine 8:\n"
            "  example.com/svc/internal/stats.(*Counter).Inc()\n"
            "      /srv/svc/internal/stats/counter.go:18 +0x44\n==================\n"
            "--- FAIL: TestCounterParallel (0.01s)\n    testing.go:1465: race detected during "
            "execution of test\nFAIL",
            "testing.go:1465: race detected during execution of test",
            "ok  \texample.com/svc/internal/stats\t1.021s",
            "internal/stats/counter.go",
            ("use sync/atomic for the counter", "计数器改用 sync/atomic"),
            (
                "a mutex per increment costs too much on the hot path",
                "每次加一都加锁在热路径上开销太大",
            ),
            ("run the race tests in CI", "在 CI 里跑 race 测试"),
        ),
        Task(
            ("fix the config decoding of durations", "修复配置里时长的解析"),
            "go test ./internal/config/",
            "--- FAIL: TestDecodeTTL (0.00s)\n    config_test.go:22: decode: time: missing unit "
            'in duration "30"\nFAIL\nFAIL\texample.com/svc/internal/config\t0.002s',
            'config_test.go:22: decode: time: missing unit in duration "30"',
            "ok  \texample.com/svc/internal/config\t0.002s",
            "internal/config/decode.go",
            ("treat a bare number as seconds", "把不带单位的数字当作秒"),
            ("the old config files write the TTL that way", "旧的配置文件就是这样写 TTL 的"),
            ("update the sample config", "更新示例配置"),
        ),
    ),
    ("internal/cache/cache.go", "cmd/svc/main.go", "internal/server/http.go", "go.mod"),
    "//",
)

TOOLCHAINS: tuple[Toolchain, ...] = (_PY, _NODE, _CARGO, _GO)
