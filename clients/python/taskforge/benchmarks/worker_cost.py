"""The worker's own Python cost per task, with a database that answers at once.

``python clients/python/taskforge/benchmarks/worker_cost.py [TASKS]`` runs the worker's
dispatcher, its sync slots and (when the task type is ``async def``) its event loop in this
process against an in-memory stand-in for the work connection: every ``tf_finalize_and_claim``
is answered at once from a queue of TASKS synthetic tasks, so what is measured is the Python the
worker spends per task (claim rows to contexts, hand-offs, handlers, outcomes, finalize
parameters), and the rate is the most one process could drain if the database cost nothing.
The psycopg side of a call (adapting parameters, parsing rows) is not included; docs/benchmarks.md
measures it separately. Nothing connects to a database.

It drives the worker through its stable parts only (``Worker``, ``WorkerConfig``, the
dispatcher's ``run`` and the ``work_db`` it calls), so the same file measures an older checkout
too: ``PYTHONPATH=<checkout>/clients/python python .../worker_cost.py``. Times: wall clock
(``time.perf_counter``) and this process's CPU time (``time.process_time``), per task in
microseconds.
"""

from __future__ import annotations

import argparse
import collections
import logging
import threading
import time
from typing import Any

#: (task type, concurrency) pairs measured by default.
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


def measure(task_type: str, concurrency: int, tasks: int) -> dict[str, float]:
    """Drain ``tasks`` tasks of ``task_type`` at ``concurrency``; wall and CPU per task (us)."""
    import taskforge.synthetic  # noqa: F401 - registers the synthetic handlers
    from taskforge.worker import Worker, WorkerConfig

    logging.getLogger("taskforge").setLevel(logging.WARNING)
    worker = Worker("host=127.0.0.1 dbname=unused", WorkerConfig(concurrency=concurrency, queues=("bench",)))
    if task_type not in worker.registry:
        raise ValueError(f"no handler for {task_type} in this checkout")
    fake = InstantDatabase(tasks, task_type, worker.request_stop)
    worker.dispatcher.db = fake  # type: ignore[assignment]
    worker.worker_id = worker.dispatcher.worker_id = "00000000-0000-0000-0000-000000000000"
    worker.task_types = worker.dispatcher.task_types = [task_type]
    threads: list[threading.Thread] = []
    aio = getattr(worker, "aio", None)
    if aio is not None and worker.registry.is_async(task_type):
        worker.async_types = worker.dispatcher.async_types = frozenset([task_type])
        aio.open()
        threads = [threading.Thread(target=aio.run, daemon=True)]
    elif hasattr(worker.slots, "start"):
        worker.slots.start()
    for thread in threads:
        thread.start()
    wall, cpu = time.perf_counter(), time.process_time()
    worker.dispatcher.run()
    wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
    worker.slots.stop()
    if aio is not None and threads:
        aio.stop()
    for thread in threads:
        thread.join(5)
    return {"tasks_per_second": tasks / wall, "wall_us": 1e6 * wall / tasks, "cpu_us": 1e6 * cpu / tasks}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("tasks", type=int, nargs="?", default=20000)
    parser.add_argument("--case", action="append", metavar="TYPE:CONCURRENCY", help="default: " + str(CASES))
    args = parser.parse_args()
    cases = [(c.split(":")[0], int(c.split(":")[1])) for c in args.case] if args.case else list(CASES)
    for task_type, concurrency in cases:
        try:
            r = measure(task_type, concurrency, args.tasks)
        except Exception as exc:  # noqa: BLE001 - e.g. an older checkout without async handlers
            print(f"{task_type:>10} x{args.tasks} --concurrency {concurrency:<5} not measured: {exc!r}")
            continue
        print(
            f"{task_type:>10} x{args.tasks} --concurrency {concurrency:<5} {r['tasks_per_second']:>9,.0f} tasks/s  "
            f"{r['wall_us']:6.1f} us wall/task  {r['cpu_us']:6.1f} us CPU/task"
        )


if __name__ == "__main__":
    main()
