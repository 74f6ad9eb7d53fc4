"""The ``taskforge`` group: every command module's ``COMMANDS`` added to one click group.

Human-friendly output by default, ``--json`` for scripts. Refusals (:class:`taskforge.errors.Refused`:
the SQL API's TF400, TF404, TF409, and values refused before sending) and connection problems
become one line on stderr and a non-zero exit code (:func:`taskforge.cli.common.fail_refused`),
never a traceback.

A command module defines its commands with ``@click.command`` / ``@click.group`` (never
importing this module) and lists them in ``COMMANDS``; :data:`COMMANDS` below adds them.
"""

from __future__ import annotations

from typing import Any

import click
import psycopg

from .. import database as db
from ..errors import Refused, refused_from
from . import bench, console, demo, health, limits, migrate, periodic, queues, run, tasks
from .common import EXIT_DATABASE, UNMIGRATED_SQLSTATES, fail, fail_refused

#: Every command of ``taskforge``, module by module.
COMMANDS: tuple[click.Command, ...] = (
    *migrate.COMMANDS,
    *health.COMMANDS,
    *tasks.COMMANDS,
    *queues.COMMANDS,
    *limits.COMMANDS,
    *periodic.COMMANDS,
    *run.COMMANDS,
    *demo.COMMANDS,
    *bench.COMMANDS,
    *console.COMMANDS,
)


#: What to do when a submit finds no range of the partitioned history for its id (23514 from
#: PostgreSQL, which carries no hint; docs/operations.md, "Partitioned history").
NO_RANGE_HINT = (
    "no range of the partitioned history holds this task id yet: run a scheduler or tf_maintain, or "
    "SELECT taskforge.tf_make_partitions(), then submit again; a batch must fit in the ranges made ahead"
)


class TaskforgeGroup(click.Group):
    """Turns expected failures into one line and an exit code."""

    def invoke(self, ctx: click.Context) -> Any:
        try:
            return super().invoke(ctx)
        except db.DsnMissing as exc:
            fail(str(exc), EXIT_DATABASE)
        except Refused as exc:  # the database's, or a client-side check (the commands check options first)
            fail_refused(exc)
        except psycopg.Error as exc:
            refused = refused_from(exc)  # a statement sent outside taskforge.client
            if refused is not None:
                fail_refused(refused)
            diag = getattr(exc, "diag", None)
            sqlstate = getattr(exc, "sqlstate", None) or ""
            text = (diag.message_primary if diag is not None and diag.message_primary else str(exc)).strip()
            if sqlstate in UNMIGRATED_SQLSTATES and "taskforge" in text:
                fail(
                    f"database error {sqlstate}: {text.splitlines()[0]}: the TaskForge schema is not installed in this "
                    "database (or is older than this taskforge package); run `taskforge db migrate`",
                    EXIT_DATABASE,
                )
            first_line = text.splitlines()[0] if text else type(exc).__name__
            # The server's HINT says what to do (e.g. which GRANT a DBA must run): keep it.
            hint = (diag.message_hint or "").strip() if diag is not None else ""
            if not hint and sqlstate == "23514" and 'relation "tasks"' in text:
                hint = NO_RANGE_HINT
            if hint:
                first_line += " (" + " ".join(hint.split()) + ")"
            fail(f"database error{' ' + sqlstate if sqlstate else ''}: {first_line}", EXIT_DATABASE)


@click.group(cls=TaskforgeGroup, commands=COMMANDS)
@click.version_option(package_name="taskforge")
def main() -> None:
    """TaskForge: PostgreSQL-backed background tasks."""
