"""The cost of one worker turn in the database, in one session: tf_finalize_and_claim finishing
the task of the previous turn and claiming the next (queue 'ab'), timed over N/2 turns after a
warm-up of N/2. For A/B comparisons of SQL changes on one machine, alternate runs against two
databases (or swap one function between runs) and compare the medians; see docs/benchmarks.md.

    python bench/turn_cost.py "host=127.0.0.1 user=postgres dbname=ab" 6000
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


def main(dsn: str, n: int) -> None:
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
                params = (worker_id, [h[0] for h in held], [h[1] for h in held], ["succeeded"] * len(held))
                rows = c.execute(TURN, params, prepare=True).fetchall()
                held = [(r[1], r[2]) for r in rows if r[0] == "claimed"]
            elapsed = time.perf_counter() - start
        print(f"{elapsed / (n // 2) * 1e6:.1f} us per turn")


if __name__ == "__main__":
    main(sys.argv[1], int(sys.argv[2]) if len(sys.argv) > 2 else 6000)
