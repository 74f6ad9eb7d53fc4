"""Retention on the partitioned history: the time of a ``tf_prune`` call that drops one range of
task ids, against the size of the history, beside the row-wise prune of as many tasks.

    python bench/partition_drop_time.py ADMIN_DSN [--history 10000 100000 1000000 10000000]
        [--range 10000] [--calls 5]

For each history size H, a database (``tf_partition_drop_time``, dropped at the end) is migrated
with this checkout's schema and filled with the console benchmark's history
(``taskforge.benchmarks.console_data.fill``: H terminal tasks of the last day with their
attempts, one queued task, 16 workers). Then:

1. row-wise, the reference: ``tf_prune(older_than_seconds => 60, max_tasks => RANGE)``, the
   default layout's prune of RANGE tasks, timed ``--calls`` times, each call in a transaction
   rolled back (the commit is not timed);
2. the install is converted (``tf_partition_history(RANGE, 1)``: the H tasks become the first
   range, which the queued task keeps, as one live task keeps a range in production); RANGE
   tasks are submitted into the next range (the ids skip to its start) and run to SUCCEEDED through ``tf_claim`` and
   ``tf_finalize_many`` as a worker would; then ``tf_prune(older_than_seconds => 0)``, which
   drops exactly that range (its tasks, attempts, and the keys of the keyed ones: one in ten), is
   timed the same way.

Prints, per H, the median and fastest call of each (milliseconds, ``time.perf_counter``, as the
client sees it), and the drop's median over the row-wise one. Run it under ``flock
/tmp/taskforge-heavy.lock`` on a shared machine; docs/benchmarks.md, "Retention by dropping
ranges".
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

import psycopg
from psycopg.conninfo import make_conninfo

ROOT = Path(__file__).resolve().parents[1]
DATABASE = "tf_partition_drop_time"

SUBMIT = """
SELECT count(*) FROM taskforge.tf_submit_many((
    SELECT jsonb_agg(jsonb_strip_nulls(jsonb_build_object(
               'task_type', 'noop', 'queue', 'drop_bench',
               'idempotency_key', CASE WHEN i %% 10 = 0 THEN 'drop-bench-' || i END)))
      FROM generate_series(%(first)s::int, %(last)s::int) AS i))
"""
CLAIM = """
SELECT array_agg(c.task_id), array_agg(c.attempt_number)
  FROM taskforge.tf_claim(%(worker)s, ARRAY['drop_bench'], 60, 1000) AS c
"""
FINALIZE = """
SELECT count(*) FROM taskforge.tf_finalize_many(%(worker)s, %(ids)s, %(numbers)s,
                                                array_fill('succeeded'::text, ARRAY[cardinality(%(ids)s::bigint[])]))
"""
REGISTER = "SELECT taskforge.tf_register_worker('drop-bench', 'localhost', NULL, ARRAY['drop_bench'], NULL, 60)"


def timed(dsn: str, statement: str, calls: int, expected: int) -> list[float]:
    """Run ``statement`` (one integer back) ``calls`` times, each in a transaction rolled back, in
    one fresh session; returns the times in milliseconds. Exits if a call returns another count."""
    samples = []
    with psycopg.connect(dsn, autocommit=True) as c:
        for _ in range(calls):
            with c.transaction(force_rollback=True):
                started = time.perf_counter()
                got = c.execute(statement).fetchone()[0]
                samples.append((time.perf_counter() - started) * 1000)
            if got != expected:
                raise SystemExit(f"partition_drop_time: {statement!r} returned {got}, expected {expected}")
    return samples


def run_range(c: psycopg.Connection, size: int) -> None:
    """Submit ``size`` tasks, exactly the range after the first, and run each to SUCCEEDED,
    1,000 at a time."""
    first = c.execute(
        "SELECT setval('taskforge.tasks_task_id_seq', end_task_id - 1) + 1 FROM taskforge.history_partitions"
        " WHERE first_task_id IS NULL"
    ).fetchone()[0]
    c.execute(SUBMIT, {"first": first, "last": first + size - 1})
    worker = c.execute(REGISTER).fetchone()[0]
    done = 0
    while done < size:
        ids, numbers = c.execute(CLAIM, {"worker": worker}).fetchone()
        if not ids:
            raise SystemExit(f"partition_drop_time: ran {done} of {size} tasks, then nothing to claim")
        c.execute(FINALIZE, {"worker": worker, "ids": ids, "numbers": numbers})
        done += len(ids)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("admin_dsn")
    parser.add_argument("--history", type=int, nargs="+", default=[10_000, 100_000, 1_000_000, 10_000_000])
    parser.add_argument("--range", type=int, default=10_000, dest="range_size")
    parser.add_argument("--calls", type=int, default=5)
    args = parser.parse_args(argv)
    sys.path.insert(0, str(ROOT / "clients" / "python"))
    from taskforge import database as tfdb
    from taskforge.benchmarks.console_data import fill

    dsn = make_conninfo(args.admin_dsn, dbname=DATABASE)
    size = args.range_size
    print(f"history   row-wise prune of {size} (ms)   drop of a range of {size} (ms)   drop / row-wise")
    for history in args.history:
        with psycopg.connect(args.admin_dsn, autocommit=True) as admin:
            admin.execute(f"DROP DATABASE IF EXISTS {DATABASE} WITH (FORCE)")
            admin.execute(f"CREATE DATABASE {DATABASE}")
        try:
            tfdb.migrate(dsn)
            with psycopg.connect(dsn, autocommit=True) as c:
                c.execute("SET synchronous_commit = off")
                fill(c, finished=history, queued=1)
                c.execute("VACUUM ANALYZE")
                prunable = c.execute(
                    "SELECT count(*) FROM taskforge.tasks WHERE finished_at < now() - interval '60 seconds'"
                ).fetchone()[0]
            rows = (
                timed(dsn, f"SELECT taskforge.tf_prune(60, {size})", args.calls, min(size, prunable))
                if prunable >= size
                else []
            )
            with psycopg.connect(dsn, autocommit=True) as c:
                c.execute("SELECT taskforge.tf_partition_history(%s, 1)", (size,))
                run_range(c, size)
                c.execute("SELECT taskforge.tf_make_partitions()")
                c.execute("VACUUM ANALYZE")
            drops = timed(dsn, "SELECT taskforge.tf_prune(0)", args.calls, size)
        finally:
            with psycopg.connect(args.admin_dsn, autocommit=True) as admin:
                admin.execute(f"DROP DATABASE IF EXISTS {DATABASE} WITH (FORCE)")
        drop = statistics.median(drops)
        if rows:
            row = statistics.median(rows)
            print(
                f"{history:>10,}   median {row:8.1f}, fastest {min(rows):8.1f}"
                f"   median {drop:7.1f}, fastest {min(drops):7.1f}   {drop / row:.3f}"
            )
        else:
            print(f"{history:>10,}   (fewer than {size} prunable)   median {drop:7.1f}, fastest {min(drops):7.1f}")
        sys.stdout.flush()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
