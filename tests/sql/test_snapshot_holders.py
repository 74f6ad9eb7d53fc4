"""tf_snapshot_holders names who holds back vacuum (issue 10, item 6): a session holding a
REPEATABLE READ snapshot is listed with its pid, role, application name and xmin age, oldest
first; a reader without pg_read_all_stats sees who and how old but not the session's state,
duration or query, and with pg_read_all_stats sees those too.
"""

from __future__ import annotations

import psycopg

from sqlcore_helpers import as_user, submit, unique_name

OLDEST = (
    "SELECT kind, pid, role_name, name, state, xmin_age, held_seconds, query FROM taskforge.tf_snapshot_holders"
    " ORDER BY xmin_age DESC, pid LIMIT 1"
)
BY_PID = (
    "SELECT kind, role_name, name, state, xmin_age, held_seconds, query FROM taskforge.tf_snapshot_holders"
    " WHERE pid = %s"
)


def test_the_oldest_snapshot_holder_is_named(db_dsn, conn, login_role):
    holder = psycopg.connect(db_dsn, application_name="tf-test-snapshot-holder")
    try:
        holder.execute("BEGIN ISOLATION LEVEL REPEATABLE READ")
        holder.execute("SELECT count(*) FROM taskforge.tasks")  # the snapshot is taken here
        holder_pid = holder.info.backend_pid
        queue = unique_name("snap")
        for _ in range(3):  # transactions after the snapshot: its xmin ages
            submit(conn, queue)

        kind, pid, role, name, state, age, held, query = conn.execute(OLDEST).fetchone()
        assert (kind, pid, role, name, state) == (
            "session",
            holder_pid,
            "postgres",
            "tf-test-snapshot-holder",
            "idle in transaction",
        )
        assert age >= 3 and held >= 0 and query.startswith("SELECT count(*) FROM taskforge.tasks")

        reader = login_role("taskforge_client")
        with psycopg.connect(as_user(db_dsn, reader), autocommit=True) as c:
            row = c.execute(BY_PID, (holder_pid,)).fetchone()
            # Without pg_read_all_stats: who and how old, not what it does.
            assert row[:3] == ("session", "postgres", "tf-test-snapshot-holder")
            assert row[4] >= 3 and row[3] is None and row[5] is None and row[6] is None
        with psycopg.connect(db_dsn, autocommit=True) as admin:
            admin.execute(f'GRANT pg_read_all_stats TO "{reader}"')
        with psycopg.connect(as_user(db_dsn, reader), autocommit=True) as c:
            row = c.execute(BY_PID, (holder_pid,)).fetchone()
            assert row[3] == "idle in transaction" and row[6].startswith("SELECT count(*)")
    finally:
        holder.rollback()
        holder.close()
    assert conn.execute(BY_PID, (holder_pid,)).fetchone() is None
