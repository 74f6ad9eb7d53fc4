"""Wall-clock time of one ``tf_prune`` call, for A/B comparisons of the prune's SQL on one machine.

    python bench/prune_time.py ADMIN_DSN VERSION.sql [VERSION.sql ...] [--tasks 300000]
        [--rounds 4] [--calls 8] [--max-tasks 1000]

Creates a database (``tf_prune_time``, dropped at the end) migrated with this checkout's schema
and filled with the console benchmark's history (``taskforge.benchmarks.console_data.fill``):
``--tasks`` terminal tasks of the last day with their attempts (mixed states, 1 in 19 with two
attempts), one queued task, 16 workers and a RUNNING task for each live one. Then, for each
round, each VERSION in turn: the SQL file is run (a ``CREATE OR REPLACE FUNCTION`` of a prune
function, for example ``git show REV:db/functions/_tf_prune_rows.sql > old.sql``), and a fresh
session (so plans are cached anew) times ``--calls`` calls of ``tf_prune(older_than_seconds =>
60, max_tasks)``, each in a transaction rolled back, so every call sees the same rows (the commit
is not timed).
Prints the median and fastest call per version (milliseconds, ``time.perf_counter``) and each
median over the first version's. Run it under ``flock /tmp/taskforge-heavy.lock`` on a shared
machine; docs/benchmarks.md, "Retention's cost".
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
DATABASE = "tf_prune_time"

OLDER_THAN_SECONDS = 60


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("admin_dsn")
    parser.add_argument("versions", nargs="+", type=Path)
    parser.add_argument("--tasks", type=int, default=300_000)
    parser.add_argument("--rounds", type=int, default=4)
    parser.add_argument("--calls", type=int, default=8)
    parser.add_argument("--max-tasks", type=int, default=1000)
    args = parser.parse_args(argv)
    sys.path.insert(0, str(ROOT / "clients" / "python"))
    from taskforge import database as tfdb
    from taskforge.benchmarks.console_data import fill

    bodies = {path.name: path.read_text(encoding="utf-8") for path in args.versions}
    dsn = make_conninfo(args.admin_dsn, dbname=DATABASE)
    with psycopg.connect(args.admin_dsn, autocommit=True) as admin:
        admin.execute(f"DROP DATABASE IF EXISTS {DATABASE}")
        admin.execute(f"CREATE DATABASE {DATABASE}")
    try:
        tfdb.migrate(dsn)
        with psycopg.connect(dsn, autocommit=True) as c:
            c.execute("SET synchronous_commit = off")
            fill(c, finished=args.tasks, queued=1)
            c.execute("VACUUM ANALYZE")
            # Tasks of the last minute are too young to prune; every call prunes the oldest.
            prunable = c.execute(
                "SELECT count(*) FROM taskforge.tasks WHERE finished_at < now() - make_interval(secs => %s)",
                (OLDER_THAN_SECONDS,),
            ).fetchone()[0]
        # Tasks cross the 60 s line while the calls run, so a call may find more than counted here.
        expected = min(args.max_tasks, prunable)
        times: dict[str, list[float]] = {name: [] for name in bodies}
        for _ in range(args.rounds):
            for name, body in bodies.items():
                with psycopg.connect(dsn, autocommit=True) as c:
                    c.execute(body)
                with psycopg.connect(dsn, autocommit=True) as c:
                    for _ in range(args.calls):
                        with c.transaction(force_rollback=True):
                            started = time.perf_counter()
                            row = c.execute(
                                "SELECT taskforge.tf_prune(older_than_seconds => %s, max_tasks => %s)",
                                (OLDER_THAN_SECONDS, args.max_tasks),
                            ).fetchone()
                            times[name].append((time.perf_counter() - started) * 1000)
                        if row is None or not expected <= row[0] <= args.max_tasks:
                            raise SystemExit(
                                f"prune_time: {name} pruned {row}, expected {expected} to {args.max_tasks}"
                            )
        first = statistics.median(next(iter(times.values())))
        for name, samples in times.items():
            median = statistics.median(samples)
            print(
                f"{name}: median {median:.1f} ms, fastest {min(samples):.1f} ms over {len(samples)} calls;"
                f" {median / first:.2f} x the first"
            )
    finally:
        with psycopg.connect(args.admin_dsn, autocommit=True) as admin:
            admin.execute(f"DROP DATABASE IF EXISTS {DATABASE} WITH (FORCE)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
