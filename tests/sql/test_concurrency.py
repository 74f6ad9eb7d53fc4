"""Concurrency of the SQL core: what one pgTAP session cannot show.

Several psycopg connections (one per thread) call the tf_* functions at the same moment
(threading.Barrier) against the session's test database. Every test uses its own queue names,
so tasks left by other tests never matter. tf_recover and tf_promote act on the whole database;
assertions look only at this test's tasks and queues.
"""

from __future__ import annotations

import functools
import threading
from concurrent.futures import ThreadPoolExecutor

import psycopg
import pytest

from sqlcore_helpers import (
    Listener,
    backend_waits_on_lock,
    claim,
    finalize,
    invariant_violations,
    promote,
    recover,
    register_worker,
    submit,
    submit_many,
    unique_name,
    wait_until,
)

BARRIER_TIMEOUT = 60  # seconds; generous for a loaded 2-core machine


# --- parallel claimers ------------------------------------------------------------------------------


@pytest.mark.parametrize("max_tasks", [1, 7])
def test_parallel_claimers_never_share_a_task(db_dsn, conn, max_tasks):
    queue = unique_name("claimq")
    n_tasks, n_threads = 2000, 8
    task_ids = submit_many(conn, queue, n_tasks)
    assert len(set(task_ids)) == n_tasks

    barrier = threading.Barrier(n_threads)

    def claimer(index: int):
        """Claim until a call returns nothing; then finalize what was claimed. Returns
        (worker_id, [(task_id, attempt_number)], [rows per call], [finalize results])."""
        with psycopg.connect(db_dsn, autocommit=True) as c:
            worker_id = register_worker(c, f"claimer-{index}", [queue])
            taken, sizes = [], []
            barrier.wait(timeout=BARRIER_TIMEOUT)
            while True:
                rows = claim(c, worker_id, [queue], lease_seconds=600, max_tasks=max_tasks)
                sizes.append(len(rows))
                if not rows:
                    break
                taken.extend((row[0], row[1]) for row in rows)
            results = [finalize(c, task_id, worker_id, number, "succeeded") for task_id, number in taken]
            return worker_id, taken, sizes, results

    with ThreadPoolExecutor(n_threads) as pool:
        outcomes = [f.result(timeout=300) for f in [pool.submit(claimer, i) for i in range(n_threads)]]

    claimed = [task_id for _, taken, _, _ in outcomes for task_id, _ in taken]
    assert len(claimed) == n_tasks, f"claimed {len(claimed)} of {n_tasks}"
    assert sorted(claimed) == sorted(task_ids), "some task was claimed twice or never"
    assert all(number == 1 for _, taken, _, _ in outcomes for _, number in taken)
    assert max(size for _, _, sizes, _ in outcomes for size in sizes) <= max_tasks
    assert sum(1 for _, taken, _, _ in outcomes if taken) >= 2, "the claimers did not overlap at all"
    assert all(r == (True, "SUCCEEDED", None) for _, _, _, results in outcomes for r in results)

    owner_of = {task_id: str(worker_id) for worker_id, taken, _, _ in outcomes for task_id, _ in taken}
    rows = conn.execute(
        """SELECT a.task_id, count(*), min(a.attempt_number), max(a.attempt_number),
                  min(a.worker_id::text), max(a.worker_id::text), min(a.state), max(t.state)
             FROM taskforge.attempts a JOIN taskforge.tasks t USING (task_id)
            WHERE t.queue = %s GROUP BY a.task_id""",
        (queue,),
    ).fetchall()
    assert len(rows) == n_tasks
    for task_id, count, lo, hi, w_lo, w_hi, attempt_state, task_state in rows:
        assert (count, lo, hi) == (1, 1, 1), f"task {task_id} has attempts {count} ({lo}..{hi})"
        assert w_lo == w_hi == owner_of[task_id]
        assert (attempt_state, task_state) == ("SUCCEEDED", "SUCCEEDED")
    assert invariant_violations(conn) == []


# --- idempotency under concurrency ------------------------------------------------------------------


def test_simultaneous_submits_with_one_key_make_one_task(db_dsn, conn):
    queue, key = unique_name("idemq"), unique_name("key")
    n_threads = 16
    barrier = threading.Barrier(n_threads)

    def submitter(_: int):
        with psycopg.connect(db_dsn, autocommit=True) as c:
            barrier.wait(timeout=BARRIER_TIMEOUT)
            return submit(c, queue, "echo", {"n": 1}, priority=3, idempotency_key=key)

    with ThreadPoolExecutor(n_threads) as pool:
        results = [f.result(timeout=120) for f in [pool.submit(submitter, i) for i in range(n_threads)]]

    ids = {task_id for task_id, _, _ in results}
    assert len(ids) == 1, f"one key produced several tasks: {results}"
    assert sum(1 for _, _, created in results if created) == 1
    assert sum(1 for _, _, created in results if not created) == n_threads - 1
    assert conn.execute("SELECT count(*) FROM taskforge.tasks WHERE idempotency_key = %s", (key,)).fetchone()[0] == 1


def _blocked_submit(db_dsn, observer, holder_action, **request):
    """Run a submit on a second connection while the holder's transaction is open; wait until it
    blocks on the holder's lock, run holder_action(), and return the submit's result (or the
    exception it raised)."""
    with psycopg.connect(db_dsn, autocommit=True) as b, ThreadPoolExecutor(1) as pool:
        pid = b.info.backend_pid

        def call():
            try:
                return submit(b, **request)
            except psycopg.Error as exc:
                return exc

        future = pool.submit(call)
        wait_until(
            lambda: backend_waits_on_lock(observer, pid) or future.done(),
            timeout=60,
            message="the second submitter to block on the first one's key",
        )
        assert not future.done(), f"the second submit did not wait for the open transaction: {future.result()}"
        holder_action()
        return future.result(timeout=60)


def test_key_is_free_again_when_the_first_submitter_rolls_back(db_dsn, conn):
    queue, key = unique_name("idemq"), unique_name("key")
    with psycopg.connect(db_dsn) as a:  # not autocommit: the transaction stays open
        a_id, _, a_created = submit(a, queue, idempotency_key=key)
        assert a_created
        b_id, b_state, b_created = _blocked_submit(db_dsn, conn, a.rollback, queue=queue, idempotency_key=key)
    assert (b_state, b_created) == ("QUEUED", True)
    assert b_id != a_id
    assert submit(conn, queue, idempotency_key=key) == (b_id, "QUEUED", False)
    assert conn.execute("SELECT count(*) FROM taskforge.tasks WHERE idempotency_key = %s", (key,)).fetchone()[0] == 1


def test_waiting_submitter_gets_the_committed_task(db_dsn, conn):
    queue, key = unique_name("idemq"), unique_name("key")
    with psycopg.connect(db_dsn) as a:
        a_id, _, a_created = submit(a, queue, idempotency_key=key)
        assert a_created
        result = _blocked_submit(db_dsn, conn, a.commit, queue=queue, idempotency_key=key)
    assert result == (a_id, "QUEUED", False)


def test_waiting_submitter_with_a_different_request_gets_tf409(db_dsn, conn):
    queue, key = unique_name("idemq"), unique_name("key")
    with psycopg.connect(db_dsn) as a:
        a_id, _, _ = submit(a, queue, payload={"v": 1}, idempotency_key=key)
        result = _blocked_submit(db_dsn, conn, a.commit, queue=queue, payload={"v": 2}, idempotency_key=key)
    assert isinstance(result, psycopg.Error), f"expected TF409, got {result}"
    assert result.sqlstate == "TF409"
    assert str(a_id) in result.diag.message_primary
    assert conn.execute("SELECT count(*) FROM taskforge.tasks WHERE idempotency_key = %s", (key,)).fetchone()[0] == 1


# --- recover racing finalize ------------------------------------------------------------------------

SET_LEASE = """
WITH t AS (
    UPDATE taskforge.tasks
       SET lease_expires_at = clock_timestamp() + make_interval(secs => %(offset)s)
     WHERE task_id = %(task_id)s
 RETURNING task_id, attempt_count, lease_expires_at
)
UPDATE taskforge.attempts a
   SET lease_expires_at = t.lease_expires_at
  FROM t
 WHERE a.task_id = t.task_id AND a.attempt_number = t.attempt_count
RETURNING a.lease_expires_at
"""

TASK_ROW = "SELECT to_jsonb(t) FROM taskforge.tasks t WHERE t.task_id = %s"
ATTEMPT_ROWS = "SELECT to_jsonb(a) FROM taskforge.attempts a WHERE a.task_id = %s ORDER BY a.attempt_number"


def _lease_has_expired(c, lease) -> bool:
    return c.execute("SELECT clock_timestamp() >= %s", (lease,)).fetchone()[0]


def test_recover_racing_finalize_gives_each_attempt_one_final_state(db_dsn, conn):
    queue = unique_name("raceq")
    worker_id = register_worker(conn, "race-worker", [queue])
    # Lease deadlines around the moment both calls start: already expired, exactly now, a few ms on.
    offsets = [-0.002, 0.0, 0.0005, 0.001, 0.002, 0.003, 0.005, 0.008]
    rounds = 150
    outcomes = {
        "finalize won": 0,
        "recover won, finalize saw not_running": 0,
        "recover won, finalize saw lease_expired": 0,
        "both missed, recovered later": 0,
    }

    with (
        psycopg.connect(db_dsn, autocommit=True) as fin_conn,
        psycopg.connect(db_dsn, autocommit=True) as rec_conn,
        ThreadPoolExecutor(2) as pool,
    ):
        for i in range(rounds):
            round_queue = f"{queue}_{i}"  # a recovered task of an earlier round stays QUEUED
            task_id, _, _ = submit(conn, round_queue)
            (row,) = claim(conn, worker_id, [round_queue], lease_seconds=60, max_tasks=1)
            assert row[0] == task_id and row[1] == 1
            barrier = threading.Barrier(2)

            def do_finalize(barrier: threading.Barrier, task_id: int, i: int):
                barrier.wait(timeout=BARRIER_TIMEOUT)
                return finalize(fin_conn, task_id, worker_id, 1, "succeeded", result={"round": i})

            def do_recover(barrier: threading.Barrier):
                barrier.wait(timeout=BARRIER_TIMEOUT)
                return recover(rec_conn)

            (lease,) = conn.execute(SET_LEASE, {"offset": offsets[i % len(offsets)], "task_id": task_id}).fetchone()
            f_fin, f_rec = pool.submit(do_finalize, barrier, task_id, i), pool.submit(do_recover, barrier)
            accepted, fin_state, reason = f_fin.result(timeout=60)
            f_rec.result(timeout=60)

            state = conn.execute("SELECT state FROM taskforge.tasks WHERE task_id = %s", (task_id,)).fetchone()[0]
            if state == "RUNNING":
                # The lease ran out between the two calls: recover saw it valid, finalize expired.
                assert not accepted and reason == "lease_expired"
                wait_until(functools.partial(_lease_has_expired, conn, lease), message="the lease to expire")
                recover(conn)
                outcomes["both missed, recovered later"] += 1

            task = conn.execute(TASK_ROW, (task_id,)).fetchone()[0]
            attempts = [r[0] for r in conn.execute(ATTEMPT_ROWS, (task_id,)).fetchall()]
            assert len(attempts) == 1, attempts
            attempt = attempts[0]
            if accepted:
                assert reason is None and fin_state == "SUCCEEDED"
                assert (attempt["state"], attempt["outcome"]) == ("SUCCEEDED", "succeeded")
                assert attempt["result"] == {"round": i}
                assert (task["state"], task["result"]) == ("SUCCEEDED", {"round": i})
                outcomes["finalize won"] += 1
            else:
                assert reason in ("not_running", "lease_expired"), reason
                assert fin_state == ("QUEUED" if reason == "not_running" else "RUNNING")
                assert (attempt["state"], attempt["outcome"]) == ("ABANDONED", "lease_expired")
                assert attempt["result"] is None
                assert attempt["finished_at"] >= attempt["lease_expires_at"]
                assert task["state"] == "QUEUED" and task["attempt_count"] == 1
                assert task["result"] is None and task["owner_worker_id"] is None
                if state != "RUNNING":
                    outcomes[f"recover won, finalize saw {reason}"] += 1
            assert invariant_violations(conn) == [], f"round {i}: {outcomes}"

    assert sum(outcomes.values()) == rounds, outcomes
    print(f"recover/finalize race outcomes over {rounds} rounds: {outcomes}")


@pytest.mark.parametrize("case", ["lease_expired", "stale_attempt", "not_owner", "not_running"])
def test_refused_finalize_changes_nothing(conn, case):
    queue = unique_name("refq")
    worker_id = register_worker(conn, "refused-worker", [queue])
    other_worker = register_worker(conn, "other-worker", [queue])
    task_id, _, _ = submit(conn, queue)
    (row,) = claim(conn, worker_id, [queue], lease_seconds=60)
    call = {"worker_id": worker_id, "attempt_number": row[1]}
    if case == "lease_expired":
        conn.execute(SET_LEASE, {"offset": -1.0, "task_id": task_id})
    elif case == "stale_attempt":
        call["attempt_number"] = row[1] + 1
    elif case == "not_owner":
        call["worker_id"] = other_worker
    else:
        assert finalize(conn, task_id, worker_id, row[1], "retryable")[0]

    before = (conn.execute(TASK_ROW, (task_id,)).fetchone(), conn.execute(ATTEMPT_ROWS, (task_id,)).fetchall())
    for outcome in ("succeeded", "failed", "retryable", "cancelled"):
        accepted, state, reason = finalize(
            conn,
            task_id,
            call["worker_id"],
            call["attempt_number"],
            outcome,
            result={"x": 1},
            error={"message": "late"},
        )
        assert (accepted, reason) == (False, case)
        assert state == before[0][0]["state"]
    after = (conn.execute(TASK_ROW, (task_id,)).fetchone(), conn.execute(ATTEMPT_ROWS, (task_id,)).fetchall())
    assert after == before

    if case == "lease_expired":  # leave nothing stranded: the scheduler's job
        recover(conn)
    elif case != "not_running":
        assert finalize(conn, task_id, worker_id, row[1], "succeeded")[0]


# --- NOTIFY -----------------------------------------------------------------------------------------


@pytest.fixture()
def listener(db_dsn):
    lst = Listener(db_dsn)
    yield lst
    lst.close()


def test_submit_notifies_on_commit_when_due(db_dsn, conn, listener):
    due, future, replay, rolled_back = (unique_name("nq") for _ in range(4))
    listener.drain()

    with psycopg.connect(db_dsn) as tx:  # the notification is sent at commit, not before
        submit(tx, due)
        assert due not in listener.drain()
        tx.commit()
    received = listener.drain()
    assert received.count(due) == 1

    submit(conn, future, scheduled_at=conn.execute("SELECT clock_timestamp() + interval '1 hour'").fetchone()[0])
    key = unique_name("key")
    assert submit(conn, replay, idempotency_key=key)[2]
    with psycopg.connect(db_dsn) as tx:
        submit(tx, rolled_back)
        tx.rollback()
    received = listener.drain()
    assert future not in received
    assert rolled_back not in received
    assert received.count(replay) == 1

    assert submit(conn, replay, idempotency_key=key)[2] is False  # a replay creates nothing
    assert replay not in listener.drain()


def test_promote_and_recover_notify_once_per_queue_claim_and_finalize_never(conn, listener):
    qa, qb, qc = unique_name("nqa"), unique_name("nqb"), unique_name("nqc")
    worker_id = register_worker(conn, "notify-worker", [qa, qb, qc])
    for queue in (qa, qa, qb):
        submit(conn, queue)
    listener.drain()

    # Claim and finalize: no notification.
    rows = claim(conn, worker_id, [qa, qb], max_tasks=10)
    assert len(rows) == 3
    for row in rows:
        assert finalize(conn, row[0], worker_id, row[1], "retryable")[:2] == (True, "RETRYING")
    received = listener.drain()
    assert qa not in received and qb not in received

    # Promote: one notification per queue that received tasks.
    ids = [row[0] for row in rows]
    conn.execute(
        "UPDATE taskforge.tasks SET scheduled_at = clock_timestamp() - interval '1 second' WHERE task_id = ANY(%s)",
        (ids,),
    )
    promoted, _ = promote(conn)
    assert promoted >= 3
    received = listener.drain()
    assert (received.count(qa), received.count(qb)) == (1, 1), received
    assert (
        conn.execute(
            "SELECT count(*) FROM taskforge.tasks WHERE task_id = ANY(%s) AND state = 'QUEUED'", (ids,)
        ).fetchone()[0]
        == 3
    )

    # Recover: one notification per queue that got tasks back; none for a queue whose only
    # task failed (budget spent), and none from the claim.
    submit(conn, qc, max_attempts=1)
    rows = claim(conn, worker_id, [qa, qb, qc], lease_seconds=0.05, max_tasks=10)
    assert len(rows) == 4
    lease = max(row[7] for row in rows)
    assert qa not in listener.drain()
    wait_until(lambda: _lease_has_expired(conn, lease), message="the leases to expire")
    recovered, failed, _ = recover(conn)
    assert recovered >= 3 and failed >= 1
    received = listener.drain()
    assert (received.count(qa), received.count(qb), received.count(qc)) == (1, 1, 0), received

    # Leave the tasks finished.
    rows = claim(conn, worker_id, [qa, qb], max_tasks=10)
    assert len(rows) == 3
    for row in rows:
        assert finalize(conn, row[0], worker_id, row[1], "succeeded")[0]
    assert qa not in listener.drain()


# --- a lock wait that outlives the lease -----------------------------------------------------------


@pytest.mark.parametrize("call", ["renew", "finalize"])
def test_guard_uses_the_time_after_the_lock_wait(db_dsn, conn, call):
    """tf_renew/tf_finalize that wait on the task's row lock past the lease must see the lease
    as expired: the guard reads the clock after the lock is held, not before the wait."""
    queue = unique_name("lockwait")
    worker_id = register_worker(conn)
    submit(conn, queue)
    ((task_id, attempt, *_),) = claim(conn, worker_id, [queue], lease_seconds=1.5)

    holder = psycopg.connect(db_dsn)  # not autocommit: holds the row lock until rollback
    caller = psycopg.connect(db_dsn, autocommit=True)
    try:
        holder.execute("SELECT 1 FROM taskforge.tasks WHERE task_id = %s FOR UPDATE", (task_id,))
        caller_pid = caller.info.backend_pid
        result: dict = {}

        def run():
            if call == "renew":
                result["row"] = caller.execute(
                    "SELECT renewed, lease_expires_at FROM taskforge.tf_renew(task_id => %s, worker_id => %s, "
                    "attempt_number => %s, lease_seconds => 30)",
                    (task_id, worker_id, attempt),
                ).fetchone()
            else:
                result["row"] = finalize(caller, task_id, worker_id, attempt, "succeeded", {"late": True})

        thread = threading.Thread(target=run)
        thread.start()
        wait_until(lambda: backend_waits_on_lock(conn, caller_pid), message="the call to wait on the row lock")
        # Hold the lock until the lease has expired by the database clock.
        wait_until(
            lambda: conn.execute(
                "SELECT lease_expires_at < clock_timestamp() FROM taskforge.tasks WHERE task_id = %s", (task_id,)
            ).fetchone()[0],
            timeout=30,
            message="the lease to expire",
        )
        holder.rollback()
        thread.join(timeout=30)
        assert not thread.is_alive()
    finally:
        holder.close()
        caller.close()

    if call == "renew":
        assert result["row"] == (False, None), "a lease that expired during the lock wait must not be renewed"
    else:
        assert result["row"] == (False, "RUNNING", "lease_expired")
    state, lease = conn.execute(
        "SELECT state, lease_expires_at < clock_timestamp() FROM taskforge.tasks WHERE task_id = %s", (task_id,)
    ).fetchone()
    assert (state, lease) == ("RUNNING", True), "the refused call changed nothing"
    assert recover(conn)[0] >= 1  # the scheduler takes it back, as the contract says
    assert (
        conn.execute(
            "SELECT state FROM taskforge.attempts WHERE task_id = %s AND attempt_number = %s", (task_id, attempt)
        ).fetchone()[0]
        == "ABANDONED"
    )


# --- pruning process records while they are in use -------------------------------------------------

NINE_YEARS = 9 * 365 * 86400.0
PRUNE_WORKERS = "SELECT * FROM taskforge.tf_prune_workers(older_than_seconds => %s)"


def test_prune_workers_skips_rows_in_use_and_never_breaks_a_claim(db_dsn, conn):
    """tf_prune_workers never waits for a process row another transaction holds (SKIP LOCKED):
    a stale worker whose claim is not committed yet (its attempt's foreign-key lock on the worker
    row) is skipped, and once the claim commits its attempt keeps the worker; a scheduler row
    locked elsewhere is skipped and deleted on a later call."""
    queue = unique_name("prunelock")
    worker_id = register_worker(conn, "prune-lock-w", [queue])
    scheduler_id = conn.execute("SELECT gen_random_uuid()").fetchone()[0]
    conn.execute(
        "SELECT taskforge.tf_scheduler_heartbeat(scheduler_id => %s, name => 'prune-lock-s', stopping => true)",
        (scheduler_id,),
    )
    # Simulate time: both last heard of ten years ago (the worker is stale, the scheduler stopped).
    conn.execute(
        "UPDATE taskforge.workers SET started_at = started_at - interval '10 years', "
        "last_heartbeat_at = last_heartbeat_at - interval '10 years' WHERE worker_id = %s",
        (worker_id,),
    )
    conn.execute(
        "UPDATE taskforge.schedulers SET started_at = started_at - interval '10 years', "
        "last_heartbeat_at = last_heartbeat_at - interval '10 years', stopped_at = stopped_at - interval '10 years' "
        "WHERE scheduler_id = %s",
        (scheduler_id,),
    )
    task_id, _, _ = submit(conn, queue)

    def present() -> tuple[bool, bool]:
        return conn.execute(
            "SELECT EXISTS (SELECT 1 FROM taskforge.workers WHERE worker_id = %s), "
            "       EXISTS (SELECT 1 FROM taskforge.schedulers WHERE scheduler_id = %s)",
            (worker_id, scheduler_id),
        ).fetchone()

    holder = psycopg.connect(db_dsn)  # not autocommit: holds its locks until it ends
    pruner = psycopg.connect(db_dsn, autocommit=True)
    try:
        pruner.execute("SET lock_timeout = '2s'")  # a lock wait would fail the call, not hang the test
        assert claim(holder, worker_id, [queue])[0][0] == task_id  # uncommitted: the attempt holds the worker row
        holder.execute("SELECT 1 FROM taskforge.schedulers WHERE scheduler_id = %s FOR UPDATE", (scheduler_id,))
        pruner.execute(PRUNE_WORKERS, (NINE_YEARS,)).fetchone()
        assert present() == (True, True), "rows locked elsewhere are skipped"
        holder.commit()
        pruner.execute(PRUNE_WORKERS, (NINE_YEARS,)).fetchone()
        assert present() == (True, False), "the committed claim's attempt keeps the worker; the scheduler goes"
    finally:
        holder.close()
        pruner.close()
    state, owner = conn.execute(
        "SELECT state, owner_worker_id FROM taskforge.tasks WHERE task_id = %s", (task_id,)
    ).fetchone()
    assert (state, owner) == ("RUNNING", worker_id)
    assert finalize(conn, task_id, worker_id, 1, "succeeded")[0]
    assert invariant_violations(conn) == []
