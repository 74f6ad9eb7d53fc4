"""The oban peer of `taskforge bench peer` (PyPI ``oban``, the Python port of Oban): one no-op worker.

Runs inside the peer's own virtualenv (Python >= 3.12, oban's requirement), never inside
TaskForge's; the database comes from $TASKFORGE_BENCH_PEER_DSN (a postgresql:// URL). The event
loop is uvloop's, as the ``oban`` CLI uses.

    python oban_app.py schema            # oban.schema.install
    python oban_app.py enqueue COUNT     # enqueue_many in one transaction; prints {"ids": [...]}
    python oban_app.py worker SETTINGS   # SETTINGS JSON: {"limit": N}; Oban(queues={"bench": N})
                                         # (what `oban start --queues bench:N` runs) until SIGTERM
"""

from __future__ import annotations

import asyncio
import json
import os
import signal
import sys
from typing import Any

import uvloop
from oban import Oban, worker
from oban.schema import install

QUEUE = "bench"
READY = "taskforge-bench-peer: ready"


@worker(queue=QUEUE)
class Noop:
    """Does nothing: the counterpart of TaskForge's ``noop``."""

    async def process(self, job: Any) -> None:
        return None


async def run_worker(pool: Any, settings: dict[str, Any]) -> None:
    """One Oban instance with the queue ``bench`` at ``limit`` until SIGTERM."""
    stop = asyncio.Event()
    asyncio.get_running_loop().add_signal_handler(signal.SIGTERM, stop.set)
    async with Oban(pool=pool, queues={QUEUE: int(settings.get("limit", 1))}):
        print(READY, flush=True)
        await stop.wait()


async def main(argv: list[str]) -> None:
    """The commands in the module docstring."""
    command, args = (argv[0], argv[1:]) if argv else ("", [])
    pool = await Oban.create_pool(os.environ["TASKFORGE_BENCH_PEER_DSN"])
    try:
        if command == "schema":
            await install(pool)
        elif command == "enqueue" and len(args) == 1:
            jobs = [Noop.new({}) for _ in range(int(args[0]))]
            async with Oban(pool=pool) as oban, pool.connection() as conn, conn.transaction():
                inserted = await oban.enqueue_many(jobs, conn=conn)
            print(json.dumps({"ids": [job.id for job in inserted]}))
        elif command == "worker":
            await run_worker(pool, json.loads(args[0]) if args else {})
        else:
            sys.exit("usage: oban_app.py schema | enqueue COUNT | worker SETTINGS")
    finally:
        await pool.close()


if __name__ == "__main__":
    uvloop.run(main(sys.argv[1:]))
