"""The procrastinate peer of `taskforge bench peer`: one no-op task.

Runs inside the peer's own virtualenv, never inside TaskForge's; the database comes from
$TASKFORGE_BENCH_PEER_DSN (a postgresql:// URL).

    python procrastinate_app.py schema            # procrastinate's schema (apply_schema)
    python procrastinate_app.py enqueue COUNT     # COUNT jobs in one statement (batch_defer);
                                                  # prints {"ids": [...]}
    python procrastinate_app.py worker SETTINGS   # App.run_worker_async (what `procrastinate
                                                  # worker` runs) until SIGTERM; SETTINGS is JSON:
                                                  # {"concurrency": N, "pool_max_size": M}
"""

from __future__ import annotations

import asyncio
import json
import os
import sys
from typing import Any

import procrastinate

QUEUE = "bench"


async def noop() -> None:
    """Does nothing: the counterpart of TaskForge's ``noop`` (a coroutine, procrastinate's own kind)."""


def build(settings: dict[str, Any]) -> procrastinate.App:
    """The app with its one task; ``pool_max_size`` sizes the connector's pool (procrastinate's
    docs: as many connections as the concurrency, plus one, for short jobs)."""
    pool = {"min_size": 1, "max_size": settings["pool_max_size"]} if settings.get("pool_max_size") else {}
    app = procrastinate.App(
        connector=procrastinate.PsycopgConnector(conninfo=os.environ["TASKFORGE_BENCH_PEER_DSN"], **pool)
    )
    app.task(name="noop", queue=QUEUE, pass_context=False)(noop)
    return app


async def main(argv: list[str]) -> None:
    """The commands in the module docstring."""
    command, args = (argv[0], argv[1:]) if argv else ("", [])
    settings = json.loads(args[0]) if command == "worker" and args else {}
    app = build(settings)
    async with app.open_async():
        if command == "schema":
            await app.schema_manager.apply_schema_async()
        elif command == "enqueue" and len(args) == 1:
            ids = await app.tasks["noop"].batch_defer_async(*({} for _ in range(int(args[0]))))
            print(json.dumps({"ids": ids}))
        elif command == "worker":
            await app.run_worker_async(queues=[QUEUE], concurrency=int(settings.get("concurrency", 1)))
        else:
            sys.exit("usage: procrastinate_app.py schema | enqueue COUNT | worker SETTINGS")


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1:]))
