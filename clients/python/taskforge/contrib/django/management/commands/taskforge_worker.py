"""``python manage.py taskforge_worker``: a TaskForge worker for the tasks of a Django backend.

It runs :class:`taskforge.worker.Worker` (the process ``taskforge worker`` runs: leases,
renewals, heartbeats, graceful stop on SIGTERM/SIGINT, docs/worker.md) with the handlers of
:mod:`taskforge.contrib.django.runner`, claiming the backend's two task types only. The worker's
own connections go to the backend's ``DATABASE`` (its libpq parameters); the task functions use
Django's connections, under Django's rules (see the runner). Exit codes: 0 clean stop; 1 forced
stop or an error after start; 2 (``CommandError``) bad options; 4 the database cannot be used
(schema missing or newer, or the task types not registered).
"""

from __future__ import annotations

import argparse
import sys
from typing import Any

import psycopg
from django.core.management.base import BaseCommand, CommandError
from django.tasks import DEFAULT_TASK_BACKEND_ALIAS, task_backends
from django.tasks.exceptions import InvalidTaskBackend

from taskforge import client
from taskforge.contrib.django.backend import TaskForgeBackend
from taskforge.contrib.django.database import worker_dsn
from taskforge.contrib.django.mapping import as_mapping
from taskforge.contrib.django.runner import handler_registry
from taskforge.worker import (
    Worker,
    WorkerConfig,
    WorkerConfigError,
    WorkerStartupError,
    check_schema,
    configure_logging,
)

#: Exit codes of bad options and of a database that cannot be used (as ``taskforge worker``'s).
EXIT_USAGE, EXIT_DATABASE = 2, 4


def _missing_task_types(dsn: str, wanted: tuple[str, ...]) -> list[str]:
    """Which of ``wanted`` are not registered (tf_task_types). Raises WorkerStartupError when
    the schema is missing or newer than this package."""
    with psycopg.connect(dsn, autocommit=True) as conn:
        check_schema(conn)
        registered = {as_mapping(row)["task_type"] for row in client.task_types(conn)}
    return [t for t in wanted if t not in registered]


class Command(BaseCommand):
    help = (
        "Run a TaskForge worker for the Django tasks of a TaskForgeBackend (TASKS alias --backend). "
        "Stops gracefully on SIGTERM/SIGINT."
    )

    def add_arguments(self, parser: argparse.ArgumentParser) -> None:
        parser.add_argument(
            "--backend", default=DEFAULT_TASK_BACKEND_ALIAS, help="The TASKS alias of a TaskForgeBackend."
        )
        parser.add_argument(
            "--queue",
            "-q",
            action="append",
            dest="queues",
            metavar="QUEUE",
            help="Claim from this queue (repeatable). Default: the backend's QUEUES (every queue when empty).",
        )
        parser.add_argument(
            "--concurrency", "-c", type=int, default=1, help="Tasks this process runs at once (default 1)."
        )
        parser.add_argument(
            "--prefetch",
            type=int,
            default=0,
            help="Tasks claimed ahead of a free slot, started the moment one frees (default 0; docs/worker.md).",
        )
        parser.add_argument("--lease-seconds", type=float, default=30.0, help="Lease per claim (default 30).")
        parser.add_argument(
            "--grace-seconds",
            type=float,
            default=30.0,
            help="After SIGTERM/SIGINT, how long running tasks may finish (default 30).",
        )
        parser.add_argument(
            "--poll-seconds", type=float, default=1.0, help="Claim interval without notifications (default 1)."
        )
        parser.add_argument("--name", default=None, help="Worker name in `taskforge workers` (default HOST-PID).")
        parser.add_argument(
            "--log-level", choices=["DEBUG", "INFO", "WARNING", "ERROR"], default="INFO", help="Default INFO."
        )

    def handle(self, *args: Any, **options: Any) -> None:
        try:
            backend = task_backends[options["backend"]]
        except InvalidTaskBackend as exc:
            raise CommandError(f"--backend {options['backend']}: {exc}", returncode=EXIT_USAGE) from exc
        if not isinstance(backend, TaskForgeBackend):
            raise CommandError(
                f"--backend {options['backend']}: TASKS[{options['backend']!r}] is a {type(backend).__name__}, "
                "not taskforge.contrib.django.TaskForgeBackend",
                returncode=EXIT_USAGE,
            )
        queues = options["queues"] or sorted(backend.queues) or None
        try:
            config = WorkerConfig(
                queues=tuple(queues) if queues else None,
                concurrency=options["concurrency"],
                prefetch=options["prefetch"],
                lease_seconds=options["lease_seconds"],
                grace_seconds=options["grace_seconds"],
                poll_seconds=options["poll_seconds"],
                name=options["name"],
            )
        except ValueError as exc:
            raise CommandError(str(exc), returncode=EXIT_USAGE) from exc
        configure_logging(options["log_level"])
        dsn = worker_dsn(backend.database)
        try:
            missing = _missing_task_types(dsn, backend.task_types)
        except (WorkerStartupError, psycopg.OperationalError) as exc:
            raise CommandError(str(exc), returncode=EXIT_DATABASE) from exc
        if missing:
            calls = "; ".join(f"SELECT taskforge.tf_register_task_type('{t}')" for t in missing)
            raise CommandError(
                f"task type {', '.join(missing)} is not registered in the database of "
                f"DATABASES[{backend.database!r}]; as its owner, run: {calls} (docs/django.md)",
                returncode=EXIT_DATABASE,
            )
        worker = Worker(dsn, config, handler_registry(backend))
        try:
            code = worker.run(exit_process=True)
        except WorkerConfigError as exc:
            raise CommandError(str(exc), returncode=EXIT_USAGE) from exc
        except WorkerStartupError as exc:
            raise CommandError(str(exc), returncode=EXIT_DATABASE) from exc
        sys.exit(code)
