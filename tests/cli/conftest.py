"""``copaw-context demo`` and ``chat`` drive AgentScope 2.x agents: their tests run in the 2.x
venv only (the 1.x run leaves them out, as tests/conftest.py does for tests/agentscope2/)."""

from copaw_context import installed_agentscope_major

_TWO_ONLY = ["test_demo_*.py", "test_cli_workspace.py", "test_ctrl_c.py"]
collect_ignore_glob = [] if installed_agentscope_major() >= 2 else _TWO_ONLY
