"""A poison payload costs one attempt, never a worker (issue 10, item 1).

The payload of the issue, an object around 1000 nested arrays, is deeper than Python's json
decoder can go (its recursion limit, about 1000 levels). ``tf_submit`` refuses it (TF400, at most
100 levels); a row written by hand as the table owner still holds it, and a worker that claims
it must fail that attempt with the real cause stored and go on with the other work.
"""

from __future__ import annotations

import psycopg
import pytest

from itest_support import LONG, all_in, wait_for, wait_registered

pytestmark = pytest.mark.timeout(300)

#: The issue's payload: {"a": [[[ ... 1000 ... ]]]}, 1001 levels deep.
POISON = '{"a":' + "[" * 1000 + "]" * 1000 + "}"
ORDINARY = 100


def insert_as_owner(conn: psycopg.Connection, task_type: str, payload: str, queue: str) -> int:
    """Insert a QUEUED task straight into taskforge.tasks as the table owner: no tf_submit check."""
    with conn.transaction():
        conn.execute("SET LOCAL ROLE taskforge_owner")
        return conn.execute(
            "INSERT INTO taskforge.tasks (task_type, payload, queue, priority, max_attempts, state, scheduled_at, "
            "created_at, updated_at) VALUES (%s, %s::jsonb, %s, 0, 3, 'QUEUED', clock_timestamp(), "
            "clock_timestamp(), clock_timestamp()) RETURNING task_id",
            (task_type, payload, queue),
        ).fetchone()[0]


def test_a_poison_payload_costs_one_attempt_and_no_worker(spawn, conn, queue):
    # Through the API it is refused, naming the argument, and nothing is written.
    with pytest.raises(psycopg.Error) as refused:
        conn.execute(
            "SELECT * FROM taskforge.tf_submit(task_type => 'echo', payload => %s::jsonb, queue => %s)", (POISON, queue)
        )
    assert refused.value.sqlstate == "TF400"
    assert str(refused.value).startswith("payload: must be nested at most 100 levels deep")

    half = ORDINARY // 2
    ordinary = [
        conn.execute("SELECT task_id FROM taskforge.tf_submit(task_type => 'noop', queue => %s)", (queue,)).fetchone()[
            0
        ]
        for _ in range(half)
    ]
    poison = insert_as_owner(conn, "echo", POISON, queue)
    ordinary += [
        conn.execute("SELECT task_id FROM taskforge.tf_submit(task_type => 'noop', queue => %s)", (queue,)).fetchone()[
            0
        ]
        for _ in range(ORDINARY - half)
    ]

    # One worker runs handlers in its dispatcher thread (concurrency 1), the other in slots.
    workers = [
        spawn.worker("--queue", queue, "--concurrency", "1", name=f"{queue}-inline"),
        spawn.worker("--queue", queue, "--concurrency", "4", name=f"{queue}-slots"),
    ]
    for worker in workers:
        wait_registered(conn, worker)
    everything = [*ordinary, poison]
    wait_for(
        lambda: all_in(conn, everything, {"SUCCEEDED", "FAILED"}),
        LONG,
        message="every task to end",
        procs=workers,
    )

    states = dict(
        conn.execute("SELECT task_id, state FROM taskforge.tasks WHERE task_id = ANY(%s)", (everything,)).fetchall()
    )
    assert [task_id for task_id in ordinary if states[task_id] != "SUCCEEDED"] == []
    # Not the payload column: this test's own connection would fail to decode it.
    task_state, error, attempt_rows = conn.execute(
        "SELECT t.state, t.last_error, (SELECT array_agg(a.state || '/' || a.outcome ORDER BY a.attempt_number) "
        "FROM taskforge.attempts a WHERE a.task_id = t.task_id) FROM taskforge.tasks t WHERE t.task_id = %s",
        (poison,),
    ).fetchone()
    assert task_state == "FAILED"
    assert attempt_rows == ["FAILED/failed"]  # one attempt, ended by the worker, not by lease expiry
    assert error["type"] == "taskforge.PayloadError"
    assert "RecursionError" in error["message"] and "payload could not be decoded" in error["message"]

    assert [w.name for w in workers if not w.alive()] == []
    liveness = dict(
        conn.execute(
            "SELECT name, liveness FROM taskforge.tf_workers WHERE name = ANY(%s)", ([w.name for w in workers],)
        ).fetchall()
    )
    assert liveness == {w.name: "alive" for w in workers}
    assert conn.execute("SELECT count(*) FROM taskforge.tf_invariant_violations").fetchone()[0] == 0
    for worker in workers:
        assert "internal error" not in worker.log()
