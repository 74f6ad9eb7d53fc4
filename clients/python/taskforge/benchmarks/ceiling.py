"""The database's ceiling, driven by the ``pgbench`` binary (no Python on the hot path).

Scripts live in ``bench/pgbench/``; every cycle is one claim and one finish, each its own
autocommit transaction (like a TaskForge worker's claim and finalize):

* ``skip_locked``        (a) a bare ``FOR UPDATE SKIP LOCKED`` claim + ``UPDATE`` finish on a scratch table;
* ``taskforge``          (b) ``tf_claim`` then ``tf_finalize(outcome => 'succeeded')`` on a migrated database;
* ``finalize_and_claim`` (c) ``tf_finalize_and_claim``: finish the previous task and claim the next in
  one call (measured only when the migrated database has that function).

Each point gets a freshly filled queue with enough rows for its duration (pgbench's tps is the
cycles per second; if a queue still runs dry the fill is doubled and the point re-run).
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from collections.abc import Sequence
from pathlib import Path

import psycopg
from psycopg.conninfo import conninfo_to_dict

from .. import sql
from ..progress import Progress
from .database import bench_dir
from .results import CeilingPoint

__all__ = ["SCRIPTS", "available_scripts", "measure_point", "parse_pgbench", "pgbench_binary"]

#: script name -> (setup file, cycle file) in bench/pgbench/.
SCRIPTS: dict[str, tuple[str, str]] = {
    "skip_locked": ("skip_locked_setup.sql", "skip_locked_cycle.sql"),
    "taskforge": ("taskforge_setup.sql", "taskforge_cycle.sql"),
    "finalize_and_claim": ("taskforge_setup.sql", "taskforge_finalize_and_claim_cycle.sql"),
}
#: Function a script needs in the migrated database (absent: the script is skipped).
REQUIRES = {"finalize_and_claim": "taskforge.tf_finalize_and_claim"}
#: Generous cycles per second per script, used to size the fill (rows = rate x seconds + base).
RATE_GUESS = {"skip_locked": 20000, "taskforge": 5000, "finalize_and_claim": 8000}
FILL_BASE_ROWS = 5000
MAX_TRIES = 3

_TPS = re.compile(r"^tps = ([0-9.]+) \(without initial connection time\)", re.M)
_TPS_ANY = re.compile(r"^tps = ([0-9.]+)", re.M)
_TX = re.compile(r"^number of transactions actually processed: (\d+)", re.M)


def pgbench_binary() -> str | None:
    """Path of pgbench ($PGBENCH, else on PATH, else /usr/bin/pgbench), or None."""
    for candidate in (os.environ.get("PGBENCH"), shutil.which("pgbench"), "/usr/bin/pgbench"):
        if candidate and Path(candidate).is_file():
            return candidate
    return None


def parse_pgbench(output: str) -> tuple[float | None, int | None]:
    """(tps, transactions) from pgbench's report; None where the line is missing."""
    tps = _TPS.search(output) or _TPS_ANY.search(output)
    tx = _TX.search(output)
    return (float(tps.group(1)) if tps else None, int(tx.group(1)) if tx else None)


def _libpq_env(dsn: str) -> dict[str, str]:
    """The DSN as libpq environment variables (pgbench takes no connection string)."""
    names = {
        "host": "PGHOST",
        "hostaddr": "PGHOSTADDR",
        "port": "PGPORT",
        "user": "PGUSER",
        "password": "PGPASSWORD",
        "dbname": "PGDATABASE",
        "sslmode": "PGSSLMODE",
        "passfile": "PGPASSFILE",
        "options": "PGOPTIONS",
        "application_name": "PGAPPNAME",
    }
    return {names[k]: str(v) for k, v in conninfo_to_dict(dsn).items() if k in names and v is not None}


def available_scripts(dsn: str, wanted: Sequence[str]) -> tuple[list[str], dict[str, str]]:
    """Which of ``wanted`` can run on the migrated database at ``dsn``; the others with the reason."""
    ok, skipped = [], {}
    with psycopg.connect(dsn, autocommit=True) as conn:
        for name in wanted:
            needed = REQUIRES.get(name)
            if needed and not sql.one_value(conn, sql.BENCH_FUNCTION_EXISTS, {"name": needed}):
                skipped[name] = f"{needed} is not in the migrated database"
            else:
                ok.append(name)
    return ok, skipped


def _prepare(conn: psycopg.Connection, script: str, clients: int, rows: int) -> None:
    setup = (bench_dir() / "pgbench" / SCRIPTS[script][0]).read_text(encoding="utf-8")
    conn.execute(setup)
    if script == "skip_locked":
        conn.execute(sql.BENCH_CEILING_FILL_QUEUE, {"rows": rows})
    else:
        conn.execute(sql.BENCH_CEILING_REGISTER_WORKERS, {"clients": clients})
        conn.execute(sql.BENCH_CEILING_SUBMIT_NOOPS, {"rows": rows})
    conn.execute(sql.BENCH_VACUUM_ANALYZE)


def _rows_left(conn: psycopg.Connection, script: str) -> int:
    statement = sql.BENCH_CEILING_QUEUE_LEFT if script == "skip_locked" else sql.BENCH_CEILING_TASKFORGE_LEFT
    return int(sql.one_value(conn, statement))


def measure_point(
    dsn: str, script: str, clients: int, seconds: float, block: int, progress: Progress, pgbench: str | None = None
) -> CeilingPoint:
    """Run one pgbench point (``-M prepared -c clients -T seconds``) on a freshly filled queue.
    The database at ``dsn`` must be migrated for the TaskForge scripts."""
    binary = pgbench or pgbench_binary()
    point = CeilingPoint(script=script, clients=clients, seconds=seconds, block=block)
    if binary is None:
        point.error = "pgbench not found (install postgresql-client or set $PGBENCH)"
        return point
    rows = int(RATE_GUESS[script] * seconds) + FILL_BASE_ROWS
    threads = max(1, min(clients, os.cpu_count() or 1))
    argv = [
        binary,
        "-n",
        "-M",
        "prepared",
        "-c",
        str(clients),
        "-j",
        str(threads),
        "-T",
        str(max(1, round(seconds))),
        "-f",
        str(bench_dir() / "pgbench" / SCRIPTS[script][1]),
    ]
    if script == "finalize_and_claim":
        argv += ["-D", "task_id=0", "-D", "attempt_number=0"]
    env = dict(os.environ, **_libpq_env(dsn))
    progress.start(f"{point.label} (pgbench {seconds:g} s)", 1)
    for _ in range(MAX_TRIES):
        with psycopg.connect(dsn, autocommit=True) as conn:
            _prepare(conn, script, clients, rows)
            proc = subprocess.run(argv, env=env, capture_output=True, text=True, timeout=seconds + 120)
            point.rows_left = _rows_left(conn, script)
        output = proc.stdout + proc.stderr
        point.rows_filled = rows
        point.output_tail = "\n".join(output.splitlines()[-25:])
        point.cycles_per_second, point.cycles = parse_pgbench(output)
        if point.rows_left == 0:
            rows *= 2  # ran dry: the clients were waiting on an empty queue, not measuring it
            continue
        if proc.returncode != 0 or point.cycles_per_second is None:
            point.error = (
                f"pgbench exited {proc.returncode}: {output.strip().splitlines()[-1] if output.strip() else ''}"
            )
        break
    else:
        point.error = f"the queue ran dry even with {rows // 2} rows"
    point.ok = point.error is None
    progress.finish(f"{point.cycles_per_second:,.0f} cycles/s" if point.ok else f"FAILED: {point.error}")
    return point
