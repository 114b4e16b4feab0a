"""Tool outputs by toolchain family and the error lines a summary must keep from each (English)."""

from __future__ import annotations

from copaw_context.core.summary import extract_facts
from copaw_context.core.transcript import TranscriptMessage, TranscriptPart

__all__ = ["FAMILIES", "facts_of"]


# (family, output, the decisive line(s) that must be carried, the line the outcome names)
FAMILIES: list[tuple[str, str, list[str], str]] = [
    (
        "python-chained",
        """Traceback (most recent call last):
  File "/app/db.py", line 12, in connect
    conn = pool.get()
  File "/app/pool.py", line 40, in get
    raise KeyError(name)
KeyError: 'primary'

The above exception was the direct cause of the following exception:

Traceback (most recent call last):
  File "/app/main.py", line 5, in <module>
    connect()
  File "/app/db.py", line 14, in connect
    raise RuntimeError("no database") from exc
RuntimeError: no database""",
        ["KeyError: 'primary'", "RuntimeError: no database"],
        "RuntimeError: no database",
    ),
    (
        "django",
        """Traceback (most recent call last):
  File "/srv/site/manage.py", line 22, in <module>
    main()
  File "/srv/venv/lib/python3.11/site-packages/django/conf/__init__.py", line 89, in __getattr__
    self._setup(name)
django.core.exceptions.ImproperlyConfigured: Requested setting DEBUG, but settings are not \
configured.""",
        [
            "django.core.exceptions.ImproperlyConfigured: Requested setting DEBUG, but settings "
            "are not configured."
        ],
        "django.core.exceptions.ImproperlyConfigured: Requested setting DEBUG",
    ),
    (
        "django-http404",
        """Traceback (most recent call last):
  File "/srv/site/views.py", line 30, in detail
    raise Http404("Poll does not exist")
django.http.response.Http404: Poll does not exist""",
        ["django.http.response.Http404: Poll does not exist"],
        "django.http.response.Http404: Poll does not exist",
    ),
    (
        "sqlalchemy",
        """INFO sqlalchemy.engine.Engine BEGIN (implicit)
Traceback (most recent call last):
  File "/app/repo.py", line 51, in add_user
    session.commit()
sqlalchemy.exc.IntegrityError: (psycopg2.errors.UniqueViolation) duplicate key value violates \
unique constraint "users_email_key"
DETAIL:  Key (email)=(a@b.c) already exists.""",
        [
            "sqlalchemy.exc.IntegrityError: (psycopg2.errors.UniqueViolation) duplicate key value "
            'violates unique constraint "users_email_key"'
        ],
        "sqlalchemy.exc.IntegrityError",
    ),
    (
        "pydantic",
        """Traceback (most recent call last):
  File "/app/models.py", line 20, in <module>
    User(name=1)
pydantic_core._pydantic_core.ValidationError: 1 validation error for User
name
  Input should be a valid string [type=string_type, input_value=1, input_type=int]""",
        [
            "pydantic_core._pydantic_core.ValidationError: 1 validation error for User",
            "Input should be a valid string [type=string_type, input_value=1, input_type=int]",
        ],
        "Input should be a valid string",
    ),
    (
        "pytest",
        """tests/test_cart.py::test_total FAILED                                   [100%]
=================================== FAILURES ===================================
__________________________________ test_total __________________________________
    def test_total():
>       assert cart.total() == 30
E       assert 27 == 30
E        +  where 27 = <bound method Cart.total of <Cart>>()
tests/test_cart.py:8: AssertionError
=========================== short test summary info ============================
FAILED tests/test_cart.py::test_total - assert 27 == 30
============================== 1 failed in 0.05s ===============================""",
        ["E       assert 27 == 30", "FAILED tests/test_cart.py::test_total - assert 27 == 30"],
        "FAILED tests/test_cart.py::test_total - assert 27 == 30",
    ),
    (
        "unittest",
        """.F
======================================================================
FAIL: test_add (tests.test_calc.CalcTest.test_add)
----------------------------------------------------------------------
Traceback (most recent call last):
  File "/app/tests/test_calc.py", line 7, in test_add
    self.assertEqual(add(2, 3), 5)
AssertionError: 6 != 5

----------------------------------------------------------------------
Ran 2 tests in 0.001s

FAILED (failures=1)""",
        ["FAIL: test_add (tests.test_calc.CalcTest.test_add)", "AssertionError: 6 != 5"],
        "AssertionError: 6 != 5",
    ),
    (
        "jest",
        """ FAIL  src/components/Button.test.tsx
  ● Button › renders the label

    expect(received).toBe(expected) // Object.is equality

    Expected: "Save"
    Received: "Submit"

      12 |     render(<Button label="Save" />);
    > 13 |     expect(screen.getByRole('button').textContent).toBe('Save');
         |                                                    ^

      at Object.<anonymous> (src/components/Button.test.tsx:13:52)

Test Suites: 1 failed, 3 passed, 4 total
Tests:       1 failed, 11 passed, 12 total""",
        [
            "● Button › renders the label",
            "expect(received).toBe(expected) // Object.is equality",
            'Expected: "Save"',
            'Received: "Submit"',
        ],
        "expect(received).toBe(expected) // Object.is equality",
    ),
    (
        "vitest",
        """ ❯ src/sum.test.ts (2 tests | 1 failed) 4ms
   × sum > adds two numbers 3ms
     → expected 5 to be 4 // Object.is equality

⎯⎯⎯⎯⎯⎯⎯ Failed Tests 1 ⎯⎯⎯⎯⎯⎯⎯

 FAIL  src/sum.test.ts > sum > adds two numbers
AssertionError: expected 5 to be 4 // Object.is equality

 Test Files  1 failed (1)
      Tests  1 failed | 1 passed (2)""",
        [
            "× sum > adds two numbers 3ms",
            "AssertionError: expected 5 to be 4 // Object.is equality",
        ],
        "AssertionError: expected 5 to be 4 // Object.is equality",
    ),
    (
        "mocha",
        """  Array
    #indexOf()
      1) should return -1 when the value is not present


  0 passing (8ms)
  1 failing

  1) Array
       #indexOf()
         should return -1 when the value is not present:

      AssertionError [ERR_ASSERTION]: 2 == -1
      + expected - actual

      at Context.<anonymous> (test/array.spec.js:5:14)""",
        ["AssertionError [ERR_ASSERTION]: 2 == -1"],
        "AssertionError [ERR_ASSERTION]: 2 == -1",
    ),
    (
        "playwright",
        """Running 3 tests using 1 worker
  1) [chromium] › tests/login.spec.ts:12:5 › login › shows an error for a wrong password ──

    Error: Timed out 5000ms waiting for expect(locator).toBeVisible()

    Locator: getByText('Wrong password')
    Expected: visible
    Received: <element(s) not found>

  1 failed
    [chromium] › tests/login.spec.ts:12:5 › login › shows an error for a wrong password
  2 passed (9.1s)""",
        [
            "1) [chromium] › tests/login.spec.ts:12:5 › login › shows an error for a wrong "
            "password ──",
            "Error: Timed out 5000ms waiting for expect(locator).toBeVisible()",
            "Received: <element(s) not found>",
        ],
        "Error: Timed out 5000ms waiting for expect(locator).toBeVisible()",
    ),
    (
        "jest-axe",
        """ FAIL  src/IconButton.test.tsx
  ● IconButton › has no accessibility violations

    expect(received).toHaveNoViolations(expected)

    Expected the HTML found at $('button') to have no violations:

    <button class="icon"></button>

    Received:

    "Buttons must have discernible text (button-name)"

    Fix any of the following:
      Element does not have inner text that is visible to screen readers

Tests:       1 failed, 1 total""",
        [
            '"Buttons must have discernible text (button-name)"',
            "● IconButton › has no accessibility violations",
        ],
        '"Buttons must have discernible text (button-name)"',
    ),
    (
        "tsc-npm",
        """> web@1.0.0 build
> tsc -p .

src/api.ts:14:23 - error TS2345: Argument of type 'string' is not assignable to parameter \
of type 'number'.

14   return fetchUser(id);
                         ~~

Found 1 error in src/api.ts:14

npm ERR! code 2
npm ERR! path /home/dev/web
npm ERR! command failed
npm ERR! command sh -c tsc -p .""",
        [
            "src/api.ts:14:23 - error TS2345: Argument of type 'string' is not assignable to "
            "parameter of type 'number'."
        ],
        "src/api.ts:14:23 - error TS2345",
    ),
    (
        "tsc-classic",
        "src/index.ts(3,7): error TS2322: Type 'number' is not assignable to type 'string'.",
        ["src/index.ts(3,7): error TS2322: Type 'number' is not assignable to type 'string'."],
        "error TS2322",
    ),
    (
        "eslint",
        """/home/dev/web/src/App.tsx
  12:7  error    'unused' is assigned a value but never used  @typescript-eslint/no-unused-vars
  20:1  warning  Unexpected console statement                 no-console

✖ 2 problems (1 error, 1 warning)""",
        [
            "12:7  error    'unused' is assigned a value but never used  "
            "@typescript-eslint/no-unused-vars"
        ],
        "12:7  error",
    ),
    (
        "rust",
        """   Compiling app v0.1.0 (/home/dev/app)
error[E0308]: mismatched types
 --> src/main.rs:4:18
  |
4 |     let n: u32 = "five";
  |            ---   ^^^^^^ expected `u32`, found `&str`

For more information about this error, try `rustc --explain E0308`.
error: could not compile `app` (bin "app") due to 1 previous error""",
        ["error[E0308]: mismatched types"],
        "error[E0308]: mismatched types",
    ),
    (
        "rust-test",
        """running 1 test
thread 'tests::adds' panicked at src/lib.rs:10:9:
assertion `left == right` failed
  left: 4
 right: 5
test tests::adds ... FAILED

test result: FAILED. 0 passed; 1 failed; 0 ignored""",
        ["thread 'tests::adds' panicked at src/lib.rs:10:9:", "assertion `left == right` failed"],
        "assertion `left == right` failed",
    ),
    (
        "go-build",
        """# example.com/app
./main.go:12:2: undefined: fetchUser
./main.go:15:9: cannot use n (variable of type int) as string value in return statement""",
        ["./main.go:12:2: undefined: fetchUser"],
        "./main.go:15:9: cannot use n",
    ),
    (
        "go-test",
        """=== RUN   TestAdd
--- FAIL: TestAdd (0.00s)
    add_test.go:12: Add(2, 3) = 6; want 5
FAIL
FAIL	example.com/calc	0.002s
FAIL""",
        ["--- FAIL: TestAdd (0.00s)", "add_test.go:12: Add(2, 3) = 6; want 5"],
        "add_test.go:12: Add(2, 3) = 6; want 5",
    ),
    (
        "gradle-javac",
        """> Task :app:compileJava FAILED
/home/dev/app/src/main/java/App.java:10: error: cannot find symbol
        fetchUser(id);
        ^
  symbol:   method fetchUser(int)
  location: class App
1 error

FAILURE: Build failed with an exception.

* What went wrong:
Execution failed for task ':app:compileJava'.
> Compilation failed; see the compiler error output for details.""",
        ["/home/dev/app/src/main/java/App.java:10: error: cannot find symbol"],
        "App.java:10: error: cannot find symbol",
    ),
    (
        "kotlin",
        """> Task :app:compileKotlin FAILED
e: file:///home/dev/app/src/main/kotlin/Main.kt:5:13 Unresolved reference: fetchUser

FAILURE: Build failed with an exception.""",
        ["e: file:///home/dev/app/src/main/kotlin/Main.kt:5:13 Unresolved reference: fetchUser"],
        "Unresolved reference: fetchUser",
    ),
    (
        "maven-junit",
        """[INFO] Running com.example.CalculatorTest
[ERROR] Tests run: 3, Failures: 1, Errors: 0, Skipped: 0, Time elapsed: 0.05 s <<< FAILURE!
[ERROR] com.example.CalculatorTest.testAdd  Time elapsed: 0.01 s  <<< FAILURE!
org.opentest4j.AssertionFailedError: expected: <5> but was: <6>
	at com.example.CalculatorTest.testAdd(CalculatorTest.java:15)
[ERROR] Failures:
[ERROR]   CalculatorTest.testAdd:15 expected: <5> but was: <6>
[INFO] BUILD FAILURE
[ERROR] Failed to execute goal org.apache.maven.plugins:maven-surefire-plugin:3.2.2:test \
(default-test) on project calc: There are test failures.""",
        [
            "org.opentest4j.AssertionFailedError: expected: <5> but was: <6>",
            "[ERROR]   CalculatorTest.testAdd:15 expected: <5> but was: <6>",
        ],
        "CalculatorTest.testAdd:15 expected: <5> but was: <6>",
    ),
    (
        "java-runtime",
        """Exception in thread "main" java.lang.IllegalStateException: pool closed
	at com.example.Pool.get(Pool.java:40)
Caused by: java.sql.SQLException: Connection is not available, request timed out after 30000ms.
	at com.zaxxer.hikari.pool.HikariPool.createTimeoutException(HikariPool.java:696)""",
        [
            'Exception in thread "main" java.lang.IllegalStateException: pool closed',
            "Caused by: java.sql.SQLException: Connection is not available, request timed out "
            "after 30000ms.",
        ],
        "Caused by: java.sql.SQLException",
    ),
    (
        "gcc-make",
        """gcc -O2 -c src/parser.c -o parser.o
src/parser.c:412:17: error: 'tok' undeclared (first use in this function)
make: *** [Makefile:23: parser.o] Error 1""",
        ["src/parser.c:412:17: error: 'tok' undeclared (first use in this function)"],
        "src/parser.c:412:17: error: 'tok' undeclared",
    ),
    (
        "linker",
        """/usr/bin/ld: main.o: in function `main':
main.c:(.text+0x15): undefined reference to `fetch_user'
collect2: error: ld returned 1 exit status""",
        ["main.c:(.text+0x15): undefined reference to `fetch_user'"],
        "undefined reference to `fetch_user'",
    ),
    (
        "msvc",
        "main.cpp(10): error C2065: 'count': undeclared identifier",
        ["main.cpp(10): error C2065: 'count': undeclared identifier"],
        "error C2065",
    ),
    (
        "make-no-rule",
        "make: *** No rule to make target 'docs', needed by 'all'.  Stop.",
        ["make: *** No rule to make target 'docs', needed by 'all'.  Stop."],
        "No rule to make target 'docs'",
    ),
    (
        "npm-only",
        """npm ERR! code ERESOLVE
npm ERR! ERESOLVE unable to resolve dependency tree""",
        ["npm ERR! code ERESOLVE", "npm ERR! ERESOLVE unable to resolve dependency tree"],
        "npm ERR! ERESOLVE unable to resolve dependency tree",
    ),
    (
        "pnpm",
        """src/index.ts(3,7): error TS2322: Type 'number' is not assignable to type 'string'.
 ELIFECYCLE  Command failed with exit code 2.""",
        ["src/index.ts(3,7): error TS2322: Type 'number' is not assignable to type 'string'."],
        "error TS2322",
    ),
    (
        "docker",
        """#8 [build 4/6] RUN npm ci
#8 1.234 npm ERR! code E404
#8 1.240 npm ERR! 404 Not Found - GET https://registry.example/left-padd - Not found
#8 ERROR: process "/bin/sh -c npm ci" did not complete successfully: exit code: 1
------
ERROR: failed to solve: process "/bin/sh -c npm ci" did not complete successfully: exit code: 1""",
        ["#8 1.240 npm ERR! 404 Not Found - GET https://registry.example/left-padd - Not found"],
        "404 Not Found",
    ),
    (
        "docker-daemon",
        'docker: Error response from daemon: Conflict. The container name "/web" is already in '
        'use by container "4f2a".',
        [
            'docker: Error response from daemon: Conflict. The container name "/web" is already '
            'in use by container "4f2a".'
        ],
        "Error response from daemon",
    ),
    (
        "terraform",
        """╷
│ Error: Invalid reference
│
│   on main.tf line 12, in resource "aws_instance" "web":
│   12:   ami = var.ami_id
│
│ A reference to a resource type must be followed by at least one attribute access.
╵""",
        ["│ Error: Invalid reference", '│   on main.tf line 12, in resource "aws_instance" "web":'],
        "Error: Invalid reference",
    ),
    (
        "kubectl",
        """Error from server (NotFound): deployments.apps "web" not found""",
        ['Error from server (NotFound): deployments.apps "web" not found'],
        "Error from server (NotFound)",
    ),
    (
        "kubectl-pods",
        """NAME                   READY   STATUS             RESTARTS   AGE
web-7d4b9c-x2x9z       0/1     CrashLoopBackOff   5          3m""",
        ["web-7d4b9c-x2x9z       0/1     CrashLoopBackOff   5          3m"],
        "CrashLoopBackOff",
    ),
    (
        "shell",
        """$ ./deploy.sh
./deploy.sh: line 4: kubectx: command not found
Exit code: 127""",
        ["./deploy.sh: line 4: kubectx: command not found", "Exit code: 127"],
        "kubectx: command not found",
    ),
    (
        "shell-zh",
        """bash: kubectx: 未找到命令
ls: 无法访问 'dist': 没有那个文件或目录
退出码: 2""",
        ["bash: kubectx: 未找到命令", "ls: 无法访问 'dist': 没有那个文件或目录", "退出码: 2"],
        "ls: 无法访问 'dist': 没有那个文件或目录",
    ),
    (
        "gcc-zh",
        """src/parser.c:412:17: 错误：‘tok’未声明(在此函数内第一次使用)
make: *** [Makefile:23：parser.o] 错误 1""",
        ["src/parser.c:412:17: 错误：‘tok’未声明(在此函数内第一次使用)"],
        "‘tok’未声明",
    ),
    (
        "ld-zh",
        """/usr/bin/ld: main.o: in function `main':
main.c:(.text+0x15)：对‘fetch_user’未定义的引用
collect2: 错误：ld 返回 1""",
        ["main.c:(.text+0x15)：对‘fetch_user’未定义的引用"],
        "未定义的引用",
    ),
]


def facts_of(output: str) -> tuple[tuple[str, ...], str]:
    call = TranscriptPart("tool_call", '{"command": "build"}', "shell", "c1")
    result = TranscriptPart("tool_result", output, "shell", "c1", True)
    facts = extract_facts(
        [
            TranscriptMessage("assistant", "bot", (call,)),
            TranscriptMessage("user", "user", (result,)),
        ]
    )
    return facts.error_lines, facts.tool_outcomes[-1]
