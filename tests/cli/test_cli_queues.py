"""`taskforge queue list|pause|resume|limit` against a real database, and the Client calls
behind them: the controls reach tf_queues and the claim honours them."""

from __future__ import annotations

import json

from click.testing import CliRunner

from taskforge import client
from taskforge.cli import EXIT_REFUSED, EXIT_USAGE, main

from sqlcore_helpers import claim, register_worker, submit, unique_name

NO_ENV_DSN = {"TASKFORGE_DSN": None, "DATABASE_URL": None}


def cli(*args: str):
    return CliRunner().invoke(main, [str(a) for a in args], env=NO_ENV_DSN, catch_exceptions=False)


def queue_row(conn, queue: str) -> client.Queue:
    return next(r for r in client.queues(conn) if r.queue == queue)


def test_pause_and_resume_through_the_cli(db_dsn, conn):
    queue = unique_name("cliq")
    submit(conn, queue)
    worker = register_worker(conn, "cli-queue-worker", [queue])

    first = cli("queue", "pause", queue, "--dsn", db_dsn)
    assert first.exit_code == 0 and first.stdout.strip() == f"queue {queue} paused"
    again = cli("queue", "pause", queue, "--dsn", db_dsn)
    assert again.stdout.strip() == f"queue {queue} already paused"
    assert queue_row(conn, queue).paused is True
    assert claim(conn, worker, [queue]) == []

    listed = json.loads(cli("queue", "list", "--dsn", db_dsn, "--json").stdout)
    mine = [r for r in listed if r["queue"] == queue]
    assert mine and mine[0]["paused"] is True and mine[0]["due"] == 1

    resumed = json.loads(cli("queue", "resume", queue, "--dsn", db_dsn, "--json").stdout)
    assert resumed == {"queue": queue, "changed": True, "paused": False}
    assert len(claim(conn, worker, [queue])) == 1


def test_limit_through_the_cli(db_dsn, conn):
    queue = unique_name("clilimit")
    for _ in range(3):
        submit(conn, queue)
    worker = register_worker(conn, "cli-limit-worker", [queue])
    out = cli("queue", "limit", queue, "1", "--dsn", db_dsn)
    assert out.exit_code == 0 and out.stdout.strip() == f"queue {queue}: at most 1 running (was unlimited)"
    assert len(claim(conn, worker, [queue], max_tasks=3)) == 1
    table = cli("queue", "list", "--dsn", db_dsn).stdout
    assert any(line.split()[:3] == [queue, "no", "1"] for line in table.splitlines()), table
    cleared = json.loads(cli("queue", "limit", queue, "none", "--dsn", db_dsn, "--json").stdout)
    assert cleared == {"queue": queue, "max_running": None, "previous": 1}
    assert len(claim(conn, worker, [queue], max_tasks=3)) == 2


def test_bad_queue_input_is_one_line(db_dsn):
    for args, code, fragment in [
        (("queue", "limit", "q", "0"), EXIT_USAGE, "MAX_RUNNING: must be between 1 and 1000000"),
        (("queue", "limit", "q", "many"), EXIT_USAGE, "MAX_RUNNING: must be a whole number"),
        (("queue", "pause", "bad queue"), EXIT_REFUSED, "TF400 queue: must match"),
    ]:
        result = cli(*args, "--dsn", db_dsn)
        assert result.exit_code == code, (args, result.output)
        lines = result.stderr.strip().splitlines()
        assert len(lines) == 1 and fragment in lines[0], result.stderr


def test_pause_and_resume_of_several_queues_are_all_or_nothing(db_dsn, conn):
    """A refused name among several (TF400, exit 3) leaves every queue as it was, also the ones
    named before it: the command reports one error line, so it must not have changed anything."""
    good, other = unique_name("cliq"), unique_name("cliq")
    refused = cli("queue", "pause", good, "not a queue!", other, "--dsn", db_dsn)
    assert refused.exit_code == EXIT_REFUSED and refused.stdout == ""
    assert len(refused.stderr.strip().splitlines()) == 1 and "TF400" in refused.stderr
    assert not any(r.queue in (good, other) for r in client.queues(conn))

    assert cli("queue", "pause", good, other, "--dsn", db_dsn).exit_code == 0
    refused = cli("queue", "resume", good, "not a queue!", "--dsn", db_dsn)
    assert refused.exit_code == EXIT_REFUSED
    assert queue_row(conn, good).paused is True and queue_row(conn, other).paused is True
