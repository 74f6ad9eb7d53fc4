"""The everyday CLI (submit, show, list, cancel, retry, workers, stats) against a real database:
tables by default, --json for scripts, and every refusal as one line with a non-zero exit code.

Work is driven through the SQL API (register, claim, finalize) so the commands see real attempt
history without a worker process. Every test uses queues of its own.
"""

from __future__ import annotations

import datetime as dt
import json
import os
import subprocess
import sys
from pathlib import Path

import psycopg
import pytest
from click.testing import CliRunner

from taskforge import client
from taskforge.cli import EXIT_DATABASE, EXIT_REFUSED, main
from taskforge.errors import Refused

from sqlcore_helpers import claim, finalize, register_worker, unique_name

NO_ENV_DSN = {"TASKFORGE_DSN": None, "DATABASE_URL": None}
ROOT = Path(__file__).resolve().parents[2]


def cli(*args: str):
    """Invoke the click app in-process with TASKFORGE_DSN/DATABASE_URL unset."""
    return CliRunner().invoke(main, [str(a) for a in args], env=NO_ENV_DSN, catch_exceptions=False)


def ok(result) -> str:
    assert result.exit_code == 0, (result.exit_code, result.output)
    return result.stdout


def one_line_error(result, code: int, *fragments: str) -> str:
    """The command failed with code and exactly one line on stderr containing fragments."""
    assert result.exit_code == code, (result.exit_code, result.output)
    assert result.stdout == "", result.stdout
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, result.stderr
    assert "Traceback" not in result.output
    for f in fragments:
        assert f in lines[0], lines[0]
    return lines[0]


def submit_json(dsn: str, *args: str) -> dict:
    return json.loads(ok(cli("submit", *args, "--dsn", dsn, "--json")))


def table_rows(text: str) -> list[list[str]]:
    """Data rows of an aligned table (header and rule line skipped), split on runs of spaces."""
    lines = [line for line in text.splitlines() if line.strip()]
    assert set(lines[1].replace(" ", "")) == {"-"}, lines[:2]
    return [line.split() for line in lines[2:]]


# --- submit ------------------------------------------------------------------------------------------


def test_submit_prints_a_line_and_json(db_dsn, conn):
    queue = unique_name("cli")
    out = ok(
        cli(
            "submit",
            "echo",
            "--payload",
            '{"to": "ada"}',
            "--queue",
            queue,
            "--priority",
            "7",
            "--max-attempts",
            "2",
            "--dsn",
            db_dsn,
        )
    )
    assert out.startswith("task ") and out.strip().endswith("QUEUED (created)"), out
    task_id = int(out.split()[1])
    task = client.get_task(conn, task_id)
    assert (task.task_type, task.queue, task.priority, task.max_attempts, task.payload) == (
        "echo",
        queue,
        7,
        2,
        {"to": "ada"},
    )

    data = submit_json(db_dsn, "noop", "--queue", queue)
    assert set(data) == {"task_id", "state", "created"}
    assert data["state"] == "QUEUED" and data["created"] is True and data["task_id"] > task_id
    # Without --payload the payload is {}.
    assert client.get_task(conn, data["task_id"]).payload == {}
    for tid in (task_id, data["task_id"]):
        client.cancel(conn, tid)


def test_submit_idempotent_replay_and_conflict(db_dsn, conn):
    queue = unique_name("cli")
    key = unique_name("key")
    first = submit_json(db_dsn, "echo", "--payload", '{"n": 1}', "--queue", queue, "--idempotency-key", key)
    again = ok(
        cli("submit", "echo", "--payload", '{"n": 1}', "--queue", queue, "--idempotency-key", key, "--dsn", db_dsn)
    )
    assert again.strip() == (
        f"task {first['task_id']} QUEUED (existing task returned for idempotency key '{key}'; nothing created)"
    )
    replay = submit_json(db_dsn, "echo", "--payload", '{"n": 1}', "--queue", queue, "--idempotency-key", key)
    assert replay == {"task_id": first["task_id"], "state": "QUEUED", "created": False}
    assert len(client.list_tasks(conn, queue=queue)) == 1

    line = one_line_error(
        cli("submit", "echo", "--payload", '{"n": 2}', "--queue", queue, "--idempotency-key", key, "--dsn", db_dsn),
        EXIT_REFUSED,
        "TF409",
        "idempotency_key",
    )
    assert line.startswith("taskforge: TF409 ")
    client.cancel(conn, first["task_id"])


def test_submit_at_with_offset_and_delay_use_the_given_instant_and_database_time(db_dsn, conn):
    queue = unique_name("cli")
    at = submit_json(db_dsn, "noop", "--queue", queue, "--at", "2031-03-04T05:06:07+02:00")
    task = client.get_task(conn, at["task_id"])
    assert task.scheduled_at == dt.datetime(2031, 3, 4, 3, 6, 7, tzinfo=dt.UTC)
    zulu = submit_json(db_dsn, "noop", "--queue", queue, "--at", "2031-03-04T03:06:07Z")
    assert client.get_task(conn, zulu["task_id"]).scheduled_at == task.scheduled_at

    delayed = submit_json(db_dsn, "noop", "--queue", queue, "--delay", "120")
    row = client.get_task(conn, delayed["task_id"])
    # Both times come from the database clock: scheduled 120 s after creation (the statement's
    # clock_timestamp() is read just before tf_submit reads its own).
    gap = (row.scheduled_at - row.created_at).total_seconds()
    assert 119 <= gap <= 120.5, gap
    assert row.state == "QUEUED"
    for t in (at, zulu, delayed):
        client.cancel(conn, t["task_id"])


@pytest.mark.parametrize(
    "args, fragments",
    [
        (["--payload", "{bad"], ["--payload: not valid JSON"]),
        (["--payload", '{"x": NaN}'], ["--payload: not valid JSON", "NaN"]),
        (["--payload", "Infinity"], ["--payload: not valid JSON"]),
        (["--at", "2030-01-01T10:00:00"], ["--at:", "no UTC offset"]),
        (["--at", "2030-01-01"], ["--at:", "no UTC offset"]),
        (["--at", "next tuesday"], ["--at: not an ISO-8601 time"]),
        (["--at", "2030-01-01T10:00:00Z", "--delay", "5"], ["--at/--delay: give at most one"]),
        (["--delay", "nan"], ["--delay: must be a finite number"]),
    ],
)
def test_submit_bad_payload_or_time_is_a_one_line_usage_error(db_dsn, conn, args, fragments):
    queue = unique_name("cli")
    one_line_error(cli("submit", "noop", "--queue", queue, *args, "--dsn", db_dsn), 2, *fragments)
    assert client.list_tasks(conn, queue=queue) == []


@pytest.mark.parametrize(
    "args, fragments",
    [
        (["no_such_type"], ["TF400 task_type: unknown task type 'no_such_type'"]),
        (["noop", "--priority", "40000"], ["TF400 priority"]),
        (["noop", "--max-attempts", "0"], ["TF400 max_attempts"]),
        (["noop", "--timeout-seconds", "0"], ["TF400 timeout_seconds"]),
        (["noop", "--queue", "bad queue!"], ["TF400 queue"]),
        # What the caller gave is quoted in the refusal: its line breaks and control characters
        # are shown as escapes, so the refusal stays one line and cannot drive the terminal.
        (["a\nb\r\x1b[31mc\u2028d"], ["unknown task type 'a\\nb\\r\\x1b[31mc\\u2028d'"]),
        (["noop", "--queue", "q\n"], ["TF400 queue", "got 'q\\n'"]),
    ],
)
def test_submit_refused_by_the_database_is_one_line_exit_3(db_dsn, args, fragments):
    one_line_error(cli("submit", *args, "--dsn", db_dsn), EXIT_REFUSED, *fragments)


# --- submit --from-file and client.submit_many ------------------------------------------------------
def from_file(dsn: str, text: str, *args: str):
    """`taskforge submit --from-file - ...` with text on stdin."""
    return CliRunner().invoke(
        main, ["submit", "--from-file", "-", *args, "--dsn", dsn], input=text, env=NO_ENV_DSN, catch_exceptions=False
    )


def jsonl(*objects: dict) -> str:
    return "".join(json.dumps(o) + "\n" for o in objects)


def test_submit_timeout_seconds_is_the_tasks_own_attempt_timeout(db_dsn, conn):
    queue = unique_name("cli")
    own = json.loads(
        ok(cli("submit", "noop", "--queue", queue, "--timeout-seconds", "12.5", "--json", "--dsn", db_dsn))
    )
    none = json.loads(ok(cli("submit", "noop", "--queue", queue, "--json", "--dsn", db_dsn)))
    got = dict(
        conn.execute(
            "SELECT task_id, timeout_seconds FROM taskforge.tasks WHERE task_id = ANY(%s)",
            ([own["task_id"], none["task_id"]],),
        ).fetchall()
    )
    assert got == {own["task_id"]: 12.5, none["task_id"]: None}
    out = ok(from_file(db_dsn, jsonl({"task_type": "noop", "queue": queue, "timeout_seconds": 3}), "--json"))
    (line,) = [json.loads(x) for x in out.splitlines() if x.strip()]
    row = conn.execute("SELECT timeout_seconds FROM taskforge.tasks WHERE task_id = %s", (line["task_id"],)).fetchone()
    assert row == (3.0,)


def test_submit_from_file_one_task_per_line_in_order_with_the_submit_keys(db_dsn, conn, tmp_path):
    queue, other = unique_name("cli"), unique_name("cli")
    key = unique_name("key")
    path = tmp_path / "tasks.jsonl"
    path.write_text(
        jsonl(
            {"task_type": "echo", "payload": {"n": 1}, "queue": queue, "priority": 5, "max_attempts": 2},
            {"task_type": "noop", "queue": other, "scheduled_at": "2031-03-04T05:06:07+02:00", "idempotency_key": key},
        )
        + "\n# blank lines and comment lines are skipped\n"
        + jsonl(
            {"task_type": "noop", "queue": queue, "delay_seconds": 120},
            {"task_type": "noop", "queue": other, "scheduled_at": "2031-03-04T03:06:07Z", "idempotency_key": key},
        ),
        encoding="utf-8",
    )
    out = ok(cli("submit", "--from-file", path, "--dsn", db_dsn, "--json"))
    rows = [json.loads(line) for line in out.splitlines()]
    assert [r["line"] for r in rows] == [1, 2, 5, 6]
    assert [r["created"] for r in rows] == [True, True, True, False]
    assert rows[3]["task_id"] == rows[1]["task_id"], "a repeated key with the same request is the same task"
    first = client.get_task(conn, rows[0]["task_id"])
    assert (first.task_type, first.payload, first.priority, first.max_attempts) == ("echo", {"n": 1}, 5, 2)
    at = client.get_task(conn, rows[1]["task_id"])
    assert at.scheduled_at == dt.datetime(2031, 3, 4, 3, 6, 7, tzinfo=dt.UTC)
    delayed = client.get_task(conn, rows[2]["task_id"])
    assert 119 <= (delayed.scheduled_at - delayed.created_at).total_seconds() <= 120.5
    # The summary line without --json; a replay of the whole file creates nothing.
    summary = ok(cli("submit", "--from-file", path, "--dsn", db_dsn)).strip()
    assert summary.startswith("4 tasks: 2 created, 2 existing"), summary
    assert len(client.list_tasks(conn, queue=other)) == 1


def test_submit_from_stdin_in_chunks_of_1000_is_all_or_nothing(db_dsn, conn):
    queue = unique_name("cli")
    lines = [{"task_type": "noop", "queue": queue, "payload": {"i": i}} for i in range(2500)]
    out = ok(from_file(db_dsn, jsonl(*lines), "--json"))
    rows = [json.loads(line) for line in out.splitlines()]
    assert len(rows) == 2500 and all(r["created"] for r in rows)
    ids = [r["task_id"] for r in rows]
    assert ids == sorted(ids), "one row per line, in file order"
    assert client.get_task(conn, ids[1234]).payload == {"i": 1234}

    # A refusal in the third chunk (line 2001 + 99) rolls back the first two chunks too.
    bad_queue = unique_name("cli")
    lines = [{"task_type": "noop", "queue": bad_queue} for _ in range(2500)]
    lines[2099]["priority"] = 40000
    one_line_error(from_file(db_dsn, jsonl(*lines)), EXIT_REFUSED, "TF400 line 2100: priority: must be between")
    assert client.list_tasks(conn, queue=bad_queue) == []


@pytest.mark.parametrize(
    "text, fragments",
    [
        ('{"task_type": "noop"}\n{bad\n', ["line 2: not valid JSON"]),
        ('["noop"]\n', ["line 1: must be a JSON object"]),
        ('{"task_type": "noop", "queue_name": "x"}\n', ["line 1: unknown key 'queue_name'"]),
        ('{"queue": "x"}\n', ["line 1: task_type is required"]),
        (
            '{"task_type": "noop", "scheduled_at": "2030-01-01T10:00:00"}\n',
            ["line 1: scheduled_at: must be an ISO-8601 time"],
        ),
        (
            '{"task_type": "noop", "scheduled_at": "2030-01-01T10:00:00Z", "delay_seconds": 5}\n',
            ["line 1: delay_seconds: give at most one of scheduled_at and delay_seconds"],
        ),
        ('{"task_type": "noop", "delay_seconds": -1}\n', ["line 1: delay_seconds: must be between 0 and"]),
        ('{"task_type": "noop", "at": "2030-01-01T10:00:00Z"}\n', ["line 1: unknown key 'at'"]),
        ('{"task_type": "noop", "notify_finished": "yes"}\n', ["line 1: notify_finished: must be true or false"]),
        ('{"task_type": 7}\n', ["line 1: task_type: must be a string, got int"]),
        ('{"task_type": "noop", "payload": {"x": NaN}}\n', ["line 1: not valid JSON"]),
        ('{"task_type": "noop", "payload": [1]}\n', ["line 1: payload: must be a JSON object, got array"]),
        ('{"task_type": "noop", "payload": null}\n', ["line 1: payload: must be a JSON object, got null"]),
        ('{"task_type": "noop", "priority": 99999999999}\n', ["line 1: priority: must fit the SQL type int"]),
    ],
)
def test_submit_from_file_bad_line_is_a_one_line_usage_error_naming_it(db_dsn, conn, text, fragments):
    one_line_error(from_file(db_dsn, text), 2, *fragments)


@pytest.mark.parametrize(
    "text, fragments",
    [
        ('{"task_type": "noop"}\n{"task_type": "no_such_type"}\n', ["TF400 line 2: task_type: unknown task type"]),
        ('{"task_type": "noop", "queue": "bad queue!"}\n', ["TF400 line 1: queue"]),
    ],
)
def test_submit_from_file_refused_by_the_database_names_the_line_exit_3(db_dsn, text, fragments):
    one_line_error(from_file(db_dsn, text), EXIT_REFUSED, *fragments)


def test_submit_from_file_excludes_task_type_and_options(db_dsn):
    one_line_error(from_file(db_dsn, "", "--queue", "q"), 2, "--from-file: give TASK_TYPE and --queue per line")
    result = CliRunner().invoke(
        main, ["submit", "noop", "--from-file", "-", "--dsn", db_dsn], input="", env=NO_ENV_DSN, catch_exceptions=False
    )
    one_line_error(result, 2, "--from-file:")
    one_line_error(cli("submit", "--dsn", db_dsn), 2, "TASK_TYPE: missing")


def test_client_submit_many_conflict_names_the_request_and_writes_nothing(conn):
    queue = unique_name("cli")
    key = unique_name("key")
    client.submit(conn, "noop", queue=queue, idempotency_key=key)
    with pytest.raises(Refused) as info:
        client.submit_many(
            conn, [{"task_type": "noop", "queue": queue}, {"task_type": "echo", "queue": queue, "idempotency_key": key}]
        )
    refused = info.value
    assert (refused.sqlstate, refused.index, refused.argument) == ("TF409", 1, "idempotency_key")
    assert refused.field == "requests[1].idempotency_key" and refused.message.startswith(refused.field + ": ")
    assert not isinstance(refused, client.InvalidArgument) and isinstance(refused.__cause__, psycopg.Error)
    assert len(client.list_tasks(conn, queue=queue)) == 1
    with pytest.raises(client.InvalidArgument, match=r"^requests\[0\]\.scheduled_at: must be a datetime") as bad:
        client.submit_many(conn, [{"task_type": "noop", "scheduled_at": dt.datetime(2030, 1, 1)}])
    assert (bad.value.sqlstate, bad.value.index, bad.value.argument) == ("TF400", 0, "scheduled_at")
    with pytest.raises(client.InvalidArgument, match=r"^requests\[0\]: unknown key 'delay'"):
        client.submit_many(conn, [{"task_type": "noop", "delay": 1}])


def test_submit_many_notifies_once_per_queue_with_due_work_on_commit(db_dsn, conn):
    due_a, due_b, future = (unique_name("nq") for _ in range(3))
    marker = unique_name("marker")
    with psycopg.connect(db_dsn, autocommit=True) as listener:
        listener.execute("LISTEN taskforge")
        later = dt.datetime.now(dt.UTC) + dt.timedelta(hours=1)
        results = client.submit_many(
            conn,
            [{"task_type": "noop", "queue": q} for q in (due_a, due_b, due_a, due_a)]
            + [{"task_type": "noop", "queue": future, "scheduled_at": later}],
        )
        assert [r.created for r in results] == [True] * 5
        conn.execute("SELECT pg_notify('taskforge', %s)", (marker,))
        received = []
        for note in listener.notifies(timeout=30):
            if note.payload == marker:
                break
            received.append(note.payload)
    assert sorted(p for p in received if p in (due_a, due_b, future)) == sorted([due_a, due_b])


# --- values the database could not even receive: one line naming the option, exit 2, no write -----


def task_count(conn) -> int:
    return conn.execute("SELECT count(*) FROM taskforge.tasks").fetchone()[0]


def nested_payload(levels: int) -> str:
    """A JSON object whose value under "a" is nested so that the whole document has `levels`
    levels of arrays/objects (the top-level object is level 1)."""
    return '{"a": ' + "[" * (levels - 1) + "]" * (levels - 1) + "}"


INT4_MESSAGE = "must be between -2147483648 and 2147483647 (the range of SQL int)"
INT8_MESSAGE = "must be between -9223372036854775808 and 9223372036854775807 (the range of SQL bigint)"


@pytest.mark.parametrize(
    "args, fragments",
    [
        # Integers beyond the SQL int parameters (they used to reach the database as bigint: 42883).
        (["--priority", "3000000000"], ["--priority: " + INT4_MESSAGE, "got 3000000000"]),
        (["--priority", "-3000000000"], ["--priority: " + INT4_MESSAGE, "got -3000000000"]),
        (["--priority", "9" * 5000], ["--priority: " + INT4_MESSAGE, "got a 5000-digit number"]),
        (["--priority", "high"], ["--priority: 'high' is not an integer"]),
        (["--max-attempts", "99999999999"], ["--max-attempts: " + INT4_MESSAGE, "got 99999999999"]),
        # Payload values PostgreSQL rejects as jsonb input (they used to be 22P02/22P05, exit 4).
        (["--payload", '{"a": 1e400}'], ["--payload: number 1e400 is out of range", "finite"]),
        (["--payload", '{"a": [1, {"b": -1e400}]}'], ["--payload: number -1e400 is out of range"]),
        (["--payload", '{"a": "\\u0000"}'], ["--payload: string at $.a contains a NUL character (U+0000)"]),
        (["--payload", '{"x\\u0000y": 1}'], ['--payload: key at $["x\\u0000y"] contains a NUL character']),
        (["--payload", '{"a": "\\ud800"}'], ["--payload: string at $.a contains an unpaired surrogate (U+D800)"]),
        (
            ["--payload", '{"a": {"b c": ["x\\udfffy"]}}'],
            ['--payload: string at $.a["b c"][0] contains an unpaired surrogate (U+DFFF) at position 1'],
        ),
        (["--payload", '{"\\ude00": 1}'], ["--payload: key at $[", "unpaired surrogate (U+DE00)"]),
        (["--payload", '{"a": ' + "9" * 5000 + "}"], ["--payload: integer with 5000 digits is too long"]),
        (["--payload", nested_payload(101)], ["--payload: nested more than 100 levels deep"]),
        (["--payload", nested_payload(5000)], ["--payload: nested more than 100 levels deep"]),
        # --delay: finite, not negative, at most 100 years (1e300 used to be 22008, exit 4).
        (["--delay", "1e300"], ["--delay: must be between 0 and 3155760000 seconds (100 years), got '1e300'"]),
        (["--delay", "-5"], ["--delay: must be between 0 and 3155760000 seconds", "got '-5'"]),
        (["--delay", "-0.001"], ["--delay: must be between 0 and 3155760000 seconds"]),
        (["--delay", "3155760001"], ["--delay: must be between 0 and 3155760000 seconds"]),
        (["--delay", "inf"], ["--delay: must be a finite number of seconds, got 'inf'"]),
        (["--delay", "-inf"], ["--delay: must be a finite number of seconds"]),
        (["--delay", "soon"], ["--delay: 'soon' is not a number"]),
        # Text the database cannot receive: a byte that is not UTF-8 reaches Python as a lone
        # surrogate (it used to be a UnicodeEncodeError traceback); a NUL character.
        (["--idempotency-key", "key-\udcff"], ["--idempotency-key: not valid UTF-8 (byte 0xff at position 4)"]),
        (["--at", "2030-01-01T10:00:00\udce9Z"], ["--at: not valid UTF-8 (byte 0xe9"]),
        (["--payload", '{"a": "caf\udce9"}'], ["--payload: not valid UTF-8 (byte 0xe9 at position 10)"]),
        (["--idempotency-key", "a\x00b"], ["--idempotency-key: contains a NUL character (U+0000) at position 1"]),
    ],
)
def test_submit_values_that_cannot_be_sent_are_one_line_usage_errors(db_dsn, conn, args, fragments):
    queue = unique_name("cli")
    before = task_count(conn)
    result = cli("submit", "noop", "--queue", queue, *args, "--dsn", db_dsn)
    one_line_error(result, 2, *fragments)
    assert client.list_tasks(conn, queue=queue) == [] and task_count(conn) == before


@pytest.mark.parametrize(
    "args, fragments",
    [
        (["\udcff"], ["TASK_TYPE: not valid UTF-8 (byte 0xff at position 0)"]),
        (["noop", "--queue", "q\udcff"], ["--queue: not valid UTF-8 (byte 0xff at position 1)"]),
        (["noop", "--queue", "a\x00b"], ["--queue: contains a NUL character"]),
    ],
)
def test_submit_text_that_cannot_be_sent_is_a_usage_error(db_dsn, conn, args, fragments):
    before = task_count(conn)
    one_line_error(cli("submit", *args, "--dsn", db_dsn), 2, *fragments)
    assert task_count(conn) == before


@pytest.mark.parametrize(
    "args, fragments",
    [
        # The business bounds stay the database's: TF400, exit 3, nothing written.
        (["--priority", "-32769"], ["TF400 priority: must be between -32768 and 32767, got -32769"]),
        (["--priority", "2147483647"], ["TF400 priority: must be between -32768 and 32767"]),
        (["--max-attempts", "1001"], ["TF400 max_attempts: must be between 1 and 1000, got 1001"]),
        (["--max-attempts", "-2147483648"], ["TF400 max_attempts"]),
    ],
)
def test_in_range_integers_reach_the_database_rule(db_dsn, conn, args, fragments):
    queue = unique_name("cli")
    before = task_count(conn)
    one_line_error(cli("submit", "noop", "--queue", queue, *args, "--dsn", db_dsn), EXIT_REFUSED, *fragments)
    assert client.list_tasks(conn, queue=queue) == [] and task_count(conn) == before


def test_submit_accepts_the_edges_of_what_is_valid(db_dsn, conn):
    queue = unique_name("cli")
    # A surrogate pair is one character (U+1F600), not an unpaired surrogate.
    emoji = submit_json(db_dsn, "echo", "--queue", queue, "--payload", '{"e": "\\ud83d\\ude00", "big": 1e308}')
    stored = client.get_task(conn, emoji["task_id"]).payload
    # jsonb keeps numbers as numeric: 1e308 comes back as the integer it denotes.
    assert stored["e"] == "\U0001f600" and float(stored["big"]) == 1e308
    # Exactly 100 levels of nesting (the database's limit) are stored and read back.
    deep = submit_json(db_dsn, "noop", "--queue", queue, "--payload", nested_payload(100))
    stored = client.get_task(conn, deep["task_id"]).payload["a"]
    depth = 1
    while stored != []:
        stored, depth = stored[0], depth + 1
    assert depth == 99  # the innermost list is level 100 (the object is level 1)
    # --delay 0 is due now; the largest delay is 100 years after the database's clock.
    now = submit_json(db_dsn, "noop", "--queue", queue, "--delay", "0")
    row = client.get_task(conn, now["task_id"])
    # (the statement's clock_timestamp() is read just before tf_submit reads its own)
    assert -1 < (row.scheduled_at - row.created_at).total_seconds() <= 0
    far = submit_json(db_dsn, "noop", "--queue", queue, "--delay", "3155760000")
    row = client.get_task(conn, far["task_id"])
    assert abs((row.scheduled_at - row.created_at).total_seconds() - 3155760000) < 1
    # Integers at the SQL int edges are sent and judged by the database (exit 3 above); a
    # 64-bit task id that does not exist is the database's TF404.
    one_line_error(cli("cancel", str(2**63 - 1), "--dsn", db_dsn), EXIT_REFUSED, f"TF404 task_id: no task {2**63 - 1}")
    one_line_error(cli("show", str(2**63 - 1), "--dsn", db_dsn), EXIT_REFUSED, "TF404")
    for t in (emoji, deep, now, far):
        client.cancel(conn, t["task_id"])


def test_delay_with_an_idempotency_key_is_replay_safe(db_dsn, conn):
    """As docs/cli.md says: the delay is part of the request as given (tf_submit adds it to its own
    clock), so the same command run again later is a replay of the first task; another delay with
    the same key is TF409. --at with a fixed time replays the same way."""
    queue = unique_name("cli")
    key = unique_name("key")
    first = submit_json(db_dsn, "noop", "--queue", queue, "--delay", "60", "--idempotency-key", key)
    again = submit_json(db_dsn, "noop", "--queue", queue, "--delay", "60", "--idempotency-key", key)
    assert again == {**first, "created": False}
    one_line_error(
        cli("submit", "noop", "--queue", queue, "--delay", "61", "--idempotency-key", key, "--dsn", db_dsn),
        EXIT_REFUSED,
        "TF409 idempotency_key",
    )
    key_at = unique_name("key")
    at = submit_json(db_dsn, "noop", "--queue", queue, "--at", "2030-01-31T09:30:00Z", "--idempotency-key", key_at)
    again = submit_json(db_dsn, "noop", "--queue", queue, "--at", "2030-01-31T09:30:00Z", "--idempotency-key", key_at)
    assert again == {**at, "created": False}
    assert len(client.list_tasks(conn, queue=queue)) == 2
    for t in (first, at):
        client.cancel(conn, t["task_id"])


@pytest.mark.parametrize(
    "args, fragments",
    [
        (["cancel", "99999999999999999999"], ["TASK_ID: " + INT8_MESSAGE, "got 99999999999999999999"]),
        (["cancel", "1", "--reason", "bad \udcff"], ["--reason: not valid UTF-8 (byte 0xff at position 4)"]),
        (["show", "99999999999999999999"], ["TASK_ID: " + INT8_MESSAGE]),
        (["show", "one"], ["TASK_ID: 'one' is not an integer"]),
        (["retry", "99999999999999999999"], ["TASK_ID: " + INT8_MESSAGE]),
        (["retry", "3", "--extra-attempts", "99999999999"], ["--extra-attempts: " + INT4_MESSAGE]),
        (["list", "--limit", "99999999999"], ["--limit: must be between 1 and 10000, got 99999999999"]),
        (["list", "--limit", "0"], ["--limit: must be between 1 and 10000, got 0"]),
        (
            ["list", "--state", "DONE"],
            [
                "--state: must be one of BLOCKED, QUEUED, RUNNING, RETRYING, SUCCEEDED, FAILED, CANCELLED (any case), "
                "got 'DONE'"
            ],
        ),
        (["list", "--queue", "\udcff"], ["--queue: not valid UTF-8"]),
        (["list", "--type", "x\x00"], ["--type: contains a NUL character"]),
        (["stats", "--dsn", "host=127.0.0.1 dbname=\udcff"], ["--dsn: not valid UTF-8 (byte 0xff at position 22)"]),
    ],
)
def test_other_commands_reject_values_that_cannot_be_sent(db_dsn, args, fragments):
    if "--dsn" not in args:
        args = [*args, "--dsn", db_dsn]
    one_line_error(cli(*args), 2, *fragments)


def test_retry_extra_attempts_and_cancel_leave_the_task_alone_on_a_usage_error(db_dsn, conn):
    queue = unique_name("cli")
    task_id = submit_json(db_dsn, "noop", "--queue", queue)["task_id"]
    client.cancel(conn, task_id)
    one_line_error(cli("retry", task_id, "--extra-attempts", "99999999999", "--dsn", db_dsn), 2, "--extra-attempts")
    one_line_error(
        cli("retry", task_id, "--extra-attempts", "1001", "--dsn", db_dsn),
        EXIT_REFUSED,
        "TF400 extra_attempts: must be between 1 and 1000",
    )
    assert client.get_task(conn, task_id).state == "CANCELLED"


def test_dsn_from_the_environment_that_is_not_utf8(db_dsn):
    result = CliRunner().invoke(
        main, ["list"], env={"TASKFORGE_DSN": "dbname=\udcfe", "DATABASE_URL": None}, catch_exceptions=False
    )
    one_line_error(result, 2, "--dsn (from the environment): not valid UTF-8 (byte 0xfe at position 7)")


def test_invalid_utf8_bytes_on_a_real_command_line_are_one_line(db_dsn):
    """Through a real process: argv bytes that are not UTF-8 are refused by name, not a traceback."""
    env = {k: v for k, v in os.environ.items() if k not in ("TASKFORGE_DSN", "DATABASE_URL")}
    for args, expected in (
        [[b"submit", b"noop", b"--queue", b"caf\xe9"], "taskforge: --queue: not valid UTF-8 (byte 0xe9 at position 3)"],
        [[b"worker", b"--name", b"\xff"], "taskforge: --name: not valid UTF-8 (byte 0xff at position 0)"],
    ):
        proc = subprocess.run(
            [sys.executable.encode(), b"-m", b"taskforge.cli", *args, b"--dsn", db_dsn.encode()],
            capture_output=True,
            timeout=60,
            env=env,
        )
        assert proc.returncode == 2 and proc.stderr.decode().strip() == expected, proc.stderr


def test_scheduler_nan_option_is_one_line(tmp_path):
    """NaN, which click.FloatRange would let through, is a usage error naming the option."""
    env = {k: v for k, v in os.environ.items() if k not in ("TASKFORGE_DSN", "DATABASE_URL")}
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "taskforge.cli",
            "scheduler",
            "--retain-days",
            "nan",
            "--dsn",
            "host=127.0.0.1 port=1 connect_timeout=5",
        ],
        capture_output=True,
        text=True,
        timeout=60,
        env=env,
    )
    assert proc.returncode == 2, proc.stderr
    assert proc.stderr.strip() == "taskforge: --retain-days: must be a finite number of days, got 'nan'"


def test_scheduler_takes_one_retention_not_two():
    """--retain-days and --retain-seconds are one setting in two units: both at once is a usage error."""
    env = {k: v for k, v in os.environ.items() if k not in ("TASKFORGE_DSN", "DATABASE_URL")}
    argv = [sys.executable, "-m", "taskforge.cli", "scheduler", "--dsn", "host=127.0.0.1 port=1 connect_timeout=5"]
    proc = subprocess.run(
        [*argv, "--retain-days", "1", "--retain-seconds", "60"], capture_output=True, text=True, timeout=60, env=env
    )
    assert proc.returncode == 2, proc.stderr
    assert proc.stderr.strip() == "taskforge: --retain-days/--retain-seconds: give at most one"


def test_client_checks_values_before_sending(db_dsn, conn):
    """The Python API refuses the same values with InvalidArgument (a ValueError), writing nothing."""
    queue = unique_name("cli")
    before = task_count(conn)
    bad = [
        (dict(payload={"a": float("inf")}), "payload: number at $.a is inf"),
        (dict(payload={"a": [float("nan")]}), "payload: number at $.a[0] is nan"),
        (dict(payload={"k": "\x00"}), "payload: string at $.k contains a NUL character"),
        (dict(priority=2**31), "priority: must fit the SQL type int (-2147483648..2147483647), got 2147483648"),
        (dict(priority=1.5), "priority: must be an integer, got float"),
        (dict(max_attempts=-(2**31) - 1), "max_attempts: must fit the SQL type int"),
        (dict(delay_seconds=-1), "delay_seconds: must be between 0 and 3155760000 seconds"),
        (dict(delay_seconds=10**400), "delay_seconds: must be a finite number of seconds, got inf"),
        (dict(delay_seconds=float("nan")), "delay_seconds: must be a finite number of seconds"),
        (dict(idempotency_key="k\ud800"), "idempotency_key: contains an unpaired surrogate (U+D800)"),
    ]
    for kwargs, message in bad:
        kwargs = {"queue": queue, **kwargs}
        with pytest.raises(client.InvalidArgument) as info:
            client.submit(conn, "noop", **kwargs)
        assert str(info.value).startswith(message), (kwargs, str(info.value))
    with pytest.raises(client.InvalidArgument, match="task_id: must fit the SQL type bigint"):
        client.cancel(conn, 2**63)
    with pytest.raises(client.InvalidArgument, match="extra_attempts: must fit the SQL type int"):
        client.retry(conn, 1, 2**31)
    with pytest.raises(client.InvalidArgument, match="task_ids: must fit the SQL type bigint"):
        client.tasks_by_id(conn, [1, -(2**63) - 1])
    assert client.list_tasks(conn, queue=queue) == [] and task_count(conn) == before


# --- show / retry ------------------------------------------------------------------------------------


def test_show_prints_task_and_attempt_history_and_retry_replays(db_dsn, conn):
    queue = unique_name("cli")
    task_id = submit_json(db_dsn, "echo", "--payload", '{"k": "v"}', "--queue", queue, "--max-attempts", "1")["task_id"]
    worker = register_worker(conn, name="cli-show-worker", queues=[queue])
    (row,) = claim(conn, worker, queues=[queue])
    assert (
        finalize(
            conn,
            task_id,
            worker,
            row[1],
            "failed",
            error={"type": "ValueError", "message": "bad input", "traceback": "..."},
        )[1]
        == "FAILED"
    )

    out = ok(cli("retry", task_id, "--dsn", db_dsn))
    assert out.strip() == f"task {task_id} QUEUED again (max_attempts 2)"
    (row,) = claim(conn, worker, queues=[queue])
    assert row[1] == 2
    assert finalize(conn, task_id, worker, 2, "succeeded", result={"k": "v"})[1] == "SUCCEEDED"

    out = ok(cli("show", task_id, "--dsn", db_dsn))
    assert f"task_id:          {task_id}" in out
    assert "state:            SUCCEEDED" in out
    assert '"k": "v"' in out  # payload and result, pretty-printed
    history = out.split("attempts:\n", 1)[1]
    rows = table_rows(history)
    assert [r[:3] for r in rows] == [["1", "FAILED", "failed"], ["2", "SUCCEEDED", "succeeded"]]
    assert "ValueError: bad input" in history and "cli-show-worker" in history

    data = json.loads(ok(cli("show", task_id, "--dsn", db_dsn, "--json")))
    assert data["task_id"] == task_id and data["state"] == "SUCCEEDED" and data["result"] == {"k": "v"}
    assert [(a["attempt_number"], a["state"]) for a in data["attempts"]] == [(1, "FAILED"), (2, "SUCCEEDED")]
    assert data["attempts"][0]["error"]["message"] == "bad input"
    dt.datetime.fromisoformat(data["created_at"])  # ISO 8601 with offset


def test_show_of_a_task_without_attempts(db_dsn):
    queue = unique_name("cli")
    task_id = submit_json(db_dsn, "noop", "--queue", queue)["task_id"]
    out = ok(cli("show", task_id, "--dsn", db_dsn))
    assert "attempts:\n  (none yet)" in out
    assert json.loads(ok(cli("show", task_id, "--dsn", db_dsn, "--json")))["attempts"] == []
    ok(cli("cancel", task_id, "--dsn", db_dsn))


def test_show_unknown_task_is_tf404(db_dsn):
    line = one_line_error(cli("show", 999_999_999, "--dsn", db_dsn), EXIT_REFUSED, "TF404", "999999999")
    assert line == "taskforge: TF404 task_id: no task 999999999"


def test_retry_refusals(db_dsn, conn):
    queue = unique_name("cli")
    task_id = submit_json(db_dsn, "noop", "--queue", queue)["task_id"]
    one_line_error(cli("retry", task_id, "--dsn", db_dsn), EXIT_REFUSED, "TF409", "QUEUED")
    one_line_error(cli("retry", 999_999_999, "--dsn", db_dsn), EXIT_REFUSED, "TF404")
    client.cancel(conn, task_id)
    one_line_error(
        cli("retry", task_id, "--extra-attempts", "0", "--dsn", db_dsn), EXIT_REFUSED, "TF400 extra_attempts"
    )
    data = json.loads(ok(cli("retry", task_id, "--extra-attempts", "4", "--dsn", db_dsn, "--json")))
    assert data == {"task_id": task_id, "task_state": "QUEUED", "max_attempts": 4}
    client.cancel(conn, task_id)


# --- cancel ------------------------------------------------------------------------------------------


def test_cancel_waiting_and_running_tasks(db_dsn, conn):
    queue = unique_name("cli")
    waiting = submit_json(db_dsn, "noop", "--queue", queue, "--priority", "-1")["task_id"]
    running = submit_json(db_dsn, "noop", "--queue", queue, "--priority", "5")["task_id"]
    worker = register_worker(conn, queues=[queue])
    (row,) = claim(conn, worker, queues=[queue])
    assert row[0] == running

    assert ok(cli("cancel", waiting, "--reason", "not needed", "--dsn", db_dsn)).strip() == f"task {waiting} CANCELLED"
    assert client.get_task(conn, waiting).cancel_reason == "not needed"
    out = ok(cli("cancel", running, "--dsn", db_dsn))
    assert out.strip() == f"task {running} RUNNING, cancel requested (honoured when its attempt ends)"
    data = json.loads(ok(cli("cancel", running, "--dsn", db_dsn, "--json")))
    assert data == {"task_id": running, "task_state": "RUNNING", "cancel_requested": True}
    # A failure after the request ends the task CANCELLED.
    assert finalize(conn, running, worker, 1, "failed", error={"message": "stopped"})[1] == "CANCELLED"
    # Terminal states come back unchanged.
    assert json.loads(ok(cli("cancel", running, "--dsn", db_dsn, "--json")))["task_state"] == "CANCELLED"

    one_line_error(cli("cancel", 999_999_999, "--dsn", db_dsn), EXIT_REFUSED, "TF404 task_id: no task 999999999")


def test_cancel_and_retry_take_several_ids_and_report_each(db_dsn, conn):
    queue = unique_name("cli")
    a, b = (submit_json(db_dsn, "noop", "--queue", queue)["task_id"] for _ in range(2))
    result = cli("cancel", a, 999_999_998, b, "--dsn", db_dsn)
    assert result.exit_code == EXIT_REFUSED, result.output
    assert result.stdout.splitlines() == [f"task {a} CANCELLED", f"task {b} CANCELLED"]
    assert "task 999999998: TF404" in result.stderr
    docs = json.loads(cli("retry", a, b, "--dsn", db_dsn, "--json").stdout)
    assert [(d["task_id"], d["task_state"]) for d in docs] == [(a, "QUEUED"), (b, "QUEUED")]
    again = cli("retry", a, 999_999_998, "--dsn", db_dsn, "--json")
    assert again.exit_code == EXIT_REFUSED
    (first, second) = json.loads(again.stdout)
    assert first["task_id"] == a and first["error"]["sqlstate"] == "TF409"  # a is QUEUED now: not replayable
    assert second == {"task_id": 999_999_998, "error": {"sqlstate": "TF404", "message": "task_id: no task 999999998"}}


# --- list --------------------------------------------------------------------------------------------


def test_list_filters_limit_and_json(db_dsn, conn):
    queue = unique_name("cli")
    other = unique_name("cli")
    ids = [submit_json(db_dsn, t, "--queue", queue)["task_id"] for t in ("noop", "echo", "noop")]
    other_id = submit_json(db_dsn, "noop", "--queue", other)["task_id"]
    client.cancel(conn, ids[0])

    rows = table_rows(ok(cli("list", "--queue", queue, "--dsn", db_dsn)))
    assert [int(r[0]) for r in rows] == ids[::-1]  # newest first
    assert rows[0][1:6] == ["noop", queue, "0", "QUEUED", "0/3"]
    assert [int(r[0]) for r in table_rows(ok(cli("list", "--queue", queue, "--type", "echo", "--dsn", db_dsn)))] == [
        ids[1]
    ]
    assert [
        int(r[0]) for r in table_rows(ok(cli("list", "--queue", queue, "--state", "cancelled", "--dsn", db_dsn)))
    ] == [ids[0]]
    assert [int(r[0]) for r in table_rows(ok(cli("list", "--queue", queue, "--limit", "1", "--dsn", db_dsn)))] == [
        ids[2]
    ]

    data = json.loads(ok(cli("list", "--queue", queue, "--state", "QUEUED", "--dsn", db_dsn, "--json")))
    assert [d["task_id"] for d in data] == [ids[2], ids[1]]
    assert all(d["queue"] == queue and d["state"] == "QUEUED" for d in data)
    assert other_id not in [d["task_id"] for d in data]
    assert ok(cli("list", "--queue", unique_name("empty"), "--dsn", db_dsn)).strip() == "(no tasks)"
    assert json.loads(ok(cli("list", "--queue", unique_name("empty"), "--dsn", db_dsn, "--json"))) == []
    for task_id in (*ids, other_id):
        client.cancel(conn, task_id)


def test_list_rejects_bad_filters_without_a_traceback(db_dsn):
    for args in (["--state", "DONE"], ["--limit", "0"], ["--limit", "10001"]):
        one_line_error(cli("list", *args, "--dsn", db_dsn), 2, args[0] + ":")


# --- workers / stats ---------------------------------------------------------------------------------


def test_workers_lists_live_workers_and_all_with_flag(db_dsn, conn):
    name = unique_name("w")
    worker = register_worker(conn, name=name, queues=["q_a", "q_b"])
    rows = [r for r in table_rows(ok(cli("workers", "--dsn", db_dsn))) if r[0] == str(worker)]
    assert len(rows) == 1 and rows[0][1] == name and "alive" in rows[0] and "q_a,q_b" in rows[0]
    data = json.loads(ok(cli("workers", "--dsn", db_dsn, "--json")))
    mine = [w for w in data if w["worker_id"] == str(worker)]
    assert mine and mine[0]["liveness"] == "alive" and mine[0]["queues"] == ["q_a", "q_b"]
    assert mine[0]["running_tasks"] == 0

    conn.execute("SELECT taskforge.tf_deregister_worker(worker_id => %s)", (worker,))
    assert str(worker) not in ok(cli("workers", "--dsn", db_dsn))
    data = json.loads(ok(cli("workers", "--all", "--dsn", db_dsn, "--json")))
    assert [w["liveness"] for w in data if w["worker_id"] == str(worker)] == ["stopped"]


def test_stats_counts_per_queue_and_throughput(db_dsn, conn):
    queue = unique_name("cli")
    ids = [submit_json(db_dsn, "noop", "--queue", queue)["task_id"] for _ in range(3)]
    worker = register_worker(conn, queues=[queue])
    for _ in range(2):
        (row,) = claim(conn, worker, queues=[queue])
        finalize(conn, row[0], worker, row[1], "succeeded")

    out = ok(cli("stats", "--dsn", db_dsn))
    queues_part, throughput_part = out.split("throughput", 1)
    mine = [r for r in table_rows(queues_part.split("\n", 1)[1]) if r[0] == queue]
    # QUEUE BLOCKED QUEUED RUNNING RETRYING SUCCEEDED FAILED CANCELLED TOTAL
    assert mine == [[queue, "0", "1", "0", "0", "2", "0", "0", "3"]]
    assert queue in throughput_part

    data = json.loads(ok(cli("stats", "--dsn", db_dsn, "--json")))
    (q,) = [q for q in data["queues"] if q["queue"] == queue]
    assert (q["QUEUED"], q["SUCCEEDED"], q["total"]) == (1, 2, 3)
    windows = {t["window_seconds"]: t for t in data["throughput"] if t["queue"] == queue}
    assert set(windows) == {60, 300, 900}
    assert windows[60]["attempts_succeeded"] == 2 and windows[60]["attempts_finished"] == 2
    client.cancel(conn, ids[2])


# --- connection problems and the module entry point ----------------------------------------------


def test_no_dsn_and_unreachable_database_are_one_line():
    one_line_error(cli("list"), EXIT_DATABASE, "no database given")
    one_line_error(
        cli("stats", "--dsn", "host=127.0.0.1 port=1 user=postgres connect_timeout=5"), EXIT_DATABASE, "database error"
    )


def test_python_dash_m_entry_point_runs_registered_commands(db_dsn):
    """`python -m taskforge.cli` (how the demo starts workers) sees every command."""
    queue = unique_name("cli")
    env = {k: v for k, v in os.environ.items() if k not in ("TASKFORGE_DSN", "DATABASE_URL")}
    proc = subprocess.run(
        [sys.executable, "-m", "taskforge.cli", "submit", "noop", "--queue", queue, "--dsn", db_dsn, "--json"],
        capture_output=True,
        text=True,
        timeout=60,
        env=env,
    )
    assert proc.returncode == 0, proc.stderr
    task_id = json.loads(proc.stdout)["task_id"]
    proc = subprocess.run(
        [sys.executable, "-m", "taskforge.cli", "cancel", str(task_id), "--dsn", db_dsn],
        capture_output=True,
        text=True,
        timeout=60,
        env=env,
    )
    assert proc.returncode == 0 and proc.stdout.strip() == f"task {task_id} CANCELLED", proc.stderr
    proc = subprocess.run(
        [sys.executable, "-m", "taskforge.cli", "show", "999999999", "--dsn", db_dsn],
        capture_output=True,
        text=True,
        timeout=60,
        env=env,
    )
    assert proc.returncode == EXIT_REFUSED and proc.stderr.strip() == "taskforge: TF404 task_id: no task 999999999"


@pytest.mark.parametrize(
    "args",
    [
        ["worker", "--lease-seconds", "0.5"],
        ["worker", "--lease-seconds", "1e-300"],
        ["worker", "--poll-seconds", "0"],
        ["worker", "--heartbeat-seconds", "0.1"],
        ["scheduler", "--max-interval-seconds", "0.001"],
        ["scheduler", "--prune-interval-seconds", "0.5"],
        ["scheduler", "--retain-seconds", "inf"],
        ["worker", "--grace-seconds", "nan"],
    ],
)
def test_process_intervals_have_floors(args):
    """A typo like --lease-seconds 1e-300 (or NaN, which click.FloatRange lets through) is a usage
    error naming the option before anything connects."""
    result = CliRunner().invoke(main, [*args, "--dsn", "host=127.0.0.1 port=1 dbname=never_reached"])
    assert result.exit_code == 2, result.output
    assert result.output.startswith(f"taskforge: {args[1]}: must be "), result.output
