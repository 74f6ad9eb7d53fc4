"""``taskforge demo``: the whole system end to end (see :mod:`taskforge.demo` and docs/demo.md)."""

from __future__ import annotations

import sys
from pathlib import Path

import click

from .. import demo
from .common import dsn_option, fail


@click.command("demo")
@click.option(
    "--once",
    is_flag=True,
    help="Exit after the summary (exit code 1 if an expectation failed) instead of running until Ctrl-C.",
)
@dsn_option
@click.option(
    "--data-dir",
    type=click.Path(file_okay=False, path_type=Path),
    default=Path(".taskforge"),
    show_default=True,
    help="Where the embedded PostgreSQL and the process logs are kept.",
)
@click.option(
    "--workload",
    type=click.Path(dir_okay=False, exists=True, path_type=Path),
    default=None,
    help="JSON-lines workload file (default: examples/demo_workload.jsonl of the checkout).",
)
def demo_cmd(once: bool, dsn: str | None, data_dir: Path, workload: Path | None) -> None:
    """Run the main job end to end: workers, a scheduler, a mixed workload and a crash.

    With no database configured (no --dsn, TASKFORGE_DSN or DATABASE_URL) it starts an embedded
    PostgreSQL under --data-dir; otherwise it migrates and uses the database given, and never
    drops anything there.
    """
    try:
        code = demo.run(demo.DemoConfig(dsn=dsn, once=once, data_dir=data_dir, workload=workload))
    except demo.DemoError as exc:
        fail(str(exc), 1)
    sys.exit(code)


COMMANDS: tuple[click.Command, ...] = (demo_cmd,)
