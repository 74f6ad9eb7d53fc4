"""What the CLI prints from the database is safe for a terminal, whatever any caller wrote there.

Any SQL caller may store text with terminal controls (a cancel reason, an idempotency key, a
worker's name and hostname, an error message), and a table owner may store a JSON document
nested deeper than Python's json module can decode. ``show``, ``list`` and ``workers`` print
such rows, escaped, and never fail on them.
"""

from __future__ import annotations

import json

from click.testing import CliRunner

from taskforge import client
from taskforge.cli import main
from taskforge.database import UNDECODED_JSON_KEY

from sqlcore_helpers import (
    claim,
    delete_tasks_as_owner,
    finalize,
    insert_task_as_owner,
    nested_json,
    register_worker,
    unique_name,
)

#: ESC sequences that clear the screen and set the window title (OSC), a C1 CSI, DEL and the
#: bidirectional override that shows what follows reversed.
HOSTILE = "x\x1b[2J\x1b]0;owned\x07\x9b31m\x7f\u202eevil\u2066"
ESCAPED = "x\\x1b[2J\\x1b]0;owned\\x07\\x9b31m\\x7f\\u202eevil\\u2066"
CONTROLS = set("\x1b\x07\x9b\x7f\u202e\u2066")


def cli(*args: object) -> str:
    result = CliRunner().invoke(
        main, [str(a) for a in args], env={"TASKFORGE_DSN": None, "DATABASE_URL": None}, catch_exceptions=False
    )
    assert result.exit_code == 0, (result.exit_code, result.output)
    return result.stdout


def raw_controls(text: str) -> set[str]:
    return CONTROLS & set(text)


def test_text_written_by_any_caller_reaches_the_terminal_escaped(db_dsn, conn):
    queue = unique_name("cli_hostile")
    task_id = conn.execute(
        "SELECT task_id FROM taskforge.tf_submit(task_type => 'echo', queue => %s, payload => %s::jsonb, "
        "idempotency_key => %s)",
        (queue, json.dumps({HOSTILE: HOSTILE}), HOSTILE),
    ).fetchone()[0]
    worker = conn.execute(
        "SELECT taskforge.tf_register_worker(name => %s, hostname => %s, queues => %s)", (HOSTILE, HOSTILE, [queue])
    ).fetchone()[0]
    (row,) = claim(conn, worker, queues=[queue])
    assert row[0] == task_id
    conn.execute("SELECT * FROM taskforge.tf_cancel(task_id => %s, reason => %s)", (task_id, HOSTILE))
    finalize(conn, task_id, worker, 1, "failed", error={"type": HOSTILE, "message": HOSTILE})
    conn.execute("SELECT taskforge.tf_deregister_worker(worker_id => %s)", (worker,))

    show = cli("show", task_id, "--dsn", db_dsn)
    assert raw_controls(show) == set()
    assert f"cancel_reason:    {ESCAPED}" in show and f"idempotency_key:  {ESCAPED}" in show
    listed = cli("list", "--queue", queue, "--dsn", db_dsn)
    workers = cli("workers", "--all", "--dsn", db_dsn)
    assert raw_controls(listed) == set() and raw_controls(workers) == set()
    assert f"{worker}  {ESCAPED}  {ESCAPED}" in workers

    # JSON: the same values, with the controls as \\u escapes.
    outs = {args[0]: cli(*args, "--dsn", db_dsn, "--json") for args in (("show", task_id), ("list", "--queue", queue))}
    outs["workers"] = cli("workers", "--all", "--dsn", db_dsn, "--json")
    assert {name: raw_controls(out) for name, out in outs.items()} == {"show": set(), "list": set(), "workers": set()}
    assert "\\u001b[2J\\u001b]0;owned\\u0007\\u009b31m\\u007f\\u202eevil\\u2066" in outs["show"]
    task = json.loads(outs["show"])
    assert task["cancel_reason"] == task["idempotency_key"] == task["last_error"]["message"] == HOSTILE
    assert task["payload"] == {HOSTILE: HOSTILE}
    assert [t["idempotency_key"] for t in json.loads(outs["list"])] == [HOSTILE]
    assert [(w["name"], w["hostname"]) for w in json.loads(outs["workers"]) if w["worker_id"] == str(worker)] == [
        (HOSTILE, HOSTILE)
    ]


def test_a_document_python_cannot_decode_is_shown_as_a_labelled_placeholder(db_dsn, conn):
    """A payload and a result 1001 levels deep (tf_submit and tf_finalize refuse them; a table
    owner can write them) make Python's json decoder fail: ``show``, ``list`` and their
    ``--json`` forms print a placeholder that says so, and exit 0."""
    queue = unique_name("cli_deep")
    deep_result = conn.execute(
        "SELECT task_id FROM taskforge.tf_submit(task_type => 'echo', queue => %s)", (queue,)
    ).fetchone()[0]
    worker = register_worker(conn, queues=[queue])
    (row,) = claim(conn, worker, queues=[queue])
    assert row[0] == deep_result
    assert finalize(conn, deep_result, worker, 1, "succeeded", result={"ok": True})[0]
    conn.execute("SELECT taskforge.tf_deregister_worker(worker_id => %s)", (worker,))
    made = [deep_result]
    try:
        with conn.transaction():  # tf_finalize refuses results nested over 100 levels, the owner does not
            conn.execute("SET LOCAL ROLE taskforge_owner")
            for table in ("tasks", "attempts"):
                conn.execute(
                    f"UPDATE taskforge.{table} SET result = %s::jsonb WHERE task_id = %s",
                    (nested_json(1001), deep_result),
                )
        deep_payload = insert_task_as_owner(conn, nested_json(1001), queue)  # after the claim: conn cannot decode it
        made.append(deep_payload)
        ordinary = conn.execute(
            "SELECT task_id FROM taskforge.tf_submit(task_type => 'echo', queue => %s, payload => %s::jsonb)",
            (queue, nested_json(100)),
        ).fetchone()[0]
        made.append(ordinary)
        hundred = json.loads(nested_json(100))

        out = cli("show", deep_payload, "--dsn", db_dsn)
        assert "payload:" in out and UNDECODED_JSON_KEY in out and "SELECT payload::text FROM taskforge.tf_tasks" in out
        shown = json.loads(cli("show", deep_payload, "--dsn", db_dsn, "--json"))
        assert set(shown["payload"]) == {UNDECODED_JSON_KEY} and "too deep" in shown["payload"][UNDECODED_JSON_KEY]
        shown = json.loads(cli("show", deep_result, "--dsn", db_dsn, "--json"))
        assert shown["payload"] == {} and set(shown["result"]) == {UNDECODED_JSON_KEY}
        assert set(shown["attempts"][0]["result"]) == {UNDECODED_JSON_KEY}
        assert UNDECODED_JSON_KEY in cli("show", deep_result, "--dsn", db_dsn)
        # 100 levels (what tf_submit accepts) decode as they are.
        assert json.loads(cli("show", ordinary, "--dsn", db_dsn, "--json"))["payload"] == hundred

        # The table fetches no document: a connection without the CLI's JSON loader lists them.
        brief = client.list_tasks(conn, queue=queue, brief=True)
        assert [t.task_id for t in brief] == [ordinary, deep_payload, deep_result]
        assert {"payload", "result", "last_error"} & set(brief[0].as_dict()) == set()
        rows = cli("list", "--queue", queue, "--dsn", db_dsn).splitlines()[2:]
        assert [int(r.split()[0]) for r in rows] == [ordinary, deep_payload, deep_result]
        listed = {t["task_id"]: t for t in json.loads(cli("list", "--queue", queue, "--dsn", db_dsn, "--json"))}
        assert set(listed[deep_payload]["payload"]) == {UNDECODED_JSON_KEY}
        assert set(listed[deep_result]["result"]) == {UNDECODED_JSON_KEY}
        assert listed[ordinary]["payload"] == hundred
    finally:
        delete_tasks_as_owner(conn, made)
