"""A fallback model with a smaller window (AgentScope 2.x ``ModelConfig.fallback_model``).

The primary model (32K) is down; AgentScope sends the same input to the fallback (a local
4K model) through the same middleware, naming it ``current_model``. The input is fitted to
the window of the model the call goes to, and what an overflow error teaches stays with the
model that raised it: the primary, back again, keeps its whole window (found from outside:
the fallback got 5,661 tokens for its 4,000, and its rejection left the primary 2,837 of its
32,000 tokens for the rest of the session).

2.x only: AgentScope 1.x has no fallback model (these tests take no ``driver``, so the 1.x
run deselects them; AgentScope 2.x is imported inside the tests).
"""

from __future__ import annotations

import json
import tempfile
from pathlib import Path
from typing import Any

from copaw_context import MemoryCompactionHook
from copaw_context.core.config.running import parse_running_config
from copaw_context.testing import ScriptedChatModel, text_step
from tests.reliability.budget import record
from tests.reliability.invariants import o200k
from tests.reliability.provider_rules import input_tokens
from tests.reliability.provider_wordings import HttpError

PRIMARY, FALLBACK = 32_000, 4000
SERVER = 800  # what the fallback's local server is loaded with (declared: FALLBACK)
LATER = 10  # turns of the primary once it is back


def _tokens(call: Any) -> int:
    return input_tokens(list(call.formatted), json.dumps(call.tools or []), o200k())


def _down() -> ScriptedChatModel:
    """The primary, down: a 503 on every call (AgentScope then calls the fallback)."""
    return ScriptedChatModel(
        [HttpError("503 Service Unavailable", status_code=503)] * 4, context_size=PRIMARY
    )


async def _agent(
    workspace: Path, fallback: ScriptedChatModel, *, memory: bool = False, turns: int = 20
) -> tuple[Any, Any]:
    from agentscope.agent import Agent, InjectionConfig, ModelConfig
    from agentscope.message import AssistantMsg, TextBlock, UserMsg
    from agentscope.tool import Toolkit

    config = parse_running_config(
        {
            "running": {
                "memory": {"enabled": memory},
                "light_context_config": {"token_counter": "o200k_base", "compactor": "extractive"},
            }
        }
    )
    hook = MemoryCompactionHook(config, workspace)
    agent = Agent(
        name="assistant",
        system_prompt="You are careful.",
        model=_down(),
        model_config=ModelConfig(fallback_model=fallback),
        toolkit=Toolkit(tools=list(await hook.list_tools())),
        middlewares=[hook],
        injection_config=InjectionConfig(inject_runtime_state=False),
    )
    history: list[Any] = []
    for n in range(turns):  # 20: about 5,700 tokens, fit the primary, not the fallback
        history.append(UserMsg("user", f"question {n}: " + "details " * 120))
        history.append(AssistantMsg("assistant", [TextBlock(text=f"answer {n}: " + "ok " * 120)]))
    agent.state.context = history
    return agent, hook


async def _ask(agent: Any, text: str) -> str:
    from agentscope.message import UserMsg

    return str((await agent.reply(UserMsg("user", text))).get_text_content())


def _counting_fallback(seen: list[int], *, loaded_smaller: bool) -> ScriptedChatModel:
    """The local 4K model; it rejects an input over its limit with OpenAI's wording and
    figures. With ``loaded_smaller`` its server runs with a smaller context (``SERVER``)
    than the model declares, as a local server started with a short default context."""
    limit = SERVER if loaded_smaller else FALLBACK

    def answer(call: Any) -> Any:
        tokens = _tokens(call)
        seen.append(tokens)
        if tokens > limit:
            raise HttpError(
                f"This model's maximum context length is {limit} tokens. However, your "
                f"messages resulted in {tokens} tokens.",
                status_code=400,
            )
        return text_step("fallback answered")

    return ScriptedChatModel([answer] * 6, context_size=FALLBACK, model_name="local-4k")


async def _primary_back(agent: Any) -> list[int]:
    """The primary is back: ``LATER`` turns of ~1,200 tokens; what each call receives."""
    got: list[int] = []

    def healthy(call: Any) -> Any:
        got.append(_tokens(call))
        return text_step("primary answered")

    agent.model = ScriptedChatModel([healthy] * LATER, context_size=PRIMARY)
    for n in range(LATER):
        assert await _ask(agent, f"next {n}: " + "more details " * 600) == "primary answered"
    return got


async def test_the_fallback_gets_an_input_within_its_window() -> None:
    seen: list[int] = []
    with tempfile.TemporaryDirectory() as name:
        agent, _ = await _agent(Path(name), _counting_fallback(seen, loaded_smaller=False))
        assert await _ask(agent, "go on") == "fallback answered"
    record(
        "fallback_model.within_window",
        fallback_tokens=seen,
        fallback_window=FALLBACK,
        primary_window=PRIMARY,
    )
    assert seen and max(seen) <= FALLBACK, f"the {FALLBACK}-token fallback got {seen}"


async def test_a_fallback_rejection_stays_with_the_fallback() -> None:
    seen: list[int] = []
    with tempfile.TemporaryDirectory() as name:
        agent, hook = await _agent(Path(name), _counting_fallback(seen, loaded_smaller=True))
        assert await _ask(agent, "go on") == "fallback answered"
        state = (await hook.session(agent)).state
        primary_factor = state.get("overflow_factor", 1.0)
        got = await _primary_back(agent)
        # The primary is down again: the fallback's input carries what it taught.
        first_episode = len(seen)
        agent.model = _down()
        assert await _ask(agent, "and now?") == "fallback answered"
        again = seen[first_episode:]
    record(
        "fallback_model.rejection_stays",
        fallback_tokens=seen,
        fallback_window=FALLBACK,
        primary_tokens=got,
        primary_window=PRIMARY,
    )
    assert primary_factor == 1.0, f"the fallback's error taught the primary x{primary_factor}"
    # ~1,200 tokens a turn on ~1,000 left by the fallback's compaction: well over a quarter.
    assert max(got) > PRIMARY // 4, f"the primary got at most {max(got)} tokens: {got}"
    assert again == again[:1] and again[0] <= SERVER, (
        f"the fallback, whose server takes {SERVER} tokens, got {again} (first: {seen})"
    )


async def test_a_saved_overflow_factor_stays_the_primarys() -> None:
    """A state saved before the per-model figures (top-level ``overflow_factor``) is the
    primary's; the fallback's error neither replaces it nor inherits it."""
    seen: list[int] = []
    with tempfile.TemporaryDirectory() as name:
        agent, hook = await _agent(Path(name), _counting_fallback(seen, loaded_smaller=True))
        state = (await hook.session(agent)).state
        state.update({"overflow_factor": 1.5, "overflow_evidence": 1.5})
        assert await _ask(agent, "go on") == "fallback answered"
        saved = json.loads(json.dumps(state))
    record("fallback_model.saved_factor", fallback_tokens=seen, fallback_window=FALLBACK)
    assert (saved["overflow_factor"], saved["overflow_evidence"]) == (1.5, 1.5), saved
    models = saved["overflow_by_model"]
    assert len(models) == 2, models
    assert {"factor": 1.5, "evidence": 1.5} in models.values(), models
    learned = FALLBACK / SERVER  # its window against its server's limit
    assert {"factor": learned, "evidence": learned} in models.values(), models


async def test_memory_in_the_system_prompt_is_bounded_by_the_fallbacks_window() -> None:
    """MEMORY.md goes into the system prompt bounded by the window: the fallback's, not the
    primary's (about 3,000 tokens of it would leave a 4K model no room)."""
    seen: list[int] = []
    with tempfile.TemporaryDirectory() as name:
        workspace = Path(name)
        facts = [
            f"- fact {n}: the service on port {8000 + n} belongs to team t{n}." for n in range(400)
        ]
        (workspace / "MEMORY.md").write_text("\n".join(facts) + "\n", encoding="utf-8")
        fallback = _counting_fallback(seen, loaded_smaller=False)
        agent, hook = await _agent(workspace, fallback, memory=True, turns=2)
        assert await _ask(agent, "go on") == "fallback answered"
        await hook.close()
    record("fallback_model.memory_block", fallback_tokens=seen, fallback_window=FALLBACK)
    assert seen == seen[:1] and seen[0] <= FALLBACK, f"the {FALLBACK}-token fallback got {seen}"
