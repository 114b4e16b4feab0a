"""Pins the private AgentScope 2.x details the adapter relies on.

If one of these fails after an AgentScope upgrade, the adapter in
copaw_context/agentscope2/ must be updated for that version.
"""

from __future__ import annotations

import inspect
from importlib.metadata import version

from agentscope.agent import Agent
from agentscope.message import UserMsg

from copaw_context import MemoryCompactionHook, RunningConfig
from copaw_context.agentscope2.hook_lists import HOOK_LISTS
from copaw_context.testing import ScriptedChatModel, text_step
from tests.helpers import make_agent

AGENTSCOPE = version("agentscope")


def test_agentscope_major_is_2() -> None:
    assert AGENTSCOPE.startswith("2."), (
        f"copaw-context's 2.x adapter runs on agentscope {AGENTSCOPE}"
    )


async def test_prepare_model_input_shape(tmp_path) -> None:
    hook = MemoryCompactionHook(RunningConfig(), tmp_path)
    agent = await make_agent(hook, ScriptedChatModel(), system_prompt="SYSTEM-PROMPT")
    agent.state.summary = "SUMMARY"
    agent.state.context = [UserMsg("user", "hello")]
    assert hasattr(Agent, "_prepare_model_input"), (
        f"agentscope {AGENTSCOPE}: Agent._prepare_model_input is gone; "
        "update copaw_context/agentscope2/session.py (fixed_parts)"
    )
    model_input = await agent._prepare_model_input()
    messages = model_input["messages"]
    assert messages[0].role == "system" and "SYSTEM-PROMPT" in messages[0].get_text_content()
    assert messages[1].get_text_content() == "SUMMARY", (
        f"agentscope {AGENTSCOPE}: the summary is no longer the second model message"
    )
    assert messages[2].get_text_content() == "hello"
    assert [t["function"]["name"] for t in model_input["tools"]] == [
        "read_file",
        "memory_append_log",
        "memory_edit",
        "memory_search",
    ]


def test_middleware_lists_exist() -> None:
    source = inspect.getsource(Agent.__init__)
    for attribute in HOOK_LISTS.values():
        assert f"self.{attribute}" in source, (
            f"agentscope {AGENTSCOPE}: Agent.{attribute} is gone; "
            "update copaw_context.agentscope2.attach"
        )


async def test_the_fallback_model_call_names_its_model(tmp_path) -> None:
    """AgentScope 2.x calls ``ModelConfig.fallback_model`` through the same ``on_model_call``
    with ``input_kwargs["current_model"]`` (public: MiddlewareBase.on_model_call's doc); the
    adapter fits the input to that model's window (copaw_context/agentscope2/middleware.py)."""
    from agentscope.agent import ModelConfig
    from agentscope.middleware import MiddlewareBase

    from tests.reliability.provider_wordings import HttpError

    called: list[object] = []

    class Recorder(MiddlewareBase):
        async def on_model_call(self, agent, input_kwargs, next_handler):  # type: ignore[no-untyped-def]
            called.append(input_kwargs.get("current_model"))
            return await next_handler(**input_kwargs)

    primary = ScriptedChatModel([HttpError("503 Service Unavailable", status_code=503)])
    fallback = ScriptedChatModel([text_step("ok")], model_name="fallback")
    agent = Agent(
        name="a",
        system_prompt="s",
        model=primary,
        model_config=ModelConfig(fallback_model=fallback),
        middlewares=[Recorder()],
    )
    await agent.reply(UserMsg("user", "hello"))
    assert called == [primary, fallback], (
        f"agentscope {AGENTSCOPE}: on_model_call no longer names the fallback model as "
        "current_model; update MemoryCompactionHook.on_model_call"
    )
