"""How fast the console answers on a large database (docs/console.md, "Benchmark").

A throwaway database (``taskforge_bench_<hex>``, dropped at the end) gets 1,000,000 finished
tasks spread over the last 24 hours (with their attempts: retries, abandoned attempts, failures
with tracebacks), 100,000 queued ones and 16 workers (taskforge.benchmarks.console_data, written
with INSERT ... SELECT as the table owner), then ``VACUUM ANALYZE``. The console app is built in
this process (``taskforge_console.create_app``) and connects as a login role that holds only
``taskforge_console``, as deployed; each page is requested through Flask's test client (the
whole request: routing, queries under the console's statement_timeout, templates), a few times
to warm up and then ``--requests`` times. The report gives the median, p90 and maximum in
milliseconds (this process's monotonic clock) and checks the targets of issue 7: the dashboard
and the first task-list page under 200 ms, ``/metrics`` under 500 ms. Exit code 1 when a target
is missed or a page does not answer 200.

Run it alone (it is heavy: about a minute of CPU to build the data):

    .venv/bin/python bench/console_bench.py [--dsn ADMIN_DSN] [--requests 15] [--json out.json]

``--dsn`` (or ``$TASKFORGE_BENCH_DSN``) is a server where this user may create databases and roles.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import secrets
import statistics
import sys
import time
from pathlib import Path
from typing import Any

import psycopg
from psycopg import sql as pgsql
from psycopg.conninfo import make_conninfo

ROOT = Path(__file__).resolve().parents[1]
for folder in (ROOT / "clients" / "python", ROOT / "console"):  # a checkout without `make install`
    if str(folder) not in sys.path:
        sys.path.insert(0, str(folder))

from taskforge import sql  # noqa: E402
from taskforge.benchmarks import statements  # noqa: E402
from taskforge.benchmarks.console_data import fill  # noqa: E402
from taskforge.benchmarks.database import admin_dsn_default, fresh_database  # noqa: E402
from taskforge_console import Settings, create_app  # noqa: E402
from taskforge_console.state import console  # noqa: E402

# The login role the console connects as ({name}: psycopg.sql.Identifier),
# and the newest task that needed a second attempt (its page shows two attempts and an error).
CONSOLE_BENCH_CREATE_ROLE = "CREATE ROLE {name} LOGIN IN ROLE taskforge_console"
CONSOLE_BENCH_DROP_ROLE = "DROP ROLE IF EXISTS {name}"
CONSOLE_BENCH_END_ROLE_SESSIONS = "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE usename = %(role)s"
CONSOLE_BENCH_A_RETRIED_TASK = """
SELECT task_id FROM taskforge.tf_attempts WHERE attempt_number = 2 ORDER BY task_id DESC LIMIT 1
"""

#: (label, path, target in ms or None). {finished_id} is a task that succeeded on its second attempt.
PAGES: list[tuple[str, str, float | None]] = [
    ("dashboard", "/", 200.0),
    ("task list, first page", "/tasks", 200.0),
    ("/metrics", "/metrics", 500.0),
    ("dashboard charts (series JSON)", "/dashboard/series.json", None),
    ("task list, FAILED only", "/tasks?state=FAILED", None),
    ("task list, one queue", "/tasks?queue=emails", None),
    ("task list, 20th page (keyset)", "/tasks?cursor={deep_cursor}", None),
    ("task page (two attempts)", "/tasks/{finished_id}", None),
    ("queues", "/queues", None),
    ("workers", "/workers", None),
    ("GET /api/tasks", "/api/tasks", None),
    ("GET /api/stats", "/api/stats", None),
]


def measure(client: Any, path: str, requests: int, warmup: int = 3) -> dict[str, Any]:
    """Median, p90 and max of ``requests`` GETs of ``path`` (ms), after ``warmup`` untimed ones."""
    samples: list[float] = []
    status = None
    for i in range(warmup + requests):
        started = time.perf_counter()
        response = client.get(path)
        elapsed = (time.perf_counter() - started) * 1000
        status = response.status_code
        if status != 200:
            break
        if i >= warmup:
            samples.append(elapsed)
    if not samples:
        return {"status": status, "median_ms": None, "p90_ms": None, "max_ms": None, "samples": 0}
    ordered = sorted(samples)
    return {
        "status": status,
        "median_ms": statistics.median(ordered),
        "p90_ms": ordered[min(len(ordered) - 1, round(0.9 * (len(ordered) - 1)))],
        "max_ms": ordered[-1],
        "samples": len(ordered),
    }


def run(admin_dsn: str, finished: int, queued: int, requests: int) -> dict[str, Any]:
    role = f"taskforge_bench_console_{secrets.token_hex(4)}"
    with fresh_database(admin_dsn) as dsn:
        with psycopg.connect(dsn, autocommit=True) as conn:
            conn.execute("SET synchronous_commit = off")
            print(f"filling {finished:,} finished and {queued:,} queued tasks ...", file=sys.stderr, flush=True)
            data = fill(conn, finished=finished, queued=queued)
            started = time.monotonic()
            conn.execute(statements.BENCH_VACUUM_ANALYZE)
            vacuum_seconds = time.monotonic() - started
            server = sql.one_row(conn, statements.BENCH_SERVER_VERSION)[0]
            conn.execute(pgsql.SQL(CONSOLE_BENCH_CREATE_ROLE).format(name=pgsql.Identifier(role)))
            finished_id = sql.one_value(conn, CONSOLE_BENCH_A_RETRIED_TASK)
        try:
            app = create_app(Settings(dsn=make_conninfo(dsn, user=role)))
            client = app.test_client()
            deep_cursor = data.total_tasks - 19 * 50  # where the 20th page of 50 starts
            results = []
            for label, template, target in PAGES:
                path = template.format(finished_id=finished_id, deep_cursor=deep_cursor)
                figures = measure(client, path, requests)
                ok = figures["status"] == 200 and (target is None or figures["median_ms"] < target)
                results.append({"page": label, "path": path, "target_ms": target, "ok": ok, **figures})
                print(f"  {label}: {figures['median_ms'] or float('nan'):.1f} ms", file=sys.stderr, flush=True)
            console(app).db.close()
        finally:
            with psycopg.connect(admin_dsn, autocommit=True) as admin:
                admin.execute(CONSOLE_BENCH_END_ROLE_SESSIONS, {"role": role})
                admin.execute(pgsql.SQL(CONSOLE_BENCH_DROP_ROLE).format(name=pgsql.Identifier(role)))
    return {
        "data": {
            "tasks_by_state": data.tasks_by_state,
            "build_seconds": round(data.build_seconds, 1),
            "vacuum_analyze_seconds": round(vacuum_seconds, 1),
        },
        "server": server,
        "machine": {"cpus": os.cpu_count(), "python": platform.python_version(), "system": platform.platform()},
        "requests_per_page": requests,
        "results": results,
    }


def report(doc: dict[str, Any]) -> str:
    lines = [
        f"data: {', '.join(f'{k} {v:,}' for k, v in sorted(doc['data']['tasks_by_state'].items()))} "
        f"(built in {doc['data']['build_seconds']} s, VACUUM ANALYZE {doc['data']['vacuum_analyze_seconds']} s)",
        f"server: {doc['server']}",
        f"machine: {doc['machine']['cpus']} CPUs, {doc['machine']['system']}, Python {doc['machine']['python']}",
        f"{doc['requests_per_page']} timed requests per page after 3 untimed ones, Flask test client, milliseconds",
        "",
        "| page | path | median | p90 | max | target |",
        "|---|---|---:|---:|---:|---|",
    ]
    for r in doc["results"]:
        if r["median_ms"] is None:
            cells = f"HTTP {r['status']} | | "
        else:
            cells = f"{r['median_ms']:.1f} | {r['p90_ms']:.1f} | {r['max_ms']:.1f}"
        target = "" if r["target_ms"] is None else f"< {r['target_ms']:.0f} ms: {'met' if r['ok'] else 'MISSED'}"
        lines.append(f"| {r['page']} | `{r['path']}` | {cells} | {target} |")
    return "\n".join(lines)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--dsn", default=admin_dsn_default(), help="server where this user may create databases")
    parser.add_argument("--finished", type=int, default=1_000_000)
    parser.add_argument("--queued", type=int, default=100_000)
    parser.add_argument("--requests", type=int, default=15, help="timed requests per page (median of them)")
    parser.add_argument("--json", type=Path, default=None, help="also write the figures to this file")
    args = parser.parse_args()
    doc = run(args.dsn, args.finished, args.queued, args.requests)
    print(report(doc))
    if args.json:
        args.json.write_text(json.dumps(doc, indent=2, default=str))
    return 0 if all(r["ok"] for r in doc["results"]) else 1


if __name__ == "__main__":
    sys.exit(main())
