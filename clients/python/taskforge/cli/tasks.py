"""Everyday task commands: submit, show, list, cancel, retry, workers, stats.

Each command opens one autocommit connection (``--dsn``, else $TASKFORGE_DSN, else
$DATABASE_URL), calls :mod:`taskforge.client`, and prints an aligned table, or JSON with
``--json``. Refusals by the database (TF400/TF404/TF409) are one line on stderr and exit code 3
(see :mod:`taskforge.cli.app`). A value that cannot even be sent as its SQL argument type (an
integer beyond int/bigint, text that is not UTF-8 or holds NUL, a payload with non-finite
numbers, NUL or unpaired surrogates, a delay outside 0..100 years) or a bad ``--payload`` or
``--at`` is one line naming the option and exit code 2, and nothing is written.

``--from-file`` reads requests in the one request shape (:class:`taskforge.submission.SubmitRequest`,
:func:`taskforge.submission.read_request_lines`); a refusal names the line and the key.
"""

from __future__ import annotations

import contextlib
import dataclasses
import datetime as _dt
import json
import sys
import time
from collections.abc import Callable, Iterable
from typing import Any, BinaryIO, NoReturn, TextIO

import click
import psycopg
from click.core import ParameterSource

from .. import client, database as db
from ..errors import Refused
from ..output import format_value, key_values, table, to_json
from ..submission import BadLine, JsonProblem, SubmitRequest, json_kind, loads_json, read_request_lines
from .common import (
    EXIT_REFUSED,
    EXIT_USAGE,
    EXIT_WAIT_TIMEOUT,
    Choice,
    OptionError,
    Seconds,
    SqlInt,
    Text,
    dsn_option,
    fail,
    fail_refused,
    json_option,
    one_line,
    refusal_line,
)


def _usage(option: str, problem: str) -> NoReturn:
    """One-line usage error (exit code 2)."""
    fail(f"{option}: {problem}", EXIT_USAGE)


def parse_payload(text: str | None, option: str = "--payload") -> Any:
    """``--payload`` JSON text to a dict, as ``tf_submit`` would accept it.

    The text must be JSON (NaN and Infinity are not: :func:`taskforge.submission.loads_json`) for
    an object (``null``, arrays and other values are refused as the database refuses them: "must
    be a JSON object, got null"), and the
    value must pass :func:`taskforge.client.check_payload`: finite numbers (``1e400`` overflows a
    float), no NUL character or unpaired surrogate (``"\\ud800"``) in keys or strings, at most
    :data:`taskforge.client.MAX_PAYLOAD_DEPTH` levels of nesting and
    :data:`taskforge.client.MAX_PAYLOAD_BYTES` of JSON text. Exits with a one-line
    ``<option>: ...`` error (code 2) otherwise.
    """
    if text is None:
        return None
    try:
        value = loads_json(text)
        client.check_payload(value)
    except (JsonProblem, client.InvalidArgument) as exc:
        raise OptionError(option, exc.problem) from None
    if not isinstance(value, dict):
        raise OptionError(option, f"must be a JSON object, got {json_kind(value)}")
    return value


#: Most bytes read by ``--payload -`` and ``--payload-file``: a payload is at most
#: MAX_PAYLOAD_BYTES as jsonb prints it, and indented or escaped JSON text may be longer.
PAYLOAD_INPUT_MAX_BYTES = 16 * client.MAX_PAYLOAD_BYTES


def read_payload(stream: BinaryIO, option: str, where: str) -> str:
    """The JSON text of ``--payload -`` (stdin) or ``--payload-file``: at most
    :data:`PAYLOAD_INPUT_MAX_BYTES` of UTF-8 (a leading byte-order mark is dropped)."""
    data = stream.read(PAYLOAD_INPUT_MAX_BYTES + 1)
    if len(data) > PAYLOAD_INPUT_MAX_BYTES:
        raise OptionError(
            option,
            f"{where} holds more than {PAYLOAD_INPUT_MAX_BYTES} bytes; a payload is at most "
            f"{client.MAX_PAYLOAD_BYTES} bytes as JSON text",
        )
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise OptionError(
            option, f"{where} is not valid UTF-8 (byte 0x{data[exc.start]:02x} at position {exc.start})"
        ) from None


class Payload(Text):
    """``--payload``: UTF-8 text (see :class:`taskforge.cli.common.Text`) parsed by
    :func:`parse_payload`; ``-`` reads the JSON text from stdin."""

    name = "json"

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> Any:
        if not isinstance(value, str):
            return value
        if value == "-":
            return parse_payload(read_payload(sys.stdin.buffer, "--payload", "stdin"))
        return parse_payload(super().convert(value, param, ctx))


class PayloadFile(Text):
    """``--payload-file PATH``: the payload's JSON text read from a file, checked as ``--payload``."""

    name = "path"

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> Any:
        if not isinstance(value, str):
            return value
        path = super().convert(value, param, ctx)
        try:
            with open(path, "rb") as stream:
                text = read_payload(stream, "--payload-file", path)
        except OSError as exc:
            raise OptionError("--payload-file", f"cannot read {path}: {exc.strerror or exc}") from None
        return parse_payload(text, "--payload-file")


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
        _usage(
            "--at", f"{text!r} has no UTC offset; add one such as Z or +02:00 (a time without an offset is ambiguous)"
        )
    return value


def _error_summary(error: Any) -> str | None:
    if error is None:
        return None
    if isinstance(error, dict):
        kind = error.get("type")
        message = error.get("message")
        if kind or message:
            return f"{kind}: {message}" if kind and message else str(kind or message)
    return format_value(error)


#: The keys of a --from-file line: a request's (tf_submit's parameter names).
FILE_KEYS = tuple(f.name for f in dataclasses.fields(SubmitRequest))
#: The options that describe the request (given per line with --from-file, not here).
REQUEST_OPTIONS = (
    "payload",
    "payload_file",
    "queue",
    "priority",
    "max_attempts",
    "at",
    "delay",
    "idempotency_key",
    "timeout_seconds",
    "depends_on",
    "rate_key",
    "concurrency_key",
    "ordering_key",
)
#: Lines sent per tf_submit_many call.
FILE_CHUNK = 1000


@click.command("submit")
@click.argument("task_type", type=Text(), required=False)
@click.option(
    "--payload",
    type=Payload(),
    metavar="JSON",
    default=None,
    help="Task payload, a JSON object (default {}); '-' reads it from stdin.",
)
@click.option(
    "--payload-file",
    "payload_file",
    type=PayloadFile(),
    metavar="PATH",
    default=None,
    help="Read the payload (a JSON object) from this file instead of --payload.",
)
@click.option("--queue", type=Text(), default="default", show_default=True, help="Queue name.")
@click.option(
    "--priority", type=SqlInt("int"), default=0, show_default=True, help="Higher is claimed first (-32768..32767)."
)
@click.option(
    "--max-attempts", type=SqlInt("int"), default=3, show_default=True, help="Total attempt budget (1..1000)."
)
@click.option(
    "--at",
    "at",
    type=Text(),
    metavar="ISO-8601",
    default=None,
    help="Earliest start, with a UTC offset, e.g. 2030-01-31T09:30:00+01:00 or ...Z.",
)
@click.option(
    "--delay",
    "delay",
    type=Seconds(0, client.MAX_DELAY_SECONDS, " (100 years)"),
    metavar="SECONDS",
    default=None,
    help="Earliest start this many seconds (0 to 100 years) after the database's current "
    "time. Replay-safe with --idempotency-key: the delay as given is part of the request.",
)
@click.option(
    "--idempotency-key",
    type=Text(),
    default=None,
    help="Makes a repeated submit safe: the same request returns the same task.",
)
@click.option(
    "--timeout-seconds",
    "timeout_seconds",
    type=Seconds(0, 604800, " (7 days)"),
    metavar="SECONDS",
    default=None,
    help="This task's attempt timeout (over 0, up to 7 days), in place of its task type's: "
    "an attempt still running that long after its claim is timed out.",
)
@click.option(
    "--depends-on",
    "depends_on",
    type=SqlInt("bigint"),
    metavar="TASK_ID",
    multiple=True,
    help="A parent task (repeat for several): this task waits BLOCKED until every parent SUCCEEDED, "
    "and ends CANCELLED (dependency_failed) if one fails.",
)
@click.option("--rate-key", type=Text(), default=None, help="Rate key: starts only with a token of its rate limit.")
@click.option(
    "--concurrency-key",
    type=Text(),
    default=None,
    help="Concurrency key: at most its limit of such tasks RUNNING, claims rotate across keys.",
)
@click.option(
    "--ordering-key",
    type=Text(),
    default=None,
    help="Ordering key: such tasks run one at a time, in submission order.",
)
@click.option(
    "--from-file",
    "from_file",
    type=click.File("r", encoding="utf-8"),
    metavar="PATH",
    default=None,
    help="Submit one task per line of a JSON-lines file ('-' for stdin) instead of TASK_TYPE: "
    f"keys {', '.join(FILE_KEYS)}; # starts a comment line; sent {FILE_CHUNK} lines per call, all in one "
    "transaction; depends_on_positions are 0-based positions of earlier requests in the file.",
)
@click.option(
    "--wait",
    "wait",
    is_flag=True,
    help="Wait for the task to end and print its outcome; exit 0 if it SUCCEEDED, 1 if it FAILED or "
    f"was CANCELLED, {EXIT_WAIT_TIMEOUT} if it had not ended within --wait-timeout.",
)
@click.option(
    "--wait-timeout",
    "wait_timeout",
    type=Seconds(0, 604800, " (7 days)"),
    metavar="SECONDS",
    default=600.0,
    show_default=True,
    help="How long --wait waits (over 0, up to 7 days).",
)
@dsn_option
@json_option
def submit_cmd(
    task_type: str | None,
    payload: Any,
    payload_file: Any,
    queue: str,
    priority: int,
    max_attempts: int,
    at: str | None,
    delay: float | None,
    idempotency_key: str | None,
    timeout_seconds: float | None,
    depends_on: tuple[int, ...],
    rate_key: str | None,
    concurrency_key: str | None,
    ordering_key: str | None,
    from_file: TextIO | None,
    wait: bool,
    wait_timeout: float,
    dsn: str | None,
    as_json: bool,
) -> None:
    """Submit a task of TASK_TYPE (e.g. noop, sleep, echo), or many with --from-file.

    \b
    Examples:
      taskforge submit sleep --payload '{"ms": 500}' --queue default --priority 5
      taskforge submit echo --payload-file invoice.json
      taskforge submit --from-file tasks.jsonl
      taskforge submit echo --payload '{"n": 1}' --wait --wait-timeout 60
      taskforge submit report --depends-on 41 --depends-on 42 --concurrency-key tenant-7
    """
    if wait and from_file is not None:
        _usage("--wait", "waits for one task: not with --from-file")
    if not wait and click.get_current_context().get_parameter_source("wait_timeout") is ParameterSource.COMMANDLINE:
        _usage("--wait-timeout", "only with --wait")
    if payload is not None and payload_file is not None:
        _usage("--payload/--payload-file", "give at most one")
    if payload_file is not None:
        payload = payload_file
    if from_file is not None:
        ctx = click.get_current_context()
        given = [
            f"--{name.replace('_', '-')}"
            for name in REQUEST_OPTIONS
            if ctx.get_parameter_source(name) is ParameterSource.COMMANDLINE
        ]
        if task_type is not None or given:
            options = ", ".join(given) or "the options"
            _usage("--from-file", f"give TASK_TYPE and {options} per line in the file, not here")
        _submit_from_file(from_file, dsn, as_json)
        return
    if task_type is None:
        _usage("TASK_TYPE", "missing (or use --from-file)")
    when = parse_at(at)
    if when is not None and delay is not None:
        _usage("--at/--delay", "give at most one")
    with db.connect(dsn) as conn:
        res = client.submit(
            conn,
            task_type,
            payload,
            queue=queue,
            priority=priority,
            max_attempts=max_attempts,
            scheduled_at=when,
            delay_seconds=delay,
            idempotency_key=idempotency_key,
            timeout_seconds=timeout_seconds,
            notify_finished=wait,
            depends_on=depends_on or None,
            rate_key=rate_key,
            concurrency_key=concurrency_key,
            ordering_key=ordering_key,
        )
        if wait:
            _wait_and_exit(conn, dsn, res, wait_timeout, as_json)
    if as_json:
        click.echo(to_json(res.as_dict()))
    elif res.created:
        click.echo(f"task {res.task_id} {res.state} (created)")
    else:
        click.echo(
            f"task {res.task_id} {res.state} (existing task returned for idempotency key "
            f"{idempotency_key!r}; nothing created)"
        )


#: Seconds between attempts to reconnect while ``submit --wait`` has lost its connection.
RECONNECT_PAUSE = 1.0


def _wait_and_exit(conn: Any, dsn: str | None, submitted: client.Submitted, timeout: float, as_json: bool) -> NoReturn:
    """``submit --wait``: wait for the task's end (client.wait), print it, exit by its state. A
    broken connection is replaced (every RECONNECT_PAUSE seconds until one opens) and the wait
    goes on within the same timeout (monotonic clock): the answer is the task row, never lost."""
    if as_json:
        click.echo(to_json(submitted.as_dict()))
    else:
        click.echo(f"task {submitted.task_id} {submitted.state} ({'created' if submitted.created else 'existing'})")
    deadline = time.monotonic() + timeout
    with contextlib.ExitStack() as reconnected:
        while True:
            try:
                if conn is None:
                    conn = reconnected.enter_context(db.connect(dsn))
                task = client.wait(conn, submitted.task_id, timeout=max(deadline - time.monotonic(), 0.001))
                break
            except TimeoutError:
                state = client.get_task(conn, submitted.task_id).state
                fail(f"task {submitted.task_id} is still {state} after {timeout:g} s", EXIT_WAIT_TIMEOUT)
            except psycopg.OperationalError:
                if time.monotonic() >= deadline:
                    raise
                conn = None
                time.sleep(RECONNECT_PAUSE)
    if as_json:
        click.echo(to_json(task.as_dict()))
    elif task.state == "SUCCEEDED":
        click.echo(f"task {task.task_id} SUCCEEDED after {task.attempt_count} attempt(s): {format_value(task.result)}")
    else:
        reason = _error_summary(task.last_error) or task.cancel_reason or "no error recorded"
        click.echo(f"task {task.task_id} {task.state} after {task.attempt_count} attempt(s): {reason}")
    raise SystemExit(0 if task.state == "SUCCEEDED" else 1)


def _in_chunk(request: SubmitRequest, base: int, results: list[tuple[int, client.Submitted]]) -> SubmitRequest:
    """``request`` of a chunk whose first element is the file's request ``base``: its
    depends_on_positions (positions in the file) name elements of the chunk relative to it, and
    the tasks of earlier chunks by id."""
    if not request.depends_on_positions:
        return request
    earlier = [results[p][1].task_id for p in request.depends_on_positions if 0 <= p < base]
    inside = [p - base for p in request.depends_on_positions if not 0 <= p < base]
    return dataclasses.replace(
        request,
        depends_on=(*(request.depends_on or ()), *earlier) or None,
        depends_on_positions=tuple(inside) or None,
    )


def _submit_chunk(
    conn: Any, chunk: list[tuple[int, SubmitRequest]], results: list[tuple[int, client.Submitted]]
) -> None:
    """One tf_submit_many call for ``chunk`` ((line number, request) pairs); a refusal names the
    line of the element at fault."""
    base = len(results)
    try:
        submitted = client.submit_many(conn, [_in_chunk(request, base, results) for _, request in chunk])
    except Refused as exc:
        fail_refused(exc, element=lambda index: f"line {chunk[index][0]}")
    results.extend((n, s) for (n, _), s in zip(chunk, submitted, strict=True))


def _requests(stream: TextIO) -> Iterable[tuple[int, SubmitRequest]]:
    """The requests of a --from-file stream; a bad line is a usage error naming it."""
    try:
        yield from read_request_lines(stream)
    except BadLine as exc:
        fail(str(exc), EXIT_USAGE)


def _submit_from_file(stream: TextIO, dsn: str | None, as_json: bool) -> None:
    """Send the lines in chunks of FILE_CHUNK in one transaction: all are admitted or none."""
    results: list[tuple[int, client.Submitted]] = []
    with db.connect(dsn) as conn, conn.transaction():
        chunk: list[tuple[int, SubmitRequest]] = []
        for number, request in _requests(stream):
            chunk.append((number, request))
            if len(chunk) == FILE_CHUNK:
                _submit_chunk(conn, chunk, results)
                chunk = []
        if chunk:
            _submit_chunk(conn, chunk, results)
    if as_json:
        for number, res in results:
            click.echo(json.dumps({"line": number, **res.as_dict()}))
        return
    created = sum(1 for _, res in results if res.created)
    click.echo(
        f"{len(results)} tasks: {created} created, {len(results) - created} existing "
        "(idempotency key replays; nothing created for them)"
    )


@click.command("show")
@click.argument("task_id", type=SqlInt("bigint"))
@dsn_option
@json_option
def show_cmd(task_id: int, dsn: str | None, as_json: bool) -> None:
    """Show task TASK_ID and its attempt history."""
    with db.connect(dsn) as conn:
        found = client.get_task(conn, task_id)  # TaskNotFound: one line, exit code 3 (cli.app)
        edges = client.dependencies(conn, task_id)
    task = found.as_dict()
    task["parents"] = [
        {"task_id": e.parent_task_id, "task_type": e.parent_task_type, "state": e.parent_state}
        for e in edges
        if e.child_task_id == task_id
    ]
    task["children"] = [
        {"task_id": e.child_task_id, "task_type": e.child_task_type, "state": e.child_state}
        for e in edges
        if e.parent_task_id == task_id
    ]
    if as_json:
        click.echo(to_json(task, indent=2))
        return
    fields = [
        "task_id",
        "task_type",
        "queue",
        "priority",
        "state",
        "attempt_count",
        "max_attempts",
        "scheduled_at",
        "created_at",
        "updated_at",
        "finished_at",
        "owner_worker_id",
        "lease_expires_at",
        "cancel_requested",
        "cancel_reason",
        "idempotency_key",
    ]
    fields += [f for f in ("parents_pending", "rate_key", "concurrency_key", "ordering_key") if task[f]]
    click.echo(key_values([(f, task[f]) for f in fields], width=None))
    for f in ("payload", "result", "last_error"):
        if task[f] is not None:
            click.echo(f"{f}:")
            click.echo("  " + to_json(task[f], indent=2).replace("\n", "\n  "))
    for kind in ("parents", "children"):
        if task[kind]:
            click.echo(f"{kind}:")
            click.echo(table(task[kind], ["task_id", "task_type", "state"]))
    click.echo("")
    click.echo("attempts:")
    rows = [{**a, "error_summary": _error_summary(a["error"])} for a in task["attempts"]]
    click.echo(
        table(
            rows,
            [
                ("attempt_number", "#"),
                "state",
                "outcome",
                ("worker_name", "worker"),
                ("started_at", "started"),
                ("finished_at", "finished"),
                ("duration_seconds", "seconds"),
                ("recovery_lag_seconds", "recovery_lag"),
                ("error_summary", "error"),
            ],
            empty="  (none yet)",
        )
    )


@click.command("list")
@click.option(
    "--state", type=Choice(client.STATES, case_sensitive=False), default=None, help="Only tasks in this state."
)
@click.option("--queue", type=Text(), default=None, help="Only tasks of this queue.")
@click.option("--type", "task_type", type=Text(), default=None, help="Only tasks of this task type.")
@click.option(
    "--limit",
    type=SqlInt("int", 1, 10000),
    default=50,
    show_default=True,
    help="At most this many tasks (1..10000), newest first.",
)
@dsn_option
@json_option
def list_cmd(
    state: str | None, queue: str | None, task_type: str | None, limit: int, dsn: str | None, as_json: bool
) -> None:
    """List tasks, newest first."""
    with db.connect(dsn) as conn:
        # The table shows no document: fetch none (--json gives every column).
        found = client.list_tasks(conn, state=state, queue=queue, task_type=task_type, limit=limit, brief=not as_json)
    rows = [r.as_dict() for r in found]
    if as_json:
        click.echo(to_json(rows))
        return
    for r in rows:
        r["attempts"] = f"{r['attempt_count']}/{r['max_attempts']}"
    click.echo(
        table(
            rows,
            [
                "task_id",
                ("task_type", "type"),
                "queue",
                ("priority", "pri"),
                "state",
                "attempts",
                ("scheduled_at", "scheduled"),
                ("created_at", "created"),
                ("finished_at", "finished"),
            ],
            empty="(no tasks)",
        )
    )


def _each_task(
    task_ids: tuple[int, ...],
    dsn: str | None,
    as_json: bool,
    act: Callable[[psycopg.Connection, int], Any],
    line: Callable[[int, Any], str],
) -> None:
    """Run ``act(conn, task_id)`` for every id, each in its own transaction, and print one line
    (or one JSON object) per id. With one id a refusal (TF4xx) fails the command as before; with
    several, a refused id is reported (stderr, or an ``error`` object with ``--json``) and the
    others go on; the exit code is then 3."""
    if len(task_ids) == 1:
        with db.connect(dsn) as conn:
            res = act(conn, task_ids[0])
        click.echo(to_json(res.as_dict()) if as_json else line(task_ids[0], res))
        return
    refused = 0
    docs: list[dict[str, Any]] = []
    with db.connect(dsn) as conn:
        for task_id in task_ids:
            try:
                res = act(conn, task_id)
            except Refused as exc:
                refused += 1
                if as_json:
                    docs.append({"task_id": task_id, "error": {"sqlstate": exc.sqlstate, "message": exc.message}})
                else:
                    click.echo(f"taskforge: task {task_id}: {one_line(refusal_line(exc))}", err=True)
                continue
            if as_json:
                docs.append({"task_id": task_id, **res.as_dict()})
            else:
                click.echo(line(task_id, res))
    if as_json:
        click.echo(to_json(docs))
    if refused:
        sys.exit(EXIT_REFUSED)


def _cancelled_line(task_id: int, res: Any) -> str:
    if res.task_state == "RUNNING":
        return f"task {task_id} RUNNING, cancel requested (honoured when its attempt ends)"
    return f"task {task_id} {res.task_state}"


@click.command("cancel")
@click.argument("task_ids", metavar="TASK_ID", nargs=-1, required=True, type=SqlInt("bigint"))
@click.option("--reason", type=Text(), default=None, help="Free text kept with the task (1,000 characters).")
@dsn_option
@json_option
def cancel_cmd(task_ids: tuple[int, ...], reason: str | None, dsn: str | None, as_json: bool) -> None:
    """Cancel each TASK_ID: waiting tasks end CANCELLED now; a running task is asked to stop.

    A running handler is never interrupted: its worker learns of the request at its next lease
    renewal; a success still ends SUCCEEDED, any failure ends CANCELLED. Several ids: one line
    (with --json, a JSON array) per id; an id the database refuses is reported and the others
    go on (exit code 3).
    """
    _each_task(task_ids, dsn, as_json, lambda conn, task_id: client.cancel(conn, task_id, reason), _cancelled_line)


@click.command("retry")
@click.argument("task_ids", metavar="TASK_ID", nargs=-1, required=True, type=SqlInt("bigint"))
@click.option(
    "--extra-attempts",
    type=SqlInt("int"),
    default=1,
    show_default=True,
    help="At least this many further attempts (1..1000).",
)
@dsn_option
@json_option
def retry_cmd(task_ids: tuple[int, ...], extra_attempts: int, dsn: str | None, as_json: bool) -> None:
    """Replay each FAILED or CANCELLED TASK_ID (history is kept). Several ids: one line (with
    --json, a JSON array) per id; an id the database refuses is reported and the others go on
    (exit code 3)."""
    _each_task(
        task_ids,
        dsn,
        as_json,
        lambda conn, task_id: client.retry(conn, task_id, extra_attempts),
        lambda task_id, res: f"task {task_id} {res.task_state} again (max_attempts {res.max_attempts})",
    )


@click.command("workers")
@click.option("--all", "include_stopped", is_flag=True, help="Include stopped (deregistered) workers.")
@dsn_option
@json_option
def workers_cmd(include_stopped: bool, dsn: str | None, as_json: bool) -> None:
    """List worker processes with liveness from database time (alive | stale | stopped)."""
    with db.connect(dsn) as conn:
        rows = [w.as_dict() for w in client.workers(conn, include_stopped=include_stopped)]
    if as_json:
        click.echo(to_json(rows))
        return
    for r in rows:
        r["queues_text"] = ",".join(r["queues"]) if r["queues"] else "(all)"
    click.echo(
        table(
            rows,
            [
                "worker_id",
                "name",
                "hostname",
                "pid",
                "liveness",
                ("running_tasks", "running"),
                ("seconds_since_heartbeat", "heartbeat_age_s"),
                ("queues_text", "queues"),
                ("started_at", "started"),
            ],
            empty="(no workers)",
        )
    )


@click.command("stats")
@dsn_option
@json_option
def stats_cmd(dsn: str | None, as_json: bool) -> None:
    """Task counts per queue and state, and throughput over the last 1, 5 and 15 minutes."""
    with db.connect(dsn) as conn:
        st = client.stats(conn).as_dict()
    if as_json:
        click.echo(to_json(st))
        return
    click.echo("tasks per queue and state:")
    click.echo(table(st["queues"], ["queue", *client.STATES, "total"], empty="  (no tasks)"))
    click.echo("")
    click.echo("throughput (attempts finished in the last 60/300/900 s of database time):")
    click.echo(
        table(
            st["throughput"],
            [
                ("window_seconds", "window_s"),
                "queue",
                ("attempts_finished", "finished"),
                ("attempts_succeeded", "succeeded"),
                ("attempts_failed", "failed"),
                ("succeeded_per_second", "ok_per_s"),
                ("run_p50_seconds", "run_p50_s"),
                ("run_p95_seconds", "run_p95_s"),
                ("wait_p50_seconds", "wait_p50_s"),
                ("wait_p95_seconds", "wait_p95_s"),
            ],
            empty="  (nothing finished in the last 15 minutes)",
        )
    )


COMMANDS: tuple[click.Command, ...] = (submit_cmd, show_cmd, list_cmd, cancel_cmd, retry_cmd, workers_cmd, stats_cmd)
