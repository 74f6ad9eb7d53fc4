"""``taskforge db migrate``, ``taskforge db status`` and ``taskforge db partition``: install,
inspect and convert the schema."""

from __future__ import annotations

import dataclasses
import json
import sys
from typing import Any

import click

from .. import database as db
from .common import EXIT_PENDING, SqlInt, dsn_option, json_option


@click.group("db")
def db_group() -> None:
    """Install and inspect the TaskForge schema."""


@db_group.command("migrate")
@dsn_option
@json_option
def db_migrate(dsn: str | None, as_json: bool) -> None:
    """Apply pending migrations (a second run changes nothing)."""
    applied = db.migrate(dsn)
    if as_json:
        click.echo(json.dumps({"applied": applied}))
    elif applied:
        click.echo("applied: " + ", ".join(applied))
    else:
        click.echo("nothing to apply: the database is up to date")


@db_group.command("status")
@dsn_option
@json_option
@click.option("--show-sql", is_flag=True, help="Also print the SQL each pending migration would run.")
def db_status(dsn: str | None, as_json: bool, show_sql: bool) -> None:
    """Show applied and pending migrations and the SQL API version.

    Exits 1 while migrations are pending, so it can gate a deploy (0 when up to date).
    """
    st = db.status(dsn)
    if as_json:
        doc: dict[str, Any] = {"applied": st.applied, "pending": st.pending, "schema_version": st.schema_version}
        if show_sql:
            doc["pending_sql"] = {m: db.migration_sql(m) for m in st.pending}
        click.echo(json.dumps(doc))
    else:
        click.echo(f"schema version: {st.schema_version if st.schema_version is not None else '(not installed)'}")
        click.echo("applied: " + (", ".join(st.applied) or "(none)"))
        click.echo("pending: " + (", ".join(st.pending) or "(none)"))
        if show_sql:
            for migration_id in st.pending:
                click.echo(f"-- migration {migration_id}")
                click.echo(db.migration_sql(migration_id))
    if st.pending:
        sys.exit(EXIT_PENDING)


@db_group.command("partition")
@dsn_option
@json_option
@click.option(
    "--tasks-per-partition",
    type=SqlInt("bigint", min=1000, max=1_000_000_000),
    required=True,
    help="Task ids per range (1000..1000000000): few, large ranges, each larger than your largest "
    "submit batch (docs/operations.md).",
)
@click.option(
    "--ahead",
    "partitions_ahead",
    type=SqlInt("int", min=1, max=100),
    default=1,
    show_default=True,
    help="Empty ranges kept ahead of the next task id (the scheduler or tf_maintain keeps them; "
    "each partition costs every worker turn some work).",
)
def db_partition(dsn: str | None, as_json: bool, tasks_per_partition: int, partitions_ahead: int) -> None:
    """Convert tasks and attempts, with their data, to the partitioned history (once).

    Retention (tf_prune, the scheduler's --retain-days) then drops whole ranges of task ids
    instead of deleting rows. Runs taskforge.tf_partition_history in one transaction that locks
    both tables: stop workers first (it waits at most 5 s for its lock, then changes nothing).
    Needs the schema owner (the user that migrates). There is no way back but a dump and
    restore into a new install.
    """
    ranges = db.partition_history(dsn, tasks_per_partition, partitions_ahead)
    if as_json:
        click.echo(json.dumps({"ranges": [dataclasses.asdict(r) for r in ranges]}))
        return
    click.echo(
        f"partitioned: {len(ranges)} ranges, the first with every task so far, then {tasks_per_partition} task ids each"
    )
    for r in ranges:
        first = "lowest" if r.first_task_id is None else str(r.first_task_id)
        click.echo(f"  tasks_p{r.partition_no}, attempts_p{r.partition_no}: task_id {first} .. {r.end_task_id - 1}")


COMMANDS: tuple[click.Command, ...] = (db_group,)
