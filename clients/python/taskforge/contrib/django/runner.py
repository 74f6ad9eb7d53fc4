"""The worker's side: TaskForge handlers that run Django tasks (``manage.py taskforge_worker``).

:func:`handler_registry` gives a worker the two handlers of a :class:`TaskForgeBackend`: a sync
one for its ``TASK_TYPE`` and an ``async def`` one for its ``ASYNC_TASK_TYPE`` (the worker runs
those on its event loop). Each attempt:

1. follows Django's connection rules as a request does: ``reset_queries()`` and
   ``close_old_connections()`` before the task, ``close_old_connections()`` after it (a
   connection past ``CONN_MAX_AGE``, or unusable, is closed; with ``CONN_MAX_AGE = 0``, the
   default, every task gets a new one). An ``async def`` task runs in a
   ``ThreadSensitiveContext`` of its own, as Django's ASGI handler runs a request: its ORM calls
   (``sync_to_async``) share one thread and one connection, which is closed when it ends;
2. imports the ``Task`` at the payload's ``module_path`` and reads its ``TaskResult`` (status
   ``RUNNING``, this attempt counted): what ``task_started`` and ``task_finished`` carry, and the
   ``TaskContext`` of a ``takes_context`` task;
3. calls the function with the payload's ``args`` and ``kwargs`` (``Task.call`` / ``Task.acall``);
4. returns its return value as the task's result, which must be JSON (Django's
   ``normalize_json``, then TaskForge's rules: finite numbers, at most 1 MiB); another value
   fails the attempt with ``taskforge.handlers.ResultError`` naming the task. An exception fails
   the attempt (``taskforge.RetryableError``: retried) and is stored with its class path and
   traceback, which ``get_result`` shows as Django ``TaskError``.

``task_finished`` is sent when the function has ended, just before the worker finalizes the
attempt.
"""

from __future__ import annotations

import traceback
from typing import Any

from asgiref.sync import ThreadSensitiveContext, sync_to_async
from django.db import close_old_connections, connections, reset_queries
from django.tasks.base import TaskContext, TaskError, TaskResultStatus
from django.tasks.signals import task_finished, task_started
from django.utils import timezone
from django.utils.json import normalize_json

from ... import context, handlers
from .backend import TaskForgeBackend, load_task
from .mapping import read_payload

__all__ = ["DjangoTaskRunner", "handler_registry", "json_return_value"]


def json_return_value(value: Any, module_path: str) -> Any:
    """A task function's return value as the JSON-shaped value to store (Django's
    ``normalize_json``). Raises :class:`taskforge.handlers.ResultError` naming the task when it
    is not JSON or TaskForge cannot store it (NaN, Infinity, NUL characters, over 1 MiB)."""
    try:
        value = normalize_json(value)
    except (TypeError, ValueError) as exc:
        raise handlers.ResultError(f"the return value of {module_path} is not JSON: {exc}") from None
    try:
        handlers.encode_result(value)
    except handlers.ResultError as exc:
        raise handlers.ResultError(f"the return value of {module_path}: {exc}") from None
    return value


def _before_task() -> None:
    reset_queries()
    close_old_connections()


def _ended(result: Any, exc: BaseException | None, value: Any = None) -> None:
    """Record the end of the function in the in-memory ``result`` sent with ``task_finished``."""
    object.__setattr__(result, "finished_at", timezone.now())
    if exc is None:
        object.__setattr__(result, "status", TaskResultStatus.SUCCESSFUL)
        object.__setattr__(result, "_return_value", value)
        return
    cls = type(exc)
    result.errors.append(
        TaskError(
            exception_class_path=f"{cls.__module__}.{cls.__qualname__}",
            traceback="".join(traceback.format_exception(exc)),
        )
    )
    object.__setattr__(result, "status", TaskResultStatus.FAILED)


class DjangoTaskRunner:
    """Runs the Django tasks of one backend as TaskForge handlers (module docstring)."""

    def __init__(self, backend: TaskForgeBackend) -> None:
        self.backend = backend
        self.sender = type(backend)

    def _prepare(self, payload: dict[str, Any]) -> tuple[Any, list[Any], dict[str, Any]]:
        module_path, args, kwargs = read_payload(payload)
        return load_task(module_path), args, kwargs

    def _arguments(self, task: Any, result: Any, args: list[Any]) -> list[Any]:
        return [TaskContext(task_result=result), *args] if task.takes_context else args

    def run(self, payload: dict[str, Any], ctx: context.TaskContext) -> Any:
        """The handler of ``TASK_TYPE``: run a sync task function (an ``async def`` one enqueued
        before it became one runs too, through ``async_to_sync``)."""
        _before_task()
        try:
            task, args, kwargs = self._prepare(payload)
            result = self.backend.get_result(str(ctx.task_id))
            task_started.send(sender=self.sender, task_result=result)
            try:
                value = json_return_value(task.call(*self._arguments(task, result, args), **kwargs), task.module_path)
            except Exception as exc:
                _ended(result, exc)
                task_finished.send(sender=self.sender, task_result=result)
                raise
            _ended(result, None, value)
            task_finished.send(sender=self.sender, task_result=result)
            return value
        finally:
            close_old_connections()

    async def arun(self, payload: dict[str, Any], ctx: context.TaskContext) -> Any:
        """The handler of ``ASYNC_TASK_TYPE``: await an ``async def`` task function on the
        worker's event loop (a sync one runs through ``sync_to_async``), in a
        ``ThreadSensitiveContext`` whose Django connections are closed at the end."""
        async with ThreadSensitiveContext():
            try:
                await sync_to_async(_before_task)()
                task, args, kwargs = self._prepare(payload)
                result = await sync_to_async(self.backend.get_result)(str(ctx.task_id))
                await task_started.asend(sender=self.sender, task_result=result)
                try:
                    raw = await task.acall(*self._arguments(task, result, args), **kwargs)
                    value = json_return_value(raw, task.module_path)
                except Exception as exc:
                    _ended(result, exc)
                    await task_finished.asend(sender=self.sender, task_result=result)
                    raise
                _ended(result, None, value)
                await task_finished.asend(sender=self.sender, task_result=result)
                return value
            finally:
                await sync_to_async(connections.close_all)()


def handler_registry(backend: TaskForgeBackend) -> handlers.HandlerRegistry:
    """A registry with the two handlers of ``backend``'s task types (what the worker claims)."""
    runner = DjangoTaskRunner(backend)
    registry = handlers.HandlerRegistry()
    registry.register(backend.task_type, runner.run)
    registry.register(backend.async_task_type, runner.arun)
    return registry
