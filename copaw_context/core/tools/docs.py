"""What the model reads about our tools: the ``read_file`` docstring, for every adapter.

Hosts build a tool's JSON schema from its function's docstring (Google style), so each
adapter's ``read_file`` function gets this text as its ``__doc__``.
"""

from __future__ import annotations

__all__ = ["read_file_doc"]

_READ_FILE_DOC = """Read a text file, or continue reading a saved tool output or dialog archive.

Lines are 1-based and inclusive. Long output is cut; the cut text then ends with a
<<<TRUNCATED>>> notice that gives the exact `file_path`, `start_line` (and
`line_offset` when the cut fell inside a very long line) to pass to the next call
to continue exactly where the excerpt stopped. Relative paths are resolved against
the workspace, which holds `{tool_results}/` (saved tool outputs) and `{dialog}/`
(archived conversation history, one JSON message per line; read it from the end).

Args:
    file_path (`str`):
        Path of the file to read, absolute or relative to the workspace.
    start_line (`int | None`, optional):
        First line to read (1-based). Defaults to 1.
    end_line (`int | None`, optional):
        Last line to read (inclusive). Defaults to the end of the file.
    line_offset (`int | None`, optional):
        Number of characters of `start_line` to skip, as given by a truncation
        notice when a single line was longer than the output limit. Defaults to 0.
"""


def read_file_doc(tool_results_dir: str, dialog_dir: str) -> str:
    """The ``read_file`` docstring naming the workspace's folders."""
    return _READ_FILE_DOC.replace("{tool_results}", tool_results_dir.strip("/")).replace(
        "{dialog}", dialog_dir.strip("/")
    )
