"""Long-running commands: ``taskforge worker`` and ``taskforge scheduler``.

Defaults are listed once, in docs/configuration.md. Exit codes: 0 clean stop; 1 forced stop of
a worker (second signal or grace period over) or an error after start; 2 bad options or a
handler module that cannot be imported; 4 the database cannot be used at start (unreachable,
schema missing, or a newer SQL API version than this package understands).
"""

from __future__ import annotations

import sys
import traceback

import click

from .. import pooling
from .common import EXIT_DATABASE, EXIT_USAGE, OptionError, Seconds, Text, dsn_option, fail, pooler_option

log_level_option = click.option(
    "--log-level",
    type=click.Choice(["DEBUG", "INFO", "WARNING", "ERROR"], case_sensitive=False),
    default="INFO",
    show_default=True,
    help="Log verbosity (one line per event on stderr; DEBUG logs every claim and finalize).",
)
log_format_option = click.option(
    "--log-format",
    type=click.Choice(["text", "json"], case_sensitive=False),
    default="text",
    show_default=True,
    envvar="TASKFORGE_LOG_FORMAT",
    show_envvar=True,
    help="Log lines: text for people, or json: one object per line with time, level, logger, message and "
    "task_id, attempt, worker_id (scheduler_id) where known.",
)


@click.command("worker")
@dsn_option
@click.option(
    "--queue",
    "-q",
    "queues",
    type=Text(),
    multiple=True,
    metavar="QUEUE",
    help="Claim from this queue (repeatable). Default: every queue.",
)
@click.option(
    "--concurrency",
    "-c",
    type=click.IntRange(1, 10000),
    default=1,
    show_default=True,
    help="Handlers this process runs at once (its slots, sync and async def together); it claims for free "
    "slots, and --prefetch more. Thousands suit async def handlers.",
)
@click.option(
    "--prefetch",
    type=click.IntRange(0, 1000),
    default=0,
    show_default=True,
    help="Claim up to this many attempts ahead of a free slot: they wait in the process (claimed, leases "
    "renewed, deadlines running) and start the moment a slot frees, instead of after a round trip to the "
    "database. Speeds up short handlers; a task claimed ahead waits for this process while others may idle.",
)
@click.option(
    "--lease-seconds",
    type=Seconds(1, 86400),
    default=30.0,
    show_default=True,
    help="Lease per claim and renewal; renewed every lease/3 seconds.",
)
@click.option(
    "--import",
    "imports",
    multiple=True,
    metavar="MODULE",
    help="Import a module (dotted name or path to a .py file) that registers handlers "
    "with @taskforge.handler (repeatable).",
)
@click.option(
    "--task-type",
    "task_types",
    type=Text(),
    multiple=True,
    metavar="TYPE",
    help="Claim only this task type (repeatable; must have a handler). Default: every "
    "type with a handler (those of the --import modules; the synthetic demo types noop, sleep, "
    "fail_once, fail, retryable_fail, echo, async_noop and async_sleep with --import taskforge.synthetic).",
)
@click.option(
    "--name", type=Text(), default=None, help="Worker name shown in `taskforge workers`. Default: HOSTNAME-PID."
)
@click.option(
    "--poll-seconds",
    type=Seconds(0.05, 3600),
    default=1.0,
    show_default=True,
    help="Claim attempt interval when no notification arrives.",
)
@click.option(
    "--heartbeat-seconds",
    type=Seconds(0.5, 3600),
    default=5.0,
    show_default=True,
    help="Process heartbeat interval (stale after 3 missed beats).",
)
@click.option(
    "--grace-seconds",
    type=Seconds(0, 86400),
    default=30.0,
    show_default=True,
    help="After SIGTERM/SIGINT, how long running handlers may finish before the worker "
    "exits and leaves their leases to expire.",
)
@click.option(
    "--transaction-connections",
    type=click.IntRange(1, 10000),
    default=None,
    help="Most connections of each pool (sync handlers, async handlers) of ctx.transaction(), opened as "
    "handlers ask for them. Default: min(concurrency, 10).",
)
@pooler_option
@click.option(
    "--listen-dsn",
    envvar=pooling.LISTEN_DSN_ENV,
    show_envvar=True,
    default=None,
    type=Text(),
    help="With --pooler transaction: a direct connection string (not through the pooler) to LISTEN on for "
    "new tasks. Default: none; the worker then claims every --poll-seconds.",
)
@log_level_option
@log_format_option
def worker_command(
    dsn: str | None,
    queues: tuple[str, ...],
    concurrency: int,
    prefetch: int,
    lease_seconds: float,
    imports: tuple[str, ...],
    task_types: tuple[str, ...],
    name: str | None,
    poll_seconds: float,
    heartbeat_seconds: float,
    grace_seconds: float,
    transaction_connections: int | None,
    pooler: str,
    listen_dsn: str | None,
    log_level: str,
    log_format: str,
) -> None:
    """Run a worker: claim tasks, run their handlers, finalize the attempts.

    Stops gracefully on SIGTERM/SIGINT (no new claims; running handlers get --grace-seconds;
    exit code 0). A second signal exits at once (code 1); unfinished tasks are recovered by a
    scheduler after their leases expire.
    """
    from .. import handlers
    from ..worker import Worker, WorkerConfig, WorkerConfigError, WorkerStartupError, configure_logging

    configure_logging(log_level, log_format=log_format.lower())
    for spec in imports:
        try:
            handlers.import_handler_module(spec)
        except Exception as exc:  # noqa: BLE001 - report the user's import error in one place
            if log_level.upper() == "DEBUG":
                traceback.print_exc()
            where = ""
            tb = traceback.extract_tb(exc.__traceback__)
            if tb:
                where = f" ({tb[-1].filename}:{tb[-1].lineno})"
            fail(f"--import {spec}: {type(exc).__name__}: {exc}{where}", EXIT_USAGE)
    try:
        config = WorkerConfig(
            queues=tuple(queues) or None,
            task_types=tuple(task_types) or None,
            concurrency=concurrency,
            prefetch=prefetch,
            lease_seconds=lease_seconds,
            heartbeat_seconds=heartbeat_seconds,
            poll_seconds=poll_seconds,
            grace_seconds=grace_seconds,
            name=name,
            transaction_connections=transaction_connections,
            pooler=pooler,
            listen_dsn=listen_dsn,
        )
    except ValueError as exc:
        fail(str(exc), EXIT_USAGE)
    worker = Worker(dsn, config)
    try:
        code = worker.run(exit_process=True)
    except WorkerConfigError as exc:
        fail(str(exc), EXIT_USAGE)
    except WorkerStartupError as exc:  # schema missing or newer (SchemaVersionError)
        fail(str(exc), EXIT_DATABASE)
    sys.exit(code)


@click.command("scheduler")
@dsn_option
@click.option(
    "--max-interval-seconds",
    type=Seconds(0.01, 3600),
    default=1.0,
    show_default=True,
    help="Longest sleep between passes; it otherwise wakes just after the next lease deadline, backoff end or "
    "periodic tick.",
)
@click.option(
    "--batch-size",
    type=click.IntRange(1, 100000),
    default=1000,
    show_default=True,
    help="max_tasks per tf_recover / tf_promote / tf_enqueue_periodic / tf_prune call (max_rows per "
    "tf_prune_workers call); a full batch is followed by another call at once.",
)
@click.option(
    "--retain-days",
    type=Seconds(0, 36500, unit="days"),
    default=None,
    help="Prune terminal tasks (and their attempts) finished more than this many days ago, and the records of "
    "worker and scheduler processes gone as long. Default: keep everything.",
)
@click.option(
    "--retain-seconds",
    type=Seconds(0, 3153600000),
    default=None,
    help="The same retention in seconds, for retentions shorter than a day (a soak benchmark's minutes); "
    "not with --retain-days.",
)
@click.option(
    "--prune-interval-seconds",
    type=Seconds(1, 86400),
    default=60.0,
    show_default=True,
    help="Time between prune rounds (with --retain-days or --retain-seconds).",
)
@click.option("--name", type=Text(), default=None, help="Scheduler name shown in tf_schedulers. Default: HOSTNAME-PID.")
@click.option(
    "--heartbeat-seconds",
    type=Seconds(0.5, 3600),
    default=5.0,
    show_default=True,
    help="Interval of its tf_scheduler_heartbeat (stale after 3 missed beats; see `taskforge healthcheck`).",
)
@pooler_option
@log_level_option
@log_format_option
def scheduler_command(
    dsn: str | None,
    max_interval_seconds: float,
    batch_size: int,
    retain_days: float | None,
    retain_seconds: float | None,
    prune_interval_seconds: float,
    name: str | None,
    heartbeat_seconds: float,
    pooler: str,
    log_level: str,
    log_format: str,
) -> None:
    """Run a scheduler: recover expired leases, promote retries, prune old history.

    Several schedulers may run at once. SIGTERM/SIGINT stop it (exit code 0).
    """
    from ..scheduler import Scheduler, SchedulerConfig
    from ..worker import WorkerStartupError, configure_logging

    if retain_days is not None and retain_seconds is not None:
        raise OptionError("--retain-days/--retain-seconds", "give at most one")
    configure_logging(log_level, log_format=log_format.lower())
    try:
        config = SchedulerConfig(
            max_interval_seconds=max_interval_seconds,
            batch_size=batch_size,
            retain_days=retain_days,
            retain_seconds=retain_seconds,
            prune_interval_seconds=prune_interval_seconds,
            name=name,
            heartbeat_seconds=heartbeat_seconds,
            pooler=pooler,
        )
    except ValueError as exc:  # a rule of the config the options do not check
        fail(str(exc), EXIT_USAGE)
    try:
        code = Scheduler(dsn, config).run()
    except WorkerStartupError as exc:
        fail(str(exc), EXIT_DATABASE)
    sys.exit(code)


COMMANDS: tuple[click.Command, ...] = (worker_command, scheduler_command)
