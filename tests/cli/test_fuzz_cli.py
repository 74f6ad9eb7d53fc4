"""Fuzzing the command line's text arguments (hypothesis, click's CliRunner): `taskforge submit`,
`list`, `cancel --reason` and `queue pause|resume|limit` (the contract and strategies:
tests/helpers/fuzz_support.py).

Every run either succeeds (exit code 0) and does what docs/cli.md says, the values stored exactly
as given (SQL-injection strings among them), or fails with exit code 2 (a value the command
refuses before sending it) or 3 (the database refused it: TF400/TF404/TF409), one line on stderr,
nothing on stdout, no traceback, and no row of any table changed. Command-line text here may hold
what no database text can (NUL, unpaired surrogates, as undecodable bytes of argv arrive).
"""

from __future__ import annotations

import json
import uuid
from typing import Any

import psycopg
import pytest
from click.testing import CliRunner
from hypothesis import assume, event, given, strategies as st
from psycopg.types.json import Jsonb

from taskforge import client
from taskforge.cli import EXIT_REFUSED, EXIT_USAGE, main
from taskforge.names import QUEUE_PATTERN

from fuzz_support import (
    FUZZ,
    fuzz_database,
    json_values,
    mostly_valid,
    objects,
    payloads,
    queue_names,
    snapshot,
    task_type_names,
    texts,
)

#: Text the command line can carry but PostgreSQL cannot: refused with exit code 2.
cli_texts = st.one_of(
    texts,
    st.builds(lambda a, b: a + b, texts, st.sampled_from(["\x00", "\ud800", "\udcff"])),
)
payload_texts = st.one_of(
    payloads.map(json.dumps),
    st.sampled_from(["{", "{'a': 1}", "NaN", '{"a": Infinity}', '{"a": 1e400}', "", "[1, 2", '{"a": "\\u0000"}']),
    cli_texts,
)


@pytest.fixture(scope="module")
def fz(admin_dsn):
    with fuzz_database(admin_dsn) as dsn, psycopg.connect(dsn, autocommit=True) as conn:
        yield dsn, conn


def invoke(fz, command: list[str], options: list[str], positionals: list[str], *, valid: bool):
    """Run ``taskforge COMMAND OPTIONS --dsn DSN -- POSITIONALS`` (``--`` so that a value starting
    with a dash stays a value); a valid one must exit 0, an invalid one 2 or 3 with one line on
    stderr and no row changed."""
    dsn, conn = fz
    event("valid command" if valid else "invalid command")
    args = [*command, *options, "--dsn", dsn, "--", *positionals]
    before = snapshot(conn)
    result = CliRunner().invoke(main, args, env={"TASKFORGE_DSN": None, "DATABASE_URL": None})
    assert result.exception is None or isinstance(result.exception, SystemExit), (args, result.exception)
    assert "Traceback" not in result.output, (args, result.output)
    if valid:
        assert result.exit_code == 0, (args, result.exit_code, result.output)
        return result
    assert result.exit_code in (EXIT_USAGE, EXIT_REFUSED), (args, result.exit_code, result.output)
    assert result.stdout == "", (args, result.stdout)
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("taskforge: "), (args, result.stderr)
    assert snapshot(conn) == before, f"a refused command changed a table: {args!r}: {lines[0]}"
    return result


def storable(text: str | None) -> bool:
    return text is None or client.text_problem(text) is None


def parsed(text: str) -> tuple[bool, Any]:
    """(is JSON jsonb can hold, the value) as the command reads --payload."""
    if not storable(text):
        return False, None
    try:
        value = json.loads(text, parse_constant=lambda name: float("nan"))
        client.check_payload(value)
    except (ValueError, client.InvalidArgument):
        return False, None
    return True, value


@FUZZ
@given(
    task_type=mostly_valid(st.sampled_from(["noop", "echo"]), st.one_of(task_type_names, cli_texts)),
    payload=mostly_valid(objects.map(json.dumps), payload_texts),
    queue=mostly_valid(st.from_regex(QUEUE_PATTERN, fullmatch=True), st.one_of(queue_names, cli_texts)),
    key=st.one_of(st.none(), cli_texts),
)
def test_fuzz_submit(fz, task_type, payload, queue, key):
    ok_json, value = parsed(payload)
    assume(value is not None or not ok_json)  # JSON null: issue 10 item 3 (the CLI must refuse it like SQL)
    _, conn = fz
    key = None if key is None else f"{key[:120]}|{uuid.uuid4().hex}"  # no replays here: test_fuzz_sql has them
    types = {r[0] for r in conn.execute("SELECT task_type FROM taskforge.task_types").fetchall()}
    valid = (
        storable(task_type)
        and task_type in types
        and ok_json
        and isinstance(value, dict)
        and storable(queue)
        and bool(QUEUE_PATTERN.fullmatch(queue))
        and (key is None or (storable(key) and len(key) <= 200))
    )
    options = ["--payload", payload, "--queue", queue, "--json"]
    if key is not None:
        options += ["--idempotency-key", key]
    result = invoke(fz, ["submit"], options, [task_type], valid=valid)
    if valid:
        task_id = json.loads(result.stdout)["task_id"]
        stored = conn.execute(
            "SELECT task_type, queue, idempotency_key, payload = %s FROM taskforge.tasks WHERE task_id = %s",
            (Jsonb(value), task_id),
        ).fetchone()
        assert stored == (task_type, queue, key, True)


@FUZZ
@given(
    queue=st.one_of(st.none(), queue_names, cli_texts),
    task_type=st.one_of(st.none(), task_type_names, cli_texts),
    state=st.one_of(st.none(), st.sampled_from(["queued", "SUCCEEDED", "Failed"]), cli_texts),
    limit=st.one_of(st.none(), st.integers(-5, 20000).map(str), cli_texts),
)
def test_fuzz_list(fz, queue, task_type, state, limit):
    valid = (
        storable(queue)
        and storable(task_type)
        and (state is None or state.upper() in client.STATES)
        and (limit is None or (limit.strip().lstrip("+-").isdigit() and 1 <= int(limit) <= 10000))
    )
    options = ["--json"]
    for option, value in (("--queue", queue), ("--type", task_type), ("--state", state), ("--limit", limit)):
        if value is not None:
            options += [option, value]
    _, conn = fz
    before = snapshot(conn)
    result = invoke(fz, ["list"], options, [], valid=valid)
    assert snapshot(conn) == before  # list never writes
    if valid:
        rows = json.loads(result.stdout)
        assert all(
            (queue is None or r["queue"] == queue)
            and (task_type is None or r["task_type"] == task_type)
            and (state is None or r["state"] == state.upper())
            for r in rows
        )


@FUZZ
@given(reason=st.one_of(st.none(), cli_texts))
def test_fuzz_cancel_reason(fz, reason):
    _, conn = fz
    task_id = conn.execute(
        "SELECT task_id FROM taskforge.tf_submit(task_type => 'noop', queue => %s)", (f"fzc_{uuid.uuid4().hex[:8]}",)
    ).fetchone()[0]
    options = ["--json"] + ([] if reason is None else ["--reason", reason])
    invoke(fz, ["cancel"], options, [str(task_id)], valid=storable(reason))
    stored = conn.execute("SELECT state, cancel_reason FROM taskforge.tasks WHERE task_id = %s", (task_id,)).fetchone()
    if storable(reason):
        assert stored == ("CANCELLED", None if reason is None else reason[:1000])
    else:
        assert stored == ("QUEUED", None)


@FUZZ
@given(
    action=st.sampled_from(["pause", "resume", "limit"]),
    queues=st.lists(st.one_of(queue_names, cli_texts), min_size=1, max_size=3),
    limit=st.one_of(
        st.sampled_from(["none", "NONE", "1", "1000000"]), st.integers(-3, 2_000_000).map(str), json_values.map(str)
    ),
)
def test_fuzz_queue(fz, action, queues, limit):
    _, conn = fz
    if action == "limit":
        queues = queues[:1]
    names_valid = all(storable(q) and QUEUE_PATTERN.fullmatch(q) for q in queues)
    if action == "limit":
        number = None if limit.strip().lower() == "none" else limit
        valid = names_valid and (
            number is None or (number.strip().lstrip("+-").isdigit() and 1 <= int(number) <= 10**6)
        )
        positionals = [queues[0], limit]
    else:
        valid = names_valid
        positionals = queues
    invoke(fz, ["queue", action], ["--json"], positionals, valid=valid)
    if valid:
        rows = {r.queue: r for r in client.queues(conn)}
        for queue in queues:
            if action == "pause":
                assert rows[queue].paused is True
            elif action == "resume":
                assert queue not in rows or rows[queue].paused is False
            else:
                expected = None if limit.strip().lower() == "none" else int(limit)
                assert (rows[queue].max_running if queue in rows else None) == expected
