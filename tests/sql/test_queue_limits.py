"""Queue concurrency limits under concurrent claimers (tf_set_queue_limit, tf_claim).

Eight connections claim and finish tasks of one queue as fast as they can while a monitor
connection counts the queue's RUNNING tasks in a tight loop. With a limit of 2 the monitor must
never see 3; without a limit the same workload must show more than 2, which proves the monitor
would see a breach. Every test uses its own queue names.
"""

from __future__ import annotations

import psycopg
import pytest

from sqlcore_helpers import claim, invariant_violations, register_worker, run_claimers, submit_many, unique_name

CLAIMERS = 8
TASKS = 120
HOLD_SECONDS = 0.01  # how long a claimer keeps a task RUNNING before finishing it
RUNNING_IN_QUEUE = "SELECT count(*) FROM taskforge.tf_tasks WHERE queue = %s AND state = 'RUNNING'"


def _run_claimers(db_dsn: str, queue: str, max_tasks: int) -> tuple[int, int]:
    """Claim and finish every task of queue from CLAIMERS connections at once (run_claimers).

    Returns (finished, max_running_seen) as the monitor counted the queue's RUNNING tasks."""
    finished, seen = run_claimers(
        db_dsn,
        queue,
        {"running": (RUNNING_IN_QUEUE, (queue,))},
        claimers=CLAIMERS,
        max_tasks=max_tasks,
        hold_seconds=HOLD_SECONDS,
    )
    return finished, seen["running"]


@pytest.mark.parametrize("max_tasks", [1, 3])
def test_a_limited_queue_never_runs_more_than_its_limit(db_dsn, conn, max_tasks):
    queue = unique_name("limitq")
    submit_many(conn, queue, TASKS)
    assert conn.execute("SELECT taskforge.tf_set_queue_limit(%s, 2)", (queue,)).fetchone()[0] is None
    finished, max_running = _run_claimers(db_dsn, queue, max_tasks)
    assert finished == TASKS
    assert 1 <= max_running <= 2
    assert invariant_violations(conn) == []


def test_without_a_limit_the_same_workload_runs_more_than_two(db_dsn, conn):
    """The control: the monitor does see more than two RUNNING when nothing limits the queue."""
    queue = unique_name("nolimitq")
    submit_many(conn, queue, TASKS)
    finished, max_running = _run_claimers(db_dsn, queue, 3)
    assert finished == TASKS
    assert max_running > 2


def test_a_claim_under_repeatable_read_skips_limited_queues(db_dsn, conn):
    """An older snapshot could miss another claimer's commit, so such a claim takes nothing there."""
    limited, free = unique_name("rrlimited"), unique_name("rrfree")
    submit_many(conn, limited, 3)
    submit_many(conn, free, 1)
    conn.execute("SELECT taskforge.tf_set_queue_limit(%s, 5)", (limited,))
    with psycopg.connect(db_dsn) as c:
        c.isolation_level = psycopg.IsolationLevel.REPEATABLE_READ
        worker_id = register_worker(c, "rr-claimer", [limited, free])
        c.commit()
        rows = claim(c, worker_id, [limited, free], max_tasks=10)
        c.commit()
    assert [row[4] for row in rows] == [free]
    rows_rc = claim(conn, worker_id, [limited], max_tasks=10)
    assert len(rows_rc) == 3
