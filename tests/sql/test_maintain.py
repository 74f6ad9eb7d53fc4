"""CALL taskforge.tf_maintain(): the scheduler's passes inside the database (for pg_cron).

A procedure that commits between its batches can only be CALLed on its own (autocommit), so these
tests are Python, each on a fresh migrated database of its own (tf_maintain sweeps the whole
database: recovery, promotion, periodic ticks and, with retain_days, pruning). pg_cron itself:
tests/processes/test_maintain_pg_cron.py.
"""

from __future__ import annotations

import time

import psycopg
import pytest

from taskforge import database

from sqlcore_helpers import claimed_by_a_vanished_worker

SCHEDULER_ROW = "SELECT name, liveness FROM taskforge.tf_schedulers WHERE name = 'tf_maintain'"


@pytest.fixture()
def maintained(fresh_database):
    dsn = fresh_database("taskforge_maintain")
    database.migrate(dsn)
    with psycopg.connect(dsn, autocommit=True) as conn:
        yield dsn, conn


def state(conn: psycopg.Connection, task_id: int) -> str:
    return conn.execute("SELECT state FROM taskforge.tasks WHERE task_id = %s", (task_id,)).fetchone()[0]


@pytest.mark.parametrize(
    ("arguments", "column", "message"),
    [
        ("run_seconds => -1", "run_seconds", "run_seconds: must be at least 0 and at most 3600 seconds, got -1"),
        ("interval_seconds => 'NaN'", "interval_seconds", "interval_seconds: must be at least 0.01"),
        ("retain_days => 'Infinity'", "retain_days", "retain_days: must be at least 0 and at most 36500 days"),
        ("max_tasks => 1.5", "max_tasks", "max_tasks: must be a whole number between 1 and 100000, got 1.5"),
        ("max_tasks => NULL", "max_tasks", "max_tasks: must not be NULL"),
        ("run_seconds => NULL", "run_seconds", "run_seconds: must not be NULL"),
    ],
)
def test_a_bad_argument_is_tf400_naming_it_and_writes_nothing(maintained, arguments, column, message):
    _, conn = maintained
    task_id = claimed_by_a_vanished_worker(conn, "bad_args", lease_seconds=0.05)
    time.sleep(0.1)
    with pytest.raises(psycopg.Error) as caught:
        conn.execute(f"CALL taskforge.tf_maintain({arguments})")
    assert caught.value.sqlstate == "TF400" and caught.value.diag.column_name == column
    assert message in str(caught.value)
    assert conn.execute(SCHEDULER_ROW).fetchall() == []
    assert state(conn, task_id) == "RUNNING"  # nothing recovered either


def test_one_pass_recovers_promotes_enqueues_prunes_and_beats(maintained):
    _, conn = maintained
    expired = claimed_by_a_vanished_worker(conn, "one_pass", lease_seconds=0.05)
    conn.execute(
        "SELECT taskforge.tf_schedule_periodic(name => 'every-minute', cron => '* * * * *', task_type => 'noop')"
    )
    done = conn.execute("SELECT task_id FROM taskforge.tf_submit('noop', queue => 'old')").fetchone()[0]
    conn.execute("SELECT taskforge.tf_cancel(task_id => %s)", (done,))
    time.sleep(0.1)
    row = conn.execute("CALL taskforge.tf_maintain(retain_days => 0)").fetchone()
    recovered, promoted, enqueued, pruned = row
    assert recovered == 1 and promoted == 0 and pruned >= 1
    assert state(conn, expired) == "QUEUED"
    assert conn.execute("SELECT count(*) FROM taskforge.tasks WHERE task_id = %s", (done,)).fetchone() == (0,)
    assert conn.execute(SCHEDULER_ROW).fetchall() == [("tf_maintain", "alive")]
    # The periodic schedule's due tick, if its first one has come (it fires on the next minute).
    ticks = conn.execute(
        "SELECT count(*) FROM taskforge.tasks WHERE idempotency_key LIKE 'periodic:every-minute:%'"
    ).fetchone()[0]
    assert ticks == enqueued
    # A second call is the same scheduler (one row per database), still alive.
    conn.execute("CALL taskforge.tf_maintain()")
    assert conn.execute(SCHEDULER_ROW).fetchall() == [("tf_maintain", "alive")]


def test_a_lease_that_expires_while_it_runs_is_recovered_within_its_interval(maintained):
    dsn, conn = maintained
    import threading

    def run() -> None:
        with psycopg.connect(dsn, autocommit=True) as c:
            c.execute("CALL taskforge.tf_maintain(run_seconds => 3, interval_seconds => 0.2)")

    maintainer = threading.Thread(target=run)
    maintainer.start()
    time.sleep(0.5)
    task_id = claimed_by_a_vanished_worker(conn, "while_running", lease_seconds=0.5)
    maintainer.join(10)
    assert not maintainer.is_alive()
    assert state(conn, task_id) == "QUEUED"
    lag = conn.execute(
        "SELECT extract(epoch FROM finished_at - lease_expires_at) FROM taskforge.attempts WHERE task_id = %s",
        (task_id,),
    ).fetchone()[0]
    assert 0 <= float(lag) < 1.0, lag  # one interval (0.2 s) plus a pass, on a busy machine


def test_inside_a_transaction_block_it_refuses_to_commit_and_leaves_nothing(maintained):
    dsn, _ = maintained
    with psycopg.connect(dsn) as conn:  # not autocommit: a transaction block
        with pytest.raises(psycopg.Error) as caught:
            conn.execute("CALL taskforge.tf_maintain()")
        assert caught.value.sqlstate == "2D000"
        conn.rollback()
        assert conn.execute(SCHEDULER_ROW).fetchall() == []


def test_only_the_scheduler_role_may_call_it(login_role, maintained):
    dsn, _ = maintained
    scheduler, client = login_role("taskforge_scheduler"), login_role("taskforge_client")
    from psycopg.conninfo import make_conninfo

    with psycopg.connect(make_conninfo(dsn, user=scheduler), autocommit=True) as c:
        assert c.execute("CALL taskforge.tf_maintain()").fetchone() == (0, 0, 0, 0)
    with (
        psycopg.connect(make_conninfo(dsn, user=client), autocommit=True) as c,
        pytest.raises(psycopg.errors.InsufficientPrivilege),
    ):
        c.execute("CALL taskforge.tf_maintain()")
