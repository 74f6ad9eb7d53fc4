"""The console in a real browser: Playwright for Python driving Debian's Chromium
(``executable_path``; Playwright's own browser download is never used), against a real
``taskforge console`` process (waitress) and a real ``taskforge worker`` process, started by the
shared harness (taskforge.processes) on a database of its own that holds an hour of generated
history (taskforge.benchmarks.console_data), so the dashboard has something to show.

It signs in, submits a task through the form and watches it reach SUCCEEDED by live refresh,
opens its attempt timeline, opens the page of a task of a diamond of dependencies and its flow
graph (boxes coloured by state, a box is a link), sets and removes a rate limit on the
flow-control page, pauses and resumes a queue (a task submitted meanwhile waits, then
runs), bulk-cancels ticked tasks through the confirmation step, signs out and sees a second
sign-in attempt right after a wrong password refused by the throttle (429, said on the page),
and saves screenshots to the test's tmp folder. With ``TASKFORGE_UPDATE_SCREENSHOTS=1`` the dashboard screenshot is also
written to ``docs/img/console-dashboard.png`` (the README shows it). Throughout, the page may log
no error (a Content-Security-Policy violation would show there) and no ``alert`` may fire,
although the submitted payload holds ``<script>alert(1)</script>``.

Chromium: ``$TASKFORGE_CHROMIUM`` or ``/usr/bin/chromium``; ``make test`` installs it
(scripts/ensure-chromium.sh).
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import psycopg
import pytest
from psycopg.conninfo import conninfo_to_dict, make_conninfo
from psycopg.types.json import Jsonb

from taskforge import client, database as tfdb
from taskforge.benchmarks.console_data import fill
from taskforge.processes import ProcessHarness, taskforge_command

from console_support import PASSWORD
from sqlcore_helpers import wait_until

ROOT = Path(__file__).resolve().parents[2]
CHROMIUM = os.environ.get("TASKFORGE_CHROMIUM", "/usr/bin/chromium")
SCREENSHOT = ROOT / "docs" / "img" / "console-dashboard.png"
XSS = "<script>alert(1)</script>"
QUEUE = "checkout"  # the queue the real worker serves (the generated history uses others)
FLOW_QUEUE = "flows"  # a queue no worker serves: the diamond's tasks stay as submitted
URL_LINE = re.compile(r"taskforge console: (http://\S+/)")
# Make the page believe its tab was hidden or shown (headless Chromium's tab is always visible).
SET_VISIBILITY = """state => {
  Object.defineProperty(document, "visibilityState", {value: state, configurable: true});
  document.dispatchEvent(new Event("visibilitychange"));
}"""

try:
    from playwright import sync_api
except ImportError:  # pragma: no cover - the dev extra installs it
    sync_api = None


@pytest.fixture()
def stack(fresh_database: Any, console_dsn: str, tmp_path: Path) -> Iterator[dict[str, Any]]:
    """A migrated database with an hour of history, a console process and a worker process."""
    dsn = fresh_database("taskforge_browser")
    tfdb.migrate(dsn)
    with psycopg.connect(dsn, autocommit=True) as conn:
        fill(conn, finished=6000, queued=40, history_seconds=3600, workers=3, stale_workers=1)
    console_user = conninfo_to_dict(console_dsn)["user"]
    harness = ProcessHarness(dsn=dsn, log_dir=tmp_path / "logs")
    try:
        console = harness.start(
            taskforge_command("console", ["--dsn", make_conninfo(dsn, user=console_user), "--port", "0"]),
            kind="console",
            env={"TASKFORGE_CONSOLE_PASSWORD": PASSWORD},
        )
        harness.worker("--import", "taskforge.synthetic", "--queue", QUEUE, "--concurrency", "2", name="browser-worker")

        def url() -> str | None:
            assert console.alive(), f"the console exited:\n{console.tail()}"
            match = URL_LINE.search(console.log())
            return match.group(1) if match else None

        base = wait_until(url, timeout=30, interval=0.1, message="the console's URL in its log")
        yield {"dsn": dsn, "base": base, "harness": harness, "shots": tmp_path / "screenshots"}
        assert harness.exited_unexpectedly() == [], [p.tail() for p in harness.exited_unexpectedly()]
    finally:
        harness.stop_all()


@pytest.fixture()
def browser_page(stack: dict[str, Any]) -> Iterator[tuple[Any, list[str]]]:
    """A Chromium page on the console, and the list of problems it reports (console errors,
    uncaught exceptions, alerts)."""
    if sync_api is None:
        pytest.fail("playwright is not installed: it is in the dev extra (make install)", pytrace=False)
    if not os.access(CHROMIUM, os.X_OK):
        pytest.fail(
            f"{CHROMIUM} not found: the browser test needs Chromium (Debian: apt-get install chromium; "
            "`make test` installs it as root), or set TASKFORGE_CHROMIUM",
            pytrace=False,
        )
    with sync_api.sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox"])
        context = browser.new_context(viewport={"width": 1360, "height": 900}, base_url=stack["base"])
        context.set_default_timeout(15_000)
        tab = context.new_page()
        problems: list[str] = []

        def on_console(message: Any) -> None:
            if message.type == "error":
                problems.append(f"console error: {message.text} at {message.location.get('url')}")

        def on_dialog(dialog: Any) -> None:
            if dialog.type == "alert":
                problems.append(f"alert fired: {dialog.message}")
                dialog.dismiss()
            else:
                dialog.accept()  # hx-confirm of the cancel button

        tab.on("console", on_console)
        tab.on("dialog", on_dialog)
        tab.on("pageerror", lambda exc: problems.append(f"page error: {exc}"))

        def on_response(response: Any) -> None:
            if response.status >= 400:
                problems.append(f"HTTP {response.status}: {response.url}")

        tab.on("response", on_response)
        try:
            yield tab, problems
        finally:
            browser.close()


def shot(page: Any, stack: dict[str, Any], name: str) -> Path:
    path: Path = stack["shots"] / f"{name}.png"
    path.parent.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(path), full_page=True)
    return path


def state_of(dsn: str, task_id: int) -> str:
    with psycopg.connect(dsn, autocommit=True) as conn:
        return client.get_task(conn, task_id).state


def test_console_in_a_real_browser(stack: dict[str, Any], browser_page: tuple[Any, list[str]]) -> None:
    page, problems = browser_page
    expect = sync_api.expect
    dsn = stack["dsn"]

    # Sign in (the console has a password), then make the live refresh fast.
    page.goto("./")
    expect(page).to_have_url(re.compile(r"/signin"))
    page.fill("#password", PASSWORD)
    page.click("button[type=submit]")
    expect(page.locator("h1")).to_have_text("Dashboard")
    expect(page.locator("html[data-refresh-seconds]")).to_have_count(1)  # pages.js has started
    page.select_option("[data-refresh-select]", "1")
    expect(page.locator("html[data-refresh-seconds='1']")).to_have_count(1)

    # Live refresh: every second while the tab is visible, nothing while it is hidden or off.
    refreshes: list[str] = []
    page.on("request", lambda r: refreshes.append(r.url) if r.headers.get("hx-request") == "true" else None)
    page.goto("workers")
    page.wait_for_timeout(2600)
    assert len(refreshes) >= 2, refreshes
    page.evaluate(SET_VISIBILITY, "hidden")
    page.wait_for_timeout(200)
    hidden_from = len(refreshes)
    page.wait_for_timeout(2500)
    assert len(refreshes) == hidden_from, "no refresh while the tab is hidden"
    page.evaluate(SET_VISIBILITY, "visible")
    page.wait_for_timeout(500)
    assert len(refreshes) > hidden_from, "a refresh at once when the tab is shown again"
    page.select_option("[data-refresh-select]", "0")
    page.wait_for_timeout(200)
    off_from = len(refreshes)
    page.wait_for_timeout(2200)
    assert len(refreshes) == off_from, "no refresh when off"
    page.select_option("[data-refresh-select]", "1")

    # Submit a task through the form; it runs on the real worker and the page follows it.
    page.goto("submit")
    page.select_option("#task_type", "sleep")
    page.fill("#queue", QUEUE)
    page.fill("#payload", '{"ms": 400, "note": "' + XSS.replace('"', '\\"') + '"}')
    page.click("#submit-form button[type=submit]")
    expect(page).to_have_url(re.compile(r"/tasks/\d+$"))
    task_id = int(page.url.rsplit("/", 1)[1])
    expect(page.locator(".banner.ok")).to_contain_text(f"Task {task_id} submitted")
    expect(page.locator("#task-state")).to_have_text("SUCCEEDED", timeout=30_000)

    # Its attempt timeline: one attempt on the browser worker, drawn and listed.
    rows = page.locator("#attempt-table tbody tr")
    expect(rows).to_have_count(1)
    expect(rows.first).to_contain_text("browser-worker")
    expect(rows.first).to_contain_text("succeeded")
    expect(page.locator("svg.timeline rect.run-succeeded")).to_have_count(1)
    assert XSS in page.locator("#payload").inner_text(), "the payload is shown as text"
    shot(page, stack, "task")

    # A diamond a -> (b, c) -> d: d's page lists its parents and draws the flow.
    diamond = [{"task_type": "noop", "queue": FLOW_QUEUE}]
    diamond += [{"task_type": "noop", "queue": FLOW_QUEUE, "depends_on_positions": [0]} for _ in range(2)]
    diamond += [{"task_type": "echo", "queue": FLOW_QUEUE, "depends_on_positions": [1, 2], "rate_key": XSS}]
    with psycopg.connect(dsn, autocommit=True) as conn:
        rows = conn.execute("SELECT task_id FROM taskforge.tf_submit_many(%s)", (Jsonb(diamond),)).fetchall()
    first, *_, last = [int(r[0]) for r in rows]
    page.goto(f"tasks/{last}")
    expect(page.locator("#task-state")).to_have_text("BLOCKED")
    expect(page.locator("#parents-pending")).to_have_text("waiting for 2 parent tasks to succeed")
    expect(page.locator("#parent-table tbody tr")).to_have_count(2)
    expect(page.locator("#rate-key")).to_have_text(XSS)
    graph = page.locator("svg.flow-graph")
    expect(graph.locator("a.flow-node")).to_have_count(4)
    expect(graph.locator("path.flow-edge")).to_have_count(4)
    box = graph.bounding_box()
    assert box is not None and box["width"] > 500 and box["height"] > 100, box
    fills = page.eval_on_selector_all(
        "svg.flow-graph a.flow-node rect", "rects => rects.map(r => getComputedStyle(r).fill)"
    )
    assert len(set(fills)) == 2, f"one colour for QUEUED, another for BLOCKED: {fills}"
    shot(page, stack, "flow-graph")
    graph.locator(f'a.flow-node[data-task-id="{first}"]').click()
    expect(page).to_have_url(re.compile(rf"/tasks/{first}$"))
    expect(page.locator("svg.flow-graph a.flow-node.current")).to_have_attribute("data-task-id", str(first))

    # The flow-control page: set a rate limit through its form, then remove it.
    page.goto("flow")
    expect(page.locator("h1")).to_have_text("Flow control")
    page.fill("#rate-form [name=rate_key]", "browser-rate")
    page.fill("#rate-form [name=per_second]", "2.5")
    page.click("#rate-form button[type=submit]")
    expect(page.locator("#flow-region .notice.ok")).to_have_text(
        "Rate key browser-rate: 2.5 per second, default burst (was: no limit)."
    )
    expect(page.locator('tr[data-rate-key="browser-rate"]')).to_have_count(1)
    shot(page, stack, "flow-control")
    page.fill("#rate-form [name=per_second]", "0")
    page.click("#rate-form button[type=submit]")
    expect(page.locator("#flow-region .notice.error")).to_contain_text("per_second: must be greater than 0")
    page.locator('tr[data-rate-key="browser-rate"] [data-flow-action="rate-remove"]').click()
    expect(page.locator("#flow-region .notice.ok")).to_contain_text("limit removed")
    expect(page.locator('tr[data-rate-key="browser-rate"]')).to_have_count(0)

    # Pause the queue: a task submitted meanwhile waits; resume: it runs.
    page.goto("queues")
    row = page.locator(f'tr[data-queue="{QUEUE}"]')
    row.locator('[data-queue-action="pause"]').click()
    expect(page.locator("#queues-region .notice.ok")).to_have_text(f"Queue {QUEUE} paused.")
    expect(page.locator(f'tr[data-queue="{QUEUE}"] .badge.paused')).to_be_visible()
    with psycopg.connect(dsn, autocommit=True) as conn:
        waiting = client.submit(conn, "noop", queue=QUEUE).task_id
    page.wait_for_timeout(3000)  # the worker polls every second or so and is woken by NOTIFY: long enough to claim
    assert state_of(dsn, waiting) == "QUEUED", "a paused queue's task is not claimed"
    shot(page, stack, "queues-paused")
    page.locator(f'tr[data-queue="{QUEUE}"] [data-queue-action="resume"]').click()
    expect(page.locator("#queues-region .notice.ok")).to_have_text(f"Queue {QUEUE} resumed.")
    wait_until(lambda: state_of(dsn, waiting) == "SUCCEEDED", timeout=30, interval=0.2, message="resumed task ran")

    # Bulk cancel: tick every shown task of a queue, confirm, and they are cancelled.
    with psycopg.connect(dsn, autocommit=True) as conn:
        doomed = [client.submit(conn, "noop", queue="bulk", delay_seconds=3600).task_id for _ in range(5)]
    page.goto("tasks?queue=bulk")
    expect(page.locator("#task-table tbody tr")).to_have_count(5)
    page.check("[data-select-all]")
    expect(page.locator("[data-select-count]")).to_have_text("5")
    page.click("#bulk-form button[name=action][value=cancel]")
    expect(page.locator("h1")).to_have_text("Cancel 5 tasks?")
    assert {state_of(dsn, t) for t in doomed} == {"QUEUED"}, "nothing changes before the confirmation"
    shot(page, stack, "bulk-confirm")
    page.click("form[data-refresh-hold] button[type=submit]")
    expect(page.locator("h1")).to_have_text("Cancel: 5 changed")
    assert {state_of(dsn, t) for t in doomed} == {"CANCELLED"}

    # The dashboard with its charts (an hour of history plus what just ran).
    page.goto("./")
    expect(page.locator("[data-charts][data-loaded='1']")).to_have_count(1)
    expect(page.locator("[data-charts] .uplot")).to_have_count(2)
    expect(page.locator("#dashboard-queues")).to_contain_text(QUEUE)
    for name in ("tasks", "workers"):
        page.goto(name)
        expect(page.locator("h1")).to_have_text(name.capitalize())
        shot(page, stack, name)
    page.goto("./")
    expect(page.locator("[data-charts] .uplot")).to_have_count(2)
    path = shot(page, stack, "dashboard")
    if os.environ.get("TASKFORGE_UPDATE_SCREENSHOTS") == "1":
        SCREENSHOT.parent.mkdir(parents=True, exist_ok=True)
        SCREENSHOT.write_bytes(path.read_bytes())
    assert problems == [], problems

    # Sign out, then wrong passwords: after a failure the next attempt is refused for 1 s, 2 s,
    # 4 s..., so one of the next tries (typed at once) meets the throttle, which the page says
    # (429). The 401s and the 429 are then the only problems.
    page.click("form[action$='/signout'] button")
    expect(page).to_have_url(re.compile(r"/signin"))
    alert = page.locator("p.error[role=alert]")
    for attempt in range(4):
        page.fill("#password", f"not the password {attempt}")
        page.click("button[type=submit]")
        expect(alert).to_be_visible()
        if alert.inner_text().startswith("Too many"):
            break
        expect(alert).to_contain_text("wrong password (the next attempt is taken in")
    expect(alert).to_contain_text("Too many failed sign-ins: try again in")
    expect(page.locator("#password")).to_be_visible()
    shot(page, stack, "signin-throttled")
    statuses = sorted({p.split(":", 1)[0] for p in problems if p.startswith("HTTP ")})
    assert statuses == ["HTTP 401", "HTTP 429"], problems
    others = [p for p in problems if not p.startswith("HTTP ") and "status of 4" not in p]
    assert others == [], problems
