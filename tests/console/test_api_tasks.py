"""JSON API over tasks: submit, list, detail, cancel, retry, bulk forms, and their errors."""

from __future__ import annotations

import datetime as dt
import json
import time
from typing import Any

import pytest

from taskforge.database import UNDECODED_JSON_KEY
from taskforge_console import queries

from console_support import BEARER, TOKEN
from sqlcore_helpers import (
    claim,
    delete_tasks_as_owner,
    finalize,
    insert_task_as_owner,
    nested_json,
    recover,
    register_worker,
    submit,
)


def _submit(api: Any, queue: str, **fields: Any) -> dict[str, Any]:
    response = api.post("/api/tasks", json={"task_type": "noop", "queue": queue, **fields})
    assert response.status_code == 201, response.get_json()
    return response.get_json()


def _state(admin: Any, task_id: int) -> str:
    return admin.execute("SELECT state FROM taskforge.tf_tasks WHERE task_id = %s", (task_id,)).fetchone()[0]


# --- POST /api/tasks --------------------------------------------------------------------------
def test_submit_creates_then_replays_then_conflicts(api: Any, queue: str) -> None:
    request = {"task_type": "echo", "queue": queue, "payload": {"n": 1}, "idempotency_key": queue, "priority": 5}
    first = api.post("/api/tasks", json=request)
    assert first.status_code == 201
    body = first.get_json()
    assert body["state"] == "QUEUED" and body["created"] is True
    assert first.headers["Location"].endswith(f"/api/tasks/{body['task_id']}")

    replay = api.post("/api/tasks", json=request)
    assert replay.status_code == 200
    assert replay.get_json() == {"task_id": body["task_id"], "state": "QUEUED", "created": False}

    conflict = api.post("/api/tasks", json={**request, "payload": {"n": 2}})
    assert conflict.status_code == 409
    assert conflict.get_json()["code"] == "conflict"
    assert conflict.get_json()["field"] == "idempotency_key"


@pytest.mark.parametrize(
    ("fields", "field"),
    [
        ({"priority": 40000}, "priority"),  # the database's bound (TF400)
        ({"max_attempts": 0}, "max_attempts"),
        ({"task_type": "no_such_type"}, "task_type"),
        ({"queue": "bad queue!"}, "queue"),
        ({"idempotency_key": ""}, "idempotency_key"),
        ({"payload": [1, 2]}, "payload"),  # not an object (request schema)
        ({"priority": "high"}, "priority"),
        ({"priority": 2**40}, "priority"),  # beyond SQL int (request schema)
        ({"colour": "red"}, "colour"),  # unknown field
        ({"scheduled_at": "2030-01-01T00:00:00"}, "scheduled_at"),  # no offset
        ({"delay_seconds": -1}, "delay_seconds"),
        ({"delay_seconds": 5, "scheduled_at": "2030-01-01T00:00:00Z"}, "delay_seconds"),
        ({"queue": "a\u0000b"}, "queue"),  # no NUL in PostgreSQL text
    ],
)
def test_submit_refusal_names_the_field(api: Any, admin: Any, queue: str, fields: dict[str, Any], field: str) -> None:
    before = admin.execute("SELECT count(*) FROM taskforge.tf_tasks").fetchone()[0]
    request = {"task_type": "noop", "queue": queue, **fields}
    response = api.post("/api/tasks", json=request)
    assert response.status_code == 400, response.get_json()
    body = response.get_json()
    assert body["code"] == "invalid_argument"
    assert body["field"] == field
    assert body["message"].startswith(field)
    assert admin.execute("SELECT count(*) FROM taskforge.tf_tasks").fetchone()[0] == before


def test_submit_without_a_json_body_is_400(api: Any) -> None:
    for data, content_type in (("", "application/json"), ("{not json", "application/json"), ("[]", "application/json")):
        response = api.post("/api/tasks", data=data, content_type=content_type)
        assert response.status_code == 400
        assert response.get_json()["code"] == "invalid_argument"


def test_submit_too_large_is_413_and_writes_nothing(make_app: Any, admin: Any, queue: str) -> None:
    app = make_app(token=TOKEN, max_content_length=4096)
    client = app.test_client()
    big = {"task_type": "noop", "queue": queue, "payload": {"blob": "x" * 5000}}
    response = client.post("/api/tasks", json=big, headers=BEARER)
    assert response.status_code == 413
    assert response.get_json()["code"] == "request_entity_too_large"
    assert admin.execute("SELECT count(*) FROM taskforge.tf_tasks WHERE queue = %s", (queue,)).fetchone()[0] == 0
    small = client.post("/api/tasks", json={**big, "payload": {"blob": "x"}}, headers=BEARER)
    assert small.status_code == 201


def test_submit_delayed_uses_database_time(api: Any, admin: Any, queue: str) -> None:
    task = _submit(api, queue, delay_seconds=3600)
    ahead = admin.execute(
        "SELECT extract(epoch FROM scheduled_at - now()) FROM taskforge.tf_tasks WHERE task_id = %s",
        (task["task_id"],),
    ).fetchone()[0]
    assert 3500 < float(ahead) <= 3600


def test_submit_takes_a_per_task_timeout(api: Any, admin: Any, queue: str) -> None:
    task = _submit(api, queue, timeout_seconds=45)
    row = admin.execute("SELECT timeout_seconds FROM taskforge.tasks WHERE task_id = %s", (task["task_id"],)).fetchone()
    assert row == (45.0,)


# --- GET /api/tasks ---------------------------------------------------------------------------
def test_list_pages_with_a_keyset_cursor(api: Any, queue: str) -> None:
    ids = [_submit(api, queue)["task_id"] for _ in range(5)]
    seen: list[int] = []
    cursor = None
    pages = 0
    while True:
        url = f"/api/tasks?queue={queue}&limit=2" + (f"&cursor={cursor}" if cursor else "")
        page = api.get(url).get_json()
        seen += [t["task_id"] for t in page["tasks"]]
        pages += 1
        cursor = page["next_cursor"]
        if cursor is None:
            break
        assert cursor == page["tasks"][-1]["task_id"]
    assert seen == sorted(ids, reverse=True)
    assert pages == 3


def test_list_filters(api: Any, admin: Any, queue: str) -> None:
    a = _submit(api, queue)["task_id"]
    b = _submit(api, queue, task_type="echo")["task_id"]
    c = _submit(api, queue)["task_id"]
    api.post(f"/api/tasks/{c}/cancel")

    def ids(query: str) -> list[int]:
        response = api.get(f"/api/tasks?queue={queue}&{query}")
        assert response.status_code == 200, response.get_json()
        return [t["task_id"] for t in response.get_json()["tasks"]]

    assert ids("task_type=echo") == [b]
    assert ids("state=CANCELLED") == [c]
    assert ids("state=CANCELLED&state=QUEUED") == [c, b, a]
    assert ids(f"task_id={a}") == [a]
    created_b = admin.execute("SELECT created_at FROM taskforge.tasks WHERE task_id = %s", (b,)).fetchone()[0]
    stamp = created_b.isoformat().replace("+00:00", "Z")
    from urllib.parse import quote

    assert ids(f"created_after={quote(stamp)}") == [c, b]
    assert ids(f"created_before={quote(stamp)}") == [a]
    assert ids(f"finished_after={quote(stamp)}") == [c]
    future = quote((dt.datetime.now(dt.UTC) + dt.timedelta(days=1)).isoformat())
    assert ids(f"finished_before={future}") == [c]


@pytest.mark.parametrize(
    ("query", "field"),
    [
        ("state=DONE", "state.0"),
        ("limit=0", "limit"),
        ("limit=501", "limit"),
        ("cursor=abc", "cursor"),
        ("created_after=2030-01-01T00:00:00", "created_after"),
        ("task_id=-4", "task_id"),
    ],
)
def test_list_refuses_bad_filters(api: Any, query: str, field: str) -> None:
    response = api.get(f"/api/tasks?{query}")
    assert response.status_code == 400
    assert response.get_json()["field"] == field


# --- GET /api/tasks/<id> ----------------------------------------------------------------------
def test_detail_has_the_attempt_timeline(api: Any, admin: Any, queue: str) -> None:
    task_id = _submit(api, queue, max_attempts=3, payload={"x": 1})["task_id"]
    worker = register_worker(admin, name="console-test", queues=[queue])
    (row,) = claim(admin, worker, queues=[queue], lease_seconds=0.2)
    time.sleep(0.3)
    recover(admin)
    (row,) = claim(admin, worker, queues=[queue])
    finalize(admin, task_id, worker, row[1], "succeeded", result={"ok": True})

    body = api.get(f"/api/tasks/{task_id}").get_json()
    assert body["state"] == "SUCCEEDED" and body["payload"] == {"x": 1} and body["result"] == {"ok": True}
    first, second = body["attempts"]
    assert first["attempt_number"] == 1 and first["state"] == "ABANDONED"
    assert first["recovery_lag_seconds"] >= 0 and first["worker_name"] == "console-test"
    assert second["state"] == "SUCCEEDED" and second["recovery_lag_seconds"] is None


def test_detail_of_a_missing_task_is_404(api: Any) -> None:
    response = api.get("/api/tasks/999999999999")
    assert response.status_code == 404
    assert response.get_json() == {
        "code": "not_found",
        "message": "task_id: no task 999999999999",
        "field": "task_id",
    }
    assert api.get("/api/tasks/99999999999999999999").status_code == 400  # beyond bigint


# --- cancel / retry ---------------------------------------------------------------------------
def test_cancel_and_retry_one_task(api: Any, admin: Any, queue: str) -> None:
    task_id = _submit(api, queue)["task_id"]
    refused = api.post(f"/api/tasks/{task_id}/retry")
    assert refused.status_code == 409 and refused.get_json()["code"] == "conflict"

    cancelled = api.post(f"/api/tasks/{task_id}/cancel", json={"reason": "not needed"})
    assert cancelled.status_code == 200
    assert cancelled.get_json() == {"task_id": task_id, "task_state": "CANCELLED", "cancel_requested": True}
    reason = admin.execute("SELECT cancel_reason FROM taskforge.tf_tasks WHERE task_id = %s", (task_id,)).fetchone()
    assert reason == ("not needed",)

    retried = api.post(f"/api/tasks/{task_id}/retry", json={"extra_attempts": 2})
    assert retried.status_code == 200
    assert retried.get_json()["task_state"] == "QUEUED"
    assert _state(admin, task_id) == "QUEUED"

    assert api.post(f"/api/tasks/{task_id}/cancel").status_code == 200  # no body at all
    assert api.post("/api/tasks/999999999999/cancel").status_code == 404
    bad = api.post(f"/api/tasks/{task_id}/retry", json={"extra_attempts": 0})
    assert bad.status_code == 400 and bad.get_json()["field"] == "extra_attempts"
    bad = api.post(f"/api/tasks/{task_id}/cancel", json={"why": "x"})
    assert bad.status_code == 400 and bad.get_json()["field"] == "why"


def test_bulk_cancel_by_ids_reports_refusals_and_goes_on(api: Any, admin: Any, queue: str) -> None:
    a, b = (_submit(api, queue)["task_id"] for _ in range(2))
    response = api.post("/api/tasks/cancel", json={"task_ids": [b, a, 999999999999], "reason": "bulk"})
    assert response.status_code == 200
    body = response.get_json()
    assert [t["task_id"] for t in body["cancelled"]] == [a, b]
    assert body["refused"] == [
        {"task_id": 999999999999, "code": "not_found", "message": "task_id: no task 999999999999"}
    ]
    assert body["more"] is False
    assert _state(admin, a) == _state(admin, b) == "CANCELLED"


def test_bulk_retry_falls_back_to_one_by_one_on_a_refusal(api: Any, admin: Any, queue: str) -> None:
    a, b = (_submit(api, queue)["task_id"] for _ in range(2))
    api.post(f"/api/tasks/{a}/cancel")
    response = api.post("/api/tasks/retry", json={"task_ids": [a, b]})
    body = response.get_json()
    assert [t["task_id"] for t in body["retried"]] == [a]
    assert [(r["task_id"], r["code"]) for r in body["refused"]] == [(b, "conflict")]
    assert _state(admin, a) == "QUEUED"


def test_bulk_by_filter_is_capped_and_says_more(api: Any, admin: Any, queue: str, monkeypatch: Any) -> None:
    monkeypatch.setattr(queries, "BULK_LIMIT", 3)
    ids = [_submit(api, queue)["task_id"] for _ in range(5)]
    first = api.post("/api/tasks/cancel", json={"filter": {"queue": queue}}).get_json()
    assert [t["task_id"] for t in first["cancelled"]] == sorted(ids)[2:]  # the newest three
    assert first["more"] is True
    second = api.post("/api/tasks/cancel", json={"filter": {"queue": queue}}).get_json()
    assert [t["task_id"] for t in second["cancelled"]] == sorted(ids)[:2]
    assert second["more"] is False
    again = api.post("/api/tasks/cancel", json={"filter": {"queue": queue}}).get_json()
    assert again == {"cancelled": [], "refused": [], "more": False}  # nothing left to change

    retried = api.post("/api/tasks/retry", json={"filter": {"queue": queue, "state": ["CANCELLED"]}}).get_json()
    assert len(retried["retried"]) == 3 and retried["more"] is True
    none = api.post("/api/tasks/retry", json={"filter": {"queue": queue, "state": ["SUCCEEDED"]}}).get_json()
    assert none == {"retried": [], "refused": [], "more": False}


@pytest.mark.parametrize(
    "body",
    [
        {},
        {"task_ids": [1], "filter": {"queue": "q"}},
        {"task_ids": []},
        {"task_ids": ["x"]},
        {"filter": {"state": ["NOPE"]}},
    ],
)
def test_bulk_needs_exactly_one_valid_selector(api: Any, body: dict[str, Any]) -> None:
    response = api.post("/api/tasks/cancel", json=body)
    assert response.status_code == 400
    assert response.get_json()["code"] == "invalid_argument"


def test_bulk_ids_are_capped(api: Any) -> None:
    response = api.post("/api/tasks/retry", json={"task_ids": list(range(1, queries.BULK_LIMIT + 2))})
    assert response.status_code == 400
    assert response.get_json()["field"] == "task_ids"


def test_a_payload_with_markup_stays_text_in_json(api: Any, queue: str) -> None:
    script = "<script>alert(1)</script>"
    task_id = _submit(api, queue, payload={"html": script})["task_id"]
    response = api.get(f"/api/tasks/{task_id}")
    raw = response.get_data(as_text=True)
    assert "<script>" not in raw and "\\u003cscript\\u003e" in raw
    assert response.get_json()["payload"] == {"html": script}  # the same value once parsed
    assert response.headers["Content-Type"] == "application/json"
    assert response.headers["X-Content-Type-Options"] == "nosniff"


def test_tasks_submitted_outside_the_console_are_listed(api: Any, admin: Any, queue: str) -> None:
    task_id, _, _ = submit(admin, queue)
    assert [t["task_id"] for t in api.get(f"/api/tasks?queue={queue}").get_json()["tasks"]] == [task_id]


def test_a_document_nested_too_deep_is_a_placeholder_not_a_500(make_app: Any, admin: Any, queue: str) -> None:
    """Payloads a table owner wrote past tf_submit's 100 levels: 300 levels (Python decodes it,
    the API's encoder does not) and 1001 levels (Python's json module cannot decode it). The
    task's detail and page answer 200 with a placeholder; 100 levels are shown as they are."""
    web = make_app().test_client()
    ids = {levels: insert_task_as_owner(admin, nested_json(levels), queue) for levels in (100, 300, 1001)}
    try:
        for levels, task_id in ids.items():
            response = web.get(f"/api/tasks/{task_id}")
            assert response.status_code == 200, (levels, response.get_data(as_text=True)[:300])
            payload = response.get_json()["payload"]
            page = web.get(f"/tasks/{task_id}")
            assert page.status_code == 200, levels
            if levels == 100:
                assert payload == json.loads(nested_json(100))
                continue
            assert set(payload) == {UNDECODED_JSON_KEY}, levels
            why = "more than 200 levels deep" if levels == 300 else "too deep for Python's json module"
            assert why in payload[UNDECODED_JSON_KEY] and "SELECT payload::text" in payload[UNDECODED_JSON_KEY]
            assert UNDECODED_JSON_KEY in page.get_data(as_text=True)
        listed = web.get(f"/api/tasks?queue={queue}")
        assert listed.status_code == 200
        assert [t["task_id"] for t in listed.get_json()["tasks"]] == sorted(ids.values(), reverse=True)
    finally:
        delete_tasks_as_owner(admin, list(ids.values()))
