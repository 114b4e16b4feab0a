"""The archive-id scheme, written once for every host: ids already in archives stay valid."""

from __future__ import annotations

from copaw_context.core.host.protocol import archive_id


def test_the_scheme_is_the_one_archives_were_written_with() -> None:
    # sha1("text:a,tool_use:b")[:16], as both adapters computed it before it moved to core
    assert archive_id("m/1 x", ["text:a", "tool_use:b"]) == "m_1_x#6abf67888e812bb4"


def test_halves_of_one_message_have_different_ids() -> None:
    whole = archive_id("m1", ["text:a", "tool_result:c"])
    assert archive_id("m1", ["text:a"]) != whole != archive_id("m1", ["tool_result:c"])
    assert len(archive_id("x" * 500, [])) <= 150 + 17
