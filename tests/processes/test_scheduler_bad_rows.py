"""A row a maintenance sweep cannot process never stops a scheduler process (issue 17).

A trigger a table owner wrote refuses the update of one task whose lease expired with a
constraint error (23514, the error that made a scheduler exit with code 4 before, after which no
expired lease at all was recovered); the other expired leases must still be recovered, the
scheduler must keep running, list the task in tf_maintenance_errors and log it once (not on every
pass), and recover it once the row is repaired.
"""

from __future__ import annotations

import signal
import time

import psycopg
import pytest

from taskforge import database as tfdb

from itest_support import LONG, states, submit, wait_for, wait_log

pytestmark = pytest.mark.timeout(300)

REFUSE_ONE_TASK = """
CREATE FUNCTION public.itest_refuse_task() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF new.task_id = {task_id} THEN
        RAISE EXCEPTION USING ERRCODE = 'check_violation',
            MESSAGE = format('itest: task %s may not change', new.task_id);
    END IF;
    RETURN new;
END $$;
CREATE TRIGGER itest_refuse_task BEFORE UPDATE ON taskforge.tasks FOR EACH ROW
    EXECUTE FUNCTION public.itest_refuse_task();
"""


def maintenance_errors(c: psycopg.Connection) -> list[tuple]:
    return c.execute(
        "SELECT sweep, task_id, sqlstate, message, failures FROM taskforge.tf_maintenance_errors ORDER BY task_id"
    ).fetchall()


def test_one_bad_row_does_not_stop_recovery_of_the_others(fresh_database, spawn_factory):
    dsn = fresh_database("taskforge_itest")
    tfdb.migrate(dsn)
    spawn = spawn_factory(dsn)
    with psycopg.connect(dsn, autocommit=True) as c:
        task_ids = [submit(c, "noop", {"n": n}, queue="bad-row") for n in range(4)]
        worker_id = c.execute("SELECT taskforge.tf_register_worker(name => 'gone-w')").fetchone()[0]
        claimed = c.execute(
            "SELECT task_id FROM taskforge.tf_claim(worker_id => %s, queues => '{bad-row}', max_tasks => 4)",
            (worker_id,),
        ).fetchall()
        assert sorted(r[0] for r in claimed) == task_ids
        # Every lease expired; the bad task's first, so that it heads every batch by lease order.
        bad, good = task_ids[0], task_ids[1:]
        c.execute(
            "UPDATE taskforge.tasks SET lease_expires_at = clock_timestamp() - make_interval(secs => "
            "CASE WHEN task_id = %s THEN 60 ELSE 30 END) WHERE task_id = ANY(%s)",
            (bad, task_ids),
        )
        c.execute(
            "UPDATE taskforge.attempts a SET lease_expires_at = t.lease_expires_at FROM taskforge.tasks t "
            "WHERE a.task_id = t.task_id AND t.task_id = ANY(%s)",
            (task_ids,),
        )
        c.execute(REFUSE_ONE_TASK.format(task_id=bad))

        # A batch of 2 starts with the bad task: its fallback and the next passes recover the rest.
        scheduler = spawn.scheduler("--max-interval-seconds", "0.1", "--batch-size", "2")
        wait_for(
            lambda: set(states(c, good).values()) == {"QUEUED"},
            message="the other expired leases to be recovered",
            procs=[scheduler],
        )
        assert states(c, [bad]) == {bad: "RUNNING"}
        assert maintenance_errors(c) == [("tf_recover", bad, "23514", f"itest: task {bad} may not change", 1)]
        line = f"tf_recover skipped task {bad}: itest: task {bad} may not change (SQLSTATE 23514)"
        wait_log(scheduler, line)
        # Some 20 passes later (0.1 s apart): still running, the bad task not retried before its
        # retry_after, and logged once, not on every pass.
        time.sleep(2.0)
        assert scheduler.alive(), scheduler.log()[-4000:]
        assert maintenance_errors(c)[0][4] == 1
        assert scheduler.log().count(line) == 1, scheduler.log()[-4000:]

        # Repaired, and its retry time come (simulated): recovered, its entry gone.
        c.execute("DROP TRIGGER itest_refuse_task ON taskforge.tasks")
        c.execute(
            "UPDATE taskforge.maintenance_errors SET first_seen_at = first_seen_at - interval '2 hours', "
            "last_seen_at = last_seen_at - interval '2 hours', retry_after = clock_timestamp() - interval '1 second'"
        )
        wait_for(
            lambda: states(c, [bad]) == {bad: "QUEUED"} and not maintenance_errors(c),
            timeout=LONG,
            message="the repaired task to be recovered and its entry cleared",
            procs=[scheduler],
        )
        assert c.execute("SELECT count(*) FROM taskforge.tf_invariant_violations").fetchone()[0] == 0
    scheduler.signal(signal.SIGTERM)
    assert scheduler.wait(30) == 0, scheduler.log()[-4000:]
