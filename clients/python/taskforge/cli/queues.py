"""``taskforge queue list|pause|resume|limit``: per-queue controls (tf_queues, tf_pause_queue,
tf_resume_queue, tf_set_queue_limit).

A paused queue gets no claims (submits still succeed); a limited queue never has more than its
limit of tasks RUNNING. Both act on claims only; see docs/sql-api.md#queues.
"""

from __future__ import annotations

from typing import Any

import click

from .. import client, database as db
from ..output import table, to_json
from .common import Text, dsn_option, json_option, optional_limit, optional_number

_QUEUE_COLUMNS: list[str | tuple[str, str]] = [
    "queue",
    "paused",
    ("max_running", "limit"),
    "queued",
    "due",
    "running",
    "retrying",
    ("oldest_due_age_seconds", "oldest_due_s"),
    ("aging_per_second", "aging/s"),
]


@click.group("queue")
def queue_group() -> None:
    """Show, pause, resume and limit queues."""


@queue_group.command("list")
@dsn_option
@json_option
def list_cmd(dsn: str | None, as_json: bool) -> None:
    """Queues with live work or a control: paused, limit (- = unlimited), counts and the age in
    seconds of the oldest due task (database time)."""
    with db.connect(dsn) as conn:
        rows = [q.as_dict() for q in client.queues(conn)]
    click.echo(
        to_json(rows) if as_json else table(rows, _QUEUE_COLUMNS, empty="(no queues with live work or controls)")
    )


def _each_queue(queues: tuple[str, ...], dsn: str | None, as_json: bool, act: str) -> None:
    """Pause or resume every queue named, in one transaction: when the database refuses one name
    (TF400, exit code 3, one line), no queue has changed."""
    results: list[dict[str, Any]] = []
    with db.connect(dsn) as conn, conn.transaction():
        for name in queues:
            changed = client.pause_queue(conn, name) if act == "pause" else client.resume_queue(conn, name)
            results.append({"queue": name, "changed": changed, "paused": act == "pause"})
    if as_json:
        click.echo(to_json(results if len(results) > 1 else results[0]))
        return
    done, already = ("paused", "already paused") if act == "pause" else ("resumed", "was not paused")
    for r in results:
        click.echo(f"queue {r['queue']} {done if r['changed'] else already}")


@queue_group.command("pause")
@click.argument("queues", metavar="QUEUE", nargs=-1, required=True, type=Text())
@dsn_option
@json_option
def pause_cmd(queues: tuple[str, ...], dsn: str | None, as_json: bool) -> None:
    """Pause each QUEUE: workers claim none of its tasks until it is resumed. Submits still
    succeed and running tasks finish normally. All or nothing: a refused name changes no queue."""
    _each_queue(queues, dsn, as_json, "pause")


@queue_group.command("resume")
@click.argument("queues", metavar="QUEUE", nargs=-1, required=True, type=Text())
@dsn_option
@json_option
def resume_cmd(queues: tuple[str, ...], dsn: str | None, as_json: bool) -> None:
    """Resume each paused QUEUE (idle workers are woken at once). All or nothing, as pause."""
    _each_queue(queues, dsn, as_json, "resume")


@queue_group.command("limit")
@click.argument("queue", metavar="QUEUE", type=Text())
@click.argument("max_running", metavar="MAX_RUNNING|none")
@dsn_option
@json_option
def limit_cmd(queue: str, max_running: str, dsn: str | None, as_json: bool) -> None:
    """Allow at most MAX_RUNNING (1..1000000) of QUEUE's tasks RUNNING at once, or remove the
    limit with `none`."""
    limit = optional_limit("MAX_RUNNING", max_running)
    with db.connect(dsn) as conn:
        previous = client.set_queue_limit(conn, queue, limit)
    if as_json:
        click.echo(to_json({"queue": queue, "max_running": limit, "previous": previous}))
        return
    shown = "unlimited" if limit is None else f"at most {limit} running"
    click.echo(f"queue {queue}: {shown} (was {'unlimited' if previous is None else previous})")


@queue_group.command("aging")
@click.argument("queue", metavar="QUEUE", type=Text())
@click.argument("rate", metavar="PRIORITY_PER_SECOND|none")
@dsn_option
@json_option
def aging_cmd(queue: str, rate: str, dsn: str | None, as_json: bool) -> None:
    """Let QUEUE's waiting tasks gain PRIORITY_PER_SECOND priority points per second since their
    submit (claims take them by that effective priority), or turn aging off with `none`."""
    value = optional_number("PRIORITY_PER_SECOND", rate)
    with db.connect(dsn) as conn:
        previous = client.set_queue_aging(conn, queue, value)
    if as_json:
        click.echo(to_json({"queue": queue, "aging_per_second": value, "previous": previous}))
        return
    shown = "no aging" if value is None else f"aging {value:g} priority/s"
    click.echo(f"queue {queue}: {shown} (was {'no aging' if previous is None else f'{previous:g}/s'})")


COMMANDS: tuple[click.Command, ...] = (queue_group,)
