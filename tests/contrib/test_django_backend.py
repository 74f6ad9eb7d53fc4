"""taskforge.contrib.django end to end: the example shop (django_project/) under Django 6 on
PostgreSQL, its views served by ``manage.py runserver`` and its tasks run by ``manage.py
taskforge_worker``, both real processes of a Python >= 3.12 virtualenv (django_site.py)."""

from __future__ import annotations

import datetime as dt

import psycopg
import pytest

from django_site import documented_worker_args
from itest_support import attempts, task, wait_for, wait_log

pytestmark = pytest.mark.timeout(600)


def _count(conn: psycopg.Connection, query: str, *params: object) -> int:
    return int(conn.execute(query, params).fetchone()[0])


def _notified(listener: psycopg.Connection, seconds: float, stop_after: int | None = None) -> list[str]:
    """Payloads of the notifications ``listener`` receives within ``seconds`` (or the first
    ``stop_after`` of them)."""
    return [n.payload for n in listener.notifies(timeout=seconds, stop_after=stop_after)]


def _at(text: str) -> dt.datetime:
    return dt.datetime.fromisoformat(text)


def test_an_order_and_its_tasks_commit_together_and_run_after_commit(shop):
    shop.serve()
    with psycopg.connect(shop.dsn, autocommit=True) as conn, psycopg.connect(shop.dsn, autocommit=True) as listener:
        listener.execute("LISTEN taskforge")

        # A refused order rolls back with its tasks, and its NOTIFY is never delivered.
        status, answer = shop.request("POST", "/orders", {"item": "piano", "quantity": 11, "gift_note": "enjoy"})
        assert (status, answer) == (409, {"error": "at most 10 per order"})
        assert _notified(listener, 0.5) == []
        assert _count(conn, "SELECT count(*) FROM shop_order") == 0
        assert _count(conn, "SELECT count(*) FROM taskforge.tasks") == 0

        # A good order: the order and both tasks are committed, and idle workers are woken at commit.
        made = shop.post("/orders", {"item": "book", "quantity": 2, "gift_note": "Happy birthday"})
        assert _notified(listener, 10, stop_after=1) == ["default"]
        order_id, shipping = made["order_id"], made["shipping"]
        row = task(conn, int(shipping))
        assert (row["task_type"], row["queue"], row["priority"], row["state"]) == (
            "django.task",
            "default",
            0,
            "QUEUED",
        )
        assert row["payload"] == {"module_path": "shop.tasks.ship_order", "args": [order_id], "kwargs": {}}
        assert row["max_attempts"] == 3  # OPTIONS MAX_ATTEMPTS
        queued = shop.result(shipping)
        assert (queued["status"], queued["attempts"], queued["worker_ids"], queued["errors"]) == ("READY", 0, [], [])

        # A gift note that is too long rolls back its savepoint only: the order and its shipping stay.
        kept = shop.post("/orders", {"item": "pen", "quantity": 1, "gift_note": "x" * 101})
        assert kept["gift_note"] is None
        assert _count(conn, "SELECT count(*) FROM shop_order") == 2
        paths = conn.execute("SELECT payload->>'module_path' FROM taskforge.tasks ORDER BY task_id").fetchall()
        assert [p for (p,) in paths] == ["shop.tasks.ship_order", "shop.tasks.send_gift_note", "shop.tasks.ship_order"]

    worker = shop.worker(*documented_worker_args())  # the command line of docs/django.md
    done = shop.finished(shipping)
    assert done["status"] == "SUCCESSFUL", done
    assert done["return_value"] == {"order_id": order_id, "item": "book", "shipped": True}
    assert done["errors"] == [] and done["attempts"] == 1 and len(done["worker_ids"]) == 1
    assert (
        _at(done["enqueued_at"])
        <= _at(done["started_at"])
        == _at(done["last_attempted_at"])
        <= _at(done["finished_at"])
    )
    assert done["task"] == {
        "module_path": "shop.tasks.ship_order",
        "priority": 0,
        "queue_name": "default",
        "run_after": None,
    }
    assert shop.finished(made["gift_note"])["return_value"] == {"order_id": order_id, "note": "Happy birthday"}
    assert shop.finished(kept["shipping"])["status"] == "SUCCESSFUL"
    with psycopg.connect(shop.dsn, autocommit=True) as conn:
        assert _count(conn, "SELECT count(*) FROM shop_order WHERE shipped") == 2
        worker_id = str(conn.execute("SELECT worker_id FROM taskforge.tf_workers").fetchone()[0])
    assert done["worker_ids"] == [worker_id]
    # Django's task signals ran in the worker (the shop logs them).
    wait_log(worker, f"Task id={shipping} path=shop.tasks.ship_order state=RUNNING")
    wait_log(worker, f"Task id={shipping} path=shop.tasks.ship_order state=SUCCESSFUL")

    # Task.get_result checks the task; unknown ids and other TaskForge tasks do not exist.
    assert shop.request("GET", f"/results/{shipping}?task=ship_order")[0] == 200
    status, answer = shop.request("GET", f"/results/{shipping}?task=charge_card")
    assert (status, answer) == (409, {"error": "Task does not match (received 'shop.tasks.ship_order')"})
    with psycopg.connect(shop.dsn, autocommit=True) as conn:
        other = conn.execute("SELECT task_id FROM taskforge.tf_submit(task_type => 'noop')").fetchone()[0]
    for missing in ("999999", "abc", f"0{shipping}", str(other), "99999999999999999999"):
        assert shop.request("GET", f"/results/{missing}")[0] == 404, missing


def test_failures_show_in_task_results_with_their_tracebacks(shop):
    shop.serve()
    order_id = shop.post("/orders", {"item": "lamp", "quantity": 1})["order_id"]
    declined = shop.post("/tasks/charge_card", {"args": [order_id, 0]})["id"]
    wrong_type = shop.post("/tasks/charge_card", {"args": [order_id, "ten"]})["id"]
    not_json = shop.post("/tasks/export_order", {"args": [order_id]})["id"]
    worker = shop.worker()

    failed = shop.finished(declined)
    assert failed["status"] == "FAILED" and "return_value" not in failed
    (error,) = failed["errors"]
    assert error["exception_class_path"] == error["exception_class"] == "shop.tasks.PaymentDeclined"
    assert 'raise PaymentDeclined(f"order {order_id}: amount {amount} refused")' in error["traceback"]
    assert error["traceback"].rstrip().endswith(f"shop.tasks.PaymentDeclined: order {order_id}: amount 0 refused")
    assert failed["attempts"] == 1 and failed["finished_at"] is not None
    wait_log(worker, f"Task id={declined} path=shop.tasks.charge_card state=FAILED")

    # A built-in exception is named as Django names it (builtins.TypeError), and importable.
    (error,) = shop.finished(wrong_type)["errors"]
    assert error["exception_class_path"] == error["exception_class"] == "builtins.TypeError"
    assert "if amount <= 0:" in error["traceback"]

    # A return value that is not JSON fails the attempt with an error naming the task.
    bad = shop.finished(not_json)
    assert bad["status"] == "FAILED"
    (error,) = bad["errors"]
    assert error["exception_class_path"] == error["exception_class"] == "taskforge.handlers.ResultError"
    assert (
        "taskforge.handlers.ResultError: the return value of shop.tasks.export_order is not JSON: "
        "Unsupported type: <class 'shop.models.Order'>"
    ) in error["traceback"]
    with psycopg.connect(shop.dsn, autocommit=True) as conn:
        row = task(conn, int(not_json))
        assert row["state"] == "FAILED" and row["result"] is None
        assert [a["outcome"] for a in attempts(conn, int(not_json))] == ["failed"]


def test_async_task_functions_run_on_the_workers_event_loop(shop):
    shop.serve()
    orders = [shop.post("/orders", {"item": item, "quantity": 1}) for item in ("tea", "cup")]
    worker = shop.worker("--concurrency", "4")
    for order in orders:
        assert shop.finished(order["shipping"])["status"] == "SUCCESSFUL"

    report = shop.post("/reports", {"order_ids": [o["order_id"] for o in orders]})["report"]  # aenqueue
    done = shop.finished(report, view="async-results")  # aget_result
    assert done["status"] == "SUCCESSFUL", done
    assert done["return_value"] == {"orders": 2, "shipped": 2}
    assert done["task"]["queue_name"] == "reports" and done["task"]["priority"] == -10
    with psycopg.connect(shop.dsn, autocommit=True) as conn:
        row = task(conn, int(report))
        assert (row["task_type"], row["queue"], row["priority"]) == ("django.async_task", "reports", -3270)
    wait_log(worker, "(async: django.async_task)")

    # The connection an async task's ORM calls used is closed when the task ends.
    session = shop.finished(shop.post("/tasks/async_database_session", {})["id"])
    assert session["status"] == "SUCCESSFUL", session
    with psycopg.connect(shop.dsn, autocommit=True) as conn:
        wait_for(
            lambda: _count(conn, "SELECT count(*) FROM pg_stat_activity WHERE pid = %s", session["return_value"]) == 0,
            message="the async task's connection to close",
        )


def test_priority_queue_and_run_after_map_onto_the_task(shop):
    shop.serve()
    later = (dt.datetime.now(dt.UTC) + dt.timedelta(hours=1)).replace(microsecond=0)
    deferred = shop.post(
        "/tasks/send_gift_note",
        {
            "args": [1],
            "kwargs": {"note": "later"},
            "priority": 100,
            "queue_name": "urgent",
            "run_after": later.isoformat(),
        },
    )
    assert deferred["status"] == "READY" and deferred["task"]["run_after"] == later.isoformat()
    low = shop.post("/tasks/send_gift_note", {"args": [2, "low"], "priority": -100, "queue_name": "urgent"})["id"]
    high = shop.post("/tasks/send_gift_note", {"args": [3, "high"], "priority": 7, "queue_name": "urgent"})["id"]
    with psycopg.connect(shop.dsn, autocommit=True) as conn:
        row = task(conn, int(deferred["id"]))
        assert (row["priority"], row["queue"], row["scheduled_at"]) == (32700, "urgent", later)
        assert row["payload"]["kwargs"] == {"note": "later"}
        assert [task(conn, int(i))["priority"] for i in (low, high)] == [-32700, 2289]
    read = shop.result(deferred["id"])
    assert read["task"] == {
        "module_path": "shop.tasks.send_gift_note",
        "priority": 100,
        "queue_name": "urgent",
        "run_after": later.isoformat(),
    }
    assert read["args"] == [1] and read["kwargs"] == {"note": "later"}

    # Django's checks and TaskForge's: nothing is enqueued.
    for body, message in [
        ({"args": [1, "x"], "queue_name": "nope"}, "InvalidTask: Queue 'nope' is not valid for backend."),
        ({"args": [1, "x"], "priority": 101}, "InvalidTask: priority must be a whole number between -100 and 100."),
        ({"args": [1, "x"], "run_after": "2030-01-01T00:00:00"}, "InvalidTask: run_after must be an aware datetime."),
    ]:
        assert shop.request("POST", "/tasks/send_gift_note", body) == (400, {"error": message})

    # One worker slot: the higher priority runs first; the deferred task waits for its time.
    shop.worker("--queue", "urgent")
    first, second = shop.finished(high), shop.finished(low)
    assert _at(first["started_at"]) < _at(second["started_at"])
    assert shop.result(deferred["id"])["status"] == "READY"


def test_tasks_follow_djangos_connection_rules(shop):
    shop.serve()
    # CONN_MAX_AGE = 0 (the default): every task gets a new connection, closed when it ends.
    worker = shop.worker()
    pids = []
    for _ in range(2):
        done = shop.finished(shop.post("/tasks/database_session", {})["id"])
        assert done["status"] == "SUCCESSFUL", done
        pids.append(done["return_value"])
    assert pids[0] != pids[1]
    with psycopg.connect(shop.dsn, autocommit=True) as conn:
        wait_for(
            lambda: _count(conn, "SELECT count(*) FROM pg_stat_activity WHERE pid = ANY(%s)", pids) == 0,
            message="the tasks' connections to close",
        )
    assert worker.stop() == 0

    # Persistent connections (CONN_MAX_AGE 600): the next task reuses the connection.
    shop.worker(env={"SHOP_CONN_MAX_AGE": "600"})
    reused = [shop.finished(shop.post("/tasks/database_session", {})["id"])["return_value"] for _ in range(2)]
    assert reused[0] == reused[1]
    with psycopg.connect(shop.dsn, autocommit=True) as conn:
        assert _count(conn, "SELECT count(*) FROM pg_stat_activity WHERE pid = %s", reused[0]) == 1

    # A task that takes the context gets its own result: its id and attempt.
    audit = shop.post("/tasks/audit_order", {"args": [5]})["id"]
    assert shop.finished(audit)["return_value"] == {"order_id": 5, "result_id": audit, "attempt": 1}
