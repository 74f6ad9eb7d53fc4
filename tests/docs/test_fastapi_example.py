"""examples/fastapi_sqlalchemy_app.py (docs/integration.md) runs as written: the order and its
task commit together or not at all, and GET /tasks/{id} waits for the task's end."""

from __future__ import annotations

import importlib.util
import re
import threading
from collections.abc import Iterator
from types import ModuleType

import psycopg
import pytest
from fastapi.testclient import TestClient

from taskforge import client

from itest_support import ROOT
from sqlcore_helpers import as_uri, run_only_task, unique_name

EXAMPLE = ROOT / "examples" / "fastapi_sqlalchemy_app.py"


@pytest.fixture()
def app_module(db_dsn, conn, monkeypatch) -> Iterator[ModuleType]:
    """The example imported as its docstring runs it: TASKFORGE_DSN set, its table and task type made."""
    conn.execute(
        "CREATE TABLE public.shop_orders (order_id bigserial PRIMARY KEY, item text NOT NULL,"
        " quantity int NOT NULL CHECK (quantity > 0))"
    )
    conn.execute("SELECT taskforge.tf_register_task_type('ship_order')")
    monkeypatch.setenv("TASKFORGE_DSN", as_uri(db_dsn))
    spec = importlib.util.spec_from_file_location("fastapi_sqlalchemy_app", EXAMPLE)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    try:
        yield module
    finally:
        conn.execute("DROP TABLE public.shop_orders")


def _orders(conn: psycopg.Connection) -> int:
    return conn.execute("SELECT count(*) FROM public.shop_orders").fetchone()[0]


def test_orders_and_their_tasks_commit_together_and_results_are_awaited(app_module, conn, db_dsn):
    queue = unique_name("shop")
    with TestClient(app_module.app) as http:
        made = http.post("/orders", json={"item": "book", "quantity": 2, "queue": queue})
        assert made.status_code == 200, made.text
        task_id = made.json()["task_id"]
        assert client.get_task(conn, task_id).state == "QUEUED"
        assert _orders(conn) == 1

        # The insert fails after the submit: the task is rolled back with it.
        refused = http.post("/orders", json={"item": "book", "quantity": 0, "queue": queue})
        assert refused.status_code == 400, refused.text
        # TaskForge refuses the submit: the order is never inserted.
        bad_queue = http.post("/orders", json={"item": "book", "quantity": 1, "queue": "no spaces allowed"})
        assert bad_queue.status_code == 400 and bad_queue.json()["detail"]["field"] == "queue"
        assert (_orders(conn), len(client.list_tasks(conn, queue=queue))) == (1, 1)

        assert http.get(f"/tasks/{task_id}", params={"wait": 0.3}).status_code == 504
        shipper = threading.Timer(0.3, run_only_task, (db_dsn, queue, task_id), {"result": {"shipped": True}})
        shipper.start()
        try:
            outcome = http.get(f"/tasks/{task_id}", params={"wait": 60})
        finally:
            shipper.join()
        assert outcome.status_code == 200, outcome.text
        assert outcome.json() == {"task_id": task_id, "state": "SUCCEEDED", "result": {"shipped": True}, "error": None}
        assert http.get("/tasks/999999999999", params={"wait": 1}).status_code == 404


def test_the_docs_quote_the_example_that_runs():
    """docs/integration.md shows the example's endpoint word for word, so what it shows is what ran."""
    doc = (ROOT / "docs" / "integration.md").read_text()
    section = doc[doc.index("### SQLAlchemy and FastAPI") : doc.index("### Django")]
    (snippet,) = re.findall(r"```python\n(.*?)```", section, re.S)
    assert snippet in EXAMPLE.read_text()
