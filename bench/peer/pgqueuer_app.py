"""The pgqueuer peer of `taskforge bench peer`: one no-op entrypoint.

Runs inside the peer's own virtualenv (pgqueuer, asyncpg, uvloop), never inside TaskForge's;
the database comes from $TASKFORGE_BENCH_PEER_DSN (a postgresql:// URL). The event loop is
uvloop's, as `pgq run` uses when uvloop is installed.

    python pgqueuer_app.py schema            # Queries.install()
    python pgqueuer_app.py enqueue COUNT     # one batch enqueue (one statement); prints {"ids": [...]}
    python pgqueuer_app.py worker SETTINGS   # SETTINGS JSON: {"managers": M, "batch_size": B,
                                             # "max_concurrent_tasks": C (omitted: no cap)}; M
                                             # PgQueuer instances, each on its own asyncpg
                                             # connection, run(batch_size=B, ...) until SIGTERM
"""

from __future__ import annotations

import asyncio
import json
import os
import signal
import sys
from typing import Any

import asyncpg
import uvloop
from pgqueuer import AsyncpgDriver, PgQueuer, Queries
from pgqueuer.models import Job

ENTRYPOINT = "noop"
READY = "taskforge-bench-peer: ready"


async def noop(job: Job) -> None:
    """Does nothing: the counterpart of TaskForge's ``noop``."""


async def _queries() -> Queries:
    return Queries(AsyncpgDriver(await asyncpg.connect(os.environ["TASKFORGE_BENCH_PEER_DSN"])))


async def worker(settings: dict[str, Any]) -> None:
    """Run ``managers`` PgQueuer instances until SIGTERM."""
    managers = []
    for _ in range(int(settings.get("managers", 1))):
        pgq = PgQueuer(AsyncpgDriver(await asyncpg.connect(os.environ["TASKFORGE_BENCH_PEER_DSN"])))
        pgq.entrypoint(ENTRYPOINT)(noop)
        managers.append(pgq)

    def stop() -> None:
        for pgq in managers:
            pgq.shutdown.set()

    asyncio.get_running_loop().add_signal_handler(signal.SIGTERM, stop)
    print(READY, flush=True)
    await asyncio.gather(
        *(
            pgq.run(
                batch_size=int(settings.get("batch_size", 10)),
                max_concurrent_tasks=settings.get("max_concurrent_tasks"),
            )
            for pgq in managers
        )
    )


async def main(argv: list[str]) -> None:
    """The commands in the module docstring."""
    command, args = (argv[0], argv[1:]) if argv else ("", [])
    if command == "schema":
        await (await _queries()).install()
    elif command == "enqueue" and len(args) == 1:
        count = int(args[0])
        ids = await (await _queries()).enqueue([ENTRYPOINT] * count, [None] * count, [0] * count)
        print(json.dumps({"ids": [int(i) for i in ids]}))
    elif command == "worker":
        await worker(json.loads(args[0]) if args else {})
    else:
        sys.exit("usage: pgqueuer_app.py schema | enqueue COUNT | worker SETTINGS")


if __name__ == "__main__":
    uvloop.run(main(sys.argv[1:]))
