"""The console's HTML pages through Flask's test client, on the session's migrated database as a
login role holding only taskforge_console: every page renders, filters and keyset pages, the
bulk confirmation step, task/queue actions (plain form posts and htmx), the submit form and its
refusals, a task's dependencies and flow graph (a diamond), the flow-control page and its forms
(TF400 messages shown), escaping of everything a user can write, sign-in, read-only mode and
CSRF."""

from __future__ import annotations

import datetime as dt
import html
import json
import re
import time
from typing import Any, get_args

import pytest
from psycopg.types.json import Jsonb

from taskforge import client
from taskforge_console import flowgraph, queries
from taskforge_console.api.models import State

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


def submit_diamond(admin: Any, queue: str, **last: Any) -> list[int]:
    """A diamond a -> (b, c) -> d in one tf_submit_many call (depends_on_positions); ``last``
    adds request keys to d (flow keys). Returns [a, b, c, d]."""
    requests: list[dict[str, Any]] = [
        {"task_type": "noop", "queue": queue},
        {"task_type": "noop", "queue": queue, "depends_on_positions": [0]},
        {"task_type": "echo", "queue": queue, "depends_on_positions": [0]},
        {"task_type": "noop", "queue": queue, "depends_on_positions": [1, 2], **last},
    ]
    rows = admin.execute("SELECT task_id FROM taskforge.tf_submit_many(%s)", (Jsonb(requests),)).fetchall()
    return [int(r[0]) for r in rows]


def flow_rows(admin: Any, key: str) -> tuple[Any, Any]:
    """(the tf_rate_limits row of rate key ``key``, the tf_concurrency_keys row of ``key``), or None."""
    rate = admin.execute(
        "SELECT per_second, burst FROM taskforge.tf_rate_limits WHERE rate_key = %s", (key,)
    ).fetchone()
    limit = admin.execute(
        "SELECT max_running FROM taskforge.tf_concurrency_keys WHERE concurrency_key = %s", (key,)
    ).fetchone()
    return rate, limit


def notice(body: str) -> tuple[str, str]:
    """(category, text) of the action message of a region answer."""
    found = re.search(r'<p class="notice (ok|error)" role="status">(.*?)</p>', body, re.S)
    assert found, body[:800]
    return found.group(1), html.unescape(found.group(2))


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
        ("/flow", "flow-region"),
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
    diamond = submit_diamond(admin, queue)
    for path in (
        "/",
        "/tasks",
        f"/tasks/{task_id}",
        f"/tasks/{diamond[3]}",
        "/queues",
        "/workers",
        "/periodic",
        "/submit",
        "/flow",
    ):
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


# --- dependencies and flow control ----------------------------------------------------------------
def test_blocked_is_a_state_like_the_others(web: Any, admin: Any, queue: str) -> None:
    assert get_args(State) == queries.TASK_STATES and queries.TASK_STATES[0] == "BLOCKED"
    assert "BLOCKED" in queries.CANCELLABLE_STATES
    _, b, c, d = submit_diamond(admin, queue)
    tasks = text(web.get("/tasks", query_string={"queue": queue}))
    assert '<input type="checkbox" name="state" value="BLOCKED"' in tasks, "the filter offers BLOCKED"
    blocked = text(web.get("/tasks", query_string={"queue": queue, "state": "BLOCKED"}))
    assert [int(i) for i in re.findall(r'<tr data-task-id="(\d+)"', blocked)] == [d, c, b]
    assert blocked.count('<span class="state state-blocked">BLOCKED</span>') == 3
    page = text(web.get(f"/tasks/{b}"))
    assert 'id="cancel-button"' in page, "a BLOCKED task can be cancelled"
    assert "Its blocked descendants are cancelled too." in page, "b has a child: the confirmation says so"
    last = text(web.get(f"/tasks/{d}"))
    assert 'id="cancel-button"' in last and "Its blocked descendants" not in last


def test_task_page_shows_parents_children_and_the_flow_of_a_diamond(web: Any, admin: Any, queue: str) -> None:
    keys = {"rate_key": f"{queue}-rate", "concurrency_key": f"{queue}-conc", "ordering_key": f"{queue}{XSS}"}
    a, b, c, d = submit_diamond(admin, queue, **keys)

    page = text(web.get(f"/tasks/{b}"))
    parents = re.search(r'<table class="grid" id="parent-table">.*?</table>', page, re.S)
    children = re.search(r'<table class="grid" id="child-table">.*?</table>', page, re.S)
    assert parents and children
    assert re.findall(r'<tr data-task-id="(\d+)">', parents.group(0)) == [str(a)]
    assert f'href="/tasks/{a}"' in parents.group(0) and "state-queued" in parents.group(0)
    assert re.findall(r'<tr data-task-id="(\d+)">', children.group(0)) == [str(d)]
    assert f'href="/tasks/{d}"' in children.group(0) and "state-blocked" in children.group(0)
    assert re.search(r'<td class="num">2</td>', children.group(0)), "d waits for two parents"
    assert "waiting for 1 parent task to succeed" in page
    assert 'id="rate-key"' not in page, "b has no flow keys"

    # The graph: the whole diamond from any of its tasks, in three layers, edges parent -> child.
    for seen_from in (a, b, c, d):
        body = text(web.get(f"/tasks/{seen_from}"))
        svg = re.search(r'<svg class="flow-graph".*?</svg>', body, re.S)
        assert svg, seen_from
        nodes = dict(
            re.findall(
                r'<a class="flow-node[^"]*" href="/tasks/\d+" data-task-id="(\d+)" data-layer="(\d)"', svg.group(0)
            )
        )
        assert nodes == {str(a): "0", str(b): "1", str(c): "1", str(d): "2"}, nodes
        edges = set(re.findall(r'data-edge="(\d+-\d+)"', svg.group(0)))
        assert edges == {f"{a}-{b}", f"{a}-{c}", f"{b}-{d}", f"{c}-{d}"}
        assert svg.group(0).count('marker-end="url(#flow-arrow)"') == 4
        current = re.findall(r'<a class="flow-node state-\w+ current" href="/tasks/(\d+)"', svg.group(0))
        assert current == [str(seen_from)]
        assert "4 tasks in 3 layers" in body and 'id="flow-graph-cut"' not in body

    last = text(web.get(f"/tasks/{d}"))
    assert "waiting for 2 parent tasks to succeed" in last and "the task waits for its parents" in last
    assert (
        f'<code id="rate-key">{queue}-rate</code>' in last and f'<code id="concurrency-key">{queue}-conc</code>' in last
    )
    assert f'<code id="ordering-key">{queue}&lt;script&gt;alert(1)&lt;/script&gt;</code>' in last
    assert "<script>alert" not in last
    assert 'class="flow-node state-blocked current"' in last

    # a succeeds: b and c are released, d still waits for both; the graph shows the new states.
    worker = register_worker(admin, "flow-graph", [queue])
    assert [r[0] for r in claim(admin, worker, [queue])] == [a]
    assert finalize(admin, a, worker, 1, "succeeded")[0]
    after = text(web.get(f"/tasks/{d}", headers={"HX-Request": "true"}))
    assert after.lstrip().startswith('<section id="task-region"')
    for task_id, task_state in ((a, "succeeded"), (b, "queued"), (c, "queued"), (d, "blocked")):
        assert re.search(rf'<a class="flow-node state-{task_state}[^"]*" href="/tasks/{task_id}"', after), task_id
    assert "waiting for 2 parent tasks" in after


def test_a_task_without_dependencies_has_no_flow_section(web: Any, admin: Any, queue: str) -> None:
    task_id, _, _ = submit(admin, queue)
    page = text(web.get(f"/tasks/{task_id}"))
    assert 'id="dependencies"' not in page and "flow-graph" not in page
    assert queries.flow_component(admin, task_id).tasks == {}


def test_the_flow_graph_is_cut_at_its_limit(admin: Any, queue: str) -> None:
    a, b, c, d = submit_diamond(admin, queue)
    whole = queries.flow_component(admin, b)
    assert not whole.cut and sorted(whole.tasks) == [a, b, c, d]
    assert whole.edges == [(a, b), (a, c), (b, d), (c, d)]
    cut = queries.flow_component(admin, b, limit=3)
    assert cut.cut and len(cut.tasks) == 3 and b in cut.tasks
    assert all(p in cut.tasks and ch in cut.tasks for p, ch in cut.edges)
    graph = flowgraph.layout(cut)
    assert graph is not None and graph.cut and len(graph.nodes) == 3
    nearest = queries.flow_component(admin, a, limit=3)
    assert nearest.cut and sorted(nearest.tasks) == [a, b, c], "breadth first: a's children before d"


def test_layers_are_the_longest_path_from_a_root() -> None:
    diamond = [(1, 2), (1, 3), (2, 4), (3, 4)]
    assert flowgraph.layers([1, 2, 3, 4], diamond) == {1: 0, 2: 1, 3: 1, 4: 2}
    # 1 -> 2 -> 3 and a shortcut 1 -> 3: 3 is two layers down, not one.
    assert flowgraph.layers([1, 2, 3, 5], [(1, 2), (2, 3), (1, 3)]) == {1: 0, 2: 1, 3: 2, 5: 0}
    # A cycle (impossible from tf_submit) still gets a layer after what was reached.
    assert flowgraph.layers([1, 2, 3], [(1, 2), (2, 3), (3, 2)]) == {1: 0, 2: 1, 3: 1}
    graph = flowgraph.layout(queries.FlowComponent(4, {t: ("x" * 40, "QUEUED") for t in (1, 2, 3, 4)}, diamond))
    assert graph is not None and graph.layer_count == 3
    boxes = {n.task_id: n for n in graph.nodes}
    assert boxes[1].x < boxes[2].x == boxes[3].x < boxes[4].x
    assert boxes[1].y == boxes[4].y and boxes[2].y < boxes[1].y < boxes[3].y, "one-task layers are centred"
    assert boxes[4].label == "x" * 21 + "…" and boxes[4].current
    assert [e.d.startswith(f"M{boxes[e.parent_task_id].x + flowgraph.BOX_WIDTH:g} ") for e in graph.edges] == [True] * 4


def test_flow_control_page_sets_and_removes_limits(web: Any, admin: Any, queue: str) -> None:
    rate_key, conc_key = f"{queue}-rate", f"{queue}{XSS}"
    token = csrf(web)
    htmx = {"HX-Request": "true"}
    assert 'href="/flow"' in text(web.get("/")), "the navigation links the page"
    try:
        # A rate limit: set (htmx), shown with its tokens; refusals name the field (TF400).
        done = text(
            web.post(
                "/flow/rate/set",
                data={"csrf_token": token, "rate_key": rate_key, "per_second": "5", "burst": "10"},
                headers=htmx,
            )
        )
        assert done.lstrip().startswith('<section id="flow-region"')
        assert notice(done) == ("ok", f"Rate key {rate_key}: 5 per second, burst 10 (was: no limit).")
        row = re.search(rf'<tr data-rate-key="{rate_key}">.*?</tr>', done, re.S)
        assert row, "the new limit is listed"
        assert re.findall(r'<td class="num">([^<]*)</td>', row.group(0))[:3] == ["5", "10", "10.00"]
        assert 'data-flow-action="rate-remove"' in row.group(0)
        assert flow_rows(admin, rate_key)[0] == (5.0, 10)
        for field, change, problem in (
            ("per_second", {"per_second": "-1"}, "per_second: must be greater than 0"),
            ("burst", {"per_second": "2", "burst": "0"}, "burst: must be between 1 and 1000000, got 0"),
            ("burst", {"per_second": "2", "burst": "1.5"}, "burst: must be a whole number"),
            ("rate_key", {"rate_key": "", "per_second": "2"}, "rate_key: must be 1 to 200 characters, got 0"),
            ("per_second", {"per_second": "fast"}, "per_second: must be a number, got 'fast'"),
        ):
            form = {"csrf_token": token, "rate_key": rate_key, **change}
            refused = web.post("/flow/rate/set", data=form, headers=htmx)
            assert refused.status_code == 200, field
            category, message = notice(text(refused))
            assert category == "error" and message.startswith(problem), (field, message)
        assert flow_rows(admin, rate_key)[0] == (5.0, 10), "nothing changed"
        # A plain form post: a redirect, and the message (the database's) on the page.
        plain = web.post("/flow/rate/set", data={"csrf_token": token, "rate_key": rate_key, "per_second": "1e9"})
        assert plain.status_code == 302 and plain.headers["Location"].endswith("/flow")
        banner = text(web.get("/flow"))
        assert re.search(r'<div class="banner error" role="status">per_second: must be greater than 0', banner)

        # A concurrency limit: set, refused, removed (the key stays, without a limit).
        done = text(
            web.post(
                "/flow/concurrency/set",
                data={"csrf_token": token, "concurrency_key": conc_key, "max_running": "3"},
                headers=htmx,
            )
        )
        assert notice(done) == ("ok", f"Concurrency key {conc_key}: at most 3 running (was: no limit).")
        assert "<script>alert" not in done
        escaped = html.escape(conc_key, quote=True)
        row = re.search(rf'<tr data-concurrency-key="{re.escape(escaped)}">.*?</tr>', done, re.S)
        assert row and re.findall(r'<td class="num">([^<]*)', row.group(0))[:3] == ["3", "0", "0"]
        for change, problem in (
            ({"max_running": "0"}, "max_running: must be between 1 and 1000000, got 0"),
            ({"max_running": "2.5"}, "max_running: must be a whole number, got '2.5'"),
            ({"concurrency_key": "k" * 201}, "concurrency_key: must be 1 to 200 characters, got 201"),
            ({"max_running": ""}, "max_running: a value is required"),
        ):
            form = {"csrf_token": token, "concurrency_key": conc_key, "max_running": "4", **change}
            category, message = notice(text(web.post("/flow/concurrency/set", data=form, headers=htmx)))
            assert (category, message) == ("error", problem)
        assert flow_rows(admin, conc_key)[1] == (3,)
        removed = text(
            web.post("/flow/concurrency/remove", data={"csrf_token": token, "concurrency_key": conc_key}, headers=htmx)
        )
        assert notice(removed) == ("ok", f"Concurrency key {conc_key}: limit removed (was: at most 3 running).")
        assert flow_rows(admin, conc_key)[1] == (None,)
        row = re.search(rf'<tr data-concurrency-key="{re.escape(escaped)}">.*?</tr>', removed, re.S)
        assert row and "no limit" in row.group(0) and "data-flow-action" not in row.group(0)

        gone = text(web.post("/flow/rate/remove", data={"csrf_token": token, "rate_key": rate_key}, headers=htmx))
        assert notice(gone) == ("ok", f"Rate key {rate_key}: limit removed (was: 5 per second, burst 10).")
        assert f'data-rate-key="{rate_key}"' not in gone and flow_rows(admin, rate_key)[0] is None
        assert web.post("/flow/other/set", data={"csrf_token": token}).status_code == 404
    finally:
        admin.execute("SELECT * FROM taskforge.tf_set_rate_limit(%s, NULL)", (rate_key,))
        admin.execute("SELECT taskforge.tf_set_concurrency_limit(%s, NULL)", (conc_key,))


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
        ("/flow/rate/set", {"rate_key": queue, "per_second": "1"}),
        ("/flow/concurrency/set", {"concurrency_key": queue, "max_running": "1"}),
    ):
        assert web.post(path, data={"csrf_token": token, **data}).status_code == 403, path
    flow = text(web.get("/flow"))
    assert 'id="rate-form"' not in flow and 'id="concurrency-form"' not in flow and "data-flow-action" not in flow
    assert flow_rows(admin, queue) == (None, None)
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
        ("/flow/rate/set", {"rate_key": queue, "per_second": "1"}),
        ("/flow/rate/remove", {"rate_key": queue}),
        ("/flow/concurrency/set", {"concurrency_key": queue, "max_running": "1"}),
        ("/flow/concurrency/remove", {"concurrency_key": queue}),
    ):
        assert web.post(path, data=data).status_code == 400, path
        assert web.post(path, data={**data, "csrf_token": "forged"}).status_code == 400, path
        assert web.post(path, data=data, headers={"HX-Request": "true"}).status_code == 400, path
    assert flow_rows(admin, queue) == (None, None), "no flow-control row was written"
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
