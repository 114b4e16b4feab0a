"""Shared test fixtures; which tests run depends on the installed AgentScope major.

``scripts/test.sh`` runs pytest once per environment: in ``.venv`` (AgentScope 2.x) every test but
``agentscope1/``; in ``.venv-as1`` (AgentScope 1.x) ``invariants/`` (the end-to-end
invariants, against whichever host is installed), ``core/`` (host-neutral),
``agentscope1/`` and the real-agent tests of ``reliability/`` and ``ported/`` (the peers'
suites; those taking the ``driver`` fixture, see ``reliability/conftest.py``). The third
run, in ``.venv-qwenpaw1``, is ``qwenpaw/``: real QwenPaw 1.1, which only that venv has; the
fourth, in ``.venv-qwenpaw2``, is ``qwenpaw2/``: real QwenPaw 2.2.
"""

from __future__ import annotations

from importlib.metadata import PackageNotFoundError, version

from hypothesis import settings

from copaw_context import installed_agentscope_major
from tests.network_guard import no_network

__all__ = ["no_network"]

# No timing asserts in tests: hypothesis's per-example deadline (200 ms) failed examples on a
# loaded 2-core machine (test_reported_usage: 312 ms), so it is off for every test.
settings.register_profile("copaw", deadline=None)
settings.load_profile("copaw")

# agentscope2/ drives AgentScope 2.x agents, agentscope1/ 1.x ones.
_TWO = installed_agentscope_major() >= 2
collect_ignore_glob = ["agentscope1/*"] if _TWO else ["agentscope2/*"]
try:
    _QWENPAW = version("qwenpaw")
except PackageNotFoundError:
    _QWENPAW = ""
if not _QWENPAW.startswith("1."):  # QwenPaw 1.1 drives AgentScope 1.x agents
    collect_ignore_glob.append("qwenpaw/*")
if not _QWENPAW.startswith("2."):  # QwenPaw 2.2, AgentScope 2.x agents
    collect_ignore_glob.append("qwenpaw2/*")
