"""The database's ceiling, driven by the ``pgbench`` binary (no Python on the hot path).

Scripts live in ``bench/pgbench/`` (:data:`SCRIPTS`); each statement is its own autocommit
transaction, like a TaskForge worker's calls:

* ``skip_locked``        (a) a bare ``FOR UPDATE SKIP LOCKED`` claim + ``UPDATE`` finish on a scratch
  table: two statements, two commits per task;
* ``skip_locked_one``    (a1) one statement finishes the previous row and claims the next: one round
  trip and one commit per task, the best a one-round-trip-per-task worker can do;
* ``skip_locked_batch``  (a2) claim B rows in one statement, finish them in one statement;
* ``skip_locked_history_one``, ``skip_locked_history_batch`` (h1), (h2): (a1) and (a2) that also
  keep every attempt, one row per claim in a second bare table (opened at the claim, closed at the
  finish): the floor of a durable attempt history;
* ``taskforge``          (b) ``tf_claim`` then ``tf_finalize(outcome => 'succeeded')`` on a migrated database;
* ``finalize_and_claim`` (c) ``tf_finalize_and_claim``: finish the previous task and claim the next in
  one call;
* ``finalize_and_claim_batch`` (c-batch) ``tf_finalize_and_claim`` finalizing the B tasks of the
  previous cycle and claiming the next B in one call;
* ``taskforge_tables_one``, ``taskforge_tables_batch`` (d), (d-batch): the rows (c) and (c-batch)
  write, on TaskForge's tables with every index and constraint, by one plain statement instead of
  the function (no validation, no guard): what the tables cost, apart from the function.

B (``batch``) is the batched worker's claim size (``Sizes.batch_size``). Each point gets a freshly
filled queue with enough rows for its duration; if a queue still runs dry the fill is doubled
and the point re-run. A point's ``tasks_per_second`` counts rows finished, not pgbench
transactions: rows finished during the run x pgbench's tps / pgbench's transactions (so a
batched cycle counts B tasks, and the first cycle of a carrying script, which only claims,
counts none).
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import psycopg
from psycopg.conninfo import conninfo_to_dict

from .. import sql
from ..progress import Progress
from . import statements
from .database import bench_dir
from .results import CeilingPoint

__all__ = [
    "SCRIPTS",
    "Script",
    "available_scripts",
    "measure_point",
    "parse_pgbench",
    "pgbench_binary",
    "tasks_per_second",
]


@dataclass(frozen=True)
class Script:
    """One pgbench workload: ``setup`` and ``cycle`` files in bench/pgbench/; ``bare`` True for
    the scratch table (a, a1, a2, h1, h2), False for a migrated TaskForge database; ``also``: a
    second setup file run after ``setup``; ``defines``: pgbench
    ``-D`` variables (the text ``{batch}`` in them is replaced by B); ``batched``: a cycle handles B tasks;
    ``rate_guess``: generous tasks per second, to size the fill; ``requires``: a function the
    migrated database must have (absent: the script is skipped with a note)."""

    label: str
    setup: str
    cycle: str
    bare: bool
    rate_guess: int
    defines: tuple[str, ...] = ()
    batched: bool = False
    requires: str | None = None
    also: str | None = None


#: Every ceiling script, in report order.
SCRIPTS: dict[str, Script] = {
    "skip_locked": Script("(a)", "skip_locked_setup.sql", "skip_locked_cycle.sql", True, 20000),
    "skip_locked_one": Script(
        "(a1)", "skip_locked_setup.sql", "skip_locked_one_statement_cycle.sql", True, 20000, ("id=0",)
    ),
    "skip_locked_batch": Script(
        "(a2)", "skip_locked_setup.sql", "skip_locked_batch_cycle.sql", True, 80000, ("batch={batch}",), batched=True
    ),
    "skip_locked_history_one": Script(
        "(h1)",
        "skip_locked_setup.sql",
        "skip_locked_history_one_statement_cycle.sql",
        True,
        20000,
        ("id=0",),
        also="skip_locked_history_setup.sql",
    ),
    "skip_locked_history_batch": Script(
        "(h2)",
        "skip_locked_setup.sql",
        "skip_locked_history_batch_cycle.sql",
        True,
        60000,
        ("batch={batch}",),
        batched=True,
        also="skip_locked_history_setup.sql",
    ),
    "taskforge": Script("(b)", "taskforge_setup.sql", "taskforge_cycle.sql", False, 5000),
    "finalize_and_claim": Script(
        "(c)",
        "taskforge_setup.sql",
        "taskforge_finalize_and_claim_cycle.sql",
        False,
        8000,
        ("task_id=0", "attempt_number=0"),
        requires="taskforge.tf_finalize_and_claim",
    ),
    "finalize_and_claim_batch": Script(
        "(c-batch)",
        "taskforge_setup.sql",
        "taskforge_finalize_and_claim_batch_cycle.sql",
        False,
        20000,
        ("task_ids={}", "attempt_numbers={}", "batch={batch}"),
        batched=True,
        requires="taskforge.tf_finalize_and_claim",
    ),
    "taskforge_tables_one": Script(
        "(d)", "taskforge_setup.sql", "taskforge_tables_cycle.sql", False, 8000, ("task_ids={}", "batch=1")
    ),
    "taskforge_tables_batch": Script(
        "(d-batch)",
        "taskforge_setup.sql",
        "taskforge_tables_cycle.sql",
        False,
        20000,
        ("task_ids={}", "batch={batch}"),
        batched=True,
    ),
}
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


def tasks_per_second(rows_finished: int | None, tps: float | None, transactions: int | None) -> float | None:
    """Tasks finished per second of a pgbench run: ``rows_finished x tps / transactions`` (tps is
    transactions per second without connection time, so this is rows over the same seconds).
    None when a figure is missing or there were no transactions."""
    if rows_finished is None or tps is None or not transactions:
        return None
    return rows_finished * tps / transactions


def available_scripts(dsn: str, wanted: Sequence[str]) -> tuple[list[str], dict[str, str]]:
    """Which of ``wanted`` can run on the migrated database at ``dsn``; the others with the reason."""
    ok, skipped = [], {}
    with psycopg.connect(dsn, autocommit=True) as conn:
        for name in wanted:
            needed = SCRIPTS[name].requires
            if needed and not sql.one_value(conn, statements.BENCH_FUNCTION_EXISTS, {"name": needed}):
                skipped[name] = f"{needed} is not in the migrated database"
            else:
                ok.append(name)
    return ok, skipped


def _rows_left(conn: psycopg.Connection, script: Script) -> int:
    """Rows still queued."""
    return int(
        sql.one_value(
            conn, statements.BENCH_CEILING_QUEUE_LEFT if script.bare else statements.BENCH_CEILING_TASKFORGE_LEFT
        )
    )


def _rows_done(conn: psycopg.Connection, script: Script) -> int:
    """Rows finished so far (the TaskForge scripts share their block's database, so a point
    counts the difference before and after its run)."""
    return int(
        sql.one_value(
            conn, statements.BENCH_CEILING_QUEUE_DONE if script.bare else statements.BENCH_CEILING_TASKFORGE_DONE
        )
    )


def _prepare(conn: psycopg.Connection, script: Script, clients: int, rows: int) -> None:
    """Run the script's setup and leave ``rows`` queued rows: a fresh scratch table for the
    bare scripts; for the TaskForge ones, new workers and as many noop tasks as the queued ones
    left by the block's earlier points fall short of ``rows`` (tf_submit is slow to fill with)."""
    for setup in (script.setup, script.also):
        if setup:
            conn.execute((bench_dir() / "pgbench" / setup).read_text(encoding="utf-8"))
    if script.bare:
        conn.execute(statements.BENCH_CEILING_FILL_QUEUE, {"rows": rows})
    else:
        conn.execute(statements.BENCH_CEILING_REGISTER_WORKERS, {"clients": clients})
        missing = rows - _rows_left(conn, script)
        if missing > 0:
            conn.execute(statements.BENCH_CEILING_SUBMIT_NOOPS, {"rows": missing})
    conn.execute(statements.BENCH_VACUUM_ANALYZE)


def pgbench_argv(binary: str, name: str, clients: int, seconds: float, batch: int) -> list[str]:
    """The pgbench command line of one point: ``-n -M prepared -c clients -j min(clients, cores)
    -T seconds -f CYCLE`` and the script's ``-D`` variables."""
    script = SCRIPTS[name]
    argv = [
        binary,
        "-n",
        "-M",
        "prepared",
        "-c",
        str(clients),
        "-j",
        str(max(1, min(clients, os.cpu_count() or 1))),
        "-T",
        str(max(1, round(seconds))),
        "-f",
        str(bench_dir() / "pgbench" / script.cycle),
    ]
    for define in script.defines:
        argv += ["-D", define.replace("{batch}", str(batch))]
    return argv


def measure_point(
    dsn: str,
    script: str,
    clients: int,
    seconds: float,
    block: int,
    progress: Progress,
    pgbench: str | None = None,
    batch: int = 64,
) -> CeilingPoint:
    """Run one pgbench point (:func:`pgbench_argv`) on a freshly filled queue; ``batch`` is B for
    the batched scripts. The database at ``dsn`` must be migrated for the TaskForge scripts.
    Never raises for a failed point: ``error`` says why and ``ok`` is False."""
    binary = pgbench or pgbench_binary()
    spec = SCRIPTS[script]
    point = CeilingPoint(
        script=script, clients=clients, seconds=seconds, block=block, batch=batch if spec.batched else None
    )
    if binary is None:
        point.error = "pgbench not found (install postgresql-client or set $PGBENCH)"
        return point
    rows = int(spec.rate_guess * seconds) + FILL_BASE_ROWS
    # Fewer rows left than one claim per client: the last cycles found the queue (partly) empty.
    dry_below = (batch if spec.batched else 1) * clients
    argv = pgbench_argv(binary, script, clients, seconds, batch)
    env = dict(os.environ, **_libpq_env(dsn))
    progress.start(f"{point.label} (pgbench {seconds:g} s)", 1)
    for _ in range(MAX_TRIES):
        with psycopg.connect(dsn, autocommit=True) as conn:
            _prepare(conn, spec, clients, rows)
            done_before = _rows_done(conn, spec)
            proc = subprocess.run(argv, env=env, capture_output=True, text=True, timeout=seconds + 120)
            point.rows_left = _rows_left(conn, spec)
            point.rows_finished = _rows_done(conn, spec) - done_before
        output = proc.stdout + proc.stderr
        point.rows_filled = rows
        point.output_tail = "\n".join(output.splitlines()[-25:])
        point.cycles_per_second, point.cycles = parse_pgbench(output)
        point.tasks_per_second = tasks_per_second(point.rows_finished, point.cycles_per_second, point.cycles)
        if point.rows_left < dry_below:
            rows *= 2  # ran dry: the clients were waiting on an empty queue, not measuring it
            continue
        if proc.returncode != 0 or point.tasks_per_second is None:
            point.error = (
                f"pgbench exited {proc.returncode}: {output.strip().splitlines()[-1] if output.strip() else ''}"
            )
        break
    else:
        point.error = f"the queue ran dry even with {rows // 2} rows"
    point.ok = point.error is None
    progress.finish(f"{point.tasks_per_second:,.0f} tasks/s" if point.ok else f"FAILED: {point.error}")
    return point
