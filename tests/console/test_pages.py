"""The console's HTML pages through Flask's test client, on the session's migrated database as a
login role holding only taskforge_console: every page renders, filters and keyset pages, the
bulk confirmation step, task/queue actions (plain form posts and htmx), the submit form and its
refusals, escaping of everything a user can write, sign-in, read-only mode and CSRF."""

from __future__ import annotations

import datetime as dt
import html
import json
import re
import time
from typing import Any

import pytest

from taskforge import client

from console_support import PASSWORD
from sqlcore_helpers import claim, finalize, recover, register_worker, submit

XSS = "<script>alert(1)</script>"
CSRF_META = re.compile(r'<meta name="csrf-token" content="([^"]+)"')


def csrf(client: Any, path: str = "/workers") -> str:
    """The session's CSRF token, read from a page's meta tag."""
    page = client.get(path)
    assert page.status_code == 200, page.status_code
    match = CSRF_META.search(page.get_data(as_text=True))
    assert match, "no csrf-token meta tag"
    return match.group(1)


def text(response: Any) -> str:
    return str(response.get_data(as_text=True))


def state(admin: Any, task_id: int) -> str:
    return str(admin.execute("SELECT state FROM taskforge.tf_tasks WHERE task_id = %s", (task_id,)).fetchone()[0])


@pytest.fixture()
def app(make_app: Any) -> Any:
    return make_app()


@pytest.fixture()
def web(app: Any) -> Any:
    return app.test_client()


# --- rendering ---------------------------------------------------------------------------------
def test_every_page_renders_with_its_data(web: Any, admin: Any, queue: str) -> None:
    worker = register_worker(admin, f"pages-{queue}", [queue])
    done, _, _ = submit(admin, queue, "echo", {"n": 1})
    running, _, _ = submit(admin, queue, "noop")
    waiting, _, _ = submit(admin, queue, "noop")
    first = claim(admin, worker, [queue], max_tasks=2)
    assert {r[0] for r in first} == {done, running}
    assert finalize(admin, done, worker, 1, "succeeded", {"n": 1})[0]

    dashboard = text(web.get("/"))
    row = re.search(rf"<tr>\s*<td><a href=\"/tasks\?queue={queue}\">{queue}</a>.*?</tr>", dashboard, re.S)
    assert row, "the queue's row on the dashboard"
    numbers = re.findall(r'<td class="num[^"]*">(?:<a [^>]*>)?(\d*)', row.group(0))
    # queued, due, running, retrying, then succeeded/failed/cancelled in the last hour
    assert numbers[:7] == ["1", "1", "1", "0", "1", "0", "0"], numbers
    assert 'data-src="/dashboard/series.json"' in dashboard

    tasks = text(web.get(f"/tasks?queue={queue}"))
    assert [int(i) for i in re.findall(r'<tr data-task-id="(\d+)"', tasks)] == [waiting, running, done]

    page = text(web.get(f"/tasks/{done}"))
    assert "SUCCEEDED" in page and 'id="attempt-table"' in page and "pages-" in page
    assert '<pre class="json" id="result">' in page

    queues = text(web.get("/queues"))
    assert f'<tr data-queue="{queue}">' in queues

    workers = text(web.get("/workers"))
    worker_row = re.search(rf'<tr data-worker="{worker}">.*?</tr>', workers, re.S)
    assert worker_row and "liveness-alive" in worker_row.group(0)
    assert f'href="/tasks/{running}"' in worker_row.group(0), "the worker's current task"

    submit_page = text(web.get("/submit"))
    assert '<option value="echo"' in submit_page and '<option value="sleep"' in submit_page


def test_series_has_sixty_minutes_and_this_minutes_attempts(web: Any, admin: Any, queue: str) -> None:
    worker = register_worker(admin, "series", [queue])
    ids = [submit(admin, queue)[0] for _ in range(3)]
    claim(admin, worker, [queue], max_tasks=3)
    for i, task_id in enumerate(ids):
        finalize(admin, task_id, worker, 1, "failed" if i == 0 else "succeeded")
    body = web.get("/dashboard/series.json").get_json()
    assert len(body["minutes"]) == 60
    assert body["minutes"][-1] - body["minutes"][0] == 59 * 60
    mine = body["queues"][queue]
    assert sum(mine["succeeded"]) == 2 and sum(mine["failed"]) == 1
    assert mine["succeeded"][-1] + mine["succeeded"][-2] == 2  # this minute (or the one just before)
    assert any(v is not None and v >= 0 for v in mine["wait_p50"])


def test_live_regions_come_back_alone_for_htmx(web: Any, admin: Any, queue: str) -> None:
    task_id, _, _ = submit(admin, queue)
    for path, region in (
        ("/", "dashboard-region"),
        (f"/tasks?queue={queue}", "tasks-region"),
        (f"/tasks/{task_id}", "task-region"),
        ("/queues", "queues-region"),
        ("/workers", "workers-region"),
        ("/periodic", "periodic-region"),
    ):
        full = text(web.get(path))
        assert f'id="{region}" data-refresh hx-get=' in full and "<html" in full
        selector = re.search(r"<select data-refresh-select.*?</select>", full, re.S)
        assert selector, f"{path} has the refresh selector"
        assert re.findall(r'<option value="(\d+)">', selector.group(0)) == ["0", "1", "2", "5", "10", "30", "60"]
        part = text(web.get(path, headers={"HX-Request": "true"}))
        assert part.lstrip().startswith(f'<section id="{region}"'), path
        assert "<html" not in part


def test_pages_load_no_inline_script(web: Any, admin: Any, queue: str) -> None:
    task_id, _, _ = submit(admin, queue)
    for path in ("/", "/tasks", f"/tasks/{task_id}", "/queues", "/workers", "/periodic", "/submit"):
        body = text(web.get(path))
        scripts = re.findall(r"<script([^>]*)>(.*?)</script>", body, re.S)
        assert scripts, path
        assert all('src="/static/' in attrs and not inner.strip() for attrs, inner in scripts), path
        assert " style=" not in body and "<style" not in body, path
        assert re.search(r"\son[a-z]+=", body) is None, f"{path} has an inline event handler"


# --- escaping ------------------------------------------------------------------------------------
def test_user_text_is_shown_as_text_everywhere(web: Any, admin: Any, queue: str) -> None:
    worker = register_worker(admin, XSS, [queue])
    task_id, _, _ = submit(admin, queue, "echo", {"html": XSS}, idempotency_key=f"{queue}{XSS}")
    claim(admin, worker, [queue])
    error = {"type": XSS, "message": XSS, "traceback": f'Traceback:\n  File "x.py"\n{XSS}\n'}
    finalize(admin, task_id, worker, 1, "failed", error=error)
    admin.execute("SELECT * FROM taskforge.tf_retry(task_id => %s)", (task_id,))
    admin.execute("SELECT * FROM taskforge.tf_cancel(task_id => %s, reason => %s)", (task_id, XSS))
    for path in ("/", "/tasks", f"/tasks?queue={queue}", f"/tasks/{task_id}", "/queues", "/workers"):
        body = text(web.get(path))
        assert "<script>alert" not in body, path
    page = text(web.get(f"/tasks/{task_id}"))
    assert page.count("&lt;script&gt;alert(1)&lt;/script&gt;") >= 5  # payload, key, error, traceback, worker, reason
    payload = re.search(r'<pre class="json" id="payload">(.*?)</pre>', page, re.S)
    assert payload and html.unescape(payload.group(1)) == json.dumps({"html": XSS}, indent=2)  # readable, not \u003c
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in text(web.get("/workers"))


def test_a_refused_filter_is_echoed_escaped(web: Any) -> None:
    response = web.get("/tasks", query_string={"queue": XSS, "task_id": XSS})
    body = text(response)
    assert response.status_code == 400
    assert "<script>alert" not in body and "task_id:" in body


# --- filters and keyset pages ----------------------------------------------------------------------
def test_filters_and_keyset_pages(web: Any, admin: Any, queue: str) -> None:
    ids = [submit(admin, queue, "echo" if i % 2 else "noop")[0] for i in range(7)]
    worker = register_worker(admin, "filters", [queue])
    claim(admin, worker, [queue], max_tasks=1)
    finalize(admin, ids[0], worker, 1, "failed")

    def listed(**args: Any) -> tuple[list[int], str | None]:
        body = text(web.get("/tasks", query_string={"queue": queue, **args}))
        found = [int(i) for i in re.findall(r'<tr data-task-id="(\d+)"', body)]
        more = re.search(r'<a href="([^"]+)" rel="next">', body)
        return found, (more.group(1).replace("&amp;", "&") if more else None)

    newest_first = sorted(ids, reverse=True)
    seen: list[int] = []
    page, next_url = listed(limit=3)
    seen += page
    while next_url:
        body = text(web.get(next_url))
        page = [int(i) for i in re.findall(r'<tr data-task-id="(\d+)"', body)]
        seen += page
        more = re.search(r'<a href="([^"]+)" rel="next">', body)
        next_url = more.group(1).replace("&amp;", "&") if more else None
        assert "« newest" in body
    assert seen == newest_first, "three keyset pages, no gap, no repeat"

    assert listed(state="FAILED")[0] == [ids[0]]
    assert listed(state=["FAILED", "QUEUED"])[0] == newest_first
    assert listed(task_type="echo")[0] == [i for i in newest_first if ids.index(i) % 2]
    assert listed(task_id=str(ids[3]))[0] == [ids[3]]
    created = admin.execute("SELECT created_at FROM taskforge.tf_tasks WHERE task_id = %s", (ids[3],)).fetchone()[0]
    utc = created.astimezone(dt.UTC).replace(tzinfo=None)
    after = (utc - dt.timedelta(microseconds=utc.microsecond)).isoformat()  # a datetime-local value, read as UTC
    assert set(listed(created_after=after)[0]) >= set(ids[4:])
    assert listed(finished_after="2000-01-01T00:00")[0] == [ids[0]]
    assert listed(finished_before="2000-01-01T00:00")[0] == []


# --- bulk actions ------------------------------------------------------------------------------------
def test_bulk_cancel_of_ticked_tasks_needs_the_confirmation(web: Any, admin: Any, queue: str) -> None:
    ids = [submit(admin, queue)[0] for _ in range(3)]
    token = csrf(web)
    form = {"csrf_token": token, "action": "cancel", "selected": [str(ids[0]), str(ids[1])], "queue": queue}
    preview = web.post("/tasks/bulk", data=form)
    assert preview.status_code == 200
    assert "Cancel 2 tasks?" in text(preview)
    assert [state(admin, i) for i in ids] == ["QUEUED"] * 3, "the first step changes nothing"

    done = web.post("/tasks/bulk", data={**form, "confirm": "1"})
    assert done.status_code == 200
    assert "Cancel: 2 changed" in text(done)
    assert [state(admin, i) for i in ids] == ["CANCELLED", "CANCELLED", "QUEUED"]


def test_bulk_retry_of_everything_matching_the_filter(web: Any, admin: Any, queue: str) -> None:
    worker = register_worker(admin, "bulk-retry", [queue])
    ids = [submit(admin, queue, max_attempts=1)[0] for _ in range(4)]
    claim(admin, worker, [queue], max_tasks=3)
    for task_id in ids[:3]:
        finalize(admin, task_id, worker, 1, "failed")
    token = csrf(web)
    form = {"csrf_token": token, "action": "retry", "all_matching": "1", "queue": queue, "state": "FAILED"}
    preview = text(web.post("/tasks/bulk", data=form))
    assert "Retry 3 tasks?" in preview and "Every task matching the filter" in preview
    assert [state(admin, i) for i in ids] == ["FAILED", "FAILED", "FAILED", "QUEUED"]
    done = text(web.post("/tasks/bulk", data={**form, "confirm": "1"}))
    assert "Retry: 3 changed" in done
    assert [state(admin, i) for i in ids] == ["QUEUED"] * 4


def test_bulk_refusals(web: Any, admin: Any, queue: str) -> None:
    token = csrf(web)
    nothing = web.post("/tasks/bulk", data={"csrf_token": token, "action": "cancel"})
    assert nothing.status_code == 400 and "selected: tick at least one task" in text(nothing)
    bad = web.post("/tasks/bulk", data={"csrf_token": token, "action": "explode", "selected": "1"})
    assert bad.status_code == 400 and "action: must be one of" in text(bad)
    task_id, _, _ = submit(admin, queue)
    wrong_state = text(
        web.post("/tasks/bulk", data={"csrf_token": token, "action": "retry", "selected": str(task_id), "confirm": "1"})
    )
    assert "Retry: 0 changed, 1 refused" in wrong_state and state(admin, task_id) == "QUEUED"


# --- single-task actions --------------------------------------------------------------------------
def test_cancel_and_retry_buttons(web: Any, admin: Any, queue: str) -> None:
    task_id, _, _ = submit(admin, queue)
    page = text(web.get(f"/tasks/{task_id}"))
    assert 'id="cancel-button"' in page and 'id="retry-button"' not in page
    token = csrf(web)
    plain = web.post(f"/tasks/{task_id}/cancel", data={"csrf_token": token})
    assert plain.status_code == 302 and plain.headers["Location"].endswith(f"/tasks/{task_id}")
    after = text(web.get(f"/tasks/{task_id}"))
    assert state(admin, task_id) == "CANCELLED" and f"Task {task_id} is CANCELLED." in after
    assert 'id="retry-button"' in after and 'id="cancel-button"' not in after

    region = web.post(f"/tasks/{task_id}/retry", data={"csrf_token": token}, headers={"HX-Request": "true"})
    body = text(region)
    assert region.status_code == 200 and body.lstrip().startswith('<section id="task-region"')
    assert "QUEUED again" in body and state(admin, task_id) == "QUEUED"
    refused = text(web.post(f"/tasks/{task_id}/retry", data={"csrf_token": token}, headers={"HX-Request": "true"}))
    assert "notice error" in refused and "TF409" not in refused and state(admin, task_id) == "QUEUED"


def test_missing_task_is_404(web: Any) -> None:
    assert web.get("/tasks/999999999999").status_code == 404


def test_attempt_timeline_shows_the_recovery_lag_of_an_abandoned_attempt(web: Any, admin: Any, queue: str) -> None:
    worker = register_worker(admin, "timeline", [queue])
    task_id, _, _ = submit(admin, queue)
    claim(admin, worker, [queue], lease_seconds=0.05)
    time.sleep(0.2)
    assert recover(admin)[0] >= 1
    claim(admin, worker, [queue])
    finalize(admin, task_id, worker, 2, "succeeded")
    page = text(web.get(f"/tasks/{task_id}"))
    rows = re.findall(r'<tr data-attempt="(\d)">(.*?)</tr>', page, re.S)
    assert [n for n, _ in rows] == ["1", "2"]
    assert "ABANDONED" in rows[0][1] and "lease_expired" in rows[0][1]
    lag = admin.execute(
        "SELECT recovery_lag_seconds FROM taskforge.tf_attempts WHERE task_id = %s AND attempt_number = 1", (task_id,)
    ).fetchone()[0]
    assert lag > 0 and f"{lag:.2f} s" in rows[0][1], "the recovery lag, in seconds"
    assert '<rect class="lag"' in page and 'class="run run-succeeded' in page


# --- periodic schedules -------------------------------------------------------------------------------


def test_periodic_page_lists_schedules_with_their_last_task(web: Any, admin: Any, queue: str) -> None:
    name = f"{queue}-nightly"
    try:
        client.schedule_periodic(admin, name, "30 2 * * *", "echo", queue=queue, timezone="Europe/Berlin")
        before = text(web.get("/periodic"))
        row = re.search(rf'<tr data-schedule="{name}">.*?</tr>', before, re.S)
        assert row and "<code>30 2 * * *</code>" in row.group(0) and "Europe/Berlin" in row.group(0)
        assert "not yet" in row.group(0), "no tick fired yet"
        # Its tick is due and a scheduler pass enqueues it.
        admin.execute(
            "UPDATE taskforge.periodic_schedules SET next_fire_at = date_trunc('minute', clock_timestamp()) "
            "WHERE name = %s",
            (name,),
        )
        admin.execute("SELECT * FROM taskforge.tf_enqueue_periodic()")
        task_id = next(r.last_task_id for r in client.list_periodic(admin) if r.name == name)
        assert task_id is not None
        after = text(web.get("/periodic"))
        row = re.search(rf'<tr data-schedule="{name}">.*?</tr>', after, re.S)
        assert row and f'href="/tasks/{task_id}"' in row.group(0) and "QUEUED" in row.group(0)
        assert 'href="/periodic"' in after, "the navigation links the page"
    finally:
        client.unschedule_periodic(admin, name)
    assert f'data-schedule="{name}"' not in text(web.get("/periodic"))


# --- queues -----------------------------------------------------------------------------------------
def test_pause_and_resume_a_queue(web: Any, admin: Any, queue: str) -> None:
    submit(admin, queue)
    token = csrf(web)
    paused = web.post("/queues/pause", data={"csrf_token": token, "queue": queue}, headers={"HX-Request": "true"})
    body = text(paused)
    assert body.lstrip().startswith('<section id="queues-region"') and f"Queue {queue} paused." in body
    assert admin.execute("SELECT paused FROM taskforge.tf_queues WHERE queue = %s", (queue,)).fetchone()[0] is True
    row = re.search(rf'<tr data-queue="{queue}">.*?</tr>', body, re.S)
    assert row and 'data-queue-action="resume"' in row.group(0)
    resumed = web.post("/queues/resume", data={"csrf_token": token, "queue": queue})
    assert resumed.status_code == 302
    assert admin.execute("SELECT paused FROM taskforge.tf_queues WHERE queue = %s", (queue,)).fetchone()[0] is False
    bad = text(web.post("/queues/pause", data={"csrf_token": token, "queue": "no spaces!"}, follow_redirects=True))
    assert ("queue:" in bad and "notice" in bad) or "banner error" in bad


# --- submit ---------------------------------------------------------------------------------------
def test_submit_form_creates_replays_and_refuses(web: Any, admin: Any, queue: str) -> None:
    token = csrf(web)
    form = {
        "csrf_token": token,
        "task_type": "echo",
        "queue": queue,
        "payload": '{"greeting": "hello"}',
        "priority": "3",
        "max_attempts": "2",
        "delay_seconds": "",
        "idempotency_key": f"{queue}-key",
    }
    created = web.post("/submit", data=form)
    assert created.status_code == 302
    task_id = int(created.headers["Location"].rsplit("/", 1)[1])
    row = admin.execute(
        "SELECT task_type, queue, payload, priority, max_attempts FROM taskforge.tf_tasks WHERE task_id = %s",
        (task_id,),
    ).fetchone()
    assert row == ("echo", queue, {"greeting": "hello"}, 3, 2)
    assert f"Task {task_id} submitted" in text(web.get(created.headers["Location"]))
    replay = web.post("/submit", data=form)
    assert replay.headers["Location"] == created.headers["Location"]
    assert "already exists" in text(web.get(replay.headers["Location"]))

    count = admin.execute("SELECT count(*) FROM taskforge.tf_tasks WHERE queue = %s", (queue,)).fetchone()[0]
    for change, field in (
        ({"payload": "[1, 2]"}, "payload:"),
        ({"payload": "{nope"}, "payload:"),
        ({"task_type": "no_such_type"}, "task_type:"),
        ({"priority": "40000"}, "priority:"),
        ({"max_attempts": "many"}, "max_attempts:"),
        ({"delay_seconds": "-5"}, "delay_seconds:"),
        ({"queue": "bad queue!"}, "queue:"),
        ({"idempotency_key": f"{queue}-key", "payload": '{"other": 1}'}, "idempotency_key"),
    ):
        refused = web.post("/submit", data={**form, "idempotency_key": "", **change})
        body = text(refused)
        assert refused.status_code == 400, change
        assert re.search(r'id="submit-error">' + re.escape(field), body), (change, body[-600:])
    assert admin.execute("SELECT count(*) FROM taskforge.tf_tasks WHERE queue = %s", (queue,)).fetchone()[0] == count


# --- who may see and act ------------------------------------------------------------------------------
def test_pages_need_sign_in_when_a_password_is_set(make_app: Any) -> None:
    web = make_app(password=PASSWORD).test_client()
    for path in ("/", "/tasks", "/queues", "/workers", "/dashboard/series.json"):
        response = web.get(path)
        assert response.status_code == 302 and "/signin" in response.headers["Location"], path
    token = CSRF_META.search(text(web.get("/signin"))).group(1)  # type: ignore[union-attr]
    web.post("/signin", data={"csrf_token": token, "password": PASSWORD})
    assert web.get("/").status_code == 200


def test_read_only_hides_and_refuses_every_action(make_app: Any, admin: Any, queue: str) -> None:
    web = make_app(read_only=True).test_client()
    task_id, _, _ = submit(admin, queue)
    for path in ("/", f"/tasks?queue={queue}", f"/tasks/{task_id}", "/queues"):
        body = text(web.get(path))
        assert "data-select-item" not in body and 'id="cancel-button"' not in body, path
        assert "data-queue-action" not in body and 'href="/submit"' not in body, path
        assert "read-only" in body
    token = csrf(web)
    for path, data in (
        (f"/tasks/{task_id}/cancel", {}),
        ("/tasks/bulk", {"action": "cancel", "selected": str(task_id), "confirm": "1"}),
        ("/queues/pause", {"queue": queue}),
        ("/submit", {"task_type": "noop", "queue": queue}),
    ):
        assert web.post(path, data={"csrf_token": token, **data}).status_code == 403, path
    assert web.get("/submit").status_code == 403
    assert state(admin, task_id) == "QUEUED"
    assert (
        admin.execute("SELECT count(*) FROM taskforge.tf_queues WHERE queue = %s AND paused", (queue,)).fetchone()[0]
        == 0
    )


def test_posts_without_the_csrf_token_are_refused(web: Any, admin: Any, queue: str) -> None:
    task_id, _, _ = submit(admin, queue)
    for path, data in (
        (f"/tasks/{task_id}/cancel", {}),
        ("/tasks/bulk", {"action": "cancel", "selected": str(task_id), "confirm": "1"}),
        ("/queues/pause", {"queue": queue}),
        ("/submit", {"task_type": "noop", "queue": queue}),
    ):
        assert web.post(path, data=data).status_code == 400, path
        assert web.post(path, data={**data, "csrf_token": "forged"}).status_code == 400, path
    assert state(admin, task_id) == "QUEUED"
    assert admin.execute("SELECT count(*) FROM taskforge.tf_tasks WHERE queue = %s", (queue,)).fetchone()[0] == 1


def test_mounted_under_a_prefix(make_app: Any, admin: Any, queue: str) -> None:
    web = make_app(prefix="/tf").test_client()
    task_id, _, _ = submit(admin, queue)
    dashboard = text(web.get("/tf/"))
    assert 'href="/tf/tasks"' in dashboard and 'hx-get="/tf/"' in dashboard
    assert 'src="/tf/static/vendor/htmx.min.js"' in dashboard
    assert 'data-src="/tf/dashboard/series.json"' in dashboard
    page = text(web.get(f"/tf/tasks/{task_id}"))
    assert f'hx-post="/tf/tasks/{task_id}/cancel"' in page and f'hx-get="/tf/tasks/{task_id}"' in page
    listing = text(web.get(f"/tf/tasks?queue={queue}"))
    assert f'hx-get="/tf/tasks?queue={queue}"' in listing
    assert web.get("/tf/static/vendor/uPlot.iife.min.js").status_code == 200
