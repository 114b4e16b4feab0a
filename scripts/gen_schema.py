"""Write configs/agent-json.schema.json from the config models.

python scripts/gen_schema.py            # regenerate the committed schema
python scripts/gen_schema.py --check    # exit 1 if the committed schema is stale
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from pathlib import Path

from copaw_context.core.config.running import running_config_json_schema

__all__ = ["REGENERATE_COMMAND", "SCHEMA_PATH", "main", "render_schema"]

SCHEMA_PATH = Path(__file__).resolve().parent.parent / "configs" / "agent-json.schema.json"
REGENERATE_COMMAND = "python scripts/gen_schema.py"


def render_schema() -> str:
    """The schema file's exact text: sorted keys, two-space indent, trailing newline."""
    return json.dumps(running_config_json_schema(), indent=2, sort_keys=True) + "\n"


def main(argv: Sequence[str] | None = None) -> int:
    """Write the schema, or with ``--check`` report whether the file is up to date."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="only check; exit 1 when stale")
    parser.add_argument("--output", type=Path, default=SCHEMA_PATH, help="schema file path")
    args = parser.parse_args(argv)
    expected = render_schema()
    output: Path = args.output
    if args.check:
        current = output.read_text(encoding="utf-8") if output.is_file() else None
        if current == expected:
            print(f"{output} is up to date")
            return 0
        state = "missing" if current is None else "stale"
        print(f"{output} is {state}; regenerate it with: {REGENERATE_COMMAND}", file=sys.stderr)
        return 1
    output.write_text(expected, encoding="utf-8", newline="\n")
    print(f"wrote {output}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
