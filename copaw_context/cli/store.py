"""``copaw-context store export | import | migrate``: a workspace between its files and the
PostgreSQL store.

Exit status: 0 on success, 1 when the database or the folder could not be used, something
clashes (nothing written then) or ``export`` finds nothing for the id, 2 for bad usage or a
bad agent.json.
"""

from __future__ import annotations

import argparse
import asyncio
import sys
import tempfile
from pathlib import Path
from typing import TYPE_CHECKING

from copaw_context.cli._workspace import workspace_config
from copaw_context.core.config.running import RunningConfig
from copaw_context.core.errors import CopawContextError, redact
from copaw_context.core.store.select import CONFIG_KEY, STORE_ENV, store_dsn
from copaw_context.core.store.transfer import (
    Layout,
    TransferReport,
    export_workspace,
    import_workspace,
)
from copaw_context.core.toolresults.store_blobs import workspace_agent_id

__all__ = ["add_store"]

if TYPE_CHECKING:  # argparse has no public name for this type
    _Subcommands = argparse._SubParsersAction[argparse.ArgumentParser]


def add_store(subcommands: _Subcommands) -> None:
    """Register ``store`` and its three actions."""
    parser = subcommands.add_parser(
        "store",
        help="move a workspace between its files and the PostgreSQL store",
        description="Move an agent's workspace between its files (the default store) and a "
        "PostgreSQL database that several replicas share (docs/deployment.md).",
    )
    actions = parser.add_subparsers(title="actions", metavar="ACTION", required=True)
    texts = {
        "export": "write the workspace's files from the database, byte for byte as the file "
        "store writes them (the archive, the daily logs, saved tool results and requests, "
        "MEMORY.md, the consolidation record)",
        "import": "put the workspace's files into the database (a stream it holds is "
        "continued only when it holds the start of the file; a blob or document must match)",
        "migrate": "import, then export into a temporary folder and check that every "
        "imported file comes back byte for byte",
    }
    for name, text in texts.items():
        action = actions.add_parser(name, help=text, description=text[0].upper() + text[1:] + ".")
        action.add_argument("folder", metavar="DIR", help="the agent workspace")
        action.add_argument(
            "--dsn",
            help=f"the database (default: ${STORE_ENV}, else agent.json "
            "running.light_context_config.store.dsn)",
        )
        action.add_argument(
            "--agent-id",
            help="the workspace's id in the database (default: DIR/agent.json id, else the "
            "folder's name)",
        )
        action.add_argument(
            "--config", metavar="agent.json", help="default: DIR/agent.json when it exists"
        )
        if name == "export":
            action.add_argument("--force", action="store_true", help="overwrite files that differ")
        action.set_defaults(handler=_run, action=name)


def _run(args: argparse.Namespace) -> int:
    folder = Path(args.folder).expanduser().absolute()
    if args.action != "export" and not folder.is_dir():
        return _error(f"{folder} is not a folder; pass the agent's workspace folder", 2)
    config = workspace_config(folder, args.config)
    dsn, source = (args.dsn, "--dsn") if args.dsn else store_dsn(config)
    if not dsn:
        return _error(
            f"no database: give --dsn, or set {STORE_ENV} (or {CONFIG_KEY} in DIR/agent.json)",
            2,
        )
    if not dsn.startswith(("postgresql://", "postgres://")):
        return _error(
            f"--dsn must be a PostgreSQL URL such as postgresql://user@host:5432/db, got "
            f"{redact(dsn)!r}",
            2,
        )
    agent_id = args.agent_id or workspace_agent_id(folder)
    try:
        report = asyncio.run(_transfer(args.action, (dsn, source), agent_id, folder, config, args))
    except (CopawContextError, OSError) as error:
        return _error(f"store {args.action} failed: {error}", 1)
    verb = {"export": "wrote", "import": "imported", "migrate": "imported and verified"}
    print(
        f"{verb[args.action].capitalize()} {len(report.written)} item(s) "
        f"({report.nbytes} bytes) of workspace {agent_id!r}; {len(report.unchanged)} "
        f"already the same. Folder: {folder}"
    )
    return 0


async def _transfer(
    action: str,
    setting: tuple[str, str],
    agent_id: str,
    folder: Path,
    config: RunningConfig,
    args: argparse.Namespace,
) -> TransferReport:
    layout = Layout.from_config(config)
    try:
        from copaw_context.core.store.postgres import PostgresStore
    except ImportError as error:
        raise CopawContextError(
            f"the PostgreSQL store's driver is not installed ({error}); install it with "
            "pip install 'copaw-context[postgres]'"
        ) from error
    store = PostgresStore(setting[0], agent_id, source=setting[1])
    await store.open()
    try:
        if action == "export":
            report = await export_workspace(store, folder, layout, overwrite=args.force)
            if not report.written and not report.unchanged:
                raise CopawContextError(
                    f"the database holds nothing for workspace {agent_id!r}; check the id "
                    "(--agent-id, else DIR/agent.json id, else the folder's name)"
                )
            return report
        report = await import_workspace(store, folder, layout)
        if action == "migrate":
            with tempfile.TemporaryDirectory() as scratch:
                back = Path(scratch)
                await export_workspace(store, back, layout)
                differ = [
                    key for key in report.written + report.unchanged if not _same(folder, back, key)
                ]
            if differ:
                raise CopawContextError(
                    f"the database does not give back {len(differ)} imported item(s) byte for "
                    f"byte: {', '.join(differ[:10])}"
                )
        return report
    finally:
        await store.close()


def _same(folder: Path, back: Path, key: str) -> bool:
    try:
        return (folder / key).read_bytes() == (back / key).read_bytes()
    except FileNotFoundError:
        return (
            key == "MEMORY.md" and (folder / "Memory.md").read_bytes() == (back / key).read_bytes()
        )


def _error(message: str, status: int) -> int:
    print(f"copaw-context: error: {message}", file=sys.stderr)
    return status
