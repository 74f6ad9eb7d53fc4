"""Everyday task commands: submit, show, list, cancel, retry, workers, stats.

Each command opens one autocommit connection (``--dsn``, else $TASKFORGE_DSN, else
$DATABASE_URL), calls :mod:`taskforge.client`, and prints an aligned table, or JSON with
``--json``. Refusals by the database (TF400/TF404/TF409) are one line on stderr and exit code 3
(see :mod:`taskforge.cli`); a bad ``--payload`` or ``--at`` is one line and exit code 2.
"""

from __future__ import annotations

import datetime as _dt
import json
import math

import click

from . import client, db
from .cli import EXIT_REFUSED, dsn_option, fail, json_option, main
from .output import format_value, key_values, table, to_json

EXIT_USAGE = 2


def _usage(option: str, problem: str) -> None:
    """One-line usage error (exit code 2)."""
    fail(f"{option}: {problem}", EXIT_USAGE)


def _reject_constant(name: str):
    raise ValueError(f"{name} is not valid JSON (PostgreSQL jsonb has no NaN or Infinity)")


def parse_payload(text: str | None) -> dict | None:
    """``--payload`` text to a Python value (the database checks that it is an object)."""
    if text is None:
        return None
    try:
        return json.loads(text, parse_constant=_reject_constant)
    except ValueError as exc:
        _usage("--payload", f"not valid JSON: {exc}")


def parse_at(text: str | None) -> _dt.datetime | None:
    """``--at`` ISO-8601 text with a UTC offset (``Z`` allowed) to an aware datetime.

    A time without an offset is rejected: it would be read in the database session's TimeZone,
    so the same command could schedule different instants on different servers.
    """
    if text is None:
        return None
    try:
        value = _dt.datetime.fromisoformat(text.strip())
    except ValueError:
        _usage("--at", f"not an ISO-8601 time: {text!r} (example: 2030-01-31T09:30:00+01:00)")
    if value.utcoffset() is None:
        _usage("--at", f"{text!r} has no UTC offset; add one such as Z or +02:00 "
                       "(a time without an offset is ambiguous)")
    return value


def _error_summary(error) -> str | None:
    if error is None:
        return None
    if isinstance(error, dict):
        kind = error.get("type")
        message = error.get("message")
        if kind or message:
            return f"{kind}: {message}" if kind and message else str(kind or message)
    return format_value(error)


@main.command("submit")
@click.argument("task_type")
@click.option("--payload", metavar="JSON", default=None,
              help="Task payload, a JSON object (default {}).")
@click.option("--queue", default="default", show_default=True, help="Queue name.")
@click.option("--priority", type=int, default=0, show_default=True,
              help="Higher is claimed first (-32768..32767).")
@click.option("--max-attempts", type=int, default=3, show_default=True,
              help="Total attempt budget (1..1000).")
@click.option("--at", "at", metavar="ISO-8601", default=None,
              help="Earliest start, with a UTC offset, e.g. 2030-01-31T09:30:00+01:00 or ...Z.")
@click.option("--delay", "delay", type=float, metavar="SECONDS", default=None,
              help="Earliest start this many seconds after the database's current time.")
@click.option("--idempotency-key", default=None,
              help="Makes a repeated submit safe: the same request returns the same task.")
@dsn_option
@json_option
def submit_cmd(task_type, payload, queue, priority, max_attempts, at, delay, idempotency_key, dsn, as_json):
    """Submit a task of TASK_TYPE (e.g. noop, sleep, echo).

    \b
    Example:
      taskforge submit sleep --payload '{"ms": 500}' --queue default --priority 5
    """
    value = parse_payload(payload)
    when = parse_at(at)
    if when is not None and delay is not None:
        _usage("--at/--delay", "give at most one")
    if delay is not None and not math.isfinite(delay):
        _usage("--delay", "must be a finite number of seconds")
    with db.connect(dsn) as conn:
        res = client.submit(conn, task_type, value, queue=queue, priority=priority,
                            max_attempts=max_attempts, scheduled_at=when, delay_seconds=delay,
                            idempotency_key=idempotency_key)
    if as_json:
        click.echo(to_json(client.as_dict(res)))
    elif res.created:
        click.echo(f"task {res.task_id} {res.state} (created)")
    else:
        click.echo(f"task {res.task_id} {res.state} (existing task returned for idempotency key "
                   f"{idempotency_key!r}; nothing created)")


@main.command("show")
@click.argument("task_id", type=int)
@dsn_option
@json_option
def show_cmd(task_id, dsn, as_json):
    """Show task TASK_ID and its attempt history."""
    with db.connect(dsn) as conn:
        try:
            task = client.get_task(conn, task_id)
        except client.TaskNotFound as exc:
            fail(f"{exc.sqlstate} {exc}", EXIT_REFUSED)
    if as_json:
        click.echo(to_json(task, indent=2))
        return
    fields = ["task_id", "task_type", "queue", "priority", "state", "attempt_count", "max_attempts",
              "scheduled_at", "created_at", "updated_at", "finished_at", "owner_worker_id",
              "lease_expires_at", "cancel_requested", "cancel_reason", "idempotency_key"]
    click.echo(key_values([(f, task[f]) for f in fields], width=None))
    for f in ("payload", "result", "last_error"):
        if task[f] is not None:
            click.echo(f"{f}:")
            click.echo("  " + to_json(task[f], indent=2).replace("\n", "\n  "))
    click.echo("")
    click.echo("attempts:")
    rows = [{**a, "error_summary": _error_summary(a["error"])} for a in task["attempts"]]
    click.echo(table(rows, [("attempt_number", "#"), "state", "outcome", ("worker_name", "worker"),
                            ("started_at", "started"), ("finished_at", "finished"),
                            ("duration_seconds", "seconds"), ("recovery_lag_seconds", "recovery_lag"),
                            ("error_summary", "error")], empty="  (none yet)"))


@main.command("list")
@click.option("--state", type=click.Choice(client.STATES, case_sensitive=False), default=None,
              help="Only tasks in this state.")
@click.option("--queue", default=None, help="Only tasks of this queue.")
@click.option("--type", "task_type", default=None, help="Only tasks of this task type.")
@click.option("--limit", type=click.IntRange(1, 10000), default=50, show_default=True,
              help="At most this many tasks, newest first.")
@dsn_option
@json_option
def list_cmd(state, queue, task_type, limit, dsn, as_json):
    """List tasks, newest first."""
    with db.connect(dsn) as conn:
        rows = client.list_tasks(conn, state=state, queue=queue, task_type=task_type, limit=limit)
    if as_json:
        click.echo(to_json(rows))
        return
    for r in rows:
        r["attempts"] = f"{r['attempt_count']}/{r['max_attempts']}"
    click.echo(table(rows, ["task_id", ("task_type", "type"), "queue", ("priority", "pri"), "state",
                            "attempts", ("scheduled_at", "scheduled"), ("created_at", "created"),
                            ("finished_at", "finished")], empty="(no tasks)"))


@main.command("cancel")
@click.argument("task_id", type=int)
@click.option("--reason", default=None, help="Free text kept with the task (1,000 characters).")
@dsn_option
@json_option
def cancel_cmd(task_id, reason, dsn, as_json):
    """Cancel TASK_ID: waiting tasks end CANCELLED now; a running task is asked to stop.

    A running handler is never interrupted: its worker learns of the request at its next lease
    renewal; a success still ends SUCCEEDED, any failure ends CANCELLED.
    """
    with db.connect(dsn) as conn:
        res = client.cancel(conn, task_id, reason)
    if as_json:
        click.echo(to_json(client.as_dict(res)))
    elif res.task_state == "RUNNING":
        click.echo(f"task {task_id} RUNNING, cancel requested (honoured when its attempt ends)")
    else:
        click.echo(f"task {task_id} {res.task_state}")


@main.command("retry")
@click.argument("task_id", type=int)
@click.option("--extra-attempts", type=int, default=1, show_default=True,
              help="At least this many further attempts (1..1000).")
@dsn_option
@json_option
def retry_cmd(task_id, extra_attempts, dsn, as_json):
    """Replay a FAILED or CANCELLED task (history is kept)."""
    with db.connect(dsn) as conn:
        res = client.retry(conn, task_id, extra_attempts)
    if as_json:
        click.echo(to_json(client.as_dict(res)))
    else:
        click.echo(f"task {task_id} {res.task_state} again (max_attempts {res.max_attempts})")


@main.command("workers")
@click.option("--all", "include_stopped", is_flag=True, help="Include stopped (deregistered) workers.")
@dsn_option
@json_option
def workers_cmd(include_stopped, dsn, as_json):
    """List worker processes with liveness from database time (alive | stale | stopped)."""
    with db.connect(dsn) as conn:
        rows = client.workers(conn, include_stopped=include_stopped)
    if as_json:
        click.echo(to_json(rows))
        return
    for r in rows:
        r["queues_text"] = ",".join(r["queues"]) if r["queues"] else "(all)"
    click.echo(table(rows, ["worker_id", "name", "hostname", "pid", "liveness", ("running_tasks", "running"),
                            ("seconds_since_heartbeat", "heartbeat_age_s"), ("queues_text", "queues"),
                            ("started_at", "started")], empty="(no workers)"))


@main.command("stats")
@dsn_option
@json_option
def stats_cmd(dsn, as_json):
    """Task counts per queue and state, and throughput over the last 1, 5 and 15 minutes."""
    with db.connect(dsn) as conn:
        st = client.stats(conn)
    if as_json:
        click.echo(to_json(st))
        return
    click.echo("tasks per queue and state:")
    click.echo(table(st["queues"], ["queue", *client.STATES, "total"], empty="  (no tasks)"))
    click.echo("")
    click.echo("throughput (attempts finished in the last 60/300/900 s of database time):")
    click.echo(table(st["throughput"], [("window_seconds", "window_s"), "queue", ("attempts_finished", "finished"),
                                        ("attempts_succeeded", "succeeded"), ("attempts_failed", "failed"),
                                        ("succeeded_per_second", "ok_per_s"), ("run_p50_seconds", "run_p50_s"),
                                        ("run_p95_seconds", "run_p95_s"), ("wait_p50_seconds", "wait_p50_s"),
                                        ("wait_p95_seconds", "wait_p95_s")],
                     empty="  (nothing finished in the last 15 minutes)"))
