"""``taskforge db migrate`` and ``taskforge db status``: install and inspect the schema."""

from __future__ import annotations

import json
import sys
from typing import Any

import click

from .. import database as db
from .common import EXIT_PENDING, dsn_option, json_option


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


COMMANDS: tuple[click.Command, ...] = (db_group,)
