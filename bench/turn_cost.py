"""The cost of one worker turn in the database, in one session: tf_finalize_and_claim finishing
the tasks of the previous turn and claiming as many (queue 'ab'; one per turn unless
``--batch B``), timed over N/2 turns after a warm-up of N/2; prints the mean and the median turn
in microseconds (wall clock, ``time.perf_counter``). With ``single``, a turn is the single-task
functions instead: tf_claim of one task, one tf_renew and tf_finalize of it (three round trips).
``--idle-ms MS`` sleeps that long before each turn, as a worker whose handler takes MS does (the
turn then starts with the backend, the WAL device and the CPU caches cold). For A/B comparisons
of SQL changes on one machine, alternate runs against two databases (or swap one function between
runs) and compare the medians; see docs/benchmarks.md. N tasks (times B) are submitted first.

    python bench/turn_cost.py "host=127.0.0.1 user=postgres dbname=ab" 6000 [single]
        [--batch 64] [--idle-ms 50]
"""

from __future__ import annotations

import argparse
import statistics
import time

import psycopg

TURN = (
    "SELECT kind, task_id, attempt_number FROM taskforge.tf_finalize_and_claim(worker_id => %s,"
    " task_ids => %s::bigint[], attempt_numbers => %s::int[], outcomes => %s::text[],"
    " queues => ARRAY['ab'], max_tasks => %s)"
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


def main(dsn: str, n: int, single: bool = False, batch: int = 1, idle_ms: float = 0.0) -> None:
    with psycopg.connect(dsn, autocommit=True) as c:
        left = (n + 10) * batch
        while left > 0:  # tf_submit_many takes at most 10,000 a call
            c.execute(
                "SELECT count(*) FROM taskforge.tf_submit_many((SELECT jsonb_agg(jsonb_build_object("
                "'task_type', 'noop', 'queue', 'ab')) FROM generate_series(1, %s)))",
                (min(left, 10000),),
            )
            left -= 10000
        row = c.execute("SELECT taskforge.tf_register_worker(name => 'ab', queues => ARRAY['ab'])").fetchone()
        assert row is not None
        worker_id = row[0]
        held: list[tuple[int, int]] = []
        turns: list[float] = []
        for _phase in ("warm-up", "timed"):
            turns = []
            for _ in range(n // 2):
                if idle_ms:
                    time.sleep(idle_ms / 1000.0)
                start = time.perf_counter()
                if single:
                    single_turn(c, worker_id)
                else:
                    params = (worker_id, [h[0] for h in held], [h[1] for h in held], ["succeeded"] * len(held), batch)
                    rows = c.execute(TURN, params, prepare=True).fetchall()
                    held = [(r[1], r[2]) for r in rows if r[0] == "claimed"]
                turns.append(time.perf_counter() - start)
        mean, median = statistics.fmean(turns) * 1e6, statistics.median(turns) * 1e6
        print(f"{mean:.1f} us per turn (median {median:.1f} us; {batch} task(s) per turn)")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("dsn")
    parser.add_argument("n", nargs="?", type=int, default=6000, help="turns (half of them warm-up)")
    parser.add_argument("mode", nargs="?", choices=["single"], help="tf_claim + tf_renew + tf_finalize")
    parser.add_argument("--batch", type=int, default=1, help="tasks finalized and claimed per turn")
    parser.add_argument("--idle-ms", type=float, default=0.0, help="sleep before each turn (ms)")
    args = parser.parse_args()
    if args.mode and args.batch != 1:
        parser.error("single takes one task per turn")
    main(args.dsn, args.n, args.mode == "single", args.batch, args.idle_ms)
