"""``taskforge periodic add|remove|list`` and the client functions under them, against a real
database: tables by default, --json for scripts, refusals as one line with exit code 3.

Schedules are committed, so every test removes the ones it made (a scheduler process of a later
test would otherwise enqueue their ticks).
"""

from __future__ import annotations

import datetime as dt
import json

import pytest
from click.testing import CliRunner

from taskforge import client
from taskforge.cli import EXIT_REFUSED, EXIT_USAGE, main
from taskforge.errors import Refused

from sqlcore_helpers import unique_name

NO_ENV_DSN = {"TASKFORGE_DSN": None, "DATABASE_URL": None}


def cli(*args: str):
    return CliRunner().invoke(main, [str(a) for a in args], env=NO_ENV_DSN, catch_exceptions=False)


def one_line_error(result, code: int, *fragments: str) -> str:
    assert result.exit_code == code, (result.exit_code, result.output)
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in result.output, result.output
    for fragment in fragments:
        assert fragment in lines[0], lines[0]
    return lines[0]


@pytest.fixture()
def name(conn):
    """A schedule name no other test uses; the schedule is removed after the test."""
    value = unique_name("sched")
    yield value
    client.unschedule_periodic(conn, value)


def test_add_list_remove(db_dsn, conn, name):
    queue = unique_name("pq")
    result = cli(
        "periodic", "add", name, "30 2 * * *", "echo", "--payload", '{"report": 1}', "--queue", queue,
        "--priority", "4", "--max-attempts", "2", "--timezone", "Europe/Berlin", "--dsn", db_dsn,
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    assert result.stdout.startswith(f"schedule {name} created: next tick ")
    row = next(r for r in client.list_periodic(conn) if r.name == name)
    assert (row.cron, row.timezone, row.task_type, row.queue, row.priority, row.max_attempts) == (
        "30 2 * * *", "Europe/Berlin", "echo", queue, 4, 2,
    )  # fmt: skip
    assert row.payload == {"report": 1}
    assert row.next_fire_at.astimezone(dt.timezone(dt.timedelta(hours=1))).hour in (2, 3)  # 02:30 CET / 03:30 CEST

    listed = cli("periodic", "list", "--dsn", db_dsn)
    assert listed.exit_code == 0
    line = next(line for line in listed.stdout.splitlines() if line.startswith(name))
    assert "30 2 * * *" in line and "Europe/Berlin" in line and queue in line

    doc = json.loads(cli("periodic", "list", "--json", "--dsn", db_dsn).stdout)
    entry = next(d for d in doc if d["name"] == name)
    assert entry["last_task_id"] is None and entry["next_fire_at"] == row.next_fire_at.isoformat()

    replaced = json.loads(cli("periodic", "add", name, "*/5 * * * *", "noop", "--json", "--dsn", db_dsn).stdout)
    assert replaced["name"] == name and replaced["created"] is False
    assert dt.datetime.fromisoformat(replaced["next_fire_at"]).minute % 5 == 0

    removed = cli("periodic", "remove", name, "--dsn", db_dsn)
    assert (removed.exit_code, removed.stdout) == (0, f"schedule {name} removed\n")
    assert all(r.name != name for r in client.list_periodic(conn))


def test_remove_unknown_is_exit_3_unless_missing_ok(db_dsn, name):
    one_line_error(cli("periodic", "remove", name, "--dsn", db_dsn), EXIT_REFUSED, f"no periodic schedule '{name}'")
    result = cli("periodic", "remove", name, "--json", "--dsn", db_dsn)
    assert result.exit_code == EXIT_REFUSED and json.loads(result.stdout) == {"name": name, "removed": False}
    result = cli("periodic", "remove", name, "--missing-ok", "--dsn", db_dsn)
    assert result.exit_code == 0 and "nothing to remove" in result.stdout


@pytest.mark.parametrize(
    ("args", "fragments"),
    [
        (["0 25 * * *", "noop"], ["TF400 cron: hour field '25': 25 is out of range 0-23"]),
        (["* * * *", "noop"], ["TF400 cron: must have 5 fields"]),
        (["* * * * *", "no_such_type"], ["TF400 task_type: unknown task type"]),
        (["* * * * *", "noop", "--timezone", "Mars/Olympus"], ["TF400 timezone: must be a time zone name"]),
        (["* * * * *", "noop", "--queue", "bad queue"], ["TF400 queue: must match"]),
    ],
)
def test_add_refusals_are_one_line_exit_3(db_dsn, conn, name, args, fragments):
    one_line_error(cli("periodic", "add", name, *args, "--dsn", db_dsn), EXIT_REFUSED, *fragments)
    assert all(r.name != name for r in client.list_periodic(conn)), "nothing was stored"


def test_add_bad_payload_is_a_usage_error(db_dsn, name):
    one_line_error(
        cli("periodic", "add", name, "* * * * *", "noop", "--payload", "{nope", "--dsn", db_dsn),
        EXIT_USAGE,
        "--payload: not valid JSON",
    )


def test_client_functions(conn, name):
    first = client.schedule_periodic(conn, name, "@hourly", "noop", queue=unique_name("pq"))
    assert first.created is True and first.name == name
    assert (first.next_fire_at.minute, first.next_fire_at.second) == (0, 0)
    again = client.schedule_periodic(conn, name, "@hourly", "noop")
    assert again.created is False and again.next_fire_at == first.next_fire_at, "same cron and zone: next tick kept"
    with pytest.raises(Refused) as failure:
        client.schedule_periodic(conn, name, "* * * * MONDAY", "noop")
    assert failure.value.sqlstate == "TF400" and failure.value.message.startswith("cron: day-of-week")
    assert failure.value.argument == "cron" and failure.value.index is None
    with pytest.raises(client.InvalidArgument):
        client.schedule_periodic(conn, name, "* * * * *", "noop", priority=2**40)
    assert client.unschedule_periodic(conn, name) is True
    assert client.unschedule_periodic(conn, name) is False
