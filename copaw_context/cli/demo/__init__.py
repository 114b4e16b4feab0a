"""``copaw-context demo``: a real agent, a scripted model and realistic tools, fully offline.

``run`` drives the session and prints the report; ``policy`` is the scripted assistant,
``tools`` and ``content`` the deterministic tool outputs. The policy and tools are also
reused by the long-run tests.
"""

from copaw_context.cli.demo.plot import plot_steps
from copaw_context.cli.demo.policy import DemoPolicy, demo_policy, demo_user_turns
from copaw_context.cli.demo.result import DemoResult
from copaw_context.cli.demo.run import (
    demo_config,
    demo_main,
    print_report,
    real_chat_model,
    run_demo,
)
from copaw_context.cli.demo.tools import (
    BIG_PAGE_BYTES,
    BIG_PAGE_URL,
    BUILD_ERROR_LINE,
    MAKE_ERROR_LINE,
    DemoTools,
    make_demo_tools,
)

__all__ = [
    "BIG_PAGE_BYTES",
    "BIG_PAGE_URL",
    "BUILD_ERROR_LINE",
    "MAKE_ERROR_LINE",
    "DemoPolicy",
    "DemoResult",
    "DemoTools",
    "demo_config",
    "demo_main",
    "demo_policy",
    "demo_user_turns",
    "make_demo_tools",
    "plot_steps",
    "print_report",
    "real_chat_model",
    "run_demo",
]
