"""Which reply input is a chat command, over a host's message type (moved from both
adapters: 2.x ``stream.user_text``, 1.x ``attach._user_text``), checked without a host."""

from __future__ import annotations

from copaw_context.core.host.hook_events import user_command


class Msg:
    def __init__(self, role: str, text: str | None) -> None:
        self.role, self.text = role, text

    def get_text_content(self) -> str | None:
        return self.text


class Other(Msg):
    pass


def test_a_lone_user_message_of_the_host_type_holds_the_command() -> None:
    command = user_command(Msg("user", "/compact keep the plan"), Msg)
    assert command is not None and command.name == "compact"
    assert user_command([Msg("user", "/context")], Msg) is not None


def test_anything_else_is_ordinary_input() -> None:
    assert user_command(Msg("assistant", "/compact"), Msg) is None  # not the user's
    assert user_command(Msg("user", None), Msg) is None  # no text
    assert user_command(Msg("user", "/etc/hosts"), Msg) is None  # a path, not a command
    assert user_command([Msg("user", "/new"), Msg("user", "/new")], Msg) is None  # not lone
    assert user_command("/compact", Msg) is None  # not a message of the host's type
    assert user_command(Other("user", "/clear"), Other) is not None
