"""``TaskForgeBackend``: Django 6's ``django.tasks`` on TaskForge (docs/django.md).

Settings (``TASKS``)::

    TASKS = {
        "default": {
            "BACKEND": "taskforge.contrib.django.TaskForgeBackend",
            "QUEUES": ["default", "emails"],   # Django's rule: allowed queue names ([] = any)
            "OPTIONS": {
                "DATABASE": "default",            # the Django database alias holding TaskForge
                "TASK_TYPE": "django.task",       # TaskForge task type of sync task functions
                "ASYNC_TASK_TYPE": "django.async_task",  # ... and of async def ones
                "MAX_ATTEMPTS": 3,                # TaskForge attempt budget of each task
            },
        }
    }

A Django task is one TaskForge task of type ``TASK_TYPE`` (``ASYNC_TASK_TYPE`` for an ``async
def`` function: the worker runs those on its event loop), payload ``{"module_path", "args",
"kwargs"}``, queue = ``queue_name``, priority = 327 x Django priority, ``scheduled_at`` =
``run_after``; the result id is the task id as a string (:mod:`.mapping`). Both task types must
be registered once by the database owner (``tf_register_task_type``). Tasks are admitted on
Django's own connection of ``DATABASE``: inside ``transaction.atomic()`` they commit or roll back
with the block, and workers are woken at commit. ``aenqueue``/``aget_result`` are Django's: they
run ``enqueue``/``get_result`` through ``sync_to_async`` (thread-sensitive), so on the same
connection and transaction as the caller's synchronous code.

A raising task function is FAILED at once (an ordinary error is terminal in TaskForge, as in
Django); ``MAX_ATTEMPTS`` is the budget for attempts lost to a crashed worker or a lease that
ran out, and for ``taskforge.RetryableError``, which a task function may raise to be retried
with its task type's backoff. Time: ``enqueued_at`` of the result ``enqueue`` returns is
Django's ``timezone.now()``; results read back carry the database's times (``created_at``,
attempt ``started_at``, ``finished_at``), aware when ``USE_TZ`` (naive in the default time zone
otherwise, as Django's).
"""

from __future__ import annotations

import datetime as _dt
from inspect import iscoroutinefunction
from typing import Any

from django.conf import settings
from django.core import checks
from django.tasks.backends.base import BaseTaskBackend
from django.tasks.base import Task, TaskResult, TaskResultStatus
from django.tasks.exceptions import InvalidTask, InvalidTaskBackend, TaskResultDoesNotExist
from django.tasks.signals import task_enqueued
from django.utils import timezone
from django.utils.module_loading import import_string

from ... import client
from ...names import QUEUE_PATTERN, TASK_TYPE_PATTERN
from . import database, mapping

__all__ = ["DEFAULT_OPTIONS", "TaskForgeBackend"]

#: ``OPTIONS`` of a backend and their defaults.
DEFAULT_OPTIONS: dict[str, Any] = {
    "DATABASE": "default",
    "TASK_TYPE": "django.task",
    "ASYNC_TASK_TYPE": "django.async_task",
    "MAX_ATTEMPTS": 3,
}
#: TaskForge's range of ``max_attempts`` (tf_submit refuses others).
_MAX_ATTEMPTS_RANGE = (1, 1000)


class TaskForgeBackend(BaseTaskBackend):
    """A ``django.tasks`` backend that stores tasks in TaskForge (module docstring).

    Raises ``InvalidTaskBackend`` at construction for an unknown option, a ``DATABASE`` alias
    missing from ``settings.DATABASES``, task types or ``QUEUES`` entries TaskForge's name rules
    refuse, or ``MAX_ATTEMPTS`` outside 1..1000.
    """

    supports_defer = True
    supports_async_task = True
    supports_get_result = True
    supports_priority = True

    def __init__(self, alias: str, params: dict[str, Any]) -> None:
        super().__init__(alias, params)
        unknown = sorted(set(self.options) - set(DEFAULT_OPTIONS))
        if unknown:
            raise InvalidTaskBackend(
                f"TASKS[{alias!r}]['OPTIONS']: unknown option {', '.join(unknown)} "
                f"(known: {', '.join(DEFAULT_OPTIONS)})"
            )
        options = {**DEFAULT_OPTIONS, **self.options}
        self.database: str = options["DATABASE"]
        if self.database not in settings.DATABASES:
            raise InvalidTaskBackend(
                f"TASKS[{alias!r}]['OPTIONS']['DATABASE']: no database {self.database!r} in settings.DATABASES"
            )
        self.task_type: str = self._task_type(options, "TASK_TYPE")
        self.async_task_type: str = self._task_type(options, "ASYNC_TASK_TYPE")
        if self.task_type == self.async_task_type:
            raise InvalidTaskBackend(f"TASKS[{alias!r}]['OPTIONS']: TASK_TYPE and ASYNC_TASK_TYPE must differ")
        max_attempts = options["MAX_ATTEMPTS"]
        low, high = _MAX_ATTEMPTS_RANGE
        if isinstance(max_attempts, bool) or not isinstance(max_attempts, int) or not low <= max_attempts <= high:
            raise InvalidTaskBackend(
                f"TASKS[{alias!r}]['OPTIONS']['MAX_ATTEMPTS']: must be a whole number {low}..{high}, "
                f"got {max_attempts!r}"
            )
        self.max_attempts = int(max_attempts)
        bad = sorted(q for q in self.queues if not isinstance(q, str) or not QUEUE_PATTERN.fullmatch(q))
        if bad:
            raise InvalidTaskBackend(
                f"TASKS[{alias!r}]['QUEUES']: {', '.join(map(repr, bad))} must match {QUEUE_PATTERN.pattern} "
                "(TaskForge's queue names)"
            )

    def _task_type(self, options: dict[str, Any], key: str) -> str:
        value = options[key]
        if not isinstance(value, str) or not TASK_TYPE_PATTERN.fullmatch(value):
            raise InvalidTaskBackend(
                f"TASKS[{self.alias!r}]['OPTIONS'][{key!r}]: {value!r} must match {TASK_TYPE_PATTERN.pattern}"
            )
        return value

    @property
    def task_types(self) -> tuple[str, str]:
        """``(TASK_TYPE, ASYNC_TASK_TYPE)``: the TaskForge task types of this backend's tasks."""
        return (self.task_type, self.async_task_type)

    def task_type_of(self, task: Any) -> str:
        """The TaskForge task type a ``Task`` is submitted as (by whether its function is
        ``async def``)."""
        return self.async_task_type if iscoroutinefunction(task.func) else self.task_type

    def validate_task(self, task: Any) -> None:
        """Django's checks (module-level function, priority -100..100, an aware ``run_after``
        with ``USE_TZ``, ``queue_name`` among ``QUEUES``), and TaskForge's queue name rule.
        Raises ``InvalidTask``."""
        super().validate_task(task)
        if not QUEUE_PATTERN.fullmatch(task.queue_name):
            raise InvalidTask(f"queue_name: {task.queue_name!r} must match {QUEUE_PATTERN.pattern} (TaskForge's rule)")

    def enqueue(self, task: Any, args: Any, kwargs: Any) -> Any:
        """Submit ``task(*args, **kwargs)`` to TaskForge on Django's connection of ``DATABASE``
        (so in the caller's transaction) and return its ``TaskResult`` (status ``READY``, id =
        the task id). Sends ``task_enqueued``.

        Raises ``InvalidTask`` (see :meth:`validate_task`); ``TypeError`` naming ``args`` or
        ``kwargs`` when they are not JSON; :class:`taskforge.errors.Refused` from the submit
        (:class:`~taskforge.errors.InvalidArgument` before sending, or the database's TF400, e.g.
        a task type nobody registered).
        """
        self.validate_task(task)
        args = mapping.json_arguments("args", list(args), task.module_path)
        kwargs = mapping.json_arguments("kwargs", dict(kwargs), task.module_path)
        run_after = task.run_after
        if run_after is not None and timezone.is_naive(run_after):
            run_after = timezone.make_aware(run_after)  # USE_TZ = False: Django's default time zone
        submitted = client.submit(
            database.psycopg_connection(self.database),
            self.task_type_of(task),
            mapping.make_payload(task.module_path, args, kwargs),
            queue=task.queue_name,
            priority=mapping.to_taskforge_priority(task.priority),
            max_attempts=self.max_attempts,
            scheduled_at=run_after,
        )
        result = TaskResult(
            task=task,
            id=str(submitted.task_id),
            status=TaskResultStatus.READY,
            enqueued_at=timezone.now(),
            started_at=None,
            last_attempted_at=None,
            finished_at=None,
            args=args,
            kwargs=kwargs,
            backend=self.alias,
            errors=[],
            worker_ids=[],
        )
        task_enqueued.send(type(self), task_result=result)
        return result

    def get_result(self, result_id: str) -> Any:
        """The ``TaskResult`` of the task with this id, read on Django's connection of
        ``DATABASE`` (so it sees the caller's own uncommitted enqueues).

        Raises ``TaskResultDoesNotExist`` for an id that is not a task id (the decimal digits of
        one), a task that does not exist, or one that is not of this backend's task types;
        ``ValueError`` when its ``module_path`` no longer names a Django ``Task``.
        """
        task_id = _task_id(result_id)
        conn = database.psycopg_connection(self.database)
        try:
            row = client.get_task(conn, task_id)
        except client.TaskNotFound:
            raise TaskResultDoesNotExist(result_id) from None
        return self.result_of(row)

    def result_of(self, row: Any) -> Any:
        """The ``TaskResult`` of a task read with :func:`taskforge.client.get_task` (JSON
        decoded). Raises ``TaskResultDoesNotExist`` when it is not a task of this backend."""
        task = mapping.fields(row)
        if task["task_type"] not in self.task_types:
            raise TaskResultDoesNotExist(f"{task['task_id']}: a TaskForge task of type {task['task_type']!r}")
        module_path, args, kwargs = mapping.read_payload(task["payload"])
        created, scheduled = task["created_at"], task["scheduled_at"]
        django_task = load_task(module_path).using(
            priority=mapping.to_django_priority(task["priority"]),
            queue_name=task["queue"],
            run_after=_local(scheduled) if scheduled > created else None,
            backend=self.alias,
        )
        attempts = task["attempts"]
        status = mapping.STATUS_OF_STATE[task["state"]]
        result = TaskResult(
            task=django_task,
            id=str(task["task_id"]),
            status=status,
            enqueued_at=_local(created),
            started_at=_local(attempts[0]["started_at"]) if attempts else None,
            last_attempted_at=_local(attempts[-1]["started_at"]) if attempts else None,
            finished_at=_local(task["finished_at"]),
            args=args,
            kwargs=kwargs,
            backend=self.alias,
            errors=mapping.task_errors(task),
            worker_ids=[str(attempt["worker_id"]) for attempt in attempts],
        )
        if status == TaskResultStatus.SUCCESSFUL:
            object.__setattr__(result, "_return_value", task["result"])  # how Django's backends set it
        return result

    def check(self, **kwargs: Any) -> list[Any]:
        """Django system checks (``manage.py check``): ``taskforge.E001`` when the ``DATABASE``
        alias is not PostgreSQL. Reads nothing from the database."""
        engine = settings.DATABASES[self.database].get("ENGINE", "")
        if engine != "django.db.backends.postgresql":
            return [
                checks.Error(
                    f"TASKS[{self.alias!r}] stores tasks in DATABASES[{self.database!r}], whose ENGINE is {engine!r}",
                    hint="TaskForge needs PostgreSQL: ENGINE 'django.db.backends.postgresql' (psycopg 3)",
                    obj=self,
                    id="taskforge.E001",
                )
            ]
        return []


def load_task(module_path: str) -> Any:
    """The Django ``Task`` at ``module_path`` (what ``@task`` left in its module). Raises
    ``ValueError`` (with the import error as its cause) when nothing importable is there, or it
    is not a ``Task``."""
    try:
        found = import_string(module_path)
    except ImportError as exc:
        raise ValueError(f"module_path: cannot import {module_path!r}: {exc}") from exc
    if not isinstance(found, Task):
        raise ValueError(f"module_path: {module_path!r} is a {type(found).__name__}, not a django.tasks Task")
    return found


def _task_id(result_id: Any) -> int:
    """The task id a result id stands for (its canonical decimal form only)."""
    text = str(result_id)
    if not text.isascii() or not text.lstrip("-").isdigit() or str(int(text)) != text:
        raise TaskResultDoesNotExist(result_id)
    task_id = int(text)
    if not client.INT8_RANGE[0] <= task_id <= client.INT8_RANGE[1]:
        raise TaskResultDoesNotExist(result_id)
    return task_id


def _local(value: _dt.datetime | None) -> _dt.datetime | None:
    """A database time as Django represents it: aware with ``USE_TZ``, else naive local time."""
    if value is None or settings.USE_TZ:
        return value
    return timezone.make_naive(value)  # type: ignore[no-any-return]
