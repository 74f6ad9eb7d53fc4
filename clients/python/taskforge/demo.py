"""``taskforge demo``: the main job end to end, with real worker and scheduler processes.

Steps (docs/demo.md has the walkthrough):

1. Database: the DSN given (``--dsn``, $TASKFORGE_DSN, $DATABASE_URL), migrated, where nothing is
   ever dropped; or, with none configured, an embedded PostgreSQL (the ``pgserver`` package) kept
   under ``--data-dir`` (default ``./.taskforge``), whose database ``taskforge_demo`` is recreated
   on every run.
2. Four ``taskforge worker`` processes (5 s leases) and one ``taskforge scheduler``, started as
   ``python -m taskforge.cli ...`` subprocesses with their output in log files, and the web
   console (``taskforge console`` on 127.0.0.1, port 8080 or any free one) when the ``console``
   extra is installed; its URL is printed.
3. A mixed workload read from a JSON-lines file (``examples/demo_workload.jsonl``, the format of
   ``taskforge submit --from-file``: :func:`taskforge.submission.read_request_lines`), sent in one
   ``tf_submit_many`` call, plus three tasks submitted through plain SQL
   (``SELECT * FROM taskforge.tf_submit(... => ...)``).
4. A progress display (stderr) while the queue drains; one worker is killed with SIGKILL while
   it runs a long ``sleep`` task, so the scheduler recovers the task after its lease expires.
5. A summary (tasks per state, attempts per task, recovery lag, throughput, invariant audit)
   and a check of the expected outcome of every task type.

All queues of one run carry a short run tag (``emails.ab12``) and idempotency keys are prefixed
with it, so runs against a shared database never see each other's tasks. Every time shown is
database time except the progress clock of the orchestration itself.
"""

from __future__ import annotations

import collections
import contextlib
import dataclasses
import datetime as _dt
import importlib.util
import os
import re
import secrets
import shutil
import signal
import socket
import statistics
import sys
import time
import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, NoReturn

import click
import psycopg

from . import client, database as db, embedded, sql
from .processes import ManagedProcess, ProcessHarness
from .progress import Progress
from .rows import Attempt, TaskRow
from .submission import BadLine, SubmitRequest, read_request_lines

__all__ = [
    "EXPECTATIONS",
    "DemoConfig",
    "DemoError",
    "check_expectations",
    "default_workload_path",
    "load_workload",
    "run",
]

#: Task states in which a task is finished.
TERMINAL = ("SUCCEEDED", "FAILED", "CANCELLED")

# --- the demo's own statements ---------------------------------------------------------------------
# Only ever sent to the demo's own embedded server (never to a database named by a DSN).
DEMO_EMBEDDED_DROP_DATABASE = "DROP DATABASE IF EXISTS taskforge_demo WITH (FORCE)"
DEMO_EMBEDDED_CREATE_DATABASE = "CREATE DATABASE taskforge_demo"
# The any-language path, exactly as a psql user would type it (named arguments).
DEMO_PLAIN_SQL_SUBMIT = """
SELECT * FROM taskforge.tf_submit(task_type => 'echo',
                                  payload => '{"via": "plain SQL", "lang": "any"}',
                                  queue => %(queue)s, priority => 3)
"""
DEMO_PLAIN_SQL_SUBMIT_SLEEP = """
SELECT * FROM taskforge.tf_submit(task_type => 'sleep', payload => '{"ms": 300}',
                                  queue => %(queue)s, max_attempts => 2)
"""
DEMO_PLAIN_SQL_SUBMIT_FAIL_ONCE = """
SELECT * FROM taskforge.tf_submit(task_type => 'fail_once', queue => %(queue)s)
"""
# The database's clock (the instant of the SIGKILL, compared with lease deadlines).
DEMO_DB_NOW = "SELECT clock_timestamp()"
#: A running sleep task at least this long is the one whose worker gets killed.
KILL_MIN_SLEEP_MS = 4000
#: How long the kill target must have been running (orchestration clock) before the kill.
KILL_AFTER_RUNNING_SECONDS = 1.0


class DemoError(RuntimeError):
    """The demo cannot go on (bad workload file, a child process died at start, ...)."""


@dataclass(frozen=True)
class DemoConfig:
    """Options of one demo run. ``dsn`` None means the embedded server under ``data_dir``."""

    dsn: str | None = None
    once: bool = False
    data_dir: Path = Path(".taskforge")
    workload: Path | None = None
    workers: int = 4
    lease_seconds: float = 5.0
    drain_timeout_seconds: float = 150.0
    stop_timeout_seconds: float = 30.0
    #: Port of the console (0 = any free one; the preferred port, when taken, becomes 0).
    console_port: int = 8080


# ---------------------------------------------------------------------------------------------
# Expected outcomes per task type. Each checker gets the tf_tasks row and the list of attempt
# states (attempt 1 first) and says whether the outcome is the expected one. An ABANDONED
# attempt before the final one is allowed where the type is meant to succeed: it is the crash
# the demo causes on purpose, and recovery must then finish the task.


def _succeeded(task: TaskRow, states: list[str]) -> bool:
    return (
        task.state == "SUCCEEDED"
        and bool(states)
        and states[-1] == "SUCCEEDED"
        and all(s == "ABANDONED" for s in states[:-1])
    )


def _echo(task: TaskRow, states: list[str]) -> bool:
    return _succeeded(task, states) and task.result == task.payload


def _fail_once(task: TaskRow, states: list[str]) -> bool:
    return task.state == "SUCCEEDED" and states == ["FAILED", "SUCCEEDED"]


def _fail(task: TaskRow, states: list[str]) -> bool:
    return task.state == "FAILED" and states == ["FAILED"]


def _retryable_fail(task: TaskRow, states: list[str]) -> bool:
    return task.state == "FAILED" and len(states) == task.max_attempts and all(s == "FAILED" for s in states)


EXPECTATIONS: dict[str, tuple[str, Callable[[TaskRow, list[str]], bool]]] = {
    "noop": ("SUCCEEDED", _succeeded),
    "sleep": ("SUCCEEDED (a crashed attempt is ABANDONED and replaced)", _succeeded),
    "echo": ("SUCCEEDED with the payload as result", _echo),
    "fail_once": ("SUCCEEDED on attempt 2: FAILED -> SUCCEEDED", _fail_once),
    "fail": ("FAILED after 1 attempt", _fail),
    "retryable_fail": ("FAILED after max_attempts FAILED attempts", _retryable_fail),
}


def check_expectations(tasks: list[TaskRow], attempts: list[Attempt]) -> list[tuple[bool, str, list[str]]]:
    """Per task type: ``(ok, line, problems)``; problems name offending tasks and histories."""
    history: dict[int, list[str]] = collections.defaultdict(list)
    for a in attempts:
        history[a.task_id].append(a.state)
    by_type: dict[str, list[TaskRow]] = collections.defaultdict(list)
    for t in tasks:
        by_type[t.task_type].append(t)
    results = []
    for task_type in sorted(by_type):
        group = by_type[task_type]
        text, check = EXPECTATIONS.get(task_type, ("a terminal state", lambda t, s: t.state in TERMINAL))
        bad = [t for t in group if not check(t, history[t.task_id])]
        line = f"{task_type:<15} {len(group) - len(bad)}/{len(group)} as expected: {text}"
        problems = [
            f"task {t.task_id}: {t.state} after {' -> '.join(history[t.task_id]) or 'no attempts'}" for t in bad[:5]
        ]
        results.append((not bad, line, problems))
    return results


# ---------------------------------------------------------------------------------------------
# Workload file


def default_workload_path() -> Path:
    """``examples/demo_workload.jsonl``: the copy shipped in the wheel, else the source checkout's."""
    for candidate in (
        Path(__file__).resolve().parent / "examples" / "demo_workload.jsonl",
        Path(__file__).resolve().parents[3] / "examples" / "demo_workload.jsonl",
    ):
        if candidate.is_file():
            return candidate
    cwd_candidate = Path.cwd() / "examples" / "demo_workload.jsonl"
    if cwd_candidate.is_file():
        return cwd_candidate
    raise DemoError("cannot find examples/demo_workload.jsonl; pass --workload PATH")


def load_workload(path: Path) -> list[SubmitRequest]:
    """The requests of a workload file, in order: a ``taskforge submit --from-file`` file (JSON
    lines with the keys of :class:`taskforge.submission.SubmitRequest`; blank lines and ``#``
    comments skipped), whose task types are all ones the demo knows the outcome of
    (:data:`EXPECTATIONS`). Raises DemoError naming the line (``path:line: ...``)."""
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise DemoError(f"cannot read workload {path}: {exc.strerror or exc}") from None
    requests = []
    try:
        for number, request in read_request_lines(text.splitlines()):
            if request.task_type not in EXPECTATIONS:
                raise BadLine(
                    number, "task_type", f"must be one of {', '.join(EXPECTATIONS)}, got {request.task_type!r}"
                )
            requests.append(request)
    except BadLine as exc:
        raise DemoError(exc.at(f"{path}:{exc.line}")) from None
    if not requests:
        raise DemoError(f"{path}: no tasks in the workload")
    return requests


# ---------------------------------------------------------------------------------------------
# Processes


@dataclass
class Run:
    """Mutable state of one demo run (children, submitted ids, events)."""

    cfg: DemoConfig
    tag: str
    dsn: str
    log_dir: Path
    queues: list[str] = field(default_factory=list)
    harness: ProcessHarness | None = None
    reported: set[str] = field(default_factory=set)  # names of children whose unexpected exit was reported
    task_ids: list[int] = field(default_factory=list)
    replays: list[tuple[str, int, int, bool]] = field(default_factory=list)  # key, first id, replay id, created
    sql_ids: list[int] = field(default_factory=list)
    kill: dict[str, Any] | None = None
    next_worker: int = 1

    def queue(self, name: str) -> str:
        return f"{name}.{self.tag}"

    @property
    def children(self) -> list[ManagedProcess]:
        """Every worker and scheduler process started so far (alive or not)."""
        return self.harness.processes if self.harness is not None else []

    def processes(self) -> ProcessHarness:
        """The run's process harness (taskforge.processes), created on first use. Each child
        leads a session of its own: a Ctrl-C in the terminal reaches the demo only, which then
        stops every child with one SIGTERM (a second signal would mean "exit now"). A demo killed
        outright (SIGKILL) cannot: its children then get SIGTERM from the kernel
        (``die_with_parent``) and stop as they would have."""
        if self.harness is None:
            self.harness = ProcessHarness(self.dsn, self.log_dir, die_with_parent=True)
        return self.harness

    def start_worker(self, queues: list[str]) -> ManagedProcess:
        args = ["--dsn", self.dsn, "--lease-seconds", f"{self.cfg.lease_seconds:g}", "--concurrency", "1"]
        for q in queues:
            args += ["--queue", q]
        name = f"worker-{self.next_worker}"
        self.next_worker += 1
        # The demo's workload uses the synthetic task types, which a worker runs only when told.
        return self.processes().worker("--import", "taskforge.synthetic", *args, name=name, log_level="INFO")

    def start_scheduler(self) -> ManagedProcess:
        return self.processes().scheduler(
            "--dsn", self.dsn, "--max-interval-seconds", "1", name="scheduler", log_level="INFO"
        )

    def start_console(self, out: Callable[[str], None]) -> str | None:
        """Start ``taskforge console`` (open, on 127.0.0.1) when the ``console`` extra is
        installed, and return its URL once it serves (None: not started; ``out`` says why)."""
        if importlib.util.find_spec("taskforge_console") is None:
            out("console: not started (it needs the console extra: pip install 'taskforge[console]')")
            return None
        port = self.cfg.console_port
        with socket.socket() as probe:
            try:
                probe.bind(("127.0.0.1", port))
            except OSError:
                port = 0  # the preferred port is taken: any free one
        proc = self.processes().console("--dsn", self.dsn, "--host", "127.0.0.1", "--port", str(port))
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline:
            found = re.search(r"taskforge console: (http://\S+)", proc.log())
            if found:
                return found.group(1)
            if not proc.alive():
                break
            time.sleep(0.1)
        out(f"console: did not start (see {proc.log_path}): {proc.tail(3)}")
        return None

    def worker_labels(self, conn: psycopg.Connection) -> dict[uuid.UUID, str | None]:
        """worker_id -> the demo's name for that process (worker-N), from tf_workers.pid."""
        by_pid: dict[int | None, str | None] = {c.pid: c.name for c in self.children}
        return {w.worker_id: by_pid.get(w.pid, w.name) for w in client.workers(conn, include_stopped=True)}

    def live_workers(self) -> list[ManagedProcess]:
        return [c for c in self.children if c.kind == "worker" and not c.killed and c.alive()]

    def stop_children(self, out: Callable[[str], None]) -> None:
        """SIGTERM every live child once, wait up to stop_timeout_seconds, then SIGKILL."""
        if self.harness is None:
            return
        live = self.harness.alive()
        self.harness.stop_all(self.cfg.stop_timeout_seconds)
        for c in live:
            if c.returncode == -signal.SIGKILL:
                out(f"{c.name} (pid {c.pid}) did not stop within {self.cfg.stop_timeout_seconds:g} s; it was killed")
        if live:
            out(
                f"stopped {len(live)} process(es) with SIGTERM "
                f"(exit codes: {', '.join(f'{c.name}={c.returncode}' for c in live)})"
            )


# ---------------------------------------------------------------------------------------------
# Embedded PostgreSQL


def start_embedded(data_dir: Path, out: Callable[[str], None]) -> embedded.Embedded:
    """Start (or reuse) the embedded server under data_dir/pgdata (:mod:`taskforge.embedded`)."""
    pgdata = data_dir.resolve() / "pgdata"
    fresh = not (pgdata / "PG_VERSION").exists()
    out(f"starting the embedded PostgreSQL in {pgdata} ({'initdb, first run' if fresh else 'reusing its data'})")
    t0 = time.monotonic()
    try:
        server = embedded.start(pgdata)
    except embedded.EmbeddedError as exc:
        raise DemoError(f"no database configured and {exc}; or pass --dsn") from exc
    out(f"embedded PostgreSQL ready in {time.monotonic() - t0:.1f} s (socket in {server.socket_dir})")
    return server


# ---------------------------------------------------------------------------------------------
# Display


def _ms(seconds: float | None) -> str:
    return "-" if seconds is None else f"{seconds * 1000:.0f} ms"


def _t(value: _dt.datetime | None) -> str:
    return "-" if value is None else value.astimezone(_dt.UTC).strftime("%H:%M:%S.%f")[:-3] + "Z"


# ---------------------------------------------------------------------------------------------
# The run


def _wait_for_workers(
    run: Run,
    conn: psycopg.Connection,
    expected: list[ManagedProcess],
    out: Callable[[str], None],
    timeout: float = 90.0,
) -> None:
    """Wait until every expected worker process has registered (tf_workers, liveness alive)."""
    deadline = time.monotonic() + timeout
    pids = {c.pid for c in expected}
    while True:
        for c in run.children:
            if not c.alive() and not c.killed:
                raise DemoError(
                    f"{c.name} (pid {c.pid}) exited with code {c.returncode} at start; "
                    f"last lines of {c.log_path}:\n{c.tail(15)}"
                )
        alive = {w.pid for w in client.workers(conn) if w.liveness == "alive"}
        if pids <= alive:
            return
        if time.monotonic() > deadline:
            missing = ", ".join(c.name for c in expected if c.pid not in alive)
            raise DemoError(f"worker(s) {missing} did not register within {timeout:g} s; see {run.log_dir}")
        time.sleep(0.2)


def _submit_workload(
    run: Run, conn: psycopg.Connection, requests: list[SubmitRequest], path: Path, out: Callable[[str], None]
) -> None:
    """Send the workload in one ``tf_submit_many`` call, its queues and keys tagged with the run's."""
    tagged = [
        dataclasses.replace(
            r,
            queue=run.queue(r.queue),
            idempotency_key=f"{run.tag}:{r.idempotency_key}" if r.idempotency_key else None,
        )
        for r in requests
    ]
    first_by_key: dict[str, int] = {}
    for request, res in zip(tagged, client.submit_many(conn, tagged), strict=True):
        key = request.idempotency_key
        if key is not None and key in first_by_key:
            run.replays.append((key, first_by_key[key], res.task_id, res.created))
            continue
        if key is not None:
            first_by_key[key] = res.task_id
        if res.created:
            run.task_ids.append(res.task_id)
    by_type = collections.Counter(r.task_type for r in requests)
    delayed = sum(1 for r in requests if r.delay_seconds)
    out(
        f"submitted {len(requests)} requests from {path} in one tf_submit_many call -> {len(run.task_ids)} tasks "
        f"({', '.join(f'{k} {v}' for k, v in sorted(by_type.items()))}; {delayed} delayed)"
    )
    for key, first, again, created in run.replays:
        out(
            f"  idempotent replay of key {key!r}: task {again}, created={str(created).lower()} "
            f"(first submit created task {first})"
        )


def _submit_plain_sql(run: Run, conn: psycopg.Connection, out: Callable[[str], None]) -> None:
    queue = run.queue("default")
    out("submitting 3 tasks through plain SQL (what psql, Go or Java would send):")
    out("  " + DEMO_PLAIN_SQL_SUBMIT.strip().replace("%(queue)s", repr(queue)).replace("\n", "\n  "))
    for statement in (DEMO_PLAIN_SQL_SUBMIT, DEMO_PLAIN_SQL_SUBMIT_SLEEP, DEMO_PLAIN_SQL_SUBMIT_FAIL_ONCE):
        task_id, _state, _created = sql.one_row(conn, statement, {"queue": queue})
        run.sql_ids.append(task_id)
        run.task_ids.append(task_id)
    out(f"  -> tasks {', '.join(map(str, run.sql_ids))} (QUEUED)")


def _maybe_kill(
    run: Run,
    conn: psycopg.Connection,
    tasks: list[TaskRow],
    seen_running: dict[tuple[int, int], float],
    progress: Progress,
) -> None:
    """SIGKILL the worker of a long sleep task once it has run for a moment."""
    now = time.monotonic()
    for t in tasks:
        if t.state == "RUNNING":
            seen_running.setdefault((t.task_id, t.attempt_count), now)
    if run.kill is not None:
        return
    live = {c.pid: c for c in run.live_workers()}
    if len(live) < 2:
        return
    owners = {w.worker_id: w for w in client.workers(conn)}
    for t in tasks:
        if t.state != "RUNNING" or t.task_type != "sleep" or int(t.payload.get("ms", 0)) < KILL_MIN_SLEEP_MS:
            continue
        if now - seen_running.get((t.task_id, t.attempt_count), now) < KILL_AFTER_RUNNING_SECONDS:
            continue
        owner = owners.get(t.owner_worker_id) if t.owner_worker_id is not None else None
        if owner is None or owner.pid not in live:
            continue
        victim = live[owner.pid]
        killed_at = sql.one_value(conn, DEMO_DB_NOW)
        victim.kill()
        run.kill = {
            "task_id": t.task_id,
            "attempt_number": t.attempt_count,
            "worker": victim.name,
            "pid": victim.pid,
            "worker_id": owner.worker_id,
            "killed_at": killed_at,
            "lease_expires_at": t.lease_expires_at,
            "recovered_reported": False,
        }
        progress.note(
            f"SIGKILL {victim.name} (pid {victim.pid}) while it runs task {t.task_id} "
            f"(sleep {t.payload['ms']} ms, attempt {t.attempt_count}); its lease "
            f"ends by {_t(t.lease_expires_at)} and the scheduler then recovers the task"
        )
        replacement = run.start_worker(_worker_queues(run))
        progress.note(
            f"started {replacement.name} (pid {replacement.pid}) in its place (a fresh worker id per process start)"
        )
        return


def _report_recovery(run: Run, conn: psycopg.Connection, progress: Progress) -> None:
    if run.kill is None or run.kill["recovered_reported"]:
        return
    attempts = client.attempts_for(conn, [run.kill["task_id"]])
    first = next((a for a in attempts if a.attempt_number == run.kill["attempt_number"]), None)
    if first is None or first.state != "ABANDONED":
        return
    run.kill["recovered_reported"] = True
    nxt = next((a for a in attempts if a.attempt_number == run.kill["attempt_number"] + 1), None)
    labels = run.worker_labels(conn)
    progress.note(
        f"recovered task {run.kill['task_id']}: attempt {first.attempt_number} ABANDONED at "
        f"{_t(first.abandoned_at)}, {_ms(first.recovery_lag_seconds)} after its lease expired"
        + (f"; attempt {nxt.attempt_number} runs on {labels.get(nxt.worker_id, nxt.worker_name)}" if nxt else "")
    )


def _worker_queues(run: Run) -> list[str]:
    return [run.queue(q) for q in run.queues]


def _drain(run: Run, conn: psycopg.Connection, out: Callable[[str], None]) -> bool:
    total = len(run.task_ids)
    progress = Progress(notes=sys.stdout, noun="finished")
    progress.start("draining", total)
    seen_running: dict[tuple[int, int], float] = {}  # (task, attempt) -> first seen RUNNING
    start = time.monotonic()
    done = 0
    try:
        while True:
            tasks = client.tasks_by_id(conn, run.task_ids)
            counts = collections.Counter(t.state for t in tasks)
            done = sum(counts[s] for s in TERMINAL)
            live = ", ".join(f"{s} {counts[s]}" for s in ("BLOCKED", "QUEUED", "RUNNING", "RETRYING") if counts[s])
            progress.update(done, f"({live})" if live else "")
            _maybe_kill(run, conn, tasks, seen_running, progress)
            _report_recovery(run, conn, progress)
            for c in run.children:
                if not c.killed and not c.alive() and c.name not in run.reported:
                    run.reported.add(c.name)
                    progress.note(f"warning: {c.name} (pid {c.pid}) exited with code {c.returncode}; see {c.log_path}")
            if done == total:
                progress.finish(f"{done}/{total} finished in {time.monotonic() - start:.1f} s")
                return True
            if time.monotonic() - start > run.cfg.drain_timeout_seconds:
                progress.note(f"timeout: {total - done} task(s) not finished after {run.cfg.drain_timeout_seconds:g} s")
                return False
            time.sleep(0.25)
    finally:
        progress.close()
        out(f"drained in {time.monotonic() - start:.1f} s ({done}/{total} tasks finished)")


def _summary(run: Run, conn: psycopg.Connection, drained: bool, out: Callable[[str], None]) -> bool:
    tasks = client.tasks_by_id(conn, run.task_ids)
    attempts = client.attempts_for(conn, run.task_ids)
    violations = client.invariant_violations(conn)
    ok_all = True

    out("")
    out("=" * 72)
    out("TaskForge demo summary")
    out("=" * 72)
    counts = collections.Counter(t.state for t in tasks)
    out(
        f"tasks: {len(tasks)} ({len(tasks) - len(run.sql_ids)} from the workload file, "
        f"{len(run.sql_ids)} through plain SQL)"
    )
    out("tasks per state:    " + "  ".join(f"{s} {counts[s]}" for s in client.STATES))
    dist = collections.Counter(t.attempt_count for t in tasks)
    out(
        "attempts per task:  "
        + "  ".join(
            f"{n} attempt{'s' if n != 1 else ''}: {dist[n]} task{'s' if dist[n] != 1 else ''}" for n in sorted(dist)
        )
    )
    attempt_states = collections.Counter(a.state for a in attempts)
    out("attempts by state:  " + "  ".join(f"{s} {n}" for s, n in sorted(attempt_states.items())))
    lags = [a.recovery_lag_seconds for a in attempts if a.state == "ABANDONED" and a.recovery_lag_seconds is not None]
    if lags:
        out(
            f"recovery lag:       {len(lags)} abandoned attempt(s), lag after lease expiry "
            f"min {_ms(min(lags))}, median {_ms(statistics.median(lags))}, max {_ms(max(lags))}"
        )
    else:
        out("recovery lag:       no abandoned attempts")
    starts = [a.started_at for a in attempts]
    ends = [a.finished_at for a in attempts if a.finished_at is not None]
    if starts and ends:
        span = (max(ends) - min(starts)).total_seconds()
        out(
            f"throughput:         {len(tasks)} tasks in {span:.1f} s from the first attempt start to the "
            f"last attempt finish = {len(tasks) / span if span > 0 else float('nan'):.2f} tasks/s"
        )
        out(
            "                    (bounded by the sleeps, retry backoffs, delays and the 5 s lease of the "
            "crashed task, not by coordination)"
        )
    if run.kill is not None:
        k = run.kill
        hist = [a for a in attempts if a.task_id == k["task_id"]]
        labels = run.worker_labels(conn)
        out(
            f"crash and recovery: task {k['task_id']}: "
            + " -> ".join(
                f"attempt {a.attempt_number} {a.state} on {labels.get(a.worker_id, a.worker_name)}" for a in hist
            )
        )
        out(
            f"                    killed {_t(k['killed_at'])}, "
            + ", ".join(
                f"attempt {a.attempt_number} lease end {_t(a.lease_expires_at)} abandoned {_t(a.abandoned_at)}"
                for a in hist
                if a.state == "ABANDONED"
            )
            + (
                f", replacement started {_t(hist[-1].started_at)} finished {_t(hist[-1].finished_at)}"
                if len(hist) > 1
                else ""
            )
        )
    out(f"invariant audit:    tf_invariant_violations has {len(violations)} row(s)")
    for v in violations[:10]:
        out(f"                    {v.rule}: task {v.task_id} attempt {v.attempt_number} ({v.detail})")

    out("")
    out("expectations:")

    def expect(ok: bool, text: str, problems: Sequence[str] = ()) -> None:
        nonlocal ok_all
        ok_all = ok_all and ok
        out(f"  {'ok  ' if ok else 'FAIL'} {text}")
        for p in problems:
            out(f"         {p}")

    not_terminal = [t for t in tasks if t.state not in TERMINAL]
    expect(
        drained and not not_terminal and len(tasks) == len(run.task_ids),
        f"every task reached a terminal state ({len(tasks) - len(not_terminal)}/{len(run.task_ids)})",
        [f"task {t.task_id} is {t.state}" for t in not_terminal[:5]],
    )
    for ok, line, problems in check_expectations(tasks, attempts):
        expect(ok, line, problems)
    for key, first, again, created in run.replays:
        expect(
            again == first and not created,
            f"idempotent replay of {key!r} returned task {again} with created=false (first: {first})",
        )
    if run.kill is None:
        expect(False, "a worker was killed with SIGKILL mid-task (no long sleep task was seen running)")
    else:
        states = [a.state for a in attempts if a.task_id == run.kill["task_id"]]
        expect(
            states[run.kill["attempt_number"] - 1 :] == ["ABANDONED", "SUCCEEDED"],
            f"the killed worker's task {run.kill['task_id']} was recovered after its lease and "
            f"succeeded on the next attempt ({' -> '.join(states)})",
        )
    expect(not violations, "tf_invariant_violations is empty")
    out("")
    out(f"result: {'PASS, every expectation held' if ok_all else 'FAIL, see the lines marked FAIL'}")
    return ok_all


def _command_name() -> str:
    """How to call the taskforge command from this shell: on PATH, else the script beside python."""
    if shutil.which("taskforge"):
        return "taskforge"
    script = Path(sys.executable).parent / "taskforge"
    if script.exists():
        with contextlib.suppress(ValueError):
            return os.path.relpath(script)
        return str(script)
    return f"{sys.executable} -m taskforge.cli"


class _Stop(Exception):
    pass


def _raise_stop(signum: int, frame: object) -> NoReturn:  # pragma: no cover - exercised through signals
    raise _Stop()


def run(cfg: DemoConfig, out: Callable[[str], None] = click.echo) -> int:
    """Run the demo. Returns the process exit code: 0 when every expectation held, 1 when one
    failed, 130 when interrupted before the summary. Raises DemoError for setup problems."""
    path = cfg.workload or default_workload_path()
    requests = load_workload(path)
    tag = secrets.token_hex(2)
    local_server: embedded.Embedded | None = None
    previous = signal.signal(signal.SIGTERM, _raise_stop)
    run_state: Run | None = None
    try:
        if cfg.dsn:
            dsn = cfg.dsn
            out("using the database given by the DSN (it is migrated; nothing is dropped)")
        else:
            local_server = start_embedded(cfg.data_dir, out)
            with psycopg.connect(local_server.admin_dsn, autocommit=True) as admin:
                admin.execute(DEMO_EMBEDDED_DROP_DATABASE)
                admin.execute(DEMO_EMBEDDED_CREATE_DATABASE)
            dsn = db.with_dbname(local_server.admin_dsn, "taskforge_demo")
        applied = db.migrate(dsn)
        out(f"migrated: {', '.join(applied) if applied else 'already up to date'}")

        log_dir = (cfg.data_dir / "logs" / f"demo-{tag}").resolve()
        log_dir.mkdir(parents=True, exist_ok=True)
        run_state = Run(cfg=cfg, tag=tag, dsn=dsn, log_dir=log_dir)
        run_state.queues = sorted({r.queue for r in requests} | {"default"})
        out(f"run tag {tag}: queues {', '.join(_worker_queues(run_state))}; process logs in {log_dir}")

        with db.connect(dsn) as conn:
            run_state.start_scheduler()
            workers = [run_state.start_worker(_worker_queues(run_state)) for _ in range(cfg.workers)]
            out(
                f"started {cfg.workers} workers (lease {cfg.lease_seconds:g} s) and 1 scheduler: "
                + ", ".join(f"{c.name} pid {c.pid}" for c in run_state.children)
            )
            _wait_for_workers(run_state, conn, workers, out)
            out(f"all {cfg.workers} workers registered")
            console_url = run_state.start_console(out)
            if console_url:
                out(f"console: {console_url} (dashboard, tasks, queues; API docs at {console_url}api/swagger)")

            _submit_workload(run_state, conn, requests, path, out)
            _submit_plain_sql(run_state, conn, out)
            drained = _drain(run_state, conn, out)
            ok = _summary(run_state, conn, drained, out)

        if not cfg.once:
            out("")
            tf = _command_name()
            out(f"The system keeps running: {len(run_state.live_workers())} workers and a scheduler. Try:")
            out(f'  {tf} stats --dsn "{dsn}"')
            out(f'  {tf} submit sleep --payload \'{{"ms": 2000}}\' --queue {run_state.queue("default")} --dsn "{dsn}"')
            out(f'  {tf} list --queue {run_state.queue("default")} --dsn "{dsn}"')
            if console_url:
                out(f"  open {console_url} in a browser (the console)")
            out("Press Ctrl-C to stop.")
            with contextlib.suppress(KeyboardInterrupt, _Stop):
                while True:
                    time.sleep(1)
            out("")
            out("stopping")
        return 0 if ok else 1
    except (KeyboardInterrupt, _Stop):
        out("")
        out("interrupted: stopping")
        return 130
    finally:
        signal.signal(signal.SIGTERM, previous)
        try:
            if run_state is not None:
                run_state.stop_children(out)
        finally:
            if local_server is not None:
                local_server.stop()
                out("stopped the embedded PostgreSQL")
