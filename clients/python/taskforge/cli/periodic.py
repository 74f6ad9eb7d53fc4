"""``taskforge periodic add|remove|list``: periodic schedules (cron in a time zone).

Each command opens one autocommit connection (``--dsn``, else $TASKFORGE_DSN, else
$DATABASE_URL) and calls :mod:`taskforge.client`. The database validates everything (TF400,
exit code 3, one line naming the argument; a bad cron names its field). The scheduler enqueues
the ticks (``taskforge scheduler``); these commands only declare, remove and show schedules.
"""

from __future__ import annotations

from typing import Any

import click

from .. import client, database as db
from ..output import table, to_json
from .common import EXIT_REFUSED, SqlInt, Text, dsn_option, fail, json_option
from .tasks import Payload


@click.group("periodic")
def periodic_group() -> None:
    """Periodic schedules: a task enqueued at every tick of a cron expression.

    \b
    Examples:
      taskforge periodic add nightly-report '30 2 * * *' send_report --timezone Europe/Berlin
      taskforge periodic list
      taskforge periodic remove nightly-report
    """


@periodic_group.command("add")
@click.argument("name", type=Text())
@click.argument("cron", type=Text())
@click.argument("task_type", type=Text())
@click.option(
    "--payload", type=Payload(), metavar="JSON", default=None, help="Payload of every task, a JSON object (default {})."
)
@click.option("--queue", type=Text(), default="default", show_default=True, help="Queue of every task.")
@click.option(
    "--priority", type=SqlInt("int"), default=0, show_default=True, help="Higher is claimed first (-32768..32767)."
)
@click.option(
    "--max-attempts", type=SqlInt("int"), default=3, show_default=True, help="Attempt budget of every task (1..1000)."
)
@click.option(
    "--timezone",
    type=Text(),
    default="UTC",
    show_default=True,
    help="Time zone whose wall clock the cron is read on (a name of pg_timezone_names, e.g. Europe/Berlin).",
)
@dsn_option
@json_option
def add_cmd(
    name: str,
    cron: str,
    task_type: str,
    payload: Any,
    queue: str,
    priority: int,
    max_attempts: int,
    timezone: str,
    dsn: str | None,
    as_json: bool,
) -> None:
    """Create or replace schedule NAME: a TASK_TYPE task at every tick of CRON.

    CRON has five fields, "minute hour day-of-month month day-of-week" (quote it): *, lists,
    ranges, steps (*/15, 8-18/2), JAN-DEC, SUN-SAT, 0 and 7 for Sunday, or @hourly, @daily,
    @weekly, @monthly, @yearly. Replacing a schedule with the same cron and time zone keeps its
    next tick.
    """
    with db.connect(dsn) as conn:
        res = client.schedule_periodic(
            conn,
            name,
            cron,
            task_type,
            payload,
            queue=queue,
            priority=priority,
            max_attempts=max_attempts,
            timezone=timezone,
        )
    if as_json:
        click.echo(to_json(res.as_dict()))
        return
    what = "created" if res.created else "replaced"
    click.echo(f"schedule {res.name} {what}: next tick {res.next_fire_at.isoformat(sep=' ')}")


@periodic_group.command("remove")
@click.argument("name", type=Text())
@click.option("--missing-ok", is_flag=True, help="Exit 0 when there is no such schedule (default: exit 3).")
@dsn_option
@json_option
def remove_cmd(name: str, missing_ok: bool, dsn: str | None, as_json: bool) -> None:
    """Remove schedule NAME. Tasks it already enqueued stay (cancel them with `taskforge cancel`)."""
    with db.connect(dsn) as conn:
        removed = client.unschedule_periodic(conn, name)
    if as_json:
        click.echo(to_json({"name": name, "removed": removed}))
    elif removed:
        click.echo(f"schedule {name} removed")
    if not removed and not missing_ok:
        if not as_json:
            fail(f"no periodic schedule {name!r} (nothing removed)", EXIT_REFUSED)
        raise SystemExit(EXIT_REFUSED)
    if not removed and not as_json:
        click.echo(f"no periodic schedule {name!r} (nothing to remove)")


@periodic_group.command("list")
@dsn_option
@json_option
def list_cmd(dsn: str | None, as_json: bool) -> None:
    """List periodic schedules with their next and last tick and the last tick's task."""
    with db.connect(dsn) as conn:
        rows = [p.as_dict() for p in client.list_periodic(conn)]
    if as_json:
        click.echo(to_json(rows))
        return
    click.echo(
        table(
            rows,
            [
                "name",
                "cron",
                "timezone",
                ("task_type", "type"),
                "queue",
                ("next_fire_at", "next tick"),
                ("last_fire_at", "last tick"),
                ("last_task_id", "last task"),
                ("last_task_state", "state"),
            ],
            empty="(no periodic schedules)",
        )
    )


COMMANDS: tuple[click.Command, ...] = (periodic_group,)
