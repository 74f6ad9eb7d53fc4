"""The worker's own cost per task: Python, parameter adaptation, and whole drains (docs/benchmarks.md).

``python clients/python/taskforge/benchmarks/worker_cost.py MEASURE ...``, three measures:

* ``python [TASKS]``: the worker's dispatcher, sync slots and event loop in this process against
  an in-memory stand-in for the work connection that answers every ``tf_finalize_and_claim`` at
  once: the Python the worker spends per task (rows to contexts, hand-offs, handlers, outcomes,
  finalize parameters) and the most one process could drain if the database cost nothing.
  psycopg is not involved; no database is used.
* ``adapt``: what psycopg spends adapting one turn's parameters (``Transformer.dump_sequence``, as
  ``cursor.execute`` does), sent as Python lists or as array literals (``worker/rows.py``), for
  1, 100 and 1000 elements. No database is used.
* ``drain TYPE PAYLOAD TASKS CONCURRENCY [--processes N] [--dsn ADMIN_DSN]``: N real
  ``taskforge worker`` processes (default 1) drain TASKS queued tasks on a fresh database
  (created and dropped): tasks/s over database timestamps, the CPU time per task of the worker
  processes and of their database backends (:mod:`taskforge.benchmarks.cpu`, between the submit
  and the drain), and the largest worker peak RSS (``VmHWM``). Run it under ``flock
  /tmp/taskforge-heavy.lock`` on a shared machine.

``python`` and ``adapt`` use only parts that older checkouts have too (``Worker``,
``WorkerConfig``, the dispatcher's ``run`` and ``db``), so ``PYTHONPATH=<checkout>/clients/python
python .../worker_cost.py ...`` measures that checkout; ``drain`` needs
:mod:`taskforge.benchmarks.cpu` (2026-12-04 on). Times: wall clock (``time.perf_counter``), CPU
time (``time.process_time``, or the worker process's), per task in microseconds.
"""

from __future__ import annotations

import argparse
import collections
import json
import logging
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

#: (task type, concurrency) pairs of the ``python`` measure.
CASES = (("noop", 1), ("noop", 64), ("noop", 1000), ("async_noop", 64), ("async_noop", 1000))


class InstantDatabase:
    """Stands in for the worker's work connection: claims come from memory, finalizes are accepted."""

    application_name = "taskforge-worker/work"

    def __init__(self, tasks: int, task_type: str, on_drained: Any) -> None:
        self.waiting = collections.deque(range(1, tasks + 1))
        self.task_type = task_type
        self.total = tasks
        self.finalized = 0
        self.on_drained = on_drained

    def execute(self, query: str, params: Any = None, **kwargs: Any) -> list[Any]:
        ids, attempts = _ints(params["task_ids"]), _ints(params["attempt_numbers"])
        rows: list[tuple[Any, ...]] = [
            ("finalized", t, a, True, "SUCCEEDED", None, None, None, None, None, None, None)
            for t, a in zip(ids, attempts, strict=True)
        ]
        for _ in range(min(params["max_tasks"], len(self.waiting))):
            task_id = self.waiting.popleft()
            rows.append(("claimed", task_id, 1, None, None, None, self.task_type, "{}", "bench", 0, 3, None))
        self.finalized += len(ids)
        if self.finalized >= self.total:
            self.on_drained()
        factory = kwargs.get("row_factory")
        if factory is not None:
            make = factory(None)
            return [make(row) for row in rows]
        return rows

    def close(self, **kwargs: Any) -> None:
        """Nothing to close."""


def _ints(value: Any) -> list[int]:
    """The elements of an integer array parameter, sent as a list or as a literal ``{1,2}``."""
    if isinstance(value, str):
        return list(map(int, value[1:-1].split(","))) if len(value) > 2 else []
    return list(value)


def python_cost(task_type: str, concurrency: int, tasks: int) -> dict[str, float]:
    """Drain ``tasks`` tasks of ``task_type`` at ``concurrency`` against :class:`InstantDatabase`."""
    import taskforge.synthetic  # noqa: F401 - registers the synthetic handlers
    from taskforge.worker import Worker, WorkerConfig

    logging.getLogger("taskforge").setLevel(logging.WARNING)
    worker = Worker("host=127.0.0.1 dbname=unused", WorkerConfig(concurrency=concurrency, queues=("bench",)))
    if task_type not in worker.registry:
        raise ValueError(f"no handler for {task_type} in this checkout")
    worker.dispatcher.db = InstantDatabase(tasks, task_type, worker.request_stop)  # type: ignore[assignment]
    worker.worker_id = worker.dispatcher.worker_id = "00000000-0000-0000-0000-000000000000"
    worker.task_types = worker.dispatcher.task_types = [task_type]
    threads: list[threading.Thread] = []
    aio = getattr(worker, "aio", None)
    if aio is not None and worker.registry.is_async(task_type):
        worker.async_types = worker.dispatcher.async_types = frozenset([task_type])
        aio.open()
        threads = [threading.Thread(target=aio.run, daemon=True)]
    else:
        worker.slots.start()
    for thread in threads:
        thread.start()
    wall, cpu = time.perf_counter(), time.process_time()
    worker.dispatcher.run()
    wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
    worker.slots.stop()
    if threads:
        aio.stop()  # type: ignore[union-attr]
    for thread in threads:
        thread.join(5)
    return {"tasks_per_second": tasks / wall, "wall_us": 1e6 * wall / tasks, "cpu_us": 1e6 * cpu / tasks}


def adaptation_cost(elements: int, literals: bool, rounds: int = 200) -> float:
    """Microseconds to build and adapt one turn's parameters of ``elements`` finalizes (the
    arrays built as Python lists or as literals, then adapted by psycopg as ``execute`` does)."""
    from psycopg.adapt import PyFormat, Transformer

    ids = list(range(10**9, 10**9 + elements))
    results: list[str | None] = ['{"slept_ms": 1000}'] * elements
    ones, outcomes, errors = [1] * elements, ["succeeded"] * elements, [None] * elements

    def literal(values: list[Any]) -> str:
        return "{" + ",".join(["NULL" if v is None else '"' + _escape(str(v)) + '"' for v in values]) + "}"

    def turn() -> list[Any]:
        arrays: list[Any]
        if literals:
            arrays = [
                "{" + ",".join(map(str, ids)) + "}",
                "{" + ",".join(map(str, ones)) + "}",
                literal(outcomes),
                literal(results),
                literal(errors),
            ]
        else:
            arrays = [list(ids), list(ones), list(outcomes), list(results), list(errors)]
        return ["00000000-0000-0000-0000-000000000000", *arrays, ["bench"], 30.0, elements, ["noop"]]

    formats = [PyFormat.AUTO] * len(turn())
    started = time.process_time()
    for _ in range(rounds):
        Transformer().dump_sequence(turn(), formats)
    return 1e6 * (time.process_time() - started) / rounds


def _escape(text: str) -> str:
    return text.replace("\\", "\\\\").replace('"', '\\"')


def drain(
    task_type: str, payload: dict[str, Any], tasks: int, concurrency: int, admin_dsn: str, processes: int = 1
) -> dict[str, Any]:
    """``processes`` worker processes drain ``tasks`` queued tasks on a fresh database (see the
    module docstring)."""
    import psycopg

    from taskforge.benchmarks import cpu, memory
    from taskforge.benchmarks.database import fresh_database
    from taskforge.benchmarks.workloads import submit_batch
    from taskforge.processes import ProcessHarness

    with fresh_database(admin_dsn) as dsn, tempfile.TemporaryDirectory() as logs:
        harness = ProcessHarness(dsn, Path(logs))
        workers = [
            harness.worker("--import", "taskforge.synthetic", "--queue", "bench", "--concurrency", str(concurrency))
            for _ in range(processes)
        ]
        try:
            with psycopg.connect(dsn, autocommit=True) as conn:
                alive = "SELECT count(*) FROM taskforge.tf_workers WHERE liveness = 'alive'"
                while conn.execute(alive).fetchone()[0] < processes:  # type: ignore[index]
                    if harness.exited_unexpectedly():
                        raise RuntimeError(harness.exited_unexpectedly()[0].tail())
                    time.sleep(0.1)
                before = cpu.snapshot(conn, harness)
                submit_batch(dsn, task_type, payload, tasks)
                terminal = "SELECT count(*) FROM taskforge.tasks WHERE state IN ('SUCCEEDED', 'FAILED', 'CANCELLED')"
                while conn.execute(terminal).fetchone()[0] < tasks:  # type: ignore[index]
                    if harness.exited_unexpectedly():
                        raise RuntimeError(harness.exited_unexpectedly()[0].tail())
                    time.sleep(0.1)
                used = cpu.per_task(before, cpu.snapshot(conn, harness), tasks) or {}
                peak = max((memory.process_peak_rss_kib(w.pid) or 0) for w in workers) / 1024.0
                span, attempts = conn.execute(
                    "SELECT extract(epoch FROM max(finished_at) - min(started_at))::float8, count(*) "
                    "FROM taskforge.attempts"
                ).fetchone()  # type: ignore[misc]
        finally:
            codes = harness.stop_all()
    return {
        "tasks_per_second": tasks / span,
        "span_seconds": span,
        "worker_cpu_us_per_task": used.get("worker_us"),
        "backend_cpu_us_per_task": used.get("backend_us"),
        "worker_peak_rss_mib": peak,
        "attempts": attempts,
        "exit_codes": sorted(set(codes.values()), key=str),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = parser.add_subparsers(dest="measure", required=True)
    py = sub.add_parser("python", help="the worker's Python per task, against an instant database")
    py.add_argument("tasks", type=int, nargs="?", default=20000)
    py.add_argument("--case", action="append", metavar="TYPE:CONCURRENCY", help=f"default: {CASES}")
    sub.add_parser("adapt", help="psycopg's adaptation of one turn's parameters, lists against literals")
    dr = sub.add_parser("drain", help="one worker process drains queued tasks on a fresh database")
    dr.add_argument("task_type")
    dr.add_argument("payload", type=json.loads)
    dr.add_argument("tasks", type=int)
    dr.add_argument("concurrency", type=int)
    dr.add_argument("--dsn", default="host=127.0.0.1 port=5432 user=postgres dbname=postgres")
    dr.add_argument("--processes", type=int, default=1, help="worker processes (default 1)")
    args = parser.parse_args()
    if args.measure == "python":
        cases = [(c.split(":")[0], int(c.split(":")[1])) for c in args.case] if args.case else list(CASES)
        for task_type, concurrency in cases:
            try:
                r = python_cost(task_type, concurrency, args.tasks)
            except ValueError as exc:  # an older checkout without that task type
                print(f"{task_type:>10} --concurrency {concurrency:<5} not measured: {exc}")
                continue
            print(
                f"{task_type:>10} --concurrency {concurrency:<5} {r['tasks_per_second']:>9,.0f} tasks/s  "
                f"{r['wall_us']:6.1f} us wall/task  {r['cpu_us']:6.1f} us CPU/task"
            )
    elif args.measure == "adapt":
        for n in (1, 100, 1000):
            lists, literals = adaptation_cost(n, False), adaptation_cost(n, True)
            print(
                f"{n:>5} finalizes per turn: lists {lists:8.1f} us ({lists / n:5.2f} per element), "
                f"literals {literals:7.1f} us ({literals / n:5.2f} per element)"
            )
    else:
        r = drain(args.task_type, args.payload, args.tasks, args.concurrency, args.dsn, args.processes)
        print(
            f"{args.task_type} x{args.tasks} --concurrency {args.concurrency}, {args.processes} process(es): "
            f"{r['tasks_per_second']:,.0f} tasks/s over {r['span_seconds']:.2f} s; CPU per task: workers "
            f"{r['worker_cpu_us_per_task']:.0f} us, backends {r['backend_cpu_us_per_task']:.0f} us; "
            f"peak RSS {r['worker_peak_rss_mib']:.1f} MiB; {r['attempts']} attempts; exit {r['exit_codes']}"
        )


if __name__ == "__main__":
    main()
