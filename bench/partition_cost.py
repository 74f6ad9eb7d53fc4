"""What range-partitioning ``tasks`` and ``attempts`` by ``task_id`` would cost a worker turn in
the database: CPU instructions per turn (callgrind, ``bench/turn_instructions.sh``) for the schema
as it is and for variants with N partitions each (docs/scaling.md, "History: retention, then
partitioning").

    python bench/partition_cost.py [--partitions 0,1,2,4,8] [--mode single|batch]

0 is the schema as it is. For N >= 1 the variant is this checkout's ``db/`` with ``tasks`` and
``attempts`` declared ``PARTITION BY RANGE (task_id)`` and N partitions of each, one million
task ids apiece; the identity starts in partition N-2 (partition 0 when N = 1), so the measured
tasks live there, the partition above it stands ready for the next ids, and the ones below stand
for finished history (empty here: a real history partition also holds rows, which only makes its
primary-key probes a level or two deeper). What a partitioned design would have to change besides,
and that the variant only stubs out: the unique index of idempotency keys becomes a plain index
(a unique index of a partitioned table must contain the partition key; the design keeps keys in
a table of their own) and the submit's ``ON CONFLICT`` on it goes; the tables' autovacuum
storage parameters go (a partitioned table has no storage; they would be set per partition).
The measured turn submits nothing, so neither change is in what it counts.

Prints instructions per turn (and per task for ``batch``) and the ratio to the schema as it is.
Needs what ``bench/turn_instructions.sh`` needs (valgrind, PostgreSQL 15's server binaries); about
20 s per variant for ``single``, 60 s for ``batch``. Counts are repeatable whatever else the
machine does, so the variants need not alternate.
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SPAN = 1_000_000

PARTITIONS_SQL = """
DO $partitions$
DECLARE
    n int := {n};
    k int;
BEGIN
    FOR k IN 0 .. n - 1 LOOP
        EXECUTE format('CREATE TABLE taskforge.tasks_p%s PARTITION OF taskforge.tasks'
                       ' FOR VALUES FROM (%s) TO (%s)', k, k * {span}::bigint + 1, (k + 1) * {span}::bigint + 1);
        EXECUTE format('CREATE TABLE taskforge.attempts_p%s PARTITION OF taskforge.attempts'
                       ' FOR VALUES FROM (%s) TO (%s)', k, k * {span}::bigint + 1, (k + 1) * {span}::bigint + 1);
    END LOOP;
    EXECUTE format('ALTER TABLE taskforge.tasks ALTER COLUMN task_id RESTART WITH %s',
                   greatest(n - 2, 0) * {span}::bigint + 1);
END
$partitions$;
"""


def _replace_once(text: str, pattern: str, replacement: str, what: str) -> str:
    """Apply one regular-expression substitution that must match exactly once."""
    new, count = re.subn(pattern, replacement, text, flags=re.S | re.M)
    if count != 1:
        raise SystemExit(f"partition_cost: {what}: expected one match in the schema, found {count}")
    return new


def partitioned_db(source: Path, target: Path, n: int) -> None:
    """Copy ``db/`` to ``target`` and declare tasks and attempts partitioned with n partitions each."""
    shutil.copytree(source, target)
    tables = target / "schema" / "20_tables.sql"
    sql = tables.read_text(encoding="utf-8")
    sql = _replace_once(
        sql, r"(CREATE TABLE taskforge\.tasks \(.*?\n)\);", r"\1) PARTITION BY RANGE (task_id);", "tasks"
    )
    sql = _replace_once(
        sql,
        r"(CREATE TABLE taskforge\.attempts \(.*?\n)\);",
        lambda m: m.group(1) + ") PARTITION BY RANGE (task_id);\n" + PARTITIONS_SQL.format(n=n, span=SPAN),
        "attempts",
    )
    sql = _replace_once(
        sql, r"CREATE UNIQUE INDEX tasks_idempotency_key_uidx", "CREATE INDEX tasks_idempotency_key_uidx", "key index"
    )
    sql = _replace_once(sql, r"^ALTER TABLE taskforge\.tasks SET \(.*?\);\n", "", "tasks storage parameters")
    sql = _replace_once(sql, r"^ALTER TABLE taskforge\.attempts SET \(.*?\);\n", "", "attempts storage parameters")
    tables.write_text(sql, encoding="utf-8")
    submit = target / "functions" / "_tf_submit_one.sql"
    body = _replace_once(
        submit.read_text(encoding="utf-8"),
        r"^\s*ON CONFLICT \(idempotency_key\) WHERE idempotency_key IS NOT NULL DO NOTHING\n",
        "\n",
        "the submit's ON CONFLICT",
    )
    submit.write_text(body, encoding="utf-8")


def measure(schema_sql: Path, mode: str) -> tuple[int, str]:
    """Run turn_instructions.sh on one schema script: (instructions per turn, its output line)."""
    env = dict(os.environ, TF_CG_SCHEMA_SQL=str(schema_sql))
    out = (
        subprocess.run(
            ["bash", str(ROOT / "bench" / "turn_instructions.sh"), mode],
            env=env,
            check=True,
            capture_output=True,
            text=True,
        )
        .stdout.strip()
        .splitlines()[-1]
    )
    match = re.search(r": (\d+) instructions per turn", out)
    if match is None:
        raise SystemExit(f"partition_cost: unexpected output of turn_instructions.sh: {out!r}")
    return int(match.group(1)), out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--partitions", default="0,1,2,4,8", help="comma-separated partition counts; 0 = as it is")
    parser.add_argument("--mode", choices=("single", "batch"), default="single")
    args = parser.parse_args(argv)
    counts = [int(x) for x in args.partitions.split(",")]
    sys.path.insert(0, str(ROOT / "clients" / "python"))
    from taskforge.dbsource import build_sql, db_dir

    base = None
    with tempfile.TemporaryDirectory(prefix="tf-partition-cost-") as tmp:
        for n in counts:
            db = db_dir() if n == 0 else Path(tmp) / f"db{n}"
            if n:
                partitioned_db(db_dir(), db, n)
            script = Path(tmp) / f"schema{n}.sql"
            script.write_text(build_sql(db), encoding="utf-8")
            per_turn, line = measure(script, args.mode)
            base = per_turn if base is None and n == 0 else base
            ratio = f"{per_turn / base:.2f} x the schema as it is" if base else ""
            label = "as it is" if n == 0 else f"{n} partition{'s' if n > 1 else ''}"
            print(f"{label:>14}: {line.split(': ', 1)[1]}  {ratio}", flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
