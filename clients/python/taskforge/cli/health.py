"""``taskforge healthcheck``: one line (or JSON) and an exit code for container probes."""

from __future__ import annotations

import sys

import click

from .. import health
from ..output import terminal_text, to_json
from .common import EXIT_DATABASE, Seconds, dsn_option, json_option

#: Exit code when the database answers but the schema or the scheduler check fails.
EXIT_UNHEALTHY = 1


@click.command("healthcheck")
@dsn_option
@json_option
@click.option(
    "--connect-timeout",
    type=Seconds(1, 300),
    default=5.0,
    show_default=True,
    help="Seconds to wait for the database connection.",
)
def healthcheck_cmd(dsn: str | None, as_json: bool, connect_timeout: float) -> None:
    """Check that the database answers, no migration is pending (as `db status`) and a
    scheduler is alive (tf_schedulers). Exit code 0 when all hold; otherwise one line on stderr
    naming the failed check, and exit code 4 (database) or 1 (schema, scheduler)."""
    report = health.check(dsn, connect_timeout=connect_timeout)
    failed = report.failed
    if as_json:
        click.echo(to_json(report.to_dict()))
    elif failed is None:
        # A detail may name a scheduler (any text its --name was given).
        click.echo(terminal_text("healthy: " + "; ".join(f"{c.name} {c.detail}" for c in report.checks)))
    else:
        click.echo(terminal_text(f"taskforge: unhealthy: {failed.name}: {failed.detail}"), err=True)
    if failed is not None:
        sys.exit(EXIT_DATABASE if failed.name == "database" else EXIT_UNHEALTHY)


COMMANDS: tuple[click.Command, ...] = (healthcheck_cmd,)
