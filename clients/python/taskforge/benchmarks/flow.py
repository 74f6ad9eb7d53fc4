"""The ``flow`` workload's shapes: E1's no-op tasks with one dependency or flow-control feature
each (issue 18; docs/benchmarks.md, "Flow control and dependencies"), measured against the same
tasks with none (``e1-plain``) in the same run.

Variants (:data:`VARIANTS`), each a workload of its own (:func:`workload`):

* ``plain``     no feature: the reference;
* ``chain``     dependency chains of ``group`` tasks, each task depending on the previous one of
                its chain (``depends_on_positions``): a chain runs one task at a time, the next
                released in the transaction of its predecessor's success;
* ``rate``      every task with one rate key whose limit never binds (:class:`FlowShape`'s
                ``rate_per_second`` and ``rate_burst``, set before the submit): the cost of the
                keyed pick and the bucket;
* ``ckeys``     tasks spread round robin over ``keys`` concurrency keys with no limit: the cost
                of the keyed pick and the rotation across keys;
* ``ordering``  ordering keys of ``group`` tasks each: the same serialisation as ``chain``
                through the keyed pick instead of dependency edges.

Pure functions: :func:`calls` builds the measured tasks as ``tf_submit_many`` request objects,
:func:`setup` the statements run before them, :func:`sequences` and :func:`check_sequence_order`
the order a chain's or an ordering key's tasks must have run in.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from .. import sql
from .results import CheckResult
from .trust import AttemptRow, _check

__all__ = [
    "MAX_REQUESTS",
    "VARIANTS",
    "FlowShape",
    "calls",
    "check_sequence_order",
    "checks",
    "sequences",
    "setup",
    "workload",
]

VARIANTS = ("plain", "chain", "rate", "ckeys", "ordering")
#: Most request objects tf_submit_many takes in one call.
MAX_REQUESTS = 10000
#: What each variant adds to the plain tasks (the report's column "adds").
DESCRIPTIONS = {
    "plain": "nothing (the reference)",
    "chain": "dependency chains (each task depends on the previous one of its chain)",
    "rate": "one rate key, limit never binding",
    "ckeys": "concurrency keys, round robin, no limit",
    "ordering": "ordering keys (one task of a key at a time, in id order)",
}


@dataclass(frozen=True)
class FlowShape:
    """How a flow variant shapes its tasks.

    ``variant``: one of :data:`VARIANTS`. ``group``: tasks per chain (``chain``) or per ordering
    key (``ordering``); the last group takes what is left. ``keys``: concurrency keys of
    ``ckeys``. ``rate_per_second`` (tokens per second) and ``rate_burst`` (tokens): the limit of
    ``rate_key``, set in the submit's transaction before the tasks; far above what one worker
    process reaches, so it never binds.
    """

    variant: str
    group: int = 100
    keys: int = 10
    rate_key: str = "bench-rate"
    rate_per_second: float = 1e6
    rate_burst: int = 1_000_000

    def __post_init__(self) -> None:
        if self.variant not in VARIANTS:
            raise ValueError(f"unknown flow variant {self.variant!r} (known: {', '.join(VARIANTS)})")
        if self.group < 1 or self.keys < 1:
            raise ValueError(f"group and keys must be >= 1, got {self.group} and {self.keys}")


def workload(variant: str, batched: bool = False) -> str:
    """The workload name of a variant's trials: ``e1-chain``, ``e1-chain-batched``, ..."""
    return f"e1-{variant}" + ("-batched" if batched else "")


def _keys(shape: FlowShape, index: int) -> dict[str, Any]:
    """The flow keys of the task at ``index`` (0-based, in submit order)."""
    if shape.variant == "rate":
        return {"rate_key": shape.rate_key}
    if shape.variant == "ckeys":
        return {"concurrency_key": f"bench-ck-{index % shape.keys}"}
    if shape.variant == "ordering":
        return {"ordering_key": f"bench-ord-{index // shape.group}"}
    return {}


def calls(
    shape: FlowShape,
    task_type: str,
    payload: dict[str, Any],
    count: int,
    queue: str,
    max_per_call: int = MAX_REQUESTS,
) -> list[list[dict[str, Any]]]:
    """``count`` tasks as ``tf_submit_many`` calls, each a list of at most ``max_per_call``
    request objects, in submit order. A chain is never split across calls, since
    ``depends_on_positions`` names elements of the same call: a chain's first task has none,
    every other one the position of the task before it. Raises ValueError when a chain is longer
    than ``max_per_call``."""
    if shape.variant == "chain" and shape.group > max_per_call:
        raise ValueError(f"a chain of {shape.group} tasks does not fit in a call of {max_per_call}")
    run = shape.group if shape.variant == "chain" else 1
    base = {"task_type": task_type, "payload": dict(payload), "queue": queue}
    out: list[list[dict[str, Any]]] = []
    call: list[dict[str, Any]] = []
    for first in range(0, count, run):
        indexes = range(first, min(first + run, count))
        if len(call) + len(indexes) > max_per_call:
            out.append(call)
            call = []
        for index in indexes:
            request = {**base, **_keys(shape, index)}
            if shape.variant == "chain" and index > first:
                request["depends_on_positions"] = [len(call) - 1]
            call.append(request)
    if call:
        out.append(call)
    return out


def setup(shape: FlowShape) -> list[tuple[str, dict[str, Any]]]:
    """Statements (with parameters) to run in the submit's transaction before the tasks: the
    rate key's limit for ``rate`` (tf_set_rate_limit needs the owner or a superuser: the
    harness connects as the benchmark DSN's user); none for the others (concurrency keys stay
    unlimited)."""
    if shape.variant != "rate":
        return []
    return [
        (
            sql.SET_RATE_LIMIT,
            {"rate_key": shape.rate_key, "per_second": shape.rate_per_second, "burst": shape.rate_burst},
        )
    ]


def sequences(shape: FlowShape, task_ids: Sequence[int]) -> list[list[int]]:
    """The runs of tasks that must run one after the other, each in its order: the chains
    (``chain``) and the ordering keys (``ordering``), ``group`` consecutive ids of ``task_ids``
    (in submit order, as :func:`calls` built them); none for the other variants."""
    if shape.variant not in ("chain", "ordering"):
        return []
    ids = list(task_ids)
    return [ids[i : i + shape.group] for i in range(0, len(ids), shape.group)]


def check_sequence_order(runs: Iterable[Sequence[int]], attempts: Iterable[AttemptRow]) -> CheckResult:
    """``sequence_order``: in every run, each task's first attempt started at or after its
    predecessor's SUCCEEDED attempt finished (database clock; a finalize that releases or
    frees the next task and claims it in one call stamps both with one instant, hence "at or
    after"). A task without those timestamps is an offender too."""
    first_start: dict[int, Any] = {}
    finished: dict[int, Any] = {}
    for a in sorted(attempts, key=lambda a: (a.task_id, a.attempt_number)):
        first_start.setdefault(a.task_id, a.started_at)
        if a.state == "SUCCEEDED":
            finished[a.task_id] = a.finished_at
    runs = [list(r) for r in runs]
    bad = []
    for run in runs:
        for before, after in itertools.pairwise(run):
            end, start = finished.get(before), first_start.get(after)
            if end is None or start is None or start < end:
                bad.append(f"task {after} started {start} before task {before} finished {end}")
    return _check("sequence_order", bad, f"each of {len(runs)} sequences ran in order, one task at a time")


def checks(shape: FlowShape, task_ids: Sequence[int], attempts: Iterable[AttemptRow]) -> list[CheckResult]:
    """The variant's checks beyond the E1 trust checks: ``sequence_order`` for ``chain`` and
    ``ordering``; none for the others."""
    runs = sequences(shape, task_ids)
    return [check_sequence_order(runs, attempts)] if runs else []
