"""What TaskForgeBackend and ``manage.py taskforge_worker`` refuse, with the message naming the
setting, argument or option (run in the example project's virtualenv)."""

from __future__ import annotations

import psycopg
from psycopg.conninfo import conninfo_to_dict

from taskforge import database as tfdb

BACKEND = "taskforge.contrib.django.TaskForgeBackend"

SETTINGS_CHECKS = f"""
import json
from django.tasks.exceptions import InvalidTask, InvalidTaskBackend
from django.test.utils import override_settings
from taskforge.client import InvalidArgument
from taskforge.contrib.django import TaskForgeBackend
from shop import tasks

def refusal(params):
    try:
        TaskForgeBackend("other", {{"BACKEND": "{BACKEND}", **params}})
    except InvalidTaskBackend as exc:
        return str(exc)
    return "accepted"

def error(call):
    try:
        call()
    except (InvalidTask, InvalidArgument, TypeError) as exc:
        return f"{{type(exc).__name__}}: {{exc}}"
    return "accepted"

out = {{
    "option": refusal({{"OPTIONS": {{"DATABSE": "default"}}}}),
    "database": refusal({{"OPTIONS": {{"DATABASE": "replica"}}}}),
    "queues": refusal({{"QUEUES": ["default", "two words"]}}),
    "max_attempts": refusal({{"OPTIONS": {{"MAX_ATTEMPTS": 0}}}}),
    "task_type": refusal({{"OPTIONS": {{"TASK_TYPE": "Django"}}}}),
    "same_types": refusal({{"OPTIONS": {{"ASYNC_TASK_TYPE": "django.task"}}}}),
    "args": error(lambda: tasks.send_gift_note.enqueue(1, {{"a", "b"}})),
    "kwargs": error(lambda: tasks.send_gift_note.enqueue(1, note=b"\\xff")),
    "nan": error(lambda: tasks.send_gift_note.enqueue(1, float("nan"))),
    "checks": [e.id for e in tasks.ship_order.get_backend().check()],
}}
any_queue = {{"default": {{"BACKEND": "{BACKEND}", "QUEUES": []}}}}
with override_settings(TASKS=any_queue):
    out["queue_name"] = error(lambda: tasks.ship_order.using(queue_name="two words"))
lite = {{"ENGINE": "django.db.backends.sqlite3", "NAME": ":memory:"}}
from django.conf import settings
with override_settings(DATABASES={{**settings.DATABASES, "lite": lite}}):
    backend = TaskForgeBackend("lite", {{"BACKEND": "{BACKEND}", "OPTIONS": {{"DATABASE": "lite"}}}})
    out["sqlite_checks"] = [e.id for e in backend.check()]
print(json.dumps(out))
"""


def test_backend_settings_and_task_arguments_are_checked(shop):
    out = shop.shell(SETTINGS_CHECKS)
    assert out["option"] == (
        "TASKS['other']['OPTIONS']: unknown option DATABSE (known: DATABASE, TASK_TYPE, ASYNC_TASK_TYPE, MAX_ATTEMPTS)"
    )
    assert out["database"] == "TASKS['other']['OPTIONS']['DATABASE']: no database 'replica' in settings.DATABASES"
    assert out["queues"].startswith("TASKS['other']['QUEUES']: 'two words' must match ^[A-Za-z0-9]")
    assert out["max_attempts"] == "TASKS['other']['OPTIONS']['MAX_ATTEMPTS']: must be a whole number 1..1000, got 0"
    assert out["task_type"].startswith("TASKS['other']['OPTIONS']['TASK_TYPE']: 'Django' must match ^[a-z]")
    assert out["same_types"] == "TASKS['other']['OPTIONS']: TASK_TYPE and ASYNC_TASK_TYPE must differ"
    assert out["args"].startswith(
        "TypeError: args: the arguments of shop.tasks.send_gift_note must be JSON values (Unsupported type:"
    )
    assert out["kwargs"].startswith("TypeError: kwargs: the arguments of shop.tasks.send_gift_note must be JSON")
    assert out["nan"].startswith("InvalidArgument: payload: number at $.args[1] is nan")
    assert out["queue_name"].startswith("InvalidTask: queue_name: 'two words' must match ^[A-Za-z0-9]")
    assert (out["checks"], out["sqlite_checks"]) == ([], ["taskforge.E001"])
    with psycopg.connect(shop.dsn, autocommit=True) as conn:
        assert conn.execute("SELECT count(*) FROM taskforge.tasks").fetchone()[0] == 0  # nothing was submitted


def test_the_worker_command_refuses_what_it_cannot_run(shop, fresh_database):
    refused = shop.manage("taskforge_worker", "--backend", "nope")
    assert refused.returncode == 2 and "--backend nope: The connection 'nope' doesn't exist." in refused.stderr

    refused = shop.manage("taskforge_worker", "--queue", "two words")
    assert refused.returncode == 2 and "queue: 'two words' must match" in refused.stderr

    refused = shop.manage("taskforge_worker", "--concurrency", "0")
    assert refused.returncode == 2 and "concurrency: must be between 1 and 10000, got 0" in refused.stderr

    empty = fresh_database("taskforge_django_empty")
    elsewhere = {"SHOP_DB_NAME": str(conninfo_to_dict(empty)["dbname"])}
    refused = shop.manage("taskforge_worker", env=elsewhere)
    assert refused.returncode == 4 and "schema taskforge is not installed" in refused.stderr, refused.stderr

    tfdb.migrate(empty)  # the schema, but not the backend's task types
    refused = shop.manage("taskforge_worker", env=elsewhere)
    assert refused.returncode == 4, refused.stderr
    assert (
        "task type django.task, django.async_task is not registered in the database of DATABASES['default']; "
        "as its owner, run: SELECT taskforge.tf_register_task_type('django.task'); "
        "SELECT taskforge.tf_register_task_type('django.async_task') (docs/django.md)"
    ) in refused.stderr
