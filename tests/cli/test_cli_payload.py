"""Where `taskforge submit` takes its payload from, and which payloads it refuses before sending
(issue 10, items 2 and 3): ``--payload JSON``, ``--payload -`` (stdin) and ``--payload-file PATH``
go through the same checks; a payload that is not a JSON object (``null`` included) is refused
as ``tf_submit`` refuses it; a payload over the database's 1 MiB or 100 levels never reaches it.
"""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner

from taskforge import client
from taskforge.cli import main

from sqlcore_helpers import unique_name

NO_ENV_DSN = {"TASKFORGE_DSN": None, "DATABASE_URL": None}
#: Larger than what a command line can carry (about 128 KiB per argument on Linux).
BIG = {"text": "x" * 300_000}


def run(dsn: str, *args: str, stdin: str | bytes | None = None):
    return CliRunner().invoke(
        main, ["submit", *args, "--dsn", dsn, "--json"], input=stdin, env=NO_ENV_DSN, catch_exceptions=False
    )


def created(result) -> dict:
    assert result.exit_code == 0, (result.exit_code, result.output)
    return json.loads(result.stdout)


def usage_error(result, *fragments: str) -> str:
    """Exit code 2, nothing on stdout, one line on stderr holding every fragment."""
    assert result.exit_code == 2, (result.exit_code, result.output)
    assert result.stdout == ""
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in result.output, result.stderr
    for fragment in fragments:
        assert fragment in lines[0], lines[0]
    return lines[0]


def stored_payload(conn, task_id: int) -> dict:
    return client.get_task(conn, task_id).payload


def test_a_payload_from_stdin_or_a_file_is_stored_as_given(db_dsn, conn, tmp_path):
    queue = unique_name("cli")
    from_stdin = created(run(db_dsn, "echo", "--queue", queue, "--payload", "-", stdin=json.dumps(BIG)))
    assert stored_payload(conn, from_stdin["task_id"]) == BIG
    path = tmp_path / "payload.json"
    path.write_text(json.dumps({"indented": [1, 2], "é": "ü"}, indent=4, ensure_ascii=False), encoding="utf-8")
    from_file = created(run(db_dsn, "echo", "--queue", queue, "--payload-file", str(path)))
    assert stored_payload(conn, from_file["task_id"]) == {"indented": [1, 2], "é": "ü"}
    path.write_bytes(b"\xef\xbb\xbf" + json.dumps(BIG).encode())  # a byte-order mark is dropped
    with_bom = created(run(db_dsn, "echo", "--queue", queue, "--payload-file", str(path)))
    assert stored_payload(conn, with_bom["task_id"]) == BIG


def test_the_largest_payload_the_database_takes_passes_and_one_byte_more_is_refused_before_sending(
    db_dsn, conn, tmp_path
):
    queue = unique_name("cli")
    # {"a": "<n x>"} is 9 + n bytes as jsonb prints it: n = 1048567 is exactly 1 MiB.
    path = tmp_path / "edge.json"
    path.write_text(json.dumps({"a": "x" * 1048567}))
    task_id = created(run(db_dsn, "noop", "--queue", queue, "--payload-file", str(path)))["task_id"]
    assert conn.execute(
        "SELECT octet_length(payload::text) FROM taskforge.tasks WHERE task_id = %s", (task_id,)
    ).fetchone() == (1048576,)
    path.write_text(json.dumps({"a": "x" * 1048568}))
    line = usage_error(
        run(db_dsn, "noop", "--queue", queue, "--payload-file", str(path)),
        "--payload-file: must be at most 1048576 bytes as JSON text, got 1048577",
    )
    assert "TF400" not in line  # refused by the command line: the server never parsed it
    assert len(client.list_tasks(conn, queue=queue)) == 1


@pytest.mark.parametrize(
    "payload, kind",
    [("null", "null"), ("[1, 2]", "array"), ('"text"', "string"), ("42", "number"), ("true", "boolean")],
)
def test_a_payload_that_is_not_an_object_is_refused_as_tf_submit_refuses_it(db_dsn, conn, tmp_path, payload, kind):
    queue = unique_name("cli")
    message = f"must be a JSON object, got {kind}"
    usage_error(run(db_dsn, "echo", "--queue", queue, "--payload", payload), f"--payload: {message}")
    usage_error(run(db_dsn, "echo", "--queue", queue, "--payload", "-", stdin=payload), f"--payload: {message}")
    path = tmp_path / "p.json"
    path.write_text(payload)
    usage_error(run(db_dsn, "echo", "--queue", queue, "--payload-file", str(path)), f"--payload-file: {message}")
    assert client.list_tasks(conn, queue=queue) == []
    # The same words as the SQL API's refusal.
    with pytest.raises(Exception) as refused:
        conn.execute(
            "SELECT * FROM taskforge.tf_submit(task_type => 'echo', payload => %s::jsonb, queue => %s)",
            (payload, queue),
        )
    assert str(refused.value).startswith(f"payload: {message}")


@pytest.mark.parametrize(
    "content, fragments",
    [
        (b'{"a": ' + b"[" * 100 + b"]" * 100 + b"}", ["--payload-file: nested more than 100 levels deep"]),
        (b"{oops", ["--payload-file: not valid JSON"]),
        (b'{"a": "caf\xe9"}', ["--payload-file:", "is not valid UTF-8 (byte 0xe9 at position 10)"]),
        (b'{"a": "\\u0000"}', ["--payload-file: string at $.a contains a NUL character"]),
        (b'{"a": 1e400}', ["--payload-file: number 1e400 is out of range"]),
        (b" " * (16 * 1024 * 1024 + 1), ["--payload-file:", "holds more than 16777216 bytes"]),
    ],
)
def test_a_payload_file_gets_the_checks_of_payload(db_dsn, conn, tmp_path, content, fragments):
    queue = unique_name("cli")
    path = tmp_path / "p.json"
    path.write_bytes(content)
    usage_error(run(db_dsn, "noop", "--queue", queue, "--payload-file", str(path)), *fragments)
    assert client.list_tasks(conn, queue=queue) == []


def test_payload_options_exclude_each_other_and_from_file(db_dsn, conn, tmp_path):
    path = tmp_path / "p.json"
    path.write_text("{}")
    usage_error(
        run(db_dsn, "noop", "--payload", "{}", "--payload-file", str(path)),
        "--payload/--payload-file: give at most one",
    )
    usage_error(
        run(db_dsn, "--from-file", "-", "--payload-file", str(path), stdin=""), "--from-file:", "--payload-file"
    )
    usage_error(
        run(db_dsn, "noop", "--payload-file", str(tmp_path / "missing.json")),
        "--payload-file: cannot read",
        "No such file or directory",
    )
