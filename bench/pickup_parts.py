"""Where an idle worker's pickup goes: `bench pickup`'s figure (first attempt started_at - task
created_at, database clock) split at the submitter's commit.

In a fresh database (created on the server of ADMIN_DSN, dropped afterwards) one `taskforge
worker` (the synthetic task types, log level WARNING, as `bench pickup` starts it) waits idle;
N `noop` tasks are submitted one at a time, IDLE ms apart, each in its own transaction, as
`bench pickup` does. The submitting session sends ``BEGIN; tf_submit; COMMIT; SELECT
clock_timestamp()`` as one simple-protocol message, so the clock is read by the same backend the
moment its COMMIT (WAL flush included) is done, with no round trip in between. Then it prints
medians and p95 in milliseconds (database clock throughout) of:

  created -> committed   the rest of the submit statement, the COMMIT and its WAL flush: the
                         submitter's transaction, before anyone can see the task
  committed -> started   the NOTIFY path: delivery to the worker's listener, its wake-up, the
                         dispatcher's, and the claim up to the attempt's start
  created -> started     what `bench pickup` reports

and, for scale, one `SELECT 1` round trip from this script back to back and after IDLE ms asleep
(wall clock, time.perf_counter). The first 10 tasks are a warm-up and not counted. With
``--new-connection`` every task is submitted from a connection of its own (a new backend each).

    python bench/pickup_parts.py ["host=127.0.0.1 user=postgres dbname=postgres"] [--tasks 200]
        [--idle-ms 50] [--new-connection]
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from datetime import datetime
from pathlib import Path

import psycopg

from taskforge.benchmarks import stats
from taskforge.benchmarks.database import admin_dsn_default, fresh_database
from taskforge.benchmarks.workloads import BENCH_QUEUE, wait_terminal, wait_workers_live
from taskforge.processes import ProcessHarness

WARMUP = 10
PARTS = ("created -> committed", "committed -> started", "created -> started")
# Constants only: a simple-protocol message takes no parameters.
SUBMIT = (
    "BEGIN; SELECT task_id FROM taskforge.tf_submit(task_type => 'noop', queue => '" + BENCH_QUEUE + "');"
    " COMMIT; SELECT clock_timestamp()"
)
TIMES = """
SELECT t.created_at, a.started_at
  FROM taskforge.tasks t JOIN taskforge.attempts a ON a.task_id = t.task_id AND a.attempt_number = 1
 WHERE t.task_id = %s
"""


def submit_one(conn: psycopg.Connection) -> tuple[int, datetime]:
    """One task in its own transaction; returns (task_id, the clock right after its COMMIT)."""
    cur = conn.execute(SUBMIT)  # no parameters: psycopg sends the statements as one message
    results = []
    while True:
        if cur.description is not None:
            results.append(cur.fetchall())
        if not cur.nextset():
            break
    (task_id,), (committed,) = results[0][0], results[1][0]
    return task_id, committed


def round_trip_us(conn: psycopg.Connection, idle_ms: float, n: int) -> float:
    """Median wall-clock microseconds of `SELECT 1`, each after ``idle_ms`` asleep."""
    times = []
    for _ in range(n):
        if idle_ms:
            time.sleep(idle_ms / 1000.0)
        start = time.perf_counter()
        conn.execute("SELECT 1").fetchall()
        times.append(time.perf_counter() - start)
    return statistics.median(times) * 1e6


def main(admin_dsn: str, tasks: int, idle_ms: float, new_connection: bool = False) -> None:
    with (
        fresh_database(admin_dsn) as dsn,
        tempfile.TemporaryDirectory() as logs,
        ProcessHarness(dsn, Path(logs)) as harness,
        psycopg.connect(dsn, autocommit=True) as conn,
    ):
        harness.worker("--import", "taskforge.synthetic", "--queue", BENCH_QUEUE)
        wait_workers_live(conn, harness, 60.0)
        submitted = []
        with psycopg.connect(dsn, autocommit=True) as submitter:
            for _ in range(WARMUP + tasks):
                if new_connection:  # as `bench pickup` did before: a new backend for every task
                    with psycopg.connect(dsn, autocommit=True) as fresh:
                        submitted.append(submit_one(fresh))
                else:
                    submitted.append(submit_one(submitter))
                time.sleep(idle_ms / 1000.0)
            wait_terminal(conn, harness, [task_id for task_id, _ in submitted], 120.0)
            back_to_back = round_trip_us(submitter, 0.0, 200)
            after_idle = round_trip_us(submitter, idle_ms, 200)
        parts: dict[str, list[float]] = {name: [] for name in PARTS}
        for task_id, committed in submitted[WARMUP:]:
            row = conn.execute(TIMES, (task_id,)).fetchone()
            if row is None:
                raise SystemExit(f"task {task_id} has no first attempt")
            created, started = row
            parts["created -> committed"].append((committed - created).total_seconds() * 1000.0)
            parts["committed -> started"].append((started - committed).total_seconds() * 1000.0)
            parts["created -> started"].append((started - created).total_seconds() * 1000.0)
        harness.stop_all()
    print(f"{tasks} tasks, {idle_ms:g} ms apart (ms, database clock):")
    for name, values in parts.items():
        print(f"  {name:<22} median {statistics.median(values):6.2f}   p95 {stats.percentile(values, 95) or 0.0:6.2f}")
    print(f"SELECT 1 round trip: {back_to_back:.0f} us back to back, {after_idle:.0f} us after {idle_ms:g} ms idle")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "admin_dsn", nargs="?", default=admin_dsn_default(), help="a server where this user may create databases"
    )
    parser.add_argument("--tasks", type=int, default=200, help="tasks measured (after 10 of warm-up)")
    parser.add_argument("--idle-ms", type=float, default=50.0, help="pause between submits (ms)")
    parser.add_argument("--new-connection", action="store_true", help="submit each task from a new connection")
    args = parser.parse_args()
    main(args.admin_dsn, args.tasks, args.idle_ms, args.new_connection)
