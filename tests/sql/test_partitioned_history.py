"""The partitioned history: taskforge.tf_partition_history, tf_make_partitions, and tf_prune's drops.

Each test builds a database of its own (the conversion changes the whole schema), with small
ranges (1,000 task ids) so that a few thousand tasks spread over several of them. The function
suites also run on this layout: `make test-partitioned` (conftest.py, TASKFORGE_TEST_LAYOUT).
"""

from __future__ import annotations

import threading
import time

import psycopg
import pytest

from taskforge import database

from sqlcore_helpers import claim, finalize, invariant_violations, register_worker, submit

RANGES = "SELECT partition_no, first_task_id, end_task_id FROM taskforge.history_partitions ORDER BY end_task_id"
SUBMIT_MANY = (
    "SELECT array_agg(task_id ORDER BY task_id) FROM taskforge.tf_submit_many("
    "(SELECT jsonb_agg(jsonb_build_object('task_type', 'noop', 'queue', %(q)s::text))"
    "   FROM generate_series(1, %(n)s::int)))"
)
# Every task and attempt as the views show them, for comparing before and after a conversion.
TASKS = "SELECT * FROM taskforge.tf_tasks ORDER BY task_id"
ATTEMPTS = "SELECT * FROM taskforge.tf_attempts ORDER BY task_id, attempt_number"


@pytest.fixture()
def db(fresh_database):
    dsn = fresh_database("taskforge_partitioned")
    database.migrate(dsn)
    with psycopg.connect(dsn, autocommit=True) as conn:
        yield dsn, conn


def partition(conn: psycopg.Connection, size: int = 1000, ahead: int = 2) -> int:
    return conn.execute("SELECT taskforge.tf_partition_history(%s, %s)", (size, ahead)).fetchone()[0]


def submit_n(conn: psycopg.Connection, queue: str, n: int) -> list[int]:
    return conn.execute(SUBMIT_MANY, {"q": queue, "n": n}).fetchone()[0]


def run_all(conn: psycopg.Connection, queue: str, outcome: str = "succeeded") -> int:
    """Claim and finalize every due task of ``queue`` (100 at a time); returns how many."""
    worker = register_worker(conn, queues=[queue])
    done = 0
    while rows := claim(conn, worker, queues=[queue], max_tasks=100):
        for row in rows:
            assert finalize(conn, row[0], worker, row[1], outcome=outcome)[0]
            done += 1
    return done


def age_finished(conn: psycopg.Connection, task_ids: list[int], seconds: int) -> None:
    """Move the finish (and the attempts' times) of finished tasks ``seconds`` into the past,
    as the table owner: retention's cutoff can then be tested without waiting."""
    with conn.transaction():
        conn.execute("SET LOCAL ROLE taskforge_owner")
        shift = f"{seconds} seconds"
        conn.execute(
            "UPDATE taskforge.attempts SET started_at = started_at - %s::interval, "
            "finished_at = finished_at - %s::interval WHERE task_id = ANY(%s)",
            (shift, shift, task_ids),
        )
        conn.execute(
            "UPDATE taskforge.tasks SET created_at = created_at - %s::interval, "
            "updated_at = updated_at - %s::interval, finished_at = finished_at - %s::interval, "
            "scheduled_at = scheduled_at - %s::interval WHERE task_id = ANY(%s)",
            (shift, shift, shift, shift, task_ids),
        )


def test_conversion_keeps_every_task_attempt_key_and_id(db):
    _, conn = db
    done = submit_n(conn, "conv", 1500)
    assert run_all(conn, "conv") == 1500
    keyed, _, created = submit(conn, "conv_keyed", idempotency_key="k-conv")
    assert created
    waiting = submit_n(conn, "conv_waiting", 20)
    tasks, attempts = conn.execute(TASKS).fetchall(), conn.execute(ATTEMPTS).fetchall()

    assert partition(conn, 1000, 2) == 3
    assert conn.execute("SELECT relkind FROM pg_class WHERE oid = 'taskforge.tasks'::regclass").fetchone()[0] == "p"
    # The old tables are the first range, from the lowest id to the next multiple of 1,000.
    assert conn.execute(RANGES).fetchall() == [(1, None, 2000), (2, 2000, 3000), (3, 3000, 4000)]
    assert conn.execute(TASKS).fetchall() == tasks
    assert conn.execute(ATTEMPTS).fetchall() == attempts
    assert invariant_violations(conn) == []
    # The ids go on where they were; a key is still held by its task.
    assert submit(conn, "conv_after")[0] == waiting[-1] + 1
    assert submit(conn, "conv_keyed", idempotency_key="k-conv")[:3] == (keyed, "QUEUED", False)
    with pytest.raises(psycopg.Error) as caught:
        submit(conn, "conv_keyed", idempotency_key="k-conv", priority=5)
    assert caught.value.sqlstate == "TF409"
    assert done[0] == 1 and run_all(conn, "conv_waiting") == 20


def test_a_second_conversion_or_a_bad_argument_is_refused_and_changes_nothing(db):
    _, conn = db
    for arguments, column in [
        ("999, 2", "tasks_per_partition"),
        ("1000, 0", "partitions_ahead"),
        ("NULL, 2", "tasks_per_partition"),
        ("1000.5, 2", "tasks_per_partition"),
    ]:
        with pytest.raises(psycopg.Error) as caught:
            conn.execute(f"SELECT taskforge.tf_partition_history({arguments})")
        assert caught.value.sqlstate == "TF400" and column in str(caught.value)
    assert conn.execute("SELECT relkind FROM pg_class WHERE oid = 'taskforge.tasks'::regclass").fetchone()[0] == "r"
    assert conn.execute("SELECT count(*) FROM taskforge.history_layout").fetchone()[0] == 0
    partition(conn)
    with pytest.raises(psycopg.Error) as caught:
        partition(conn)
    assert caught.value.sqlstate == "TF409" and "already partitioned" in str(caught.value)


def test_no_caller_role_may_convert(db, login_role):
    dsn, _ = db
    user = login_role("taskforge_scheduler", "taskforge_client", "taskforge_worker")
    with (
        psycopg.connect(dsn, user=user, autocommit=True) as other,
        pytest.raises(psycopg.errors.InsufficientPrivilege),
    ):
        other.execute("SELECT taskforge.tf_partition_history(1000, 2)")


def test_tasks_run_across_ranges_and_each_attempt_lies_in_its_tasks_twin(db):
    _, conn = db
    partition(conn, 1000, 3)
    ids = submit_n(conn, "across", 2500)
    assert ids[0] == 1 and ids[-1] == 2500
    assert run_all(conn, "across") == 2500
    per_range = [
        (
            n,
            conn.execute(
                f"SELECT count(*) FROM taskforge.attempts_p{n} a JOIN taskforge.tasks_p{n} t USING (task_id)"
            ).fetchone()[0],
        )
        for (n,) in conn.execute("SELECT partition_no FROM taskforge.history_partitions ORDER BY 1").fetchall()
    ]
    assert per_range == [(0, 999), (1, 1000), (2, 501), (3, 0)]
    assert invariant_violations(conn) == []
    # Each attempts range refers to its twin tasks range (and to nothing else of tasks).
    assert conn.execute(
        "SELECT conrelid::regclass::text, confrelid::regclass::text FROM pg_constraint "
        "WHERE contype = 'f' AND confrelid IN (SELECT inhrelid FROM pg_inherits "
        "WHERE inhparent = 'taskforge.tasks'::regclass) ORDER BY 1"
    ).fetchall() == [(f"taskforge.attempts_p{n}", f"taskforge.tasks_p{n}") for n in range(4)]


def test_an_idempotency_key_stays_unique_across_ranges(db):
    _, conn = db
    partition(conn, 1000, 2)
    first, _, created = submit(conn, "keys", idempotency_key="k-across")
    assert created and first < 1000
    submit_n(conn, "keys_filler", 1500)
    again = submit(conn, "keys", idempotency_key="k-across")
    assert again[0] == first and again[2] is False
    with pytest.raises(psycopg.Error) as caught:
        submit(conn, "keys", idempotency_key="k-across", max_attempts=7)
    assert caught.value.sqlstate == "TF409"
    assert conn.execute("SELECT count(*) FROM taskforge.tasks WHERE idempotency_key = 'k-across'").fetchone()[0] == 1


def test_concurrent_submits_of_one_key_make_one_task(db):
    dsn, conn = db
    partition(conn, 1000, 2)
    results: list[tuple] = []
    barrier = threading.Barrier(8)

    def one() -> None:
        with psycopg.connect(dsn, autocommit=True) as own:
            barrier.wait()
            results.append(submit(own, "race", idempotency_key="k-race"))

    threads = [threading.Thread(target=one) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len({r[0] for r in results}) == 1 and sum(r[2] for r in results) == 1


def test_tf_make_partitions_keeps_ranges_ahead_and_a_submit_past_them_fails_clearly(db):
    _, conn = db
    partition(conn, 1000, 1)
    assert conn.execute("SELECT taskforge.tf_make_partitions()").fetchone()[0] == 0
    submit_n(conn, "ahead", 1200)  # ids 1..1200: into range 1, whose successor is not made yet
    assert conn.execute("SELECT taskforge.tf_make_partitions()").fetchone()[0] == 1
    assert [r[0] for r in conn.execute(RANGES).fetchall()] == [0, 1, 2]
    assert conn.execute("SELECT taskforge.tf_make_partitions()").fetchone()[0] == 0
    # Without a scheduler (or tf_maintain) the ids run past the ranges made: the submit fails
    # and writes nothing, with PostgreSQL's own check violation.
    with pytest.raises(psycopg.errors.CheckViolation) as caught:
        submit_n(conn, "ahead", 2000)
    assert 'no partition of relation "tasks"' in str(caught.value)
    assert conn.execute("SELECT count(*) FROM taskforge.tasks WHERE queue = 'ahead'").fetchone()[0] == 1200
    # The scheduler's pass makes them (sql.SCHEDULER_TICK calls tf_make_partitions first).
    conn.execute("CALL taskforge.tf_maintain()")
    assert len(submit_n(conn, "ahead", 500)) == 500


def test_the_default_layout_has_no_ranges_and_tf_make_partitions_does_nothing(db):
    _, conn = db
    assert conn.execute("SELECT taskforge.tf_make_partitions()").fetchone()[0] == 0
    assert conn.execute("SELECT count(*) FROM taskforge.history_partitions").fetchone()[0] == 0
    assert conn.execute("SELECT relkind FROM pg_class WHERE oid = 'taskforge.tasks'::regclass").fetchone()[0] == "r"


def test_prune_drops_a_range_only_when_every_task_in_it_ended_before_the_cutoff(db):
    _, conn = db
    partition(conn, 1000, 2)
    old = submit_n(conn, "prune_old", 999)  # ids 1..999: range 0 ([lowest, 1000))
    assert run_all(conn, "prune_old") == 999
    age_finished(conn, old, 7200)
    mixed = submit_n(conn, "prune_mixed", 1000)  # range 1, one task left QUEUED
    worker = register_worker(conn, queues=["prune_mixed"])
    rows = claim(conn, worker, queues=["prune_mixed"], max_tasks=1000)
    live = rows[-1][0]
    for row in rows[:-1]:
        assert finalize(conn, row[0], worker, row[1])[0]
    age_finished(conn, [t for t in mixed if t != live], 7200)
    recent = submit_n(conn, "prune_recent", 1000)  # range 2, ended but recently
    assert run_all(conn, "prune_recent") == 1000
    assert conn.execute("SELECT taskforge.tf_make_partitions()").fetchone()[0] >= 1

    assert conn.execute("SELECT taskforge.tf_prune(3600)").fetchone()[0] == 999
    assert [r[0] for r in conn.execute(RANGES).fetchall()][:2] == [1, 2]
    assert conn.execute("SELECT count(*) FROM taskforge.tasks WHERE task_id < 1000").fetchone()[0] == 0
    assert conn.execute("SELECT count(*) FROM taskforge.attempts WHERE task_id < 1000").fetchone()[0] == 0
    assert not conn.execute("SELECT to_regclass('taskforge.tasks_p0')").fetchone()[0]
    assert conn.execute("SELECT taskforge.tf_prune(3600)").fetchone()[0] == 0

    # The live task keeps range 1; once it has ended (and aged), the range goes.
    assert finalize(conn, live, worker, 1)[0]
    age_finished(conn, [live], 7200)
    assert conn.execute("SELECT taskforge.tf_prune(3600)").fetchone()[0] == 1000
    # Range 2 ended too recently for this retention, and not for a shorter one.
    assert conn.execute("SELECT taskforge.tf_prune(3600)").fetchone()[0] == 0
    assert recent[0] == 2000
    assert conn.execute("SELECT taskforge.tf_prune(0)").fetchone()[0] == 1000
    assert invariant_violations(conn) == []


def test_a_dropped_range_frees_its_keys_and_takes_its_dependency_edges(db):
    _, conn = db
    partition(conn, 1000, 2)
    keyed = submit(conn, "drop_keys", idempotency_key="k-dropped")[0]
    parent = submit(conn, "drop_parent")[0]
    submit_n(conn, "drop_filler", 1100)  # range 0 full, range 1 begun
    child = conn.execute(
        "SELECT task_id FROM taskforge.tf_submit('noop', queue => 'drop_child', depends_on => ARRAY[%s]::bigint[])",
        (parent,),
    ).fetchone()[0]
    assert child >= 1000
    for queue in ("drop_keys", "drop_parent", "drop_filler"):
        run_all(conn, queue)
    # The child has not run: its parent's range stays (the child's handler may read its result).
    assert conn.execute("SELECT taskforge.tf_prune(0)").fetchone()[0] == 0
    run_all(conn, "drop_child")
    assert conn.execute("SELECT taskforge.tf_prune(0)").fetchone()[0] == 999
    assert conn.execute("SELECT count(*) FROM taskforge.task_dependencies").fetchone()[0] == 0
    assert conn.execute("SELECT count(*) FROM taskforge.idempotency_keys").fetchone()[0] == 0
    again, _, created = submit(conn, "drop_keys", idempotency_key="k-dropped")
    assert created and again != keyed
    assert invariant_violations(conn) == []


def test_a_held_table_lock_delays_the_drop_and_the_ranges_ahead_without_an_error(db):
    dsn, conn = db
    partition(conn, 1000, 1)
    submit_n(conn, "held", 1200)
    run_all(conn, "held")
    with psycopg.connect(dsn) as holder:
        holder.execute("SELECT count(*) FROM taskforge.tasks")  # ACCESS SHARE until it ends
        started = time.monotonic()
        assert conn.execute("SELECT taskforge.tf_prune(0)").fetchone()[0] == 0
        assert conn.execute("SELECT taskforge.tf_make_partitions()").fetchone()[0] == 0
        assert time.monotonic() - started < 10
        holder.rollback()
    assert conn.execute("SELECT taskforge.tf_make_partitions()").fetchone()[0] == 1
    assert conn.execute("SELECT taskforge.tf_prune(0)").fetchone()[0] == 999


def test_one_caller_drops_at_a_time_and_one_range_a_call(db):
    dsn, conn = db
    partition(conn, 1000, 2)
    submit_n(conn, "one_at_a_time", 2999)  # ranges 0 (1..999), 1, 2
    conn.execute("SELECT taskforge.tf_make_partitions()")
    run_all(conn, "one_at_a_time")
    with psycopg.connect(dsn) as first:
        assert first.execute("SELECT taskforge.tf_prune(0)").fetchone()[0] == 999  # range 0, not committed
        started = time.monotonic()
        assert conn.execute("SELECT taskforge.tf_prune(0)").fetchone()[0] == 0  # at once: the other is dropping
        assert time.monotonic() - started < 0.9
        first.commit()
    assert conn.execute("SELECT taskforge.tf_prune(0)").fetchone()[0] == 1000
    assert conn.execute("SELECT taskforge.tf_prune(0)").fetchone()[0] == 1000
    assert conn.execute("SELECT taskforge.tf_prune(0)").fetchone()[0] == 0
    assert invariant_violations(conn) == []


def test_a_key_row_without_its_task_is_an_error_not_an_endless_retry(db):
    _, conn = db
    partition(conn, 1000, 1)
    with conn.transaction():
        conn.execute("SET LOCAL ROLE taskforge_owner")
        conn.execute("INSERT INTO taskforge.idempotency_keys VALUES ('k-orphan', 12345)")
    assert [r[0] for r in invariant_violations(conn)] == ["idempotency key not paired with its task"]
    with pytest.raises(psycopg.errors.InternalError) as caught:
        submit(conn, "orphan", idempotency_key="k-orphan")
    assert "names task 12345, which does not exist" in str(caught.value)
    assert conn.execute("SELECT count(*) FROM taskforge.tasks WHERE queue = 'orphan'").fetchone()[0] == 0


def test_every_partition_has_the_tables_triggers_storage_parameters_owner_and_no_grants(db):
    _, conn = db
    options = {
        name: conn.execute(f"SELECT reloptions FROM pg_class WHERE oid = 'taskforge.{name}'::regclass").fetchone()[0]
        for name in ("tasks", "attempts")
    }
    assert options["tasks"] and options["attempts"]  # the autovacuum settings of 20_tables.sql
    partition(conn, 1000, 2)
    partitions = conn.execute(
        "SELECT c.relname, p.relname, c.reloptions, c.relowner::regrole::text FROM pg_inherits i "
        "JOIN pg_class c ON c.oid = i.inhrelid JOIN pg_class p ON p.oid = i.inhparent "
        "WHERE p.relname IN ('tasks', 'attempts') AND p.relnamespace = 'taskforge'::regnamespace ORDER BY 1"
    ).fetchall()
    assert len(partitions) == 6
    for relname, parent, reloptions, owner in partitions:
        assert reloptions == options[parent], relname
        assert owner == "taskforge_owner", relname
    triggers = conn.execute(
        "SELECT tgrelid::regclass::text, array_agg(tgname::text ORDER BY tgname) FROM pg_trigger "
        "WHERE NOT tgisinternal AND tgrelid IN (SELECT inhrelid FROM pg_inherits "
        "WHERE inhparent = 'taskforge.tasks'::regclass) GROUP BY 1 ORDER BY 1"
    ).fetchall()
    assert [t[1] for t in triggers] == [
        ["tasks_notify_finished", "tasks_release_children", "tasks_wake_ordering_key"]
    ] * 3
    assert (
        conn.execute(
            "SELECT count(*) FROM pg_class c, unnest(ARRAY['taskforge_worker', 'taskforge_scheduler', "
            "'taskforge_client', 'taskforge_console']) r "
            "WHERE c.relnamespace = 'taskforge'::regnamespace AND c.relkind IN ('r', 'p', 'S') "
            "AND (has_table_privilege(r, c.oid, 'SELECT,INSERT,UPDATE,DELETE,TRUNCATE,REFERENCES,TRIGGER'))"
        ).fetchone()[0]
        == 0
    )
    assert (
        conn.execute(
            "SELECT count(*) FROM pg_class WHERE relnamespace = 'taskforge'::regnamespace "
            "AND relowner <> 'taskforge_owner'::regrole"
        ).fetchone()[0]
        == 0
    )
