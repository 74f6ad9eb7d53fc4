"""The ``taskforge`` command line (click).

Human-friendly output by default, ``--json`` for scripts. Database errors raised by the SQL API
(SQLSTATE TF400, TF404, TF409) and connection problems become one line on stderr and a
non-zero exit code, never a traceback.
"""

from __future__ import annotations

import json
import sys

import click
import psycopg

from . import db

#: Exit codes: 1 = usage/other error, 2 = click usage, 3 = database refused the request
#: (TF400/TF404/TF409), 4 = cannot reach or use the database.
EXIT_REFUSED = 3
EXIT_DATABASE = 4

dsn_option = click.option(
    "--dsn", envvar=["TASKFORGE_DSN", "DATABASE_URL"], default=None, show_envvar=True,
    help="PostgreSQL connection string (libpq key=value or URI). Default: $TASKFORGE_DSN, else $DATABASE_URL.")
json_option = click.option("--json", "as_json", is_flag=True, help="Print JSON instead of a table.")


def fail(message: str, code: int = 1) -> None:
    """Print one line to stderr and exit with code."""
    click.echo(f"taskforge: {message}", err=True)
    sys.exit(code)


class TaskforgeGroup(click.Group):
    """Turns expected failures into one line and an exit code."""

    def invoke(self, ctx):
        try:
            return super().invoke(ctx)
        except db.DsnMissing as exc:
            fail(str(exc), EXIT_DATABASE)
        except psycopg.Error as exc:
            diag = getattr(exc, "diag", None)
            sqlstate = getattr(exc, "sqlstate", None) or ""
            text = (diag.message_primary if diag is not None and diag.message_primary else str(exc)).strip()
            if sqlstate.startswith("TF"):
                fail(f"{sqlstate} {text}", EXIT_REFUSED)
            first_line = text.splitlines()[0] if text else type(exc).__name__
            # The server's HINT says what to do (e.g. which GRANT a DBA must run): keep it.
            hint = (diag.message_hint or "").strip() if diag is not None else ""
            if hint:
                first_line += " (" + " ".join(hint.split()) + ")"
            fail(f"database error{' ' + sqlstate if sqlstate else ''}: {first_line}", EXIT_DATABASE)


@click.group(cls=TaskforgeGroup)
@click.version_option(package_name="taskforge")
def main() -> None:
    """TaskForge: PostgreSQL-backed background tasks."""


@main.group("db")
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
def db_status(dsn: str | None, as_json: bool) -> None:
    """Show applied and pending migrations and the SQL API version."""
    st = db.status(dsn)
    if as_json:
        click.echo(json.dumps({"applied": st.applied, "pending": st.pending, "schema_version": st.schema_version}))
        return
    click.echo(f"schema version: {st.schema_version if st.schema_version is not None else '(not installed)'}")
    click.echo("applied: " + (", ".join(st.applied) or "(none)"))
    click.echo("pending: " + (", ".join(st.pending) or "(none)"))


# Command modules register themselves on `main` (imported last to avoid a cycle).
from . import cli_run, cli_tasks, cli_demo  # noqa: E402,F401


if __name__ == "__main__":  # pragma: no cover
    # `python -m taskforge.cli`: this file runs as __main__, but the command modules registered
    # their commands on the group of the importable module taskforge.cli, so run that one.
    from taskforge.cli import main as _registered_main

    _registered_main()
