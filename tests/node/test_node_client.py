"""The Node.js client (clients/node) against the real schema: real ``node`` processes, real signals.

What it shows: the rules live in the database. A Node worker that knows only the SQL API
(tf_register_worker, tf_heartbeat, tf_claim, tf_renew, tf_finalize, tf_parent_results,
tf_deregister_worker) gets the same end states as the Python worker for the same held-back cases
(``cases.json``: written once, run by both), its lost lease is recovered by ``tf_recover`` alone,
a finalize with a stale fencing token is refused, refusals reach Node code as the client's
``InvalidArgument`` (``sqlstate`` ``TF400``, ``column`` naming the argument), and a diamond
graph submitted in one ``tf_submit_many`` call gives each child its parents' results.
The Node side: ``driver.mjs`` (client calls, one command per process) and ``handlers.mjs``.

``npm ci`` installs ``pg`` into clients/node/node_modules from the committed package-lock.json
when it is missing (needs the npm registry once). Skipped only when no ``node`` is on PATH.

Time: every wait is on the test's monotonic clock (``wait_for``); lease expiry is asked of the
database (``clock_timestamp()``), and recovery and promotion are the test's own ``tf_recover`` /
``tf_promote`` calls: no scheduler runs here.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import uuid
from pathlib import Path

import psycopg
import pytest

from taskforge.processes import ManagedProcess, ProcessHarness, taskforge_command

from itest_support import ROOT, attempts, task, wait_for, wait_registered, wait_running, worker_row
from sqlcore_helpers import as_user, invariant_violations, promote, recover

pytestmark = pytest.mark.processes

NODE_CLIENT = ROOT / "clients" / "node"
NODE_WORKER = NODE_CLIENT / "bin" / "taskforge-node-worker.js"
HERE = Path(__file__).resolve().parent
NODE_HANDLERS = HERE / "handlers.mjs"
DRIVER = HERE / "driver.mjs"
CASES = json.loads((HERE / "cases.json").read_text())["cases"]
#: Task types of handlers.mjs the tests register (owner/DBA only), with a short backoff.
TEST_TYPES = ("nodetest.sum", "nodetest.lease_probe")
TERMINAL = {"SUCCEEDED", "FAILED", "CANCELLED"}


def _locked_pg() -> str:
    return json.loads((NODE_CLIENT / "package-lock.json").read_text())["packages"]["node_modules/pg"]["version"]


def _installed_pg() -> str | None:
    installed = NODE_CLIENT / "node_modules" / "pg" / "package.json"
    return json.loads(installed.read_text())["version"] if installed.exists() else None


@pytest.fixture(scope="module")
def node() -> str:
    """The ``node`` executable, with clients/node/node_modules installed by ``npm ci`` (when it is
    missing, or holds another ``pg`` than package-lock.json pins)."""
    node = shutil.which("node")
    if node is None:
        pytest.skip("no `node` on PATH: the Node.js client's tests need Node 20+ (and npm for `npm ci`)")
    if _installed_pg() != _locked_pg():
        npm = shutil.which("npm")
        assert npm is not None, "node is installed but npm is not: cannot install clients/node's dependencies"
        done = subprocess.run(
            [npm, "ci", "--no-audit", "--no-fund"], cwd=NODE_CLIENT, capture_output=True, text=True, timeout=600
        )
        assert done.returncode == 0, f"npm ci in clients/node failed:\n{done.stdout}\n{done.stderr}"
    return node


@pytest.fixture(scope="module")
def node_types(db_dsn) -> None:
    with psycopg.connect(db_dsn, autocommit=True) as c:
        for name in TEST_TYPES:
            c.execute(
                "SELECT taskforge.tf_register_task_type(task_type => %s, backoff_base_seconds => 0.1, "
                "backoff_cap_seconds => 0.1, backoff_jitter => 0)",
                (name,),
            )


@pytest.fixture()
def harness(db_dsn, tmp_path):
    """Processes against the session's database (TASKFORGE_DSN), each with its log under tmp_path;
    whatever still runs at teardown is killed, and every log is printed."""
    harness = ProcessHarness(db_dsn, tmp_path, cwd=ROOT)
    yield harness
    harness.kill_all()
    for proc in harness.processes:
        print(f"----- {proc.kind} {proc.name} (exit {proc.returncode})\n{proc.tail(60)}")


def node_worker(harness: ProcessHarness, node: str, queue: str, *args: str, handlers: Path = NODE_HANDLERS):
    name = f"{queue}-node-{uuid.uuid4().hex[:6]}"
    argv = [node, str(NODE_WORKER), "--queue", queue, "--handlers", str(handlers), "--name", name, *args]
    return harness.start([*argv, "--log-level", "debug"], kind="node-worker", name=name)


def python_worker(harness: ProcessHarness, queue: str, *args: str) -> ManagedProcess:
    name = f"{queue}-python-{uuid.uuid4().hex[:6]}"
    argv = ["--queue", queue, "--import", "taskforge.synthetic", "--name", name, "--log-level", "INFO", *args]
    return harness.start(taskforge_command("worker", argv), kind="worker", name=name)


def drive(node: str, db_dsn: str, *args: str):
    """Run tests/node/driver.mjs COMMAND ARGS with TASKFORGE_DSN; its JSON answer."""
    env = {key: value for key, value in os.environ.items() if key != "DATABASE_URL"}
    env["TASKFORGE_DSN"] = db_dsn
    done = subprocess.run([node, str(DRIVER), *args], capture_output=True, text=True, env=env, timeout=60)
    assert done.returncode == 0, f"driver {args[0]} exited {done.returncode}:\n{done.stdout}\n{done.stderr}"
    return json.loads(done.stdout)


def settle(conn, task_ids: list[int], procs=(), timeout: float = 45.0) -> None:
    """Wait until every task has ended, calling tf_recover and tf_promote meanwhile (what a
    scheduler would do), so expired leases and passed backoffs move on by the database's rules."""

    def ended() -> bool:
        recover(conn)
        promote(conn)
        rows = conn.execute("SELECT state FROM taskforge.tf_tasks WHERE task_id = ANY(%s)", (task_ids,)).fetchall()
        return len(rows) == len(task_ids) and all(state in TERMINAL for (state,) in rows)

    wait_for(ended, timeout=timeout, interval=0.1, message=f"tasks {task_ids} to end", procs=procs)


def stop_cleanly(proc: ManagedProcess) -> None:
    proc.signal(signal.SIGTERM)
    assert proc.wait(30) == 0, proc.log()


def test_node_submits_and_node_worker_runs_every_task_once(node, conn, db_dsn, harness, queue):
    worker = node_worker(harness, node, queue, "--concurrency", "4", "--lease-seconds", "3")
    worker_id = wait_registered(conn, worker)
    requests = [{"task_type": "echo", "payload": {"n": i}, "queue": queue} for i in range(12)]
    requests += [{"task_type": "sleep", "payload": {"ms": 200}, "queue": queue}] * 4 + [
        {"task_type": "noop", "queue": queue}
    ] * 4
    submitted = drive(node, db_dsn, "submit-many", json.dumps(requests))
    assert [(row["state"], row["created"]) for row in submitted] == [("QUEUED", True)] * len(requests)
    ids = [row["task_id"] for row in submitted]

    # TaskForgeClient.wait: LISTEN taskforge_finished, read, wait, read again (polling here).
    waited = drive(node, db_dsn, "wait", str(ids[0]))
    assert waited == {"state": "SUCCEEDED", "result": {"n": 0}, "attempts": ["SUCCEEDED"]}

    wait_for(
        lambda: all(task(conn, i)["state"] == "SUCCEEDED" for i in ids), message="every task to succeed", procs=[worker]
    )
    for i, request in zip(ids, requests, strict=True):
        row = task(conn, i)
        assert row["attempt_count"] == 1
        assert [(a["attempt_number"], a["state"], str(a["worker_id"])) for a in attempts(conn, i)] == [
            (1, "SUCCEEDED", worker_id)
        ]
        if request["task_type"] == "echo":
            assert row["result"] == request["payload"]
    assert invariant_violations(conn) == []

    stop_cleanly(worker)
    assert worker_row(conn, worker.name)["liveness"] == "stopped"


@pytest.mark.parametrize("runtime", ["node", "python"])
def test_held_back_cases_end_the_same_whichever_worker_runs_them(runtime, node, conn, harness, queue):
    """cases.json, run by one worker of the given runtime: the same states, attempts and results."""
    args = ("--concurrency", str(len(CASES)), "--lease-seconds", "2")
    worker = node_worker(harness, node, queue, *args) if runtime == "node" else python_worker(harness, queue, *args)
    wait_registered(conn, worker)
    requests = [{**case["request"], "queue": queue} for case in CASES]
    ids = [row[0] for row in conn.execute("SELECT task_id FROM taskforge.tf_submit_many(%s)", (json.dumps(requests),))]
    for case, task_id in zip(CASES, ids, strict=True):
        if case.get("cancel_when_running"):
            wait_running(conn, task_id, 1, procs=[worker])
            conn.execute("SELECT taskforge.tf_cancel(task_id => %s)", (task_id,))
    settle(conn, ids, procs=[worker])

    for case, task_id in zip(CASES, ids, strict=True):
        expect, row, tried = case["expect"], task(conn, task_id), attempts(conn, task_id)
        seen = {
            "state": row["state"],
            "attempts": [a["state"] for a in tried],
            "outcomes": [a["outcome"] for a in tried],
            "result": row["result"],
            "error_message": (row["last_error"] or {}).get("message"),
        }
        wanted = {key: expect[key] for key in seen if key in expect}
        assert {key: seen[key] for key in wanted} == wanted, f"{runtime}: case {case['name']!r} (task {task_id})"
    assert invariant_violations(conn) == []
    stop_cleanly(worker)


def test_sigterm_finishes_running_tasks_claims_nothing_new_and_deregisters(node, conn, harness, queue):
    # Lease 1 s < handler 2 s: the attempt survives only if renewals go on during the grace period.
    worker = node_worker(harness, node, queue, "--lease-seconds", "1")
    wait_registered(conn, worker)
    submit = "SELECT task_id FROM taskforge.tf_submit(task_type => %s, payload => %s::jsonb, queue => %s)"
    (running,) = conn.execute(submit, ("sleep", '{"ms": 2000}', queue)).fetchone()
    wait_running(conn, running, 1, procs=[worker])
    (waiting,) = conn.execute(submit, ("noop", "{}", queue)).fetchone()
    worker.signal(signal.SIGTERM)
    assert worker.wait(30) == 0, worker.log()
    assert [a["state"] for a in attempts(conn, running)] == ["SUCCEEDED"]
    assert (task(conn, waiting)["state"], task(conn, waiting)["attempt_count"]) == ("QUEUED", 0)
    assert worker_row(conn, worker.name)["liveness"] == "stopped"
    conn.execute("SELECT taskforge.tf_cancel(task_id => %s)", (waiting,))  # leave nothing claimable behind


def test_second_sigterm_exits_at_once_and_the_database_recovers_the_task(node, conn, harness, queue):
    worker = node_worker(harness, node, queue, "--lease-seconds", "1")
    worker_id = wait_registered(conn, worker)
    (task_id,) = conn.execute(
        "SELECT task_id FROM taskforge.tf_submit(task_type => 'sleep', payload => '{\"ms\": 30000}', "
        "queue => %s, max_attempts => 1)",
        (queue,),
    ).fetchone()
    wait_running(conn, task_id, 1, procs=[worker])
    worker.signal(signal.SIGTERM)
    wait_for(lambda: "SIGTERM received" in worker.log(), timeout=10, message="the first SIGTERM to be seen")
    worker.signal(signal.SIGTERM)
    assert worker.wait(10) == 1, worker.log()
    assert f"unfinished attempt(s) [{task_id}/1]" in worker.log()
    assert task(conn, task_id)["state"] == "RUNNING"  # not finalized: its lease runs out
    settle(conn, [task_id], timeout=15)
    rows = attempts(conn, task_id)
    assert [(a["state"], a["outcome"], str(a["worker_id"])) for a in rows] == [
        ("ABANDONED", "lease_expired", worker_id)
    ]
    assert task(conn, task_id)["state"] == "FAILED"


def test_node_worker_killed_mid_task_is_recovered_by_the_database_and_rerun(node, conn, harness, queue, node_types):
    victim = node_worker(harness, node, queue, "--lease-seconds", "1.5")
    victim_id = wait_registered(conn, victim)
    (task_id,) = conn.execute(
        "SELECT task_id FROM taskforge.tf_submit(task_type => 'sleep', payload => '{\"ms\": 2500}', queue => %s)",
        (queue,),
    ).fetchone()
    wait_running(conn, task_id, 1, procs=[victim])
    victim.kill()  # SIGKILL: no finalize, no deregistration

    # Nothing but the database takes the task back, and only once the lease has expired.
    expired = "SELECT lease_expires_at < clock_timestamp() FROM taskforge.tf_tasks WHERE task_id = %s"
    assert task(conn, task_id)["state"] == "RUNNING"
    wait_for(lambda: conn.execute(expired, (task_id,)).fetchone()[0], timeout=10, message="the lease to expire")
    assert recover(conn)[0] >= 1  # (any other expired lease of the shared database counts too)
    assert task(conn, task_id)["state"] == "QUEUED"

    rescuer = node_worker(harness, node, queue, "--lease-seconds", "1.5")
    rescuer_id = wait_registered(conn, rescuer)
    wait_for(lambda: task(conn, task_id)["state"] == "SUCCEEDED", message="the rerun to succeed", procs=[rescuer])
    rows = attempts(conn, task_id)
    assert [(a["attempt_number"], a["state"], a["outcome"], str(a["worker_id"])) for a in rows] == [
        (1, "ABANDONED", "lease_expired", victim_id),
        (2, "SUCCEEDED", "succeeded", rescuer_id),
    ]
    assert rows[0]["abandoned_at"] >= rows[0]["lease_expires_at"]
    assert task(conn, task_id)["result"] == {"slept_ms": 2500}
    stop_cleanly(rescuer)


def test_lost_lease_aborts_ctx_signal_and_the_late_outcome_is_refused(node, conn, harness, queue, node_types):
    """A worker frozen (SIGSTOP) past its lease: tf_recover takes the task back; once thawed, its
    next tf_renew says renewed=false, ctx.signal aborts with LeaseLost and tf_finalize refuses the
    stale attempt; the task's only success is attempt 2."""
    worker = node_worker(harness, node, queue, "--lease-seconds", "1.5")
    wait_registered(conn, worker)
    (task_id,) = conn.execute(
        "SELECT task_id FROM taskforge.tf_submit(task_type => 'nodetest.lease_probe', payload => "
        '\'{"first_ms": 6000, "ms": 0}\', queue => %s)',
        (queue,),
    ).fetchone()
    wait_running(conn, task_id, 1, procs=[worker])
    worker.signal(signal.SIGSTOP)
    try:
        expired = "SELECT lease_expires_at < clock_timestamp() FROM taskforge.tf_tasks WHERE task_id = %s"
        wait_for(lambda: conn.execute(expired, (task_id,)).fetchone()[0], timeout=10, message="the lease to expire")
        assert recover(conn)[0] >= 1
    finally:
        worker.signal(signal.SIGCONT)
    wait_for(lambda: task(conn, task_id)["state"] == "SUCCEEDED", message="attempt 2 to succeed", procs=[worker])
    log = worker.log()
    assert f"lease lost for task {task_id} attempt 1 (tf_renew: not_running)" in log, log
    assert f"did not accept the succeeded outcome of task {task_id} attempt 1: not_running" in log, log
    rows = attempts(conn, task_id)
    assert [(a["attempt_number"], a["state"]) for a in rows] == [(1, "ABANDONED"), (2, "SUCCEEDED")]
    assert task(conn, task_id)["result"] == {
        "aborted": False,
        "reason": None,
        "lease_lost": False,
        "fencing_token": [task_id, 2],
    }
    stop_cleanly(worker)


def test_stale_fencing_token_is_refused(node, conn, db_dsn, queue):
    answer = drive(node, db_dsn, "stale-finalize", queue)
    task_id = answer["task_id"]
    assert (answer["claimed"], answer["attempt_number"]) == (task_id, 1)
    assert answer["wrong"] == {"accepted": False, "task_state": "RUNNING", "reason": "stale_attempt"}
    assert answer["right"] == {"accepted": True, "task_state": "SUCCEEDED", "reason": None}
    assert answer["late"] == {"accepted": False, "task_state": "SUCCEEDED", "reason": "not_running"}
    assert answer["renewed"] == {"renewed": False, "cancel_requested": False, "reason": "not_running"}
    row = task(conn, task_id)
    assert (row["state"], row["result"], row["attempt_count"]) == ("SUCCEEDED", {"from": "owner"}, 1)
    assert [a["state"] for a in attempts(conn, task_id)] == ["SUCCEEDED"]


def test_refusals_reach_node_as_the_clients_errors(node, conn, db_dsn, queue):
    by_what = {row["what"]: row for row in drive(node, db_dsn, "bad-input", queue)}
    priority = by_what["priority"]
    assert (priority["name"], priority["invalid_argument"], priority["sqlstate"], priority["column"]) == (
        "InvalidArgument",
        True,
        "TF400",
        "priority",
    )
    assert priority["message"].startswith("priority: ") and priority["cause_code"] == "TF400"
    assert (by_what["task_type"]["sqlstate"], by_what["task_type"]["column"]) == ("TF400", "task_type")
    batch = by_what["batch"]
    assert (batch["column"], batch["index"], batch["argument"]) == ("requests[1].priority", 1, "priority")
    key = by_what["key"]
    assert (key["name"], key["conflict"], key["sqlstate"], key["column"]) == (
        "Conflict",
        True,
        "TF409",
        "idempotency_key",
    )
    for what in ("missing", "cancel"):
        assert (by_what[what]["name"], by_what[what]["sqlstate"], by_what[what]["column"]) == (
            "TaskNotFound",
            "TF404",
            "task_id",
        )
    # Nothing was written by a refused call: the queue holds the one task submitted first.
    (first,) = conn.execute("SELECT array_agg(task_id) FROM taskforge.tf_tasks WHERE queue = %s", (queue,)).fetchone()
    assert len(first) == 1
    conn.execute("SELECT taskforge.tf_cancel(task_id => %s)", (first[0],))  # leave nothing claimable behind


def test_diamond_graph_children_read_their_parents_results(node, login_role, conn, db_dsn, tmp_path, queue, node_types):
    """A -> B, C -> D in one tf_submit_many call (depends_on_positions) by a taskforge_client
    login; a Node worker logged in as a taskforge_worker role (it reads no view) gives each
    handler its parents' results (tf_parent_results with the attempt's fencing token)."""
    client_dsn = as_user(db_dsn, login_role("taskforge_client"))
    worker_harness = ProcessHarness(as_user(db_dsn, login_role("taskforge_worker")), tmp_path, cwd=ROOT)
    try:
        worker = node_worker(worker_harness, node, queue, "--concurrency", "2", "--lease-seconds", "3")
        wait_registered(conn, worker)
        graph = [
            {"task_type": "nodetest.sum", "payload": {"add": 1}, "queue": queue},  # A
            {"task_type": "nodetest.sum", "payload": {"add": 10}, "queue": queue, "depends_on_positions": [0]},  # B
            {"task_type": "nodetest.sum", "payload": {"add": 100}, "queue": queue, "depends_on_positions": [0]},  # C
            {"task_type": "nodetest.sum", "payload": {"add": 1000}, "queue": queue, "depends_on_positions": [1, 2]},
        ]
        rows = drive(node, client_dsn, "submit-many", json.dumps(graph))
        a, b, c, d = (row["task_id"] for row in rows)
        assert [row["state"] for row in rows] == ["QUEUED", "BLOCKED", "BLOCKED", "BLOCKED"]
        waited = drive(node, client_dsn, "wait", str(d))
        assert waited["state"] == "SUCCEEDED", worker.log()
        results = {i: task(conn, i)["result"] for i in (a, b, c, d)}
        assert results[a] == {"sum": 1, "parents": []}
        assert results[b] == {"sum": 11, "parents": [a]}
        assert results[c] == {"sum": 101, "parents": [a]}
        assert results[d] == {"sum": 1000 + 11 + 101, "parents": [b, c]}
        for i in (a, b, c, d):
            assert [x["state"] for x in attempts(conn, i)] == ["SUCCEEDED"]
        # D started after both of its parents had succeeded (database time).
        assert attempts(conn, d)[0]["started_at"] >= max(attempts(conn, i)[0]["finished_at"] for i in (b, c))
        assert invariant_violations(conn) == []
        stop_cleanly(worker)
    finally:
        worker_harness.kill_all()
        for proc in worker_harness.processes:
            print(f"----- {proc.kind} {proc.name} (exit {proc.returncode})\n{proc.tail(60)}")
