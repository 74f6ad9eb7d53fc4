"""Least privilege (docs/design.md §7), checked by logging in as real roles and in the catalog.

Each test creates LOGIN roles with unique names (roles are cluster-wide), makes them members of
one TaskForge group role, connects as them (trust authentication on 127.0.0.1) and drops them at
the end. Every function, table, view and sequence is enumerated from the catalog, so a new object
without a decision here fails a test; the matrix here (ALLOWED, VIEW_READERS) is compared with
the tables of docs/design.md §7 and docs/operations.md. Also: migrating as a user without
CREATEROLE.
"""

from __future__ import annotations

import re
import uuid
from pathlib import Path

import psycopg
import pytest
from click.testing import CliRunner
from psycopg.conninfo import conninfo_to_dict

from taskforge import database as tfdb
from taskforge.cli import main as cli_main

from sqlcore_helpers import as_user, claim, finalize, register_worker, submit, unique_name

GROUPS = ("taskforge_worker", "taskforge_scheduler", "taskforge_client", "taskforge_console")


# One harmless call per function. A caller without EXECUTE gets 42501 before anything runs; a
# caller with it may get another error (TF404 for made-up ids), which still proves the grant.
CALLS = {
    "tf_submit": "SELECT * FROM taskforge.tf_submit(task_type => 'noop', queue => 'perm_check')",
    "tf_submit_many": "SELECT * FROM taskforge.tf_submit_many(requests => "
    '\'[{"task_type": "noop", "queue": "perm_check"}]\')',
    "tf_cancel": "SELECT * FROM taskforge.tf_cancel(task_id => -1)",
    "tf_retry": "SELECT * FROM taskforge.tf_retry(task_id => -1)",
    "tf_pause_queue": "SELECT taskforge.tf_pause_queue(queue => 'perm_check')",
    "tf_resume_queue": "SELECT taskforge.tf_resume_queue(queue => 'perm_check')",
    "tf_set_queue_limit": "SELECT taskforge.tf_set_queue_limit(queue => 'perm_check', max_running => NULL)",
    "tf_set_queue_aging": "SELECT taskforge.tf_set_queue_aging(queue => 'perm_check', priority_per_second => NULL)",
    "tf_set_rate_limit": "SELECT * FROM taskforge.tf_set_rate_limit(rate_key => 'perm_check', per_second => NULL)",
    "tf_set_concurrency_limit": "SELECT taskforge.tf_set_concurrency_limit("
    "concurrency_key => 'perm_check', max_running => NULL)",
    "tf_register_worker": "SELECT taskforge.tf_register_worker(name => 'perm-check')",
    "tf_heartbeat": "SELECT taskforge.tf_heartbeat(worker_id => '00000000-0000-0000-0000-000000000000')",
    "tf_deregister_worker": "SELECT taskforge.tf_deregister_worker("
    "worker_id => '00000000-0000-0000-0000-000000000000')",
    "tf_claim": "SELECT * FROM taskforge.tf_claim(worker_id => '00000000-0000-0000-0000-000000000000')",
    "tf_renew": "SELECT * FROM taskforge.tf_renew(task_id => -1, worker_id => "
    "'00000000-0000-0000-0000-000000000000', attempt_number => 1)",
    "tf_finalize": "SELECT * FROM taskforge.tf_finalize(task_id => -1, worker_id => "
    "'00000000-0000-0000-0000-000000000000', attempt_number => 1, outcome => 'succeeded')",
    "tf_renew_many": "SELECT * FROM taskforge.tf_renew_many(worker_id => "
    "'00000000-0000-0000-0000-000000000000', task_ids => '{-1}', attempt_numbers => '{1}')",
    "tf_finalize_many": "SELECT * FROM taskforge.tf_finalize_many(worker_id => "
    "'00000000-0000-0000-0000-000000000000', task_ids => '{-1}', attempt_numbers => '{1}', "
    "outcomes => '{succeeded}')",
    "tf_finalize_and_claim": "SELECT * FROM taskforge.tf_finalize_and_claim(worker_id => "
    "'00000000-0000-0000-0000-000000000000', task_ids => '{}', attempt_numbers => '{}', "
    "outcomes => '{}')",
    "tf_parent_results": "SELECT * FROM taskforge.tf_parent_results(task_id => -1, worker_id => "
    "'00000000-0000-0000-0000-000000000000', attempt_number => 1)",
    "tf_recover": "SELECT * FROM taskforge.tf_recover(max_tasks => 1)",
    "tf_promote": "SELECT * FROM taskforge.tf_promote(max_tasks => 1)",
    "tf_prune": "SELECT taskforge.tf_prune(older_than_seconds => 3153600000, max_tasks => 1)",
    "tf_prune_workers": "SELECT * FROM taskforge.tf_prune_workers(older_than_seconds => 3153600000, max_rows => 1)",
    "tf_make_partitions": "SELECT taskforge.tf_make_partitions()",
    # Owner only: no role may call it (so it never runs here).
    "tf_partition_history": "SELECT taskforge.tf_partition_history(tasks_per_partition => 1000)",
    "tf_scheduler_heartbeat": "SELECT taskforge.tf_scheduler_heartbeat("
    "scheduler_id => gen_random_uuid(), name => 'perm-check')",
    "tf_backoff": "SELECT taskforge.tf_backoff(failed_attempt => 1)",
    "tf_schema_version": "SELECT taskforge.tf_schema_version()",
    "tf_register_task_type": "SELECT taskforge.tf_register_task_type('perm_check')",
    "tf_schedule_periodic": "SELECT * FROM taskforge.tf_schedule_periodic("
    "name => 'perm-check', cron => '0 0 1 1 *', task_type => 'noop')",
    "tf_unschedule_periodic": "SELECT taskforge.tf_unschedule_periodic(name => 'perm-check')",
    "tf_enqueue_periodic": "SELECT * FROM taskforge.tf_enqueue_periodic(max_tasks => 1)",
    # A procedure that commits: inside the check's transaction it fails with 2D000 (not 42501)
    # once it may run, which is what tells allowed from denied here.
    "tf_maintain": "CALL taskforge.tf_maintain()",
    "_tf_cron_field": "SELECT taskforge._tf_cron_field('minute', '*', 0, 59)",
    "_tf_cron_parse": "SELECT * FROM taskforge._tf_cron_parse('* * * * *')",
    "_tf_cron_fire_at": "SELECT taskforge._tf_cron_fire_at('2030-01-01 00:00', 'UTC')",
    "_tf_cron_next": "SELECT taskforge._tf_cron_next('* * * * *', now(), 'UTC')",
    "_tf_cron_latest": "SELECT taskforge._tf_cron_latest('* * * * *', now(), now(), 'UTC')",
    "_tf_cap_error": "SELECT taskforge._tf_cap_error('{}'::jsonb)",
    "_tf_json_too_deep": "SELECT taskforge._tf_json_too_deep('{}'::jsonb)",
    "_tf_token_ok": "SELECT taskforge._tf_token_ok(1, 1)",
    "_tf_sorted_at": "SELECT taskforge._tf_sorted_at('{1}', 1)",
    "_tf_task_state": "SELECT taskforge._tf_task_state(-1)",
    "_tf_retry_delay": "SELECT taskforge._tf_retry_delay('noop', 1)",
    "_tf_outcome_ok": "SELECT taskforge._tf_outcome_ok('succeeded', NULL)",
    "_tf_check_outcome": "SELECT taskforge._tf_check_outcome('o', 'r', 'succeeded', NULL)",
    "_tf_valid_batch_of_one": "SELECT taskforge._tf_valid_batch_of_one(NULL, '{1}', '{1}', NULL, NULL, NULL, false)",
    "_tf_check_int": "SELECT taskforge._tf_check_int('x', 1, 0, 2)",
    "_tf_check_task_id": "SELECT taskforge._tf_check_task_id('x', 1)",
    "_tf_check_names": "SELECT taskforge._tf_check_names('x', ARRAY['q'], 'queue')",
    "_tf_lock_task": "SELECT taskforge._tf_lock_task(-1)",
    "_tf_notify_queues": "SELECT taskforge._tf_notify_queues(ARRAY['perm_check'])",
    "_tf_check_seconds": "SELECT taskforge._tf_check_seconds('x', 1, 0, 2)",
    "_tf_submit_one": "SELECT * FROM taskforge._tf_submit_one("
    "'noop', '{}'::jsonb, 'perm_check', 0, 1, NULL, NULL, now(), '')",
    "_tf_fingerprint": "SELECT taskforge._tf_fingerprint('noop', '{}'::jsonb, 'q', 0, 1, NULL)",
    "_tf_guard": "SELECT taskforge._tf_guard(NULL, NULL, NULL, NULL, NULL, NULL, 1, now())",
    "_tf_guard_batch": "SELECT taskforge._tf_guard_batch(false, false, NULL, NULL, NULL, NULL, NULL, NULL, 1, now())",
    "_tf_check_fencing": "SELECT taskforge._tf_check_fencing(1, NULL, 1)",
    "_tf_task_row_ok": "SELECT taskforge._tf_task_row_ok('QUEUED', 0, 1, NULL, NULL, NULL, NULL, NULL, NULL, NULL)",
    "_tf_attempt_row_ok": "SELECT taskforge._tf_attempt_row_ok('RUNNING', NULL, now(), now(), NULL)",
    "_tf_check_batch": "SELECT taskforge._tf_check_batch(NULL, NULL, NULL, NULL, NULL, NULL, false)",
    "_tf_unknown_worker": "SELECT taskforge._tf_unknown_worker(NULL)",
    "_tf_name_pattern": "SELECT taskforge._tf_name_pattern('queue')",
    "_tf_check_name": "SELECT taskforge._tf_check_name('queue', 'q', 'queue')",
    "_tf_invalid": "SELECT taskforge._tf_invalid('x', 'y')",
    "_tf_lock_queue": "SELECT taskforge._tf_lock_queue('perm_check')",
    "_tf_broken_invariant": "SELECT taskforge._tf_broken_invariant('y')",
    "_tf_task_state_after": "SELECT taskforge._tf_task_state_after('failed', false, 1, 3)",
    "_tf_attempt_state_after": "SELECT taskforge._tf_attempt_state_after('failed')",
    "_tf_claim_pick": "SELECT taskforge._tf_claim_pick("
    "'00000000-0000-0000-0000-000000000000', NULL, 30, 1, NULL, now())",
    "_tf_claim_keyed": "SELECT taskforge._tf_claim_keyed("
    "'00000000-0000-0000-0000-000000000000', NULL, NULL, 1, now(), '{}', '{}', '{}')",
    "_tf_check_flow_key": "SELECT taskforge._tf_check_flow_key('k', 'v')",
    "_tf_claim_aged": "SELECT taskforge._tf_claim_aged('perm_check', 1, NULL, 1, now())",
    "_tf_claim_order": "SELECT taskforge._tf_claim_order('{}', 1, now())",
    "_tf_turn": "SELECT * FROM taskforge._tf_turn("
    "'00000000-0000-0000-0000-000000000000', '{-1}', '{1}', '{succeeded}', NULL, NULL, '{}', 30, now())",
    "_tf_renew_attempts": "SELECT * FROM taskforge._tf_renew_attempts("
    "'00000000-0000-0000-0000-000000000000', '{-1}', '{1}', 30)",
    # The maintenance sweeps' private helpers (bad rows: db/functions/tf_recover.sql, "Bad rows").
    "_tf_maintenance_row_error": "SELECT taskforge._tf_maintenance_row_error('P0001')",
    "_tf_maintenance_failed": "SELECT taskforge._tf_maintenance_failed('tf_recover', '0', 'P0001', 'perm', now())",
    "_tf_recover_rows": "SELECT * FROM taskforge._tf_recover_rows('{}', now())",
    "_tf_promote_rows": "SELECT * FROM taskforge._tf_promote_rows('{}', now())",
    "_tf_prune_rows": "SELECT taskforge._tf_prune_rows('{}', now())",
    "_tf_drop_partitions": "SELECT taskforge._tf_drop_partitions(now())",
    "_tf_add_partition": "SELECT taskforge._tf_add_partition(0)",
    "_tf_enqueue_tick": "SELECT * FROM taskforge._tf_enqueue_tick('perm-check', now())",
    "_tf_traceparent_ok": "SELECT taskforge._tf_traceparent_ok("
    "'00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01')",
    # A trigger function cannot be called; attaching it to a table of one's own needs EXECUTE on it.
    "_tf_notify_finished": "DO $$BEGIN"
    " CREATE TEMP TABLE perm_check_t (task_id bigint, state text, notify_finished boolean);"
    " CREATE TRIGGER perm_check AFTER UPDATE ON perm_check_t FOR EACH ROW"
    " EXECUTE FUNCTION taskforge._tf_notify_finished(); END$$",
    "_tf_release_children": "DO $$BEGIN"
    " CREATE TEMP TABLE perm_check_r (task_id bigint, state text, has_children boolean);"
    " CREATE TRIGGER perm_check AFTER UPDATE ON perm_check_r FOR EACH ROW"
    " EXECUTE FUNCTION taskforge._tf_release_children(); END$$",
    "_tf_wake_ordering_key": "DO $$BEGIN"
    " CREATE TEMP TABLE perm_check_o (task_id bigint, state text, ordering_key text, finished_at timestamptz);"
    " CREATE TRIGGER perm_check AFTER UPDATE ON perm_check_o FOR EACH ROW"
    " EXECUTE FUNCTION taskforge._tf_wake_ordering_key(); END$$",
}

ANY_ROLE = {"tf_backoff", "tf_schema_version"}
QUEUE_CONTROLS = {"tf_pause_queue", "tf_resume_queue", "tf_set_queue_limit", "tf_set_queue_aging"}
# Flow-control limits (docs/flow-control.md) are set by clients, as queue limits are.
FLOW_CONTROLS = {"tf_set_rate_limit", "tf_set_concurrency_limit"}
CLIENT_FUNCTIONS = {
    "tf_submit",
    "tf_submit_many",
    "tf_cancel",
    "tf_retry",
    "tf_schedule_periodic",
    "tf_unschedule_periodic",
}
ALLOWED = {
    "taskforge_worker": ANY_ROLE
    | {
        "tf_register_worker",
        "tf_heartbeat",
        "tf_deregister_worker",
        "tf_claim",
        "tf_renew",
        "tf_finalize",
        "tf_renew_many",
        "tf_finalize_many",
        "tf_finalize_and_claim",
        "tf_parent_results",
    },
    "taskforge_scheduler": ANY_ROLE
    | {"tf_recover", "tf_promote", "tf_prune", "tf_prune_workers", "tf_scheduler_heartbeat", "tf_enqueue_periodic"}
    | {"tf_make_partitions", "tf_maintain"},
    "taskforge_client": ANY_ROLE | QUEUE_CONTROLS | FLOW_CONTROLS | CLIENT_FUNCTIONS,
    "taskforge_console": ANY_ROLE | QUEUE_CONTROLS | FLOW_CONTROLS | CLIENT_FUNCTIONS,
    None: set(),  # a login role in no TaskForge group
}
VIEW_READERS = {"taskforge_client", "taskforge_console"}
#: The schema's procedures (CALL, not SELECT): SECURITY INVOKER, so they may commit.
PROCEDURES = {"tf_maintain"}

DOCS = Path(__file__).resolve().parents[2] / "docs"
TABLE_PRIVILEGES = ("SELECT", "INSERT", "UPDATE", "DELETE", "TRUNCATE", "REFERENCES", "TRIGGER")
COLUMN_PRIVILEGES = ("SELECT", "INSERT", "UPDATE", "REFERENCES")
SEQUENCE_PRIVILEGES = ("USAGE", "SELECT", "UPDATE")


def documented_matrix(page: str, heading: str) -> dict[str, tuple[set[str], bool]]:
    """The roles table under ``heading`` of docs/``page``: role -> (functions it may call,
    whether it may read the views). "member of `X`" inherits X's row."""
    text = (DOCS / page).read_text()
    start = text.index(heading)
    end = text.find("\n## ", start + len(heading))
    rows: dict[str, tuple[set[str], bool]] = {}
    parents: dict[str, str] = {}
    for line in text[start : end if end > 0 else None].splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) != 3 or not re.fullmatch(r"`taskforge_\w+`", cells[0]):
            continue
        role, calls, reads = cells[0].strip("`"), cells[1], cells[2]
        if calls.startswith("member of"):
            parents[role] = re.search(r"`(taskforge_\w+)`", calls).group(1)
            calls = ""
        reads_views = not reads.startswith("nothing")
        assert reads_views == reads.startswith("every"), f"{page}: cannot read the read column of {role}: {reads!r}"
        rows[role] = (set(re.findall(r"`(tf_\w+)`", calls)), reads_views)
    for role, parent in parents.items():
        rows[role] = (rows[role][0] | rows[parent][0], rows[role][1])
    return rows


@pytest.mark.parametrize(("page", "heading"), [("design.md", "## 7. Security"), ("operations.md", "## Roles")])
def test_the_documented_matrix_is_the_tested_one(page, heading):
    documented = documented_matrix(page, heading)
    assert set(documented) == set(GROUPS), f"{page}: roles {sorted(documented)}"
    for group in GROUPS:
        calls, reads = documented[group]
        assert calls == ALLOWED[group], (
            f"{page} says {group} may call {sorted(calls)}; granted and tested: {sorted(ALLOWED[group])} "
            f"(missing from the page: {sorted(ALLOWED[group] - calls)}, extra: {sorted(calls - ALLOWED[group])})"
        )
        assert reads == (group in VIEW_READERS), f"{page}: {group} reads the views: {reads}"


def test_design_counts_the_public_functions():
    public = sorted(name for name in CALLS if name.startswith("tf_") and name not in PROCEDURES)
    count = int(re.search(r"All (\d+) public `tf_\*` functions", (DOCS / "design.md").read_text()).group(1))
    assert count == len(public), f"docs/design.md §7 says {count} public functions; there are {len(public)}"


CATALOG_FUNCTIONS = """
SELECT p.oid::regprocedure::text, p.proname, has_function_privilege(%(role)s, p.oid, 'EXECUTE')
  FROM pg_proc p WHERE p.pronamespace = 'taskforge'::regnamespace
"""
# Every relation of the schema, and yoyo's bookkeeping tables the migration leaves in public.
CATALOG_RELATIONS = """
SELECT c.oid, n.nspname || '.' || c.relname, c.relkind
  FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
 WHERE (n.nspname = 'taskforge' OR (n.nspname = 'public' AND c.relname LIKE ANY ('{_yoyo%,yoyo%}')))
   AND c.relkind IN ('r', 'p', 'v', 'm', 'S', 'f')
"""


@pytest.mark.parametrize("group", [*GROUPS, None], ids=[*GROUPS, "no-group"])
def test_catalog_privileges_are_the_matrix(conn, login_role, group):
    """What each role may do to every function (each overload), table, view and sequence and to
    the schema, by the catalog's has_*_privilege: exactly the matrix, every privilege kind."""
    role = group or login_role()
    wrong = []
    functions = conn.execute(CATALOG_FUNCTIONS, {"role": role}).fetchall()
    assert {name for _, name, _ in functions} == set(CALLS)
    for signature, name, granted in functions:
        if granted != (name in ALLOWED[group]):
            wrong.append(f"EXECUTE {signature}: {granted}")
    relations = conn.execute(CATALOG_RELATIONS).fetchall()
    kinds = {kind for _, _, kind in relations}
    assert {"r", "v", "S"} <= kinds and any(name == "public._yoyo_migration" for _, name, _ in relations)
    for oid, name, kind in relations:
        if kind == "S":
            checks = [(p, f"has_sequence_privilege(%(role)s, {oid}::oid, '{p}')", False) for p in SEQUENCE_PRIVILEGES]
        else:
            readable = kind == "v" and group in VIEW_READERS
            checks = [
                (p, f"has_table_privilege(%(role)s, {oid}::oid, '{p}')", p == "SELECT" and readable)
                for p in TABLE_PRIVILEGES
            ] + [
                (
                    f"{p} (a column)",
                    f"has_any_column_privilege(%(role)s, {oid}::oid, '{p}')",
                    p == "SELECT" and readable,
                )
                for p in COLUMN_PRIVILEGES
            ]
        for privilege, expression, expected in checks:
            if conn.execute(f"SELECT {expression}", {"role": role}).fetchone()[0] != expected:
                wrong.append(f"{privilege} on {name}: expected {expected}")
    usage, create = conn.execute(
        "SELECT has_schema_privilege(%(role)s, 'taskforge', 'USAGE'), "
        "has_schema_privilege(%(role)s, 'taskforge', 'CREATE')",
        {"role": role},
    ).fetchone()
    if usage != (group is not None) or create:
        wrong.append(f"schema taskforge: USAGE {usage}, CREATE {create}")
    assert wrong == [], f"{group or 'no group'}: {wrong}"


def _denied(c: psycopg.Connection, statement: str) -> bool:
    """Run statement in a transaction that is rolled back; True when it fails with 42501."""
    try:
        c.execute(statement).fetchall()
        return False
    except psycopg.errors.InsufficientPrivilege:
        return True
    except psycopg.Error:
        return False
    finally:
        c.rollback()


def test_every_function_has_a_role_decision(conn):
    names = {
        r[0]
        for r in conn.execute("SELECT proname FROM pg_proc WHERE pronamespace = 'taskforge'::regnamespace").fetchall()
    }
    assert names == set(CALLS), (
        "functions without a privilege check in tests/test_roles.py "
        f"(add them to CALLS and ALLOWED): {sorted(names ^ set(CALLS))}"
    )


@pytest.mark.parametrize("group", [*GROUPS, None], ids=[*GROUPS, "no-group"])
def test_privilege_matrix(db_dsn, conn, login_role, group):
    role = login_role(*([group] if group else []))
    relations = [
        r[0]
        for r in conn.execute(
            """SELECT format('%I.%I', n.nspname, c.relname), c.relkind FROM pg_class c
             JOIN pg_namespace n ON n.oid = c.relnamespace
            WHERE n.nspname = 'taskforge' AND c.relkind IN ('r', 'p', 'v', 'm') ORDER BY 2, 1"""
        ).fetchall()
    ]
    views = {
        r[0]
        for r in conn.execute(
            "SELECT format('%I.%I', schemaname, viewname) FROM pg_views WHERE schemaname = 'taskforge'"
        ).fetchall()
    }
    assert {"taskforge.tasks", "taskforge.attempts", "taskforge.tf_tasks"} <= set(relations)

    wrong = []
    with psycopg.connect(as_user(db_dsn, role)) as c:
        assert c.execute("SELECT current_user").fetchone()[0] == role
        for function, statement in CALLS.items():
            expected_denied = function not in ALLOWED[group]
            if _denied(c, statement) != expected_denied:
                wrong.append(f"{function}: expected {'denied' if expected_denied else 'allowed'}")
        for relation in relations:
            expected_denied = not (group in VIEW_READERS and relation in views)
            if _denied(c, f"SELECT * FROM {relation} LIMIT 1") != expected_denied:
                wrong.append(f"SELECT {relation}: expected {'denied' if expected_denied else 'allowed'}")
            # Writes: 42501 on tables; views refuse them too (42501, or 55000 when not updatable).
            try:
                c.execute(f"DELETE FROM {relation} WHERE false")
                wrong.append(f"DELETE {relation}: expected an error")
            except psycopg.errors.InsufficientPrivilege:
                pass
            except psycopg.errors.ObjectNotInPrerequisiteState:
                if relation not in views:
                    wrong.append(f"DELETE {relation}: expected denied")
            finally:
                c.rollback()
    assert wrong == [], f"{group or 'no group'}: {wrong}"


def test_worker_works_and_sees_payloads_only_through_claim(db_dsn, conn, login_role):
    role = login_role("taskforge_worker")
    queue = unique_name("roleq")
    payload = {"secret": unique_name("s")}
    task_id, _, _ = submit(conn, queue, "echo", payload)
    with psycopg.connect(as_user(db_dsn, role), autocommit=True) as w:
        with pytest.raises(psycopg.errors.InsufficientPrivilege):
            submit(w, queue)
        for relation in ("taskforge.tasks", "taskforge.tf_tasks", "taskforge.tf_attempts"):
            with pytest.raises(psycopg.errors.InsufficientPrivilege):
                w.execute(
                    f"SELECT payload FROM {relation}" if "attempts" not in relation else f"SELECT * FROM {relation}"
                )
        worker_id = register_worker(w, "role-worker", [queue])
        assert w.execute("SELECT taskforge.tf_heartbeat(worker_id => %s)", (worker_id,)).fetchone()[0]
        (row,) = claim(w, worker_id, [queue])
        assert (row[0], row[3]) == (task_id, payload)
        renewed = w.execute(
            "SELECT renewed FROM taskforge.tf_renew(task_id => %s, worker_id => %s, attempt_number => %s)",
            (task_id, worker_id, row[1]),
        ).fetchone()[0]
        assert renewed is True
        assert finalize(w, task_id, worker_id, row[1], "succeeded", result=payload) == (True, "SUCCEEDED", None)
        w.execute("SELECT taskforge.tf_deregister_worker(worker_id => %s)", (worker_id,))
        for statement in (
            "SELECT * FROM taskforge.tf_recover()",
            "SELECT * FROM taskforge.tf_promote()",
            f"SELECT * FROM taskforge.tf_cancel(task_id => {task_id})",
        ):
            with pytest.raises(psycopg.errors.InsufficientPrivilege):
                w.execute(statement)
    assert conn.execute("SELECT state, result FROM taskforge.tasks WHERE task_id = %s", (task_id,)).fetchone() == (
        "SUCCEEDED",
        payload,
    )


def test_client_submits_and_reads_views_but_cannot_claim(db_dsn, conn, login_role):
    role = login_role("taskforge_client")
    queue = unique_name("roleq")
    worker_id = register_worker(conn, "someone-else", [queue])
    with psycopg.connect(as_user(db_dsn, role), autocommit=True) as c:
        task_id, state, created = submit(c, queue, "echo", {"a": 1})
        assert (state, created) == ("QUEUED", True)
        assert c.execute("SELECT state, payload FROM taskforge.tf_tasks WHERE task_id = %s", (task_id,)).fetchone() == (
            "QUEUED",
            {"a": 1},
        )
        views = (
            "tf_attempts",
            "tf_workers",
            "tf_queue_stats",
            "tf_queues",
            "tf_throughput",
            "tf_throughput_per_minute",
            "tf_task_types",
            "tf_invariant_violations",
            "tf_task_dependencies",
            "tf_rate_limits",
            "tf_concurrency_keys",
            "tf_maintenance_errors",
        )
        for view in views:
            c.execute(f"SELECT * FROM taskforge.{view} LIMIT 1").fetchall()
        with pytest.raises(psycopg.errors.InsufficientPrivilege):
            claim(c, worker_id, [queue])
        with pytest.raises(psycopg.errors.InsufficientPrivilege):
            register_worker(c, "client-as-worker")
        with pytest.raises(psycopg.errors.InsufficientPrivilege):
            c.execute("SELECT * FROM taskforge.tf_recover()")
        assert (
            c.execute("SELECT task_state FROM taskforge.tf_cancel(task_id => %s)", (task_id,)).fetchone()[0]
            == "CANCELLED"
        )
        assert (
            c.execute("SELECT task_state FROM taskforge.tf_retry(task_id => %s)", (task_id,)).fetchone()[0] == "QUEUED"
        )
        assert (
            c.execute("SELECT task_state FROM taskforge.tf_cancel(task_id => %s)", (task_id,)).fetchone()[0]
            == "CANCELLED"
        )


def test_scheduler_only_recovers_promotes_prunes_and_beats(db_dsn, conn, login_role):
    role = login_role("taskforge_scheduler")
    queue = unique_name("roleq")
    worker_id = register_worker(conn, "dying-worker", [queue])
    task_id, _, _ = submit(conn, queue)
    claim(conn, worker_id, [queue], lease_seconds=0.01)
    with psycopg.connect(as_user(db_dsn, role), autocommit=True) as s:
        s.execute("SELECT pg_sleep(0.05)")
        recovered, _, _ = s.execute("SELECT * FROM taskforge.tf_recover()").fetchone()
        assert recovered >= 1
        s.execute("SELECT * FROM taskforge.tf_promote()").fetchone()
        assert s.execute("SELECT taskforge.tf_prune(older_than_seconds => 3153600000)").fetchone()[0] == 0
        pruned = s.execute("SELECT * FROM taskforge.tf_prune_workers(older_than_seconds => 3153600000)").fetchone()
        assert pruned == (0, 0)
        scheduler_id = uuid.uuid4()
        s.execute("SELECT taskforge.tf_scheduler_heartbeat(scheduler_id => %s, name => 'roles-sched')", (scheduler_id,))
        for statement in (
            "SELECT * FROM taskforge.tf_submit(task_type => 'noop')",
            "SELECT taskforge.tf_register_worker(name => 'sched')",
            "SELECT * FROM taskforge.tf_tasks",
            "SELECT * FROM taskforge.tf_schedulers",
            "SELECT * FROM taskforge.tasks",
            f"SELECT * FROM taskforge.tf_cancel(task_id => {task_id})",
        ):
            with pytest.raises(psycopg.errors.InsufficientPrivilege):
                s.execute(statement)
    assert conn.execute("SELECT state FROM taskforge.tasks WHERE task_id = %s", (task_id,)).fetchone()[0] == "QUEUED"
    assert (
        conn.execute(
            "SELECT liveness FROM taskforge.tf_schedulers WHERE scheduler_id = %s", (scheduler_id,)
        ).fetchone()[0]
        == "alive"
    )
    (row,) = claim(conn, worker_id, [queue])
    assert finalize(conn, task_id, worker_id, row[1])[0]


def test_migrate_without_createrole_needs_membership_in_owner(admin_dsn, login_role, fresh_database):
    # login_role is set up before fresh_database, so the database is dropped before the role.
    role = login_role()
    dsn = fresh_database("taskforge_roles")
    dbname = conninfo_to_dict(dsn)["dbname"]
    with psycopg.connect(admin_dsn, autocommit=True) as c:
        for name in (
            "taskforge_owner",
            "taskforge_worker",
            "taskforge_scheduler",
            "taskforge_client",
            "taskforge_console",
        ):
            assert c.execute("SELECT count(*) FROM pg_roles WHERE rolname = %s", (name,)).fetchone()[0] == 1
        c.execute(f'ALTER DATABASE "{dbname}" OWNER TO "{role}"')
    role_dsn = as_user(dsn, role)

    with pytest.raises(psycopg.Error) as failure:
        tfdb.migrate(role_dsn)
    exc = failure.value
    assert exc.sqlstate == "42501"
    text = f"{exc}\n{exc.diag.message_hint or ''}"
    assert f"GRANT taskforge_owner TO {role}" in text, text
    # The command line says the same in its one line.
    result = CliRunner().invoke(
        cli_main, ["db", "migrate", "--dsn", role_dsn], env={"TASKFORGE_DSN": None, "DATABASE_URL": None}
    )
    assert result.exit_code != 0 and "Traceback" not in result.output
    assert len(result.stderr.strip().splitlines()) == 1, result.stderr
    assert f"GRANT taskforge_owner TO {role}" in result.stderr, result.stderr
    with psycopg.connect(dsn, autocommit=True) as c:
        assert c.execute("SELECT to_regnamespace('taskforge') IS NULL").fetchone()[0], (
            "a refused migration left a schema behind"
        )

    with psycopg.connect(admin_dsn, autocommit=True) as c:
        c.execute(f'GRANT taskforge_owner TO "{role}"')
    assert tfdb.migrate(role_dsn) == ["0001_initial"]
    with psycopg.connect(role_dsn, autocommit=True) as c:
        assert c.execute("SELECT taskforge.tf_schema_version()").fetchone()[0] == 1
        owners = {
            r[0]
            for r in c.execute(
                "SELECT DISTINCT pg_get_userbyid(relowner) FROM pg_class WHERE relnamespace = 'taskforge'::regnamespace"
            ).fetchall()
        }
        assert owners == {"taskforge_owner"}
        assert (
            c.execute("SELECT pg_get_userbyid(nspowner) FROM pg_namespace WHERE nspname = 'taskforge'").fetchone()[0]
            == "taskforge_owner"
        )
    assert tfdb.migrate(role_dsn) == []
