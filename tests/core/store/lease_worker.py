"""A separate OS process holding a PostgreSQL lease until it is killed (the lease tests
SIGKILL it): ``python -m tests.core.store.lease_worker DSN WORKSPACE_ID NAME TTL``. It prints
the lease's token once held, then sleeps."""

from __future__ import annotations

import asyncio
import sys

from copaw_context.core.store.postgres import PostgresStore

__all__ = ["main"]


async def main(dsn: str, workspace_id: str, name: str, ttl: float) -> None:
    store = PostgresStore(dsn, workspace_id, max_connections=1)
    await store.open()
    lease = await store.acquire_lease(name, ttl)
    if lease is None:
        raise SystemExit(f"the {name} lease is held elsewhere")
    print(lease.token, flush=True)
    await asyncio.sleep(3600)  # holding it, until killed


if __name__ == "__main__":
    dsn, workspace_id, name, ttl = sys.argv[1:5]
    asyncio.run(main(dsn, workspace_id, name, float(ttl)))
