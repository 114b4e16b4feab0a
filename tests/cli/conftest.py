"""``copaw-context demo`` drives an AgentScope 2.x agent: its tests run in the 2.x venv only
(the 1.x run leaves them out, as tests/conftest.py does for the top-level tests)."""

from copaw_context import installed_agentscope_major

collect_ignore_glob = (
    [] if installed_agentscope_major() >= 2 else ["test_demo_*.py", "test_cli_workspace.py"]
)
