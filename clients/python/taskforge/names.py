"""The name rules of queues, task types and periodic schedules, as the database states them.

The one home of these rules is the SQL function ``taskforge._tf_name_pattern`` (table CHECKs
and every SQL validator use it); these are the same patterns for checks made before a call
reaches the database (the worker's ``--queue`` options, handler registration). A test
(tests/sql/test_name_rules.py) compares them with the database's. Match with ``fullmatch``:
PostgreSQL's ``$`` does not accept a trailing newline, Python's ``$`` alone would.
"""

from __future__ import annotations

import re

__all__ = ["QUEUE_PATTERN", "SCHEDULE_PATTERN", "TASK_TYPE_PATTERN"]

#: A queue name (``taskforge._tf_name_pattern('queue')``).
QUEUE_PATTERN = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.:-]{0,62}$")
#: A task type name (``taskforge._tf_name_pattern('task_type')``).
TASK_TYPE_PATTERN = re.compile(r"^[a-z][a-z0-9_.-]{0,62}$")
#: A periodic schedule name (``taskforge._tf_name_pattern('schedule')``).
SCHEDULE_PATTERN = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.:-]{0,62}$")
