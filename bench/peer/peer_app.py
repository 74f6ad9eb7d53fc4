"""The peer of `taskforge bench peer`: a procrastinate app with one no-op task.

Runs inside the peer's own virtualenv (``<out>/peer-venv``), never inside TaskForge's. The
database comes from $TASKFORGE_BENCH_PEER_DSN (a libpq connection string).

    python -c 'import peer_app, sys; peer_app.main(sys.argv[1:])' defer N QUEUE
        # defer N no-op jobs in one transaction; prints their ids (JSON) on stdout
    procrastinate --app=peer_app.app worker --queues QUEUE --concurrency 1
    procrastinate --app=peer_app.app schema --apply
"""

from __future__ import annotations

import json
import os
import sys

import procrastinate

app = procrastinate.App(
    connector=procrastinate.PsycopgConnector(conninfo=os.environ.get("TASKFORGE_BENCH_PEER_DSN", "")),
)


@app.task(name="noop", pass_context=False)
def noop() -> None:
    """Does nothing: the peer's counterpart of TaskForge's built-in ``noop``."""


def defer(count: int, queue: str) -> list[int]:
    """Defer ``count`` no-op jobs on ``queue`` in one statement (one transaction); return their ids."""
    with app.open():
        return list(noop.configure(queue=queue).batch_defer(*({} for _ in range(count))))


def main(argv: list[str]) -> None:
    """``defer COUNT QUEUE``: defer the jobs and print their ids as a JSON list."""
    if len(argv) != 3 or argv[0] != "defer":
        sys.exit("usage: defer COUNT QUEUE")
    print(json.dumps(defer(int(argv[1]), argv[2])))
