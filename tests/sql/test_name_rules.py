"""The name rules have one home, taskforge._tf_name_pattern: the table CHECKs and the SQL
validators follow it, and the Python constants (taskforge.names) are the same patterns."""

from __future__ import annotations

import psycopg
import pytest

from taskforge.names import QUEUE_PATTERN, SCHEDULE_PATTERN, TASK_TYPE_PATTERN

NAMES = ["a", "A", "0", "default", "a.b-c_d:e", "Upper", "x" * 63, "x" * 64, "-a", ".a", "a b", "a\n", "", "é", "a/b"]


def test_python_patterns_are_the_database_patterns(conn):
    got = conn.execute(
        "SELECT taskforge._tf_name_pattern('queue'), taskforge._tf_name_pattern('task_type'), "
        "taskforge._tf_name_pattern('schedule')"
    ).fetchone()
    assert got == (QUEUE_PATTERN.pattern, TASK_TYPE_PATTERN.pattern, SCHEDULE_PATTERN.pattern)


@pytest.mark.parametrize(
    "kind,pattern", [("queue", QUEUE_PATTERN), ("task_type", TASK_TYPE_PATTERN), ("schedule", SCHEDULE_PATTERN)]
)
def test_python_and_postgres_agree_on_every_sample(conn, kind, pattern):
    for name in NAMES:
        in_db = conn.execute("SELECT %s ~ taskforge._tf_name_pattern(%s)", (name, kind)).fetchone()[0]
        assert in_db == bool(pattern.fullmatch(name)), (kind, name)


def test_the_table_checks_use_the_rule(conn):
    """A row written around the functions (as the owner) is still held to the rule."""
    with pytest.raises(psycopg.errors.CheckViolation, match="queue_name_format"):
        conn.execute(
            "INSERT INTO taskforge.tasks (task_type, payload, queue, priority, max_attempts, scheduled_at, created_at,"
            " updated_at) VALUES ('noop', '{}', 'bad queue', 0, 1, now(), now(), now())"
        )
    with pytest.raises(psycopg.errors.CheckViolation, match="task_types_name_format"):
        conn.execute("INSERT INTO taskforge.task_types (task_type) VALUES ('Bad')")
    with pytest.raises(psycopg.errors.CheckViolation, match="queue_name_format"):
        conn.execute("INSERT INTO taskforge.queues (queue) VALUES ('-bad')")
    with pytest.raises(psycopg.errors.CheckViolation, match="periodic_schedules_name_format"):
        conn.execute(
            "INSERT INTO taskforge.periodic_schedules (name, cron, task_type, payload, queue, priority, max_attempts,"
            " timezone, next_fire_at, created_at, updated_at)"
            " VALUES ('bad name', '* * * * *', 'noop', '{}', 'q', 0, 1, 'UTC', now(), now(), now())"
        )
