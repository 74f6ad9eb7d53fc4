"""A wake-up can be lost, work cannot (docs/guarantees.md): a task that becomes due with no
NOTIFY at all (submitted with a schedule a moment ahead: only a task due at submit notifies) is
claimed by the worker's polling, after its scheduled_at, within a poll interval or two."""

from __future__ import annotations

import pytest

from itest_support import task, wait_for, wait_registered

pytestmark = pytest.mark.timeout(120)


def test_a_task_that_becomes_due_without_a_notify_is_claimed_by_polling(spawn, conn, queue):
    worker = spawn.worker("--queue", queue, "--poll-seconds", "1", name=f"{queue}-poller")
    wait_registered(conn, worker)
    task_id = conn.execute(
        "SELECT task_id FROM taskforge.tf_submit(task_type => 'noop', queue => %s, "
        "scheduled_at => clock_timestamp() + interval '1.5 seconds')",
        (queue,),
    ).fetchone()[0]
    wait_for(lambda: task(conn, task_id)["state"] == "SUCCEEDED", 30, message="the delayed task to run", procs=[worker])
    started, scheduled = conn.execute(
        "SELECT a.started_at, t.scheduled_at FROM taskforge.attempts a JOIN taskforge.tasks t USING (task_id) "
        "WHERE task_id = %s",
        (task_id,),
    ).fetchone()
    lag = (started - scheduled).total_seconds()
    assert 0 <= lag < 10, lag  # after it became due, and by polling (there was no NOTIFY to wait for)
