"""Helpers for the SQL-core tests that need several sessions (concurrency, drift, plans, roles, CLI).

Everything here talks to PostgreSQL through psycopg 3 and the public SQL API. Times are database
time (clock_timestamp()) unless a name says otherwise; durations are seconds.
"""

from __future__ import annotations

import difflib
import secrets
import threading
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any
from urllib.parse import quote, urlencode

import psycopg
from psycopg.conninfo import conninfo_to_dict, make_conninfo
from psycopg.types.json import Jsonb

from taskforge import sql
from taskforge.benchmarks.statements import BENCH_CLAIM

__all__ = [
    "as_uri",
    "as_user",
    "backend_waits_on_lock",
    "catalog_snapshot",
    "claim",
    "compare_snapshots",
    "delete_tasks_as_owner",
    "execute_script",
    "finalize",
    "insert_task_as_owner",
    "invariant_violations",
    "nested_json",
    "promote",
    "recover",
    "register_worker",
    "run_claimers",
    "run_only_task",
    "submit",
    "submit_many",
    "unique_name",
    "wait_until",
]


def as_uri(dsn: str) -> str:
    """``dsn`` as a ``postgresql://`` URI (what the docs' shell sessions take); a Unix socket
    directory (the embedded test server) goes in the ``host`` query parameter. The password is
    left out (pass it as PGPASSWORD)."""
    params = {k: str(v) for k, v in conninfo_to_dict(dsn).items() if v not in (None, "")}
    params.pop("password", None)
    user = quote(params.pop("user", "postgres"), safe="")
    dbname = quote(params.pop("dbname", "postgres"), safe="")
    host = params.pop("host", "127.0.0.1")
    netloc = ""
    if host.startswith("/"):
        params = {"host": host, **params}
    else:
        netloc = host + (f":{params.pop('port')}" if "port" in params else "")
    return f"postgresql://{user}@{netloc}/{dbname}" + (f"?{urlencode(params, quote_via=quote)}" if params else "")


def as_user(dsn: str, user: str) -> str:
    """The same DSN, logging in as another user (no password: trust authentication)."""
    params = conninfo_to_dict(dsn)
    params.pop("password", None)
    params["user"] = user
    return make_conninfo(**params)


def unique_name(prefix: str = "q") -> str:
    """A queue/role/key name no other test uses: prefix + '_' + 10 hex digits (valid queue name)."""
    return f"{prefix}_{secrets.token_hex(5)}"


def register_worker(
    conn: psycopg.Connection, name: str = "test-worker", queues: list[str] | None = None, heartbeat_seconds: float = 5
) -> Any:
    """Register a worker and return its worker_id (uuid)."""
    return conn.execute(
        sql.REGISTER_WORKER,
        {
            "name": name,
            "hostname": "localhost",
            "pid": None,
            "queues": queues,
            "task_types": None,
            "heartbeat_seconds": heartbeat_seconds,
        },
    ).fetchone()[0]


def submit(
    conn: psycopg.Connection,
    queue: str,
    task_type: str = "noop",
    payload: dict | None = None,
    priority: int = 0,
    max_attempts: int = 3,
    scheduled_at=None,
    idempotency_key: str | None = None,
    timeout_seconds: float | None = None,
) -> tuple[int, str, bool]:
    """tf_submit with keyword defaults; returns (task_id, state, created). The values go to the
    database as they are (no client-side checks), so tests can send what the SQL must refuse."""
    return conn.execute(
        sql.SUBMIT,
        {
            "task_type": task_type,
            "payload": Jsonb(payload if payload is not None else {}),
            "queue": queue,
            "priority": priority,
            "max_attempts": max_attempts,
            "scheduled_at": scheduled_at,
            "idempotency_key": idempotency_key,
            "timeout_seconds": timeout_seconds,
            "delay_seconds": None,
            "notify_finished": False,
            "traceparent": None,
            "depends_on": None,
            "rate_key": None,
            "concurrency_key": None,
            "ordering_key": None,
        },
    ).fetchone()


def submit_many(
    conn: psycopg.Connection, queue: str, n: int, task_type: str = "noop", max_attempts: int = 3
) -> list[int]:
    """Submit n due tasks through tf_submit in one statement (one transaction); returns their ids."""
    rows = conn.execute(
        "SELECT (taskforge.tf_submit(task_type => %(t)s, queue => %(q)s, max_attempts => %(m)s)).task_id"
        "  FROM generate_series(1, %(n)s)",
        {"t": task_type, "q": queue, "m": max_attempts, "n": n},
    ).fetchall()
    return [r[0] for r in rows]


def claim(
    conn: psycopg.Connection,
    worker_id,
    queues: list[str] | None = None,
    lease_seconds: float = 30,
    max_tasks: int = 1,
    task_types: list[str] | None = None,
) -> list[tuple]:
    """tf_claim; returns the rows (task_id, attempt_number, task_type, payload, queue, priority,
    max_attempts, lease_expires_at, timeout_seconds, traceparent)."""
    return conn.execute(
        BENCH_CLAIM,
        {
            "worker_id": worker_id,
            "queues": queues,
            "lease_seconds": lease_seconds,
            "max_tasks": max_tasks,
            "task_types": task_types,
        },
    ).fetchall()


def claimed_by_a_vanished_worker(conn: psycopg.Connection, queue: str, lease_seconds: float) -> int:
    """Submit a task to ``queue`` and claim it for a new worker that then never renews (its
    lease expires after ``lease_seconds``); returns the task id. ``queue`` must hold no other
    due task."""
    worker = register_worker(conn, name="vanished")
    task_id = submit(conn, queue)[0]
    assert [row[0] for row in claim(conn, worker, queues=[queue], lease_seconds=lease_seconds)] == [task_id]
    return task_id


def finalize(
    conn: psycopg.Connection,
    task_id: int,
    worker_id,
    attempt_number: int,
    outcome: str = "succeeded",
    result: dict | None = None,
    error: dict | None = None,
) -> tuple[bool, str, str | None]:
    """tf_finalize; returns (accepted, task_state, reason)."""
    return conn.execute(
        sql.FINALIZE,
        {
            "task_id": task_id,
            "worker_id": worker_id,
            "attempt_number": attempt_number,
            "outcome": outcome,
            "result": Jsonb(result) if result is not None else None,
            "error": Jsonb(error) if error is not None else None,
        },
    ).fetchone()


def run_only_task(
    dsn: str,
    queue: str,
    task_id: int,
    outcome: str = "succeeded",
    result: dict | None = None,
    error: dict | None = None,
) -> None:
    """Do what a worker would with ``task_id``, the only task of ``queue``: register a worker, claim
    the task, finalize it with ``outcome`` (and ``result`` / ``error``), on a session of its own
    (callable from another thread). Asserts the claim found that task and the finalize was accepted."""
    with psycopg.connect(dsn, autocommit=True) as conn:
        worker = register_worker(conn, queues=[queue])
        (row,) = claim(conn, worker, queues=[queue])
        assert row[0] == task_id, (row, task_id)
        assert finalize(conn, task_id, worker, row[1], outcome, result=result, error=error)[0]


def nested_json(levels: int) -> str:
    """JSON text of an object nested ``levels`` deep, ``{"a": [[...]]}`` (the object is level 1).
    Around 1000 levels is deeper than Python's json module decodes (RecursionError)."""
    return '{"a":' + "[" * (levels - 1) + "]" * (levels - 1) + "}"


def insert_task_as_owner(conn: psycopg.Connection, payload: str, queue: str, task_type: str = "echo") -> int:
    """Insert a QUEUED task with ``payload`` (JSON text) straight into taskforge.tasks as the
    table owner, without tf_submit's checks (which refuse a payload deeper than 100 levels)."""
    with conn.transaction():
        conn.execute("SET LOCAL ROLE taskforge_owner")
        row = conn.execute(
            "INSERT INTO taskforge.tasks (task_type, payload, queue, priority, max_attempts, state, scheduled_at, "
            "created_at, updated_at) VALUES (%s, %s::jsonb, %s, 0, 3, 'QUEUED', clock_timestamp(), "
            "clock_timestamp(), clock_timestamp()) RETURNING task_id",
            (task_type, payload, queue),
        ).fetchone()
    assert row is not None
    return int(row[0])


def delete_tasks_as_owner(conn: psycopg.Connection, task_ids: list[int]) -> None:
    """Delete tasks and their attempts as the table owner (so that no other test's plain
    connection meets a document it cannot decode)."""
    with conn.transaction():
        conn.execute("SET LOCAL ROLE taskforge_owner")
        conn.execute("DELETE FROM taskforge.attempts WHERE task_id = ANY(%s)", (task_ids,))
        conn.execute("DELETE FROM taskforge.tasks WHERE task_id = ANY(%s)", (task_ids,))


# tf_recover and tf_promote one at a time (the scheduler sends them joined, sql.SCHEDULER_TICK).
RECOVER = "SELECT recovered, failed, next_lease_expiry FROM taskforge.tf_recover(max_tasks => %(max_tasks)s)"
PROMOTE = "SELECT promoted, next_due_at FROM taskforge.tf_promote(max_tasks => %(max_tasks)s)"


def recover(conn: psycopg.Connection, max_tasks: int = 1000) -> tuple:
    """tf_recover; returns (recovered, failed, next_lease_expiry)."""
    return conn.execute(RECOVER, {"max_tasks": max_tasks}).fetchone()


def promote(conn: psycopg.Connection, max_tasks: int = 1000) -> tuple:
    """tf_promote; returns (promoted, next_due_at)."""
    return conn.execute(PROMOTE, {"max_tasks": max_tasks}).fetchone()


def invariant_violations(conn: psycopg.Connection) -> list[tuple]:
    """Rows of taskforge.tf_invariant_violations (must be empty)."""
    return conn.execute(sql.INVARIANT_VIOLATIONS).fetchall()


def wait_until(
    predicate: Callable[[], Any], timeout: float = 30.0, interval: float = 0.01, message: str = "condition"
) -> Any:
    """Poll predicate() until it returns a truthy value (returned) or timeout seconds (monotonic
    clock) pass, then raise AssertionError naming message."""
    deadline = time.monotonic() + timeout
    while True:
        value = predicate()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout} s waiting for {message}")
        time.sleep(interval)


def run_claimers(
    dsn: str,
    queue: str,
    monitors: dict[str, tuple[str, tuple]],
    *,
    claimers: int = 8,
    max_tasks: int = 1,
    hold_seconds: float = 0.01,
    duration: float | None = None,
    timeout: float = 120.0,
) -> tuple[int, dict[str, int]]:
    """Claim and finish ('succeeded') the tasks of ``queue`` from ``claimers`` connections at once
    (each its own registered worker, all released together by a barrier), each keeping what it
    claimed RUNNING ``hold_seconds`` before finishing it, while every monitor (name -> (query,
    params), a query returning one integer) runs in a tight loop on a connection of its own, so
    that a breach of a limit is seen. Without ``duration`` a claimer stops once no task of the
    queue is QUEUED or RUNNING (or after ``timeout`` seconds); with it, after ``duration`` seconds
    (monotonic clock), finishing what it holds first. Returns (attempts finished and accepted,
    name -> the largest value that monitor saw). A monitor's error is raised here."""
    stop = threading.Event()
    seen = dict.fromkeys(monitors, 0)
    errors: list[BaseException] = []

    def monitor(name: str, query: str, params: tuple) -> None:
        try:
            with psycopg.connect(dsn, autocommit=True) as c:
                while not stop.is_set():
                    seen[name] = max(seen[name], c.execute(query, params).fetchone()[0])
        except BaseException as exc:  # noqa: BLE001 - handed to the caller below
            errors.append(exc)

    barrier = threading.Barrier(claimers)

    def claimer(index: int) -> int:
        done = 0
        with psycopg.connect(dsn, autocommit=True) as c:
            worker_id = register_worker(c, f"claimer-{index}", [queue])
            barrier.wait(timeout=60)
            deadline = time.monotonic() + (timeout if duration is None else duration)
            while time.monotonic() < deadline:
                rows = claim(c, worker_id, [queue], lease_seconds=300, max_tasks=max_tasks)
                if not rows:
                    if duration is None:
                        left = c.execute(
                            "SELECT count(*) FROM taskforge.tf_tasks"
                            " WHERE queue = %s AND state IN ('QUEUED', 'RUNNING')",
                            (queue,),
                        ).fetchone()[0]
                        if left == 0:
                            return done
                    time.sleep(0.002)
                    continue
                time.sleep(hold_seconds)
                for row in rows:
                    accepted, _state, _reason = finalize(c, row[0], worker_id, row[1], "succeeded")
                    done += int(accepted)
        return done

    watchers = [
        threading.Thread(target=monitor, args=(name, query, params), daemon=True)
        for name, (query, params) in monitors.items()
    ]
    for watcher in watchers:
        watcher.start()
    try:
        with ThreadPoolExecutor(claimers) as pool:
            finished = sum(pool.map(claimer, range(claimers)))
    finally:
        stop.set()
        for watcher in watchers:
            watcher.join(timeout=10)
    if errors:
        raise errors[0]
    return finished, seen


def backend_waits_on_lock(observer: psycopg.Connection, pid: int) -> bool:
    """True when backend pid is blocked waiting for a heavyweight lock (pg_stat_activity)."""
    row = observer.execute("SELECT wait_event_type FROM pg_stat_activity WHERE pid = %s", (pid,)).fetchone()
    return row is not None and row[0] == "Lock"


def execute_script(dsn: str, script: str) -> None:
    """Run a multi-statement SQL script in one autocommit simple-protocol execute (no params)."""
    with psycopg.connect(dsn, autocommit=True) as c:
        c.execute(script.encode("utf-8"))


# --- catalog snapshots (drift test, migrate CLI test) ----------------------------------------------

_SORTED_ACL = "(SELECT array_agg(x ORDER BY x) FROM unnest({col}::text[]) x)"

#: section name -> query returning rows that describe the taskforge schema without OIDs.
SNAPSHOT_QUERIES: dict[str, str] = {
    "schema": f"""
        SELECT n.nspname AS name, pg_get_userbyid(n.nspowner) AS owner,
               {_SORTED_ACL.format(col="n.nspacl")} AS acl, obj_description(n.oid, 'pg_namespace') AS comment
          FROM pg_namespace n WHERE n.nspname = 'taskforge'""",
    "functions": f"""
        SELECT p.proname AS name, pg_get_function_identity_arguments(p.oid) AS identity_args,
               pg_get_function_arguments(p.oid) AS args_with_defaults,
               pg_get_function_result(p.oid) AS result, l.lanname AS language, p.prokind AS kind,
               p.prosecdef AS security_definer, p.proconfig AS config, p.provolatile AS volatility,
               p.proisstrict AS strict, p.proleakproof AS leakproof, p.proparallel AS parallel,
               pg_get_userbyid(p.proowner) AS owner, {_SORTED_ACL.format(col="p.proacl")} AS acl,
               obj_description(p.oid, 'pg_proc') AS comment, p.prosrc AS body
          FROM pg_proc p JOIN pg_language l ON l.oid = p.prolang
         WHERE p.pronamespace = 'taskforge'::regnamespace
         ORDER BY 1, 2""",
    "relations": f"""
        SELECT c.relname AS name, c.relkind AS kind, c.relpersistence AS persistence,
               pg_get_userbyid(c.relowner) AS owner, {_SORTED_ACL.format(col="c.relacl")} AS acl,
               c.reloptions AS options, obj_description(c.oid, 'pg_class') AS comment
          FROM pg_class c
         WHERE c.relnamespace = 'taskforge'::regnamespace AND c.relkind IN ('r', 'p', 'v', 'm', 'f', 'S')
         ORDER BY 1""",
    "columns": f"""
        SELECT c.relname AS relation, a.attname AS name,
               row_number() OVER (PARTITION BY c.oid ORDER BY a.attnum) AS position,
               format_type(a.atttypid, a.atttypmod) AS type, a.attnotnull AS not_null,
               a.attidentity AS identity, a.attgenerated AS generated,
               pg_get_expr(d.adbin, d.adrelid) AS default, col_description(c.oid, a.attnum) AS comment,
               {_SORTED_ACL.format(col="a.attacl")} AS acl
          FROM pg_class c
          JOIN pg_attribute a ON a.attrelid = c.oid AND a.attnum > 0 AND NOT a.attisdropped
          LEFT JOIN pg_attrdef d ON d.adrelid = c.oid AND d.adnum = a.attnum
         WHERE c.relnamespace = 'taskforge'::regnamespace AND c.relkind IN ('r', 'p', 'v', 'm', 'f')
         ORDER BY 1, 3""",
    "views": """
        SELECT c.relname AS name, pg_get_viewdef(c.oid, true) AS definition
          FROM pg_class c
         WHERE c.relnamespace = 'taskforge'::regnamespace AND c.relkind IN ('v', 'm')
         ORDER BY 1""",
    "constraints": """
        SELECT c.relname AS relation, k.conname AS name, k.contype AS type,
               pg_get_constraintdef(k.oid, true) AS definition, k.condeferrable AS deferrable,
               k.condeferred AS deferred, k.convalidated AS validated,
               obj_description(k.oid, 'pg_constraint') AS comment
          FROM pg_constraint k JOIN pg_class c ON c.oid = k.conrelid
         WHERE k.connamespace = 'taskforge'::regnamespace
         ORDER BY 1, 2""",
    "indexes": """
        SELECT i.tablename AS relation, i.indexname AS name, i.indexdef AS definition,
               obj_description(format('%I.%I', i.schemaname, i.indexname)::regclass, 'pg_class') AS comment
          FROM pg_indexes i WHERE i.schemaname = 'taskforge'
         ORDER BY 1, 2""",
    "sequences": """
        SELECT s.sequencename AS name, pg_get_userbyid(c.relowner) AS owner, s.data_type::text AS type,
               s.start_value, s.increment_by, s.min_value, s.max_value, s.cycle, s.cache_size
          FROM pg_sequences s
          JOIN pg_class c ON c.relname = s.sequencename AND c.relnamespace = 'taskforge'::regnamespace
         WHERE s.schemaname = 'taskforge'
         ORDER BY 1""",
    "triggers": """
        SELECT c.relname AS relation, t.tgname AS name, pg_get_triggerdef(t.oid, true) AS definition,
               t.tgenabled AS enabled
          FROM pg_trigger t JOIN pg_class c ON c.oid = t.tgrelid
         WHERE c.relnamespace = 'taskforge'::regnamespace AND NOT t.tgisinternal
         ORDER BY 1, 2""",
    "types": """
        SELECT t.typname AS name, t.typtype AS kind, pg_get_userbyid(t.typowner) AS owner,
               format_type(t.typbasetype, t.typtypmod) AS base_type, t.typnotnull AS not_null,
               t.typdefault AS default,
               (SELECT array_agg(e.enumlabel ORDER BY e.enumsortorder) FROM pg_enum e WHERE e.enumtypid = t.oid)
                   AS labels,
               obj_description(t.oid, 'pg_type') AS comment
          FROM pg_type t
         WHERE t.typnamespace = 'taskforge'::regnamespace AND t.typrelid = 0 AND t.typelem = 0
         ORDER BY 1""",
    "policies": """
        SELECT p.tablename AS relation, p.policyname AS name, p.permissive, p.roles::text[] AS roles,
               p.cmd, p.qual, p.with_check
          FROM pg_policies p WHERE p.schemaname = 'taskforge'
         ORDER BY 1, 2""",
    "task_types": """
        SELECT tt.task_type, tt.backoff_base_seconds, tt.backoff_cap_seconds, tt.backoff_jitter, tt.description
          FROM taskforge.task_types tt
         ORDER BY 1""",
}


def catalog_snapshot(dsn: str) -> dict[str, list[tuple]]:
    """Describe the taskforge schema of one database: section name -> sorted rows, each row a
    tuple of (column, value) pairs (no OIDs, no timestamps). Sections: see SNAPSHOT_QUERIES
    (functions, comments, views, tables, columns, defaults, constraints, indexes, grants,
    sequences, triggers, types, policies, task_types)."""
    snapshot: dict[str, list[tuple]] = {}
    with psycopg.connect(dsn, autocommit=True) as c:
        for section, query in SNAPSHOT_QUERIES.items():
            cur = c.execute(query)
            names = [col.name for col in cur.description]
            snapshot[section] = [tuple(zip(names, row, strict=True)) for row in cur.fetchall()]
    return snapshot


def _lines(rows: list[tuple]) -> list[str]:
    """Lines "[key] column: value" per row (key = the row's first two values); multi-line values
    (function bodies, view definitions) become several lines, so a diff names object and column."""
    out = []
    for row in rows:
        key = "/".join(str(value) for _, value in row[:2])
        for column, value in row:
            text = "NULL" if value is None else str(value)
            out.extend(f"[{key}] {column}: {line}" for line in text.splitlines() or [""])
    return out or ["(no rows)"]


def compare_snapshots(
    a: dict[str, list[tuple]], b: dict[str, list[tuple]], a_name: str = "a", b_name: str = "b"
) -> str:
    """Return a unified diff (str) of two catalog snapshots, one section after another; '' when
    they are identical."""
    parts = []
    for section in sorted(set(a) | set(b)):
        rows_a, rows_b = a.get(section), b.get(section)
        if rows_a == rows_b:
            continue
        diff = difflib.unified_diff(
            _lines(rows_a or []),
            _lines(rows_b or []),
            fromfile=f"{a_name}:{section}",
            tofile=f"{b_name}:{section}",
            lineterm="",
            n=2,
        )
        parts.append("\n".join(diff))
    return "\n".join(parts)


class Listener:
    """A LISTEN taskforge connection; drain() returns the payloads received up to a marker."""

    def __init__(self, dsn: str):
        self.conn = psycopg.connect(dsn, autocommit=True)
        self.conn.execute("LISTEN taskforge")
        self.sender = psycopg.connect(dsn, autocommit=True)

    def drain(self, timeout: float = 60) -> list[str]:
        """Send a unique marker notification and return every payload received before it, in
        order. Notifications are delivered in commit order, so anything committed before the
        marker is in the list."""
        marker = unique_name("marker")
        self.sender.execute("SELECT pg_notify('taskforge', %s)", (marker,))
        received = []
        for note in self.conn.notifies(timeout=timeout):
            assert note.channel == "taskforge"
            if note.payload == marker:
                return received
            received.append(note.payload)
        raise AssertionError(f"the marker notification did not arrive within {timeout} s")

    def close(self):
        self.conn.close()
        self.sender.close()
