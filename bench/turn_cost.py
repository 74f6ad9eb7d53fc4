"""The cost of one worker turn in the database, in one session: tf_finalize_and_claim finishing
the task of the previous turn and claiming the next (queue 'ab'), timed over N/2 turns after a
warm-up of N/2. With ``single``, a turn is the single-task functions instead: tf_claim of one
task, one tf_renew and tf_finalize of it (three round trips). For A/B comparisons of SQL changes
on one machine, alternate runs against two databases (or swap one function between runs) and
compare the medians; see docs/benchmarks.md.

    python bench/turn_cost.py "host=127.0.0.1 user=postgres dbname=ab" 6000 [single]
"""

from __future__ import annotations

import sys
import time

import psycopg

TURN = (
    "SELECT kind, task_id, attempt_number FROM taskforge.tf_finalize_and_claim(worker_id => %s,"
    " task_ids => %s::bigint[], attempt_numbers => %s::int[], outcomes => %s::text[],"
    " queues => ARRAY['ab'], max_tasks => 1)"
)

CLAIM = "SELECT task_id, attempt_number FROM taskforge.tf_claim(worker_id => %s, queues => ARRAY['ab'], max_tasks => 1)"
RENEW = "SELECT renewed FROM taskforge.tf_renew(task_id => %s, worker_id => %s, attempt_number => %s)"
FINALIZE = (
    "SELECT accepted FROM taskforge.tf_finalize(task_id => %s, worker_id => %s, attempt_number => %s,"
    " outcome => 'succeeded')"
)


def single_turn(c: psycopg.Connection, worker_id: object) -> None:
    """tf_claim one task, renew it once, finalize it succeeded."""
    task_id, attempt_number = c.execute(CLAIM, (worker_id,), prepare=True).fetchall()[0]
    c.execute(RENEW, (task_id, worker_id, attempt_number), prepare=True).fetchall()
    c.execute(FINALIZE, (task_id, worker_id, attempt_number), prepare=True).fetchall()


def main(dsn: str, n: int, single: bool = False) -> None:
    with psycopg.connect(dsn, autocommit=True) as c:
        c.execute(
            "SELECT count(*) FROM taskforge.tf_submit_many((SELECT jsonb_agg(jsonb_build_object("
            "'task_type', 'noop', 'queue', 'ab')) FROM generate_series(1, %s)))",
            (n + 10,),
        )
        row = c.execute("SELECT taskforge.tf_register_worker(name => 'ab', queues => ARRAY['ab'])").fetchone()
        assert row is not None
        worker_id = row[0]
        held: list[tuple[int, int]] = []
        elapsed = 0.0
        for _phase in ("warm-up", "timed"):
            start = time.perf_counter()
            for _ in range(n // 2):
                if single:
                    single_turn(c, worker_id)
                    continue
                params = (worker_id, [h[0] for h in held], [h[1] for h in held], ["succeeded"] * len(held))
                rows = c.execute(TURN, params, prepare=True).fetchall()
                held = [(r[1], r[2]) for r in rows if r[0] == "claimed"]
            elapsed = time.perf_counter() - start
        print(f"{elapsed / (n // 2) * 1e6:.1f} us per turn")


if __name__ == "__main__":
    main(sys.argv[1], int(sys.argv[2]) if len(sys.argv) > 2 else 6000, sys.argv[3:4] == ["single"])
