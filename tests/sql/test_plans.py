"""Query plans of the hot-path statements on a large data set.

A separate database gets 100,000 QUEUED tasks, 1,000,000 finished ones (with their attempts) and
a few thousand RUNNING and RETRYING rows. The statements inside tf_claim, tf_promote, tf_recover
and tf_prune are captured as they really run (auto_explain with nested statements, JSON format,
sent to the client as LOG notices), over more than five calls each so a switch to a cached
generic plan would be seen. No plan may scan the tasks table sequentially, and each statement
must use its partial index. The figures printed at the end (run with -s) are the ones in
docs/performance.md.
"""

from __future__ import annotations

import json
import statistics
import time

import psycopg
import pytest

from taskforge import database as tfdb

pytestmark = pytest.mark.slow

N_FINISHED = 1_000_000
N_QUEUED = 100_000
N_RUNNING = 2_000  # the first half with leases expired 10 s ago, the rest valid for 10 more minutes
N_RETRYING = 2_000  # a tenth due 5 s ago, the rest due in an hour
N_QUEUES = 10  # q0..q9, plus queue 'rare' holding every 1000th task
CALLS = 8  # per statement: more than 5, past the plan cache's switch point

# Task ids 1..N_FINISHED are finished (oldest), then QUEUED, RUNNING, RETRYING. created_at is two
# seconds apart per task, so finished history spans about 25 days.
INSERT_TASKS = """
INSERT INTO taskforge.tasks (task_id, task_type, payload, queue, priority, max_attempts, state, attempt_count,
                             scheduled_at, owner_worker_id, lease_expires_at, created_at, updated_at, finished_at)
OVERRIDING SYSTEM VALUE
SELECT i, 'noop', '{}'::jsonb,
       CASE WHEN i %% 1000 = 7 THEN 'rare' ELSE 'q' || (i %% %(queues)s) END,
       CASE WHEN i %% 100 = 0 THEN 5 ELSE 0 END, 3,
       k.state, k.attempts, k.scheduled_at,
       CASE WHEN k.state = 'RUNNING' THEN %(worker)s::uuid END,
       CASE WHEN k.state = 'RUNNING' THEN k.lease END,
       k.created_at, k.created_at,
       CASE WHEN k.state IN ('SUCCEEDED', 'FAILED', 'CANCELLED') THEN k.created_at + interval '1 second' END
  FROM generate_series(1, %(total)s) i
 CROSS JOIN LATERAL (SELECT now() - make_interval(secs => (%(total)s - i) * 2.0 + 60) AS created_at) c
 CROSS JOIN LATERAL (
     SELECT CASE WHEN i <= %(f)s THEN CASE WHEN i %% 50 = 0 THEN 'FAILED' WHEN i %% 97 = 0 THEN 'CANCELLED'
                                         ELSE 'SUCCEEDED' END
                 WHEN i <= %(f)s + %(q)s THEN 'QUEUED'
                 WHEN i <= %(f)s + %(q)s + %(r)s THEN 'RUNNING'
                 ELSE 'RETRYING' END AS state,
            CASE WHEN i > %(f)s AND i <= %(f)s + %(q)s THEN 0 ELSE 1 END AS attempts,
            CASE WHEN i <= %(f)s + %(q)s + %(r)s THEN c.created_at
                 WHEN i <= %(f)s + %(q)s + %(r)s + %(t)s / 10 THEN now() - interval '5 seconds'
                 ELSE now() + interval '1 hour' END AS scheduled_at,
            CASE WHEN i <= %(f)s + %(q)s + %(r)s / 2 THEN now() - interval '10 seconds'
                 ELSE now() + interval '10 minutes' END AS lease,
            c.created_at
 ) k
"""

# One attempt per task that has one, in the state its task implies.
INSERT_ATTEMPTS = """
INSERT INTO taskforge.attempts (task_id, attempt_number, worker_id, state, outcome, started_at,
                                lease_expires_at, finished_at)
SELECT t.task_id, 1, %(worker)s::uuid,
       CASE t.state WHEN 'RUNNING' THEN 'RUNNING' WHEN 'RETRYING' THEN 'FAILED' ELSE t.state END,
       CASE t.state WHEN 'RUNNING' THEN NULL WHEN 'RETRYING' THEN 'retryable' WHEN 'SUCCEEDED' THEN 'succeeded'
                    WHEN 'FAILED' THEN 'failed' ELSE 'cancelled' END,
       t.created_at, coalesce(t.lease_expires_at, t.created_at + interval '30 seconds'),
       CASE t.state WHEN 'RUNNING' THEN NULL WHEN 'RETRYING' THEN t.created_at + interval '1 second'
                    ELSE t.finished_at END
  FROM taskforge.tasks t
 WHERE t.attempt_count = 1
"""

AUTO_EXPLAIN = [
    "LOAD 'auto_explain'",
    "SET auto_explain.log_min_duration = 0",
    "SET auto_explain.log_nested_statements = on",
    "SET auto_explain.log_format = 'json'",
    "SET client_min_messages = log",
]

# name -> (SQL, what its statements must use). Each rule: (a fragment of the statement text,
# the partial indexes it may scan tasks with).
# With no delayed task, the claim walks the claim order in one cached generic plan per filter shape.
CLAIM_RULE = [("v_ids := ARRAY(", {"tasks_claim_order_idx", "tasks_claim_queue_idx"})]
SCENARIOS = {
    "tf_claim, queues NULL, max_tasks 10": (
        "SELECT * FROM taskforge.tf_claim(worker_id => %(worker)s, max_tasks => 10)",
        CLAIM_RULE,
    ),
    "tf_claim, queues {q3}, max_tasks 10": (
        "SELECT * FROM taskforge.tf_claim(worker_id => %(worker)s, queues => ARRAY['q3'], max_tasks => 10)",
        CLAIM_RULE,
    ),
    "tf_claim, queues {rare}, max_tasks 10": (
        "SELECT * FROM taskforge.tf_claim(worker_id => %(worker)s, queues => ARRAY['rare'], max_tasks => 10)",
        CLAIM_RULE,
    ),
    "tf_claim, queues NULL, max_tasks 1": ("SELECT * FROM taskforge.tf_claim(worker_id => %(worker)s)", CLAIM_RULE),
    # The sweeps lock their batch by its partial index, then write it (the fast path of the
    # bad-row rule: tf_recover.sql, "Bad rows") reading each task by primary key.
    "tf_promote()": (
        "SELECT * FROM taskforge.tf_promote()",
        [
            ("SELECT coalesce(array_agg(d.task_id ORDER BY d.scheduled_at", {"tasks_retry_due_idx"}),
            ("UPDATE taskforge.tasks t SET state = 'QUEUED'", {"tasks_pkey"}),
            ("SELECT t.scheduled_at FROM taskforge.tasks t WHERE t.state = 'RETRYING'", {"tasks_retry_due_idx"}),
        ],
    ),
    "tf_recover()": (
        "SELECT * FROM taskforge.tf_recover()",
        [
            ("SELECT coalesce(array_agg(c.task_id ORDER BY c.lease_expires_at", {"tasks_lease_expiry_idx"}),
            ("WITH expired AS", {"tasks_pkey"}),
            ("SELECT t.lease_expires_at FROM taskforge.tasks t WHERE t.state = 'RUNNING'", {"tasks_lease_expiry_idx"}),
        ],
    ),
    "tf_prune(7 days, max_tasks 100)": (
        "SELECT taskforge.tf_prune(older_than_seconds => 604800, max_tasks => 100)",
        [
            ("SELECT coalesce(array_agg(v.task_id ORDER BY v.finished_at", {"tasks_finished_idx"}),
            ("SELECT array_agg(t.task_id) FROM unnest(_tf_prune_rows.task_ids)", {"tasks_pkey"}),
            ("DELETE FROM taskforge.tasks t WHERE t.task_id = ANY (v_ids)", {"tasks_pkey"}),
        ],
    ),
}

# Timed without auto_explain: name -> SQL. Each call runs in a transaction that is rolled back,
# so every call sees the same data.
TIMED = {
    "tf_claim(max_tasks => 1)": "SELECT * FROM taskforge.tf_claim(worker_id => %(worker)s)",
    "tf_claim(max_tasks => 10)": "SELECT * FROM taskforge.tf_claim(worker_id => %(worker)s, max_tasks => 10)",
    "tf_claim(queues => {q3}, max_tasks => 10)": "SELECT * FROM taskforge.tf_claim(worker_id => %(worker)s, "
    "queues => ARRAY['q3'], max_tasks => 10)",
    "tf_promote() [200 due]": "SELECT * FROM taskforge.tf_promote()",
    "tf_recover() [1000 expired]": "SELECT * FROM taskforge.tf_recover()",
    "tf_prune(7 days, max_tasks => 1000)": "SELECT taskforge.tf_prune(older_than_seconds => 604800, max_tasks => 1000)",
}


def plan_nodes(node: dict):
    """Yield every node of a JSON plan tree."""
    yield node
    for child in node.get("Plans", []):
        yield from plan_nodes(child)


def normalise(text: str) -> str:
    return " ".join(text.split())


class PlanCollector:
    """Collects the JSON plans auto_explain sends as LOG notices."""

    def __init__(self):
        self.plans: list[dict] = []

    def __call__(self, diag: psycopg.errors.Diagnostic) -> None:
        message = diag.message_primary or ""
        if diag.severity_nonlocalized == "LOG" and "plan:" in message:
            self.plans.append(json.loads(message[message.index("{") :]))


def build_data_set(dsn: str) -> dict:
    """Fill a migrated database as superuser; returns row counts and build time (seconds)."""
    total = N_FINISHED + N_QUEUED + N_RUNNING + N_RETRYING
    started = time.monotonic()
    with psycopg.connect(dsn, autocommit=True) as c:
        c.execute("SET synchronous_commit = off")
        worker = c.execute("SELECT taskforge.tf_register_worker(name => 'plan-data')").fetchone()[0]
        params = {
            "worker": worker,
            "total": total,
            "f": N_FINISHED,
            "q": N_QUEUED,
            "r": N_RUNNING,
            "t": N_RETRYING,
            "queues": N_QUEUES,
        }
        c.execute(INSERT_TASKS, params)
        c.execute(INSERT_ATTEMPTS, params)
        c.execute("SELECT setval(pg_get_serial_sequence('taskforge.tasks', 'task_id'), %s)", (total,))
        c.execute("ANALYZE taskforge.tasks")
        c.execute("ANALYZE taskforge.attempts")
        c.execute("ANALYZE taskforge.workers")
        counts = dict(c.execute("SELECT state, count(*) FROM taskforge.tasks GROUP BY state").fetchall())
        counts["attempts"] = c.execute("SELECT count(*) FROM taskforge.attempts").fetchone()[0]
    return {"counts": counts, "worker": worker, "build_seconds": time.monotonic() - started}


def test_hot_path_plans_use_partial_indexes(fresh_database):
    dsn = fresh_database("taskforge_plans")
    tfdb.migrate(dsn)
    data = build_data_set(dsn)
    counts = data["counts"]
    assert counts["QUEUED"] == N_QUEUED
    assert counts["SUCCEEDED"] + counts["FAILED"] + counts["CANCELLED"] == N_FINISHED
    assert (counts["RUNNING"], counts["RETRYING"]) == (N_RUNNING, N_RETRYING)
    assert counts["attempts"] == N_FINISHED + N_RUNNING + N_RETRYING

    problems: list[str] = []
    used: dict[str, set[str]] = {}
    collector = PlanCollector()
    with psycopg.connect(dsn, autocommit=True) as c:
        c.add_notice_handler(collector)
        for statement in AUTO_EXPLAIN:
            c.execute(statement)
        for name, (sql_text, rules) in SCENARIOS.items():
            for call in range(1, CALLS + 1):
                collector.plans.clear()
                with c.transaction(force_rollback=True):
                    rows = c.execute(sql_text, {"worker": data["worker"]}).fetchall()
                assert rows, f"{name} returned nothing"
                if name.startswith("tf_claim"):
                    expected = 1 if name.endswith("max_tasks 1") else 10
                    assert len(rows) == expected, f"{name} claimed {len(rows)} tasks"
                assert collector.plans, "auto_explain sent no plans (is client_min_messages = log?)"
                for plan in collector.plans:
                    for node in plan_nodes(plan["Plan"]):
                        if node.get("Relation Name") == "tasks" and node["Node Type"] == "Seq Scan":
                            problems.append(
                                f"{name}, call {call}: Seq Scan on tasks in {normalise(plan['Query Text'])[:120]}"
                            )
                for fragment, indexes in rules:
                    matching = [p for p in collector.plans if fragment in normalise(p["Query Text"])]
                    if len(matching) != 1:
                        problems.append(f"{name}, call {call}: {len(matching)} plans for {fragment!r}")
                        continue
                    # An index scan of tasks, or a bitmap scan of one of its indexes (the planner
                    # picks that for a small queue, then sorts the few rows it found).
                    scans = {
                        node.get("Index Name")
                        for node in plan_nodes(matching[0]["Plan"])
                        if (
                            node["Node Type"] in ("Index Scan", "Index Only Scan")
                            and node.get("Relation Name") == "tasks"
                        )
                        or node["Node Type"] == "Bitmap Index Scan"
                    }
                    chosen = scans & indexes
                    used.setdefault(f"{name}: {fragment}", set()).update(chosen)
                    if not chosen:
                        shape = [
                            (n["Node Type"], n.get("Relation Name") or n.get("Index Name"))
                            for n in plan_nodes(matching[0]["Plan"])
                        ]
                        problems.append(
                            f"{name}, call {call}: {fragment!r} does not scan tasks with "
                            f"{sorted(indexes)}; plan nodes: {shape}"
                        )

        # One call of each function without auto_explain: median of five (milliseconds).
        c.execute("SET auto_explain.log_min_duration = -1")
        timings = {}
        for name, sql_text in TIMED.items():
            samples = []
            for _ in range(5):
                with c.transaction(force_rollback=True):
                    started = time.perf_counter()
                    c.execute(sql_text, {"worker": data["worker"]}).fetchall()
                    samples.append((time.perf_counter() - started) * 1000)
            timings[name] = statistics.median(samples)

    print(
        f"\nplan check data set (built in {data['build_seconds']:.1f} s): "
        + ", ".join(f"{k} {v:,}" for k, v in sorted(counts.items()))
    )
    for key, indexes in used.items():
        print(f"  {key}: {', '.join(sorted(indexes)) or '-'}")
    for name, ms in timings.items():
        print(f"  {name}: {ms:.1f} ms (median of 5)")
    assert problems == [], "\n".join(problems)


# A delayed backlog: many QUEUED tasks that are not due yet, and a few that are. Walking the
# claim order past the future tasks would read the whole backlog on every claim; the planner
# must read the few due rows from tasks_queued_due_idx instead.
N_DELAYED = 100_000
N_DUE = 20
DELAYED_CLAIMS = {
    "queues NULL": "SELECT * FROM taskforge.tf_claim(worker_id => %(worker)s, max_tasks => 5)",
    "queues {default}": (
        "SELECT * FROM taskforge.tf_claim(worker_id => %(worker)s, queues => ARRAY['default'], max_tasks => 5)"
    ),
    "task_types of a worker": (
        "SELECT * FROM taskforge.tf_claim(worker_id => %(worker)s, max_tasks => 5, "
        "task_types => ARRAY['noop', 'sleep', 'echo', 'fail', 'fail_once', 'retryable_fail'])"
    ),
}


def test_claim_plan_with_a_delayed_backlog(fresh_database):
    dsn = fresh_database("taskforge_plans_delayed")
    tfdb.migrate(dsn)
    with psycopg.connect(dsn, autocommit=True) as c:
        c.execute("SET synchronous_commit = off")
        worker = c.execute("SELECT taskforge.tf_register_worker(name => 'plan-delayed')").fetchone()[0]
        c.execute(
            """
            INSERT INTO taskforge.tasks (task_type, payload, queue, priority, max_attempts, state, scheduled_at,
                                         created_at, updated_at)
            SELECT 'noop', '{}', 'default', 0, 3, 'QUEUED',
                   CASE WHEN i <= %(due)s THEN now() - interval '1 minute' ELSE now() + interval '1 day' END,
                   now() - make_interval(secs => %(n)s - i), now()
              FROM generate_series(%(n)s, 1, -1) i""",
            {"n": N_DELAYED + N_DUE, "due": N_DUE},
        )
        c.execute("ANALYZE taskforge.tasks")

        collector = PlanCollector()
        c.add_notice_handler(collector)
        for statement in AUTO_EXPLAIN:
            c.execute(statement)
        problems = []
        for name, sql_text in DELAYED_CLAIMS.items():
            for call in range(1, CALLS + 1):
                collector.plans.clear()
                with c.transaction(force_rollback=True):
                    rows = c.execute(sql_text, {"worker": worker}).fetchall()
                assert len(rows) == 5, f"{name} claimed {len(rows)} tasks"
                # Delayed tasks exist: the candidates come from a statement planned for the call.
                (plan,) = [
                    p for p in collector.plans if "SELECT array_agg(c.task_id) FROM (" in normalise(p["Query Text"])
                ]
                nodes = list(plan_nodes(plan["Plan"]))
                if any(n["Node Type"] == "Seq Scan" and n.get("Relation Name") == "tasks" for n in nodes):
                    problems.append(f"{name}, call {call}: Seq Scan on tasks")
                if "tasks_queued_due_idx" not in {n.get("Index Name") for n in nodes}:
                    problems.append(
                        f"{name}, call {call}: does not read tasks_queued_due_idx: "
                        f"{[(n['Node Type'], n.get('Index Name')) for n in nodes]}"
                    )
    assert problems == [], "\n".join(problems)


# The write path of a worker turn (taskforge._tf_turn) and of renewals (_tf_renew_attempts) keeps
# the generic plans its session cached while the tables were empty: they must still reach every
# row through an index condition once the tables are large, never walk a table.
TURN_TASKS = 200_000
# Finished tasks with one attempt each (ids after the ones the worker's own tasks took).
HISTORY_TASKS = """
INSERT INTO taskforge.tasks (task_type, payload, queue, priority, max_attempts, state, attempt_count, scheduled_at,
                             created_at, updated_at, finished_at)
SELECT 'noop', '{}', 't', 0, 3, 'SUCCEEDED', 1, now() - interval '1 day', now() - interval '1 day', now(), now()
  FROM generate_series(1, %(n)s)
"""
HISTORY_ATTEMPTS = """
INSERT INTO taskforge.attempts (task_id, attempt_number, worker_id, state, outcome, started_at, lease_expires_at,
                                finished_at)
SELECT t.task_id, 1, %(worker)s::uuid, 'SUCCEEDED', 'succeeded', t.created_at, t.created_at + interval '30 seconds',
       t.finished_at
  FROM taskforge.tasks t
 WHERE t.state = 'SUCCEEDED' AND NOT EXISTS (SELECT 1 FROM taskforge.attempts a WHERE a.task_id = t.task_id)
"""


TURN = """SELECT kind, task_id, attempt_number FROM taskforge.tf_finalize_and_claim(
              worker_id => %(w)s, task_ids => %(ids)s::bigint[], attempt_numbers => %(atts)s::int[],
              outcomes => %(outs)s::text[], queues => ARRAY[%(q)s], max_tasks => %(n)s)"""


def run_turn(
    conn: psycopg.Connection, worker, queue: str, held: list[tuple[int, int]], n: int
) -> list[tuple[int, int]]:
    """One worker turn: finalize ``held`` (task id, attempt) as succeeded and claim up to ``n``
    of ``queue``; returns the claimed (task id, attempt) pairs."""
    rows = conn.execute(
        TURN,
        {
            "w": worker,
            "ids": [t for t, _ in held],
            "atts": [a for _, a in held],
            "outs": ["succeeded"] * len(held),
            "q": queue,
            "n": n,
        },
    ).fetchall()
    return [(task_id, attempt) for kind, task_id, attempt in rows if kind == "claimed"]


def test_turn_plans_cached_on_empty_tables_never_walk_a_table(fresh_database):
    dsn = fresh_database("taskforge_plans_turn")
    tfdb.migrate(dsn)
    with psycopg.connect(dsn, autocommit=True) as admin, psycopg.connect(dsn, autocommit=True) as w:
        admin.execute("VACUUM ANALYZE taskforge.tasks, taskforge.attempts")  # empty, and known to be
        worker = w.execute("SELECT taskforge.tf_register_worker(name => 'plan-turn', queues => ARRAY['t'])").fetchone()[
            0
        ]
        submit = (
            "SELECT count(*) FROM generate_series(1, %(n)s) g"
            " CROSS JOIN LATERAL taskforge.tf_submit('noop', jsonb_build_object('n', g), 't')"
        )
        # Plans cached now, on (nearly) empty tables: a few turns, a renewal, a batch finalize.
        w.execute(submit, {"n": 12})
        held = run_turn(w, worker, "t", [], 2)
        for _ in range(CALLS):
            held = run_turn(w, worker, "t", held, 1)
        w.execute(
            "SELECT * FROM taskforge.tf_renew_many(%s, %s::bigint[], %s::int[])",
            (worker, [t for t, _ in held], [a for _, a in held]),
        )

        # The history grows to a real size behind the worker's back.
        admin.execute("SET synchronous_commit = off")
        admin.execute(HISTORY_TASKS, {"n": TURN_TASKS})
        admin.execute(HISTORY_ATTEMPTS, {"worker": worker})
        admin.execute("ANALYZE taskforge.tasks, taskforge.attempts")
        w.execute(submit, {"n": 40})

        collector = PlanCollector()
        w.add_notice_handler(collector)
        for statement in AUTO_EXPLAIN:
            w.execute(statement)
        held = run_turn(w, worker, "t", held, 8)
        for _ in range(CALLS):
            held = run_turn(w, worker, "t", held, 2)
        w.execute(
            "SELECT * FROM taskforge.tf_renew_many(%s, %s::bigint[], %s::int[])",
            (worker, [t for t, _ in held], [a for _, a in held]),
        )
        w.execute(
            "SELECT * FROM taskforge.tf_finalize_many(%s, %s::bigint[], %s::int[], %s::text[])",
            (worker, [t for t, _ in held], [a for _, a in held], ["succeeded"] * len(held)),
        )

    with psycopg.connect(dsn) as c:
        index_defs = dict(
            c.execute("SELECT indexname, indexdef FROM pg_indexes WHERE schemaname = 'taskforge'").fetchall()
        )
    problems = []
    scans = 0
    for plan in collector.plans:
        for node in plan_nodes(plan["Plan"]):
            if node.get("Relation Name") not in ("tasks", "attempts"):
                continue
            scans += 1
            if node["Node Type"] == "Seq Scan":
                problems.append(f"Seq Scan on {node['Relation Name']}: {normalise(plan['Query Text'])[:120]}")
            # A statement that tells plain tasks from keyed ones must read an index whose
            # predicate does too: a Filter on keyed over an index holding both kinds walks one
            # kind to find the other (the keyed probe stepping over every QUEUED plain task).
            if "keyed" in node.get("Filter", "") and "keyed" not in index_defs.get(node.get("Index Name"), "keyed"):
                where = node.get("Index Name", node["Node Type"])
                problems.append(f"{where} filtered on keyed: {normalise(plan['Query Text'])[:120]}")
            if (
                node["Node Type"] in ("Index Scan", "Index Only Scan")
                and "Index Cond" not in node
                and (
                    node.get("Index Name") in ("tasks_pkey", "attempts_pkey", "attempts_worker_idx", "tasks_owner_idx")
                )
            ):
                problems.append(
                    f"{node['Index Name']} walked without a condition: {normalise(plan['Query Text'])[:120]}"
                )
    assert scans > 0, "no plan read tasks or attempts (auto_explain sent nothing?)"
    assert problems == [], "\n".join(problems)


def test_prune_plans_cached_on_empty_tables_never_walk_a_table(fresh_database):
    """tf_prune's deletes (taskforge._tf_prune_rows) and the foreign key's cascade to attempts keep
    one generic plan each, cached by the scheduler's session: made while the tables were empty,
    they must still find every row by primary key once history is large (no ANALYZE in between,
    so nothing invalidates them)."""
    dsn = fresh_database("taskforge_plans_prune")
    tfdb.migrate(dsn)
    with psycopg.connect(dsn, autocommit=True) as admin, psycopg.connect(dsn, autocommit=True) as s:
        admin.execute("VACUUM ANALYZE taskforge.tasks, taskforge.attempts")  # empty, and known to be
        worker = s.execute(
            "SELECT taskforge.tf_register_worker(name => 'plan-prune', queues => ARRAY['t'])"
        ).fetchone()[0]
        s.execute(
            "SELECT count(*) FROM generate_series(1, %(n)s) g"
            " CROSS JOIN LATERAL taskforge.tf_submit('noop', jsonb_build_object('n', g), 't')",
            {"n": CALLS * 2},
        )
        run_turn(s, worker, "t", run_turn(s, worker, "t", [], CALLS * 2), 0)
        # Plans cached now, on (nearly) empty tables: one prune call per task.
        for _ in range(CALLS):
            assert s.execute("SELECT taskforge.tf_prune(0, 1)").fetchone()[0] == 1

        # The history grows to a real size behind the scheduler's back (all finished, all prunable).
        admin.execute("SET synchronous_commit = off")
        admin.execute(HISTORY_TASKS, {"n": 50_000})
        admin.execute(HISTORY_ATTEMPTS, {"worker": worker})

        collector = PlanCollector()
        s.add_notice_handler(collector)
        for statement in AUTO_EXPLAIN:
            s.execute(statement)
        assert s.execute("SELECT taskforge.tf_prune(0, 100)").fetchone()[0] == 100

    # The statements of _tf_prune_rows and the cascade (tf_prune's own choice of the batch is
    # planned for each call: force_custom_plan).
    mine = [
        plan
        for plan in collector.plans
        if normalise(plan["Query Text"]).startswith(
            (
                "SELECT array_agg(t.task_id) FROM unnest(_tf_prune_rows",
                "WITH gone AS (DELETE FROM taskforge.tasks",
                "DELETE FROM ONLY",
            )
        )
    ]
    texts = [normalise(plan["Query Text"]) for plan in mine]
    assert any(t.startswith("DELETE FROM ONLY") and "attempts" in t for t in texts), "the cascade was not explained"
    assert any(t.startswith("WITH gone AS (DELETE FROM taskforge.tasks") for t in texts), "the delete was not explained"
    assert any(t.startswith("SELECT array_agg") for t in texts), "the lookup was not explained"
    problems = []
    for plan in mine:
        for node in plan_nodes(plan["Plan"]):
            if node.get("Relation Name") not in ("tasks", "attempts"):
                continue
            if node["Node Type"] == "Seq Scan" or (
                node["Node Type"] in ("Index Scan", "Index Only Scan") and "Index Cond" not in node
            ):
                where = node.get("Index Name", node["Node Type"])
                problems.append(f"{where} on {node['Relation Name']}: {normalise(plan['Query Text'])[:120]}")
    assert problems == [], "\n".join(problems)


@pytest.mark.parametrize(
    ("name", "params"),
    [
        ("SCHEDULER_TICK", {"max_tasks": 1000}),
        ("CONSOLE_CANCEL_MANY", {"task_ids": list(range(1, 1001)), "reason": "plan"}),
        ("CONSOLE_RETRY_MANY", {"task_ids": list(range(1, 1001)), "extra_attempts": 1}),
    ],
)
def test_statements_joining_one_row_functions_are_never_jit_compiled(fresh_database, name, params):
    """The statements that join calls of one-row functions are estimated at their true size: at the
    default estimate (1,000 rows a call) the scheduler's pass was estimated at 10^9 rows, passed
    jit_above_cost and was JIT-compiled on every call (about 100 ms a pass, seen as E6 recovery
    lags of 100 ms). The functions declare ROWS 1 (db/tests/catalog/test_plan_cache_mode.sql)."""
    from taskforge import sql

    dsn = fresh_database("taskforge_plans_jit")
    tfdb.migrate(dsn)
    with psycopg.connect(dsn, autocommit=True) as c:
        jit_above = float(c.execute("SELECT current_setting('jit_above_cost')").fetchone()[0])
        with c.cursor() as cur:
            cur.execute(f"EXPLAIN (FORMAT JSON) {getattr(sql, name)}", params)
            plan = cur.fetchone()[0][0]["Plan"]
    assert plan["Total Cost"] < jit_above, (name, plan["Total Cost"], plan["Plan Rows"])


def test_keyed_pick_plans_on_tables_never_analyzed(fresh_database):
    """The keyed pick (ordering keys) on tables that were never analyzed, as a new deployment's
    are until autovacuum first gets to them: no statement of a claim may read tasks sequentially
    or throw away more than a few hundred rows to find the few it needs. (It once took 50 ms a
    claim: the check for a key's task finished after the claim's clock read walked the primary
    key below the head, filtering thousands of rows per head.)"""
    dsn = fresh_database("taskforge_plans_keyed")
    tfdb.migrate(dsn)
    keys, per_key = 40, 50
    with psycopg.connect(dsn, autocommit=True) as w:
        worker = w.execute(
            "SELECT taskforge.tf_register_worker(name => 'plan-keyed', queues => ARRAY['o'])"
        ).fetchone()[0]
        w.execute(
            "SELECT count(*) FROM taskforge.tf_submit_many((SELECT jsonb_agg(jsonb_build_object("
            "'task_type', 'noop', 'queue', 'o', 'ordering_key', 'k-' || (g / %(per)s)) ORDER BY g)"
            " FROM generate_series(0, %(n)s - 1) g))",
            {"per": per_key, "n": keys * per_key},
        )
        # A claim is picked before the same call's finalizes, so a key's next task is claimed by
        # the call after the one that finishes its predecessor.
        held = run_turn(w, worker, "o", [], keys)
        for _ in range(per_key // 2):  # half of each key's tasks finish: history below the heads
            held = run_turn(w, worker, "o", held, keys) or run_turn(w, worker, "o", [], keys)
        assert len(held) == keys
        never = w.execute(
            "SELECT coalesce(last_analyze, last_autoanalyze) IS NULL FROM pg_stat_user_tables"
            " WHERE schemaname = 'taskforge' AND relname = 'tasks'"
        ).fetchone()[0]
        assert never, "tasks was analyzed: this test is about tables that never were"

        collector = PlanCollector()
        w.add_notice_handler(collector)
        for statement in [*AUTO_EXPLAIN, "SET auto_explain.log_analyze = on", "SET auto_explain.log_timing = off"]:
            w.execute(statement)
        assert run_turn(w, worker, "o", held, 0) == []  # every key's head finishes
        assert len(run_turn(w, worker, "o", [], 1)) == 1  # a one-slot claim among 40 heads over their history
        assert len(run_turn(w, worker, "o", [], keys)) == keys - 1  # and a claim of every other key's head

    problems = []
    scans = 0
    for plan in collector.plans:
        for node in plan_nodes(plan["Plan"]):
            if node.get("Relation Name") != "tasks":
                continue
            scans += 1
            removed = node.get("Rows Removed by Filter", 0) * node.get("Actual Loops", 1)
            if node["Node Type"] == "Seq Scan" or removed > 500:
                where = node.get("Index Name", node["Node Type"])
                how = f"{node.get('Index Cond', '')} {node.get('Filter', '')}".strip()
                problems.append(f"{where} ({how}) removed {removed} rows: {normalise(plan['Query Text'])[:100]}")
    assert scans > 0, "no plan read tasks (auto_explain sent nothing?)"
    assert problems == [], "\n".join(problems)
