"""The example shop's views (docs/django.md): orders and their tasks in one transaction, a
report enqueued from an async view, and task results as JSON."""

import datetime as dt
import json

from django.db import transaction
from django.http import JsonResponse
from django.tasks import Task, TaskResultStatus, default_task_backend
from django.tasks.exceptions import InvalidTask, TaskResultDoesNotExist, TaskResultMismatch
from django.views.decorators.http import require_GET, require_POST

from . import tasks
from .models import Order

MAX_QUANTITY = 10


class OrderRefused(Exception):
    """An order the shop does not take."""


@require_POST
def create_order(request):
    """Insert an order and enqueue its shipping in one transaction: both commit, or neither."""
    data = json.loads(request.body)
    try:
        with transaction.atomic():
            order = Order.objects.create(item=data["item"], quantity=data["quantity"])
            shipping = tasks.ship_order.enqueue(order.pk)
            gift_note = enqueue_gift_note(order, data["gift_note"]) if "gift_note" in data else None
            if order.quantity > MAX_QUANTITY:
                raise OrderRefused(f"at most {MAX_QUANTITY} per order")  # rolls back the order and its tasks
    except OrderRefused as exc:
        return JsonResponse({"error": str(exc)}, status=409)
    return JsonResponse({"order_id": order.pk, "shipping": shipping.id, "gift_note": gift_note and gift_note.id})


def enqueue_gift_note(order, note):
    """The gift note's task in a savepoint: a note that is too long is dropped, the order stays."""
    try:
        with transaction.atomic():
            result = tasks.send_gift_note.enqueue(order.pk, note)
            if len(note) > 100:
                raise ValueError("gift note too long")
            return result
    except ValueError:
        return None


@require_POST
async def create_report(request):
    """Enqueue a report from an async view."""
    data = json.loads(request.body)
    result = await tasks.order_report.aenqueue(data["order_ids"])
    return JsonResponse({"report": result.id})


@require_GET
def task_result(request, result_id):
    """A task result as JSON; ``?task=NAME`` reads it through that task (``Task.get_result``)."""
    try:
        if "task" in request.GET:
            result = _task(request.GET["task"]).get_result(result_id)
        else:
            result = default_task_backend.get_result(result_id)
    except TaskResultDoesNotExist:
        return JsonResponse({"error": f"no task result {result_id}"}, status=404)
    except TaskResultMismatch as exc:
        return JsonResponse({"error": str(exc)}, status=409)
    return JsonResponse(result_json(result))


@require_GET
async def async_task_result(request, result_id):
    """``task_result`` from an async view (``aget_result``)."""
    try:
        result = await default_task_backend.aget_result(result_id)
    except TaskResultDoesNotExist:
        return JsonResponse({"error": f"no task result {result_id}"}, status=404)
    return JsonResponse(result_json(result))


@require_POST
def enqueue_task(request, name):
    """Enqueue one of the shop's tasks by name with ``args``, ``kwargs`` and the ``priority``,
    ``queue_name`` and ``run_after`` (ISO 8601) of ``Task.using``: the tests' way in."""
    data = json.loads(request.body)
    run_after = dt.datetime.fromisoformat(data["run_after"]) if "run_after" in data else None
    try:
        task = _task(name).using(priority=data.get("priority"), queue_name=data.get("queue_name"), run_after=run_after)
        result = task.enqueue(*data.get("args", []), **data.get("kwargs", {}))
    except (InvalidTask, TypeError) as exc:
        return JsonResponse({"error": f"{type(exc).__name__}: {exc}"}, status=400)
    return JsonResponse(result_json(result))


def _task(name):
    found = getattr(tasks, name, None)
    if not isinstance(found, Task):
        raise TaskResultDoesNotExist(f"no task {name}")
    return found


def _iso(value):
    return value and value.isoformat()


def _exception_class(error):
    try:
        cls = error.exception_class
    except (ImportError, ValueError) as exc:
        return f"not importable: {exc}"
    return f"{cls.__module__}.{cls.__qualname__}"


def result_json(result):
    """Everything a ``TaskResult`` tells, as JSON."""
    data = {
        "id": result.id,
        "status": result.status.value,
        "backend": result.backend,
        "task": {
            "module_path": result.task.module_path,
            "priority": result.task.priority,
            "queue_name": result.task.queue_name,
            "run_after": _iso(result.task.run_after),
        },
        "args": result.args,
        "kwargs": result.kwargs,
        "enqueued_at": _iso(result.enqueued_at),
        "started_at": _iso(result.started_at),
        "last_attempted_at": _iso(result.last_attempted_at),
        "finished_at": _iso(result.finished_at),
        "worker_ids": result.worker_ids,
        "attempts": result.attempts,
        "errors": [
            {
                "exception_class_path": error.exception_class_path,
                "exception_class": _exception_class(error),
                "traceback": error.traceback,
            }
            for error in result.errors
        ],
    }
    if result.status == TaskResultStatus.SUCCESSFUL:
        data["return_value"] = result.return_value
    return data
