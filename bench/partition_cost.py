"""What range-partitioning ``tasks`` and ``attempts`` by ``task_id`` would cost a worker turn in
the database: CPU instructions per turn (callgrind, ``bench/turn_instructions.sh``) for the schema
as it is and for variants with N partitions each (docs/scaling.md, "History: retention, then
partitioning").

    python bench/partition_cost.py [--partitions 0,1,2,4,8] [--mode single|batch] [--bounds [all|turn]]

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

``--bounds`` also measures each count with the hot path bounded (``bounded_db``): every statement
of the measured turn on ``tasks`` and ``attempts`` (a one-queue claim; not the claim's dynamic
statement for several queues or delayed tasks, nor the keyed, aged and busy paths) carries a
range of task ids as two scalar parameters, which PostgreSQL 15 uses to leave partitions out
before setting them up, and ``attempts`` refers to ``tasks`` partition to partition. For 0 it
measures what the bounds alone cost the schema as it is. A prototype for counting only: the
floor it reads is a constant, where a real design would have to maintain it (docs/scaling.md).
``--bounds turn`` bounds only what needs no floor (the turn's own statements, which name their
tasks by id: the finalize's and the update that starts the claimed tasks; and the twin-partition
foreign key), leaving the claim's pick to read every partition.

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
from collections.abc import Callable
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


def _replace(
    text: str, old: str, new: str | Callable[[re.Match[str]], str], what: str, count: int = 1, *, regex: bool = False
) -> str:
    """Replace ``old`` (a literal string, or with ``regex`` a regular expression, DOTALL and
    MULTILINE; ``new`` may then be a function of the match) by ``new``; it must occur exactly
    ``count`` times, else the script exits naming ``what``."""
    if regex:
        result, found = re.subn(old, new, text, flags=re.S | re.M)
    elif isinstance(new, str):
        result, found = text.replace(old, new), text.count(old)
    else:
        raise TypeError("partition_cost: a function as the replacement needs regex=True")
    if found != count:
        raise SystemExit(f"partition_cost: {what}: expected {count} occurrence(s) in the schema, found {found}")
    return result


def partitioned_db(source: Path, target: Path, n: int) -> None:
    """Copy ``db/`` to ``target`` and declare tasks and attempts partitioned with n partitions each."""
    shutil.copytree(source, target)
    tables = target / "schema" / "20_tables.sql"
    sql = tables.read_text(encoding="utf-8")
    sql = _replace(
        sql, r"(CREATE TABLE taskforge\.tasks \(.*?\n)\);", r"\1) PARTITION BY RANGE (task_id);", "tasks", regex=True
    )
    sql = _replace(
        sql,
        r"(CREATE TABLE taskforge\.attempts \(.*?\n)\);",
        lambda m: m.group(1) + ") PARTITION BY RANGE (task_id);\n" + PARTITIONS_SQL.format(n=n, span=SPAN),
        "attempts",
        regex=True,
    )
    sql = _replace(
        sql, r"CREATE UNIQUE INDEX tasks_idempotency_key_uidx", "CREATE INDEX tasks_idempotency_key_uidx", "key index"
    )
    sql = _replace(sql, r"^ALTER TABLE taskforge\.tasks SET \(.*?\);\n", "", "tasks storage parameters", regex=True)
    sql = _replace(
        sql, r"^ALTER TABLE taskforge\.attempts SET \(.*?\);\n", "", "attempts storage parameters", regex=True
    )
    tables.write_text(sql, encoding="utf-8")
    submit = target / "functions" / "_tf_submit_one.sql"
    body = _replace(
        submit.read_text(encoding="utf-8"),
        r"^\s*ON CONFLICT \(idempotency_key\) WHERE idempotency_key IS NOT NULL DO NOTHING\n",
        "\n",
        "the submit's ON CONFLICT",
        regex=True,
    )
    submit.write_text(body, encoding="utf-8")


FLOOR_SQL = """
CREATE TABLE taskforge.claim_floor (task_id_floor bigint NOT NULL);
INSERT INTO taskforge.claim_floor VALUES ({floor});
"""


TWIN_FK_SQL = """
DO $twin$
BEGIN
    FOR k IN 0 .. {n} - 1 LOOP
        EXECUTE format('ALTER TABLE taskforge.attempts_p%s ADD FOREIGN KEY (task_id)'
                       ' REFERENCES taskforge.tasks_p%s (task_id) ON DELETE CASCADE', k, k);
    END LOOP;
END
$twin$;
"""


def bounded_db(target: Path, n: int, claim: bool = True) -> None:
    """Patch the copy at ``target`` (n partitions, 0 for none) so the hot-path statements carry
    a range of task ids that PostgreSQL prunes partitions with at executor start-up (scalar
    parameters, not arrays).

    The claim's statements read ``task_id BETWEEN floor AND ceiling``: the floor from a one-row
    table (``taskforge.claim_floor``, set here to the first id of the partition the measured
    tasks live in; in a real design maintained below every unfinished task), the ceiling from the
    identity sequence's last value. The turn's statements read the least and greatest id of the
    ids they name (computed from their own arrays: exact, nothing to maintain). With partitions,
    the foreign key of ``attempts`` to ``tasks`` is declared between twin partitions instead of
    between the partitioned tables, so an attempt's check probes one primary key. ``claim=False``
    leaves the claim's statements (and the floor) out. Exits naming the pattern when the source
    no longer matches what this patches."""
    tables = target / "schema" / "20_tables.sql"
    floor = max(n - 2, 0) * SPAN + 1
    sql = tables.read_text(encoding="utf-8") + (FLOOR_SQL.format(floor=floor) if claim else "")
    if n:
        # attempts -> tasks between twin partitions, not between the partitioned tables: each
        # attempt row's check then probes one partition's primary key, with no Append to start.
        sql = _replace(
            sql,
            "task_id            bigint NOT NULL REFERENCES taskforge.tasks (task_id) ON DELETE CASCADE,",
            "task_id            bigint NOT NULL,",
            "attempts foreign key",
        )
        sql += TWIN_FK_SQL.format(n=n)
    tables.write_text(sql, encoding="utf-8")

    if claim:
        pick = target / "functions" / "_tf_claim_pick.sql"
        body = pick.read_text(encoding="utf-8")
        body = _replace(body, "\nDECLARE\n", "\nDECLARE\n    v_floor bigint;\n    v_ceiling bigint;\n", "pick DECLARE")
        body = _replace(
            body,
            "PERFORM taskforge._tf_invalid('worker_id', 'must not be NULL');\n    END IF;\n",
            "PERFORM taskforge._tf_invalid('worker_id', 'must not be NULL');\n    END IF;\n"
            "    SELECT f.task_id_floor, s.last_value INTO v_floor, v_ceiling\n"
            "      FROM taskforge.claim_floor f, taskforge.tasks_task_id_seq s;\n",
            "pick floor read",
        )
        body = _replace(
            body,
            r"FROM taskforge\.tasks t\n(\s+)WHERE ",
            r"FROM taskforge.tasks t\n\1WHERE t.task_id BETWEEN v_floor AND v_ceiling AND ",
            "pick statements",
            8,
            regex=True,
        )
        pick.write_text(body, encoding="utf-8")

    turn = target / "functions" / "_tf_turn.sql"
    body = turn.read_text(encoding="utf-8")
    body = _replace(
        body,
        "\nDECLARE\n",
        "\nDECLARE\n    v_lo bigint;\n    v_hi bigint;\n    v_tlo bigint;\n    v_thi bigint;\n",
        "turn DECLARE",
    )
    body = _replace(
        body,
        "    IF v_n > 0 THEN\n",
        "    IF v_n = 1 THEN\n        v_lo := _tf_turn.task_ids[1];\n        v_hi := v_lo;\n"
        "    ELSIF v_n > 1 THEN\n        SELECT min(x), max(x) INTO v_lo, v_hi FROM unnest(_tf_turn.task_ids) AS x;\n"
        "    END IF;\n    IF v_n > 0 THEN\n",
        "turn input bounds",
    )
    body = _replace(
        body,
        "WHERE l.task_id = r.task_id\n",
        "WHERE l.task_id = r.task_id AND l.task_id BETWEEN v_lo AND v_hi\n",
        "lookup",
    )
    body = _replace(
        body,
        "    RETURN QUERY\n",
        "    IF cardinality(v_touched) <= 2 THEN\n        v_tlo := least(v_touched[1], v_touched[2]);\n"
        "        v_thi := greatest(v_touched[1], v_touched[2]);\n"
        "    ELSE\n        SELECT min(x), max(x) INTO v_tlo, v_thi FROM unnest(v_touched) AS x;\n    END IF;\n"
        "    RETURN QUERY\n",
        "turn written bounds",
    )
    body = _replace(
        body,
        "WHERE t.task_id = ANY (v_touched)\n",
        "WHERE t.task_id = ANY (v_touched) AND t.task_id BETWEEN v_tlo AND v_thi\n",
        "moved",
    )
    body = _replace(
        body,
        "WHERE a.task_id = ANY (v_ok_ids) AND",
        "WHERE a.task_id = ANY (v_ok_ids) AND a.task_id BETWEEN v_ok_ids[1] AND v_ok_ids[cardinality(v_ok_ids)] AND",
        "ended",
    )
    turn.write_text(body, encoding="utf-8")


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
    parser.add_argument(
        "--bounds",
        nargs="?",
        const="all",
        choices=("all", "turn"),
        help="also measure each count with the hot path's statements bounded by a task-id range (see bounded_db);"
        " turn: the turn's own statements only, not the claim's pick (no floor)",
    )
    args = parser.parse_args(argv)
    counts = [int(x) for x in args.partitions.split(",")]
    sys.path.insert(0, str(ROOT / "clients" / "python"))
    from taskforge.dbsource import build_sql, db_dir

    labels = {None: "", "all": ", bounded", "turn": ", turn bounded"}

    def schema(n: int, bounds: str | None, tmp: Path) -> Path:
        """The schema script of one variant: n partitions (0: none), bounds None, 'all' or 'turn'."""
        db = db_dir()
        if n or bounds:
            db = tmp / f"db{n}{bounds or ''}"
            if n:
                partitioned_db(db_dir(), db, n)
            else:
                shutil.copytree(db_dir(), db)
            if bounds:
                bounded_db(db, n, claim=bounds == "all")
        script = tmp / f"schema{n}{bounds or ''}.sql"
        script.write_text(build_sql(db), encoding="utf-8")
        return script

    base = None
    with tempfile.TemporaryDirectory(prefix="tf-partition-cost-") as tmp:
        for n in counts:
            label = "as it is" if n == 0 else f"{n} partition{'s' if n > 1 else ''}"
            for bounds in (None, args.bounds) if args.bounds else (None,):
                per_turn, line = measure(schema(n, bounds, Path(tmp)), args.mode)
                base = per_turn if base is None and n == 0 and bounds is None else base
                ratio = f"{per_turn / base:.2f} x the schema as it is" if base else ""
                print(f"{label + labels[bounds]:>28}: {line.split(': ', 1)[1]}  {ratio}", flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
