"""What every peer provides to the shared trial (:mod:`.trial`), and the records they pass.

A peer is another PostgreSQL job queue draining the same no-op jobs as TaskForge's E1, on the
same server, in a database of its own per trial. Each peer module subclasses :class:`Peer`
(through :class:`~.runtimes.PythonPeer` or :class:`~.runtimes.NodePeer`, which install it) and
says how to apply its schema, start one worker process in a :class:`Mode`, enqueue jobs in one
transaction, count what is left, and take the measured window from the database clock.

Statements against a peer's own tables live in that peer's module: they are the peer's schema,
not TaskForge's API (which :mod:`taskforge.sql` holds).
"""

from __future__ import annotations

import abc
import datetime as dt
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar

import psycopg

from ...processes import ProcessHarness
from ...progress import Progress
from ..results import CheckResult

__all__ = [
    "READY_MARKER",
    "Batch",
    "Drain",
    "Installed",
    "Mode",
    "Outcome",
    "Peer",
    "PeerError",
    "PeerUnavailable",
    "contiguous",
    "jobs_check",
]

#: The line a peer app prints once its worker is running (waited for in its log).
READY_MARKER = "taskforge-bench-peer: ready"
#: The queue (or task name) every peer's jobs go to.
PEER_QUEUE = "bench"


class PeerError(RuntimeError):
    """A peer trial could not be set up or measured (the trial fails)."""


class PeerUnavailable(RuntimeError):
    """A peer cannot run on this machine (no runtime, install impossible): skipped with this
    reason, never a failure."""


@dataclass(frozen=True)
class Mode:
    """One way of running a peer.

    ``kind``: ``single`` (``processes`` processes of one slot each, as E1) or ``batched`` (one
    process in the setting the peer's own documentation recommends for throughput, beside E1
    batched). ``concurrency``: jobs one process runs at once, as the peer counts them.
    ``settings``: the peer's own knobs, handed to its app as JSON. ``source``: where those
    settings come from (documentation page or source file of the peer).
    """

    kind: str
    processes: int
    concurrency: int
    settings: Mapping[str, Any]
    source: str

    def settings_json(self) -> str:
        """``settings`` as a JSON object (the peer app's argument)."""
        return json.dumps(dict(self.settings), sort_keys=True)


@dataclass
class Installed:
    """A peer ready to run: the directory of its environment (a virtualenv or an npm prefix), the
    exact versions installed (package -> version) and the runtime that runs it
    (``{"python": "3.11.7", "executable": ...}`` or ``{"node": "v20.20.2", "npm": "11.1.0"}``)."""

    name: str
    directory: Path
    versions: dict[str, str]
    runtime: dict[str, str]

    def record(self) -> dict[str, Any]:
        """What environment.json keeps of it."""
        return {"directory": str(self.directory), "versions": self.versions, "runtime": self.runtime}


@dataclass(frozen=True)
class Batch:
    """Jobs enqueued in one transaction. ``ids``: the peer's job ids (ints, or uuid strings for
    pg-boss), in insert order. ``committed_at``: database ``clock_timestamp()`` read in the
    submitting session right after the commit, for a peer whose finished jobs leave no
    timestamp (None otherwise)."""

    ids: tuple[Any, ...]
    committed_at: dt.datetime | None = None

    @property
    def id_range(self) -> tuple[int, int]:
        """(lowest, highest) of integer ids that form one contiguous range; raises PeerError
        otherwise (a range query would then count jobs that are not this batch's)."""
        ints = [int(i) for i in self.ids]
        if not contiguous(ints):
            raise PeerError(f"the {len(ints)} job ids of a batch are not one contiguous range")
        return min(ints), max(ints)


@dataclass(frozen=True)
class Drain:
    """How the wait for a batch ended: ``last_busy_at`` is the database clock of the last poll
    that still found some of its jobs unfinished (None if the first poll found none),
    ``drained_at`` of the first poll that found none; ``polls`` polls ``interval_seconds``
    apart (harness clock)."""

    last_busy_at: dt.datetime | None
    drained_at: dt.datetime
    polls: int
    interval_seconds: float


@dataclass
class Outcome:
    """A trial's window (``first``: the measured jobs' first start, ``last``: their last finish;
    database clock), the peer's trust checks and what else it measured (``metrics``)."""

    first: dt.datetime | None
    last: dt.datetime | None
    checks: list[CheckResult] = field(default_factory=list)
    metrics: dict[str, Any] = field(default_factory=dict)


def jobs_check(name: str, found: int, expected: int, what: str) -> CheckResult:
    """A count check: ``found`` of ``expected`` jobs are ``what``."""
    return CheckResult(name, found == expected, f"{found} of {expected} jobs {what}")


class Peer(abc.ABC):
    """A peer queue. Subclasses set the class attributes and implement the abstract methods;
    :mod:`.trial` runs them in this order: :meth:`install` (once per run), then per trial on a
    fresh empty database :meth:`prepare`, :meth:`worker_argv` for each process, :meth:`ready`
    until every process is up, :meth:`enqueue` + :meth:`remaining` for the warm-up and again for
    the measured jobs, then :meth:`outcome` after the processes stopped (SIGTERM)."""

    #: The peer's name (``graphile-worker``): labels, options and the report.
    name: ClassVar[str]
    #: ``python`` or ``node``.
    runtime: ClassVar[str]
    #: How the window is timed, one sentence for the report.
    timing: ClassVar[str]
    #: Where the single-slot mode's settings come from.
    single_source: ClassVar[str]
    #: Seconds between polls while waiting for a batch (harness clock).
    poll_seconds: ClassVar[float] = 0.1

    @abc.abstractmethod
    def install(self, directory: Path, progress: Progress) -> Installed:
        """Create or reuse the peer's environment in ``directory``. Raises PeerUnavailable when
        the runtime is missing or the install is impossible."""

    @abc.abstractmethod
    def single_settings(self) -> dict[str, Any]:
        """The settings of one process with one slot (as E1's ``--concurrency 1``)."""

    @abc.abstractmethod
    def batched_mode(self, batch_size: int) -> Mode:
        """The one-process mode the peer's documentation recommends for throughput (``batch_size``
        is TaskForge's B, for peers whose docs leave the number to the user)."""

    def single_mode(self, processes: int) -> Mode:
        """``processes`` processes, one slot each."""
        return Mode("single", processes, 1, self.single_settings(), self.single_source)

    def workload(self, mode: Mode) -> str:
        """The trial's workload name: ``peer-<name>`` or ``peer-<name>-batched``."""
        return f"peer-{self.name}" if mode.kind == "single" else f"peer-{self.name}-{mode.kind}"

    @abc.abstractmethod
    def process_env(self, installed: Installed, dsn: str) -> dict[str, str]:
        """Environment variables of the peer's processes (the database, the app's path)."""

    @abc.abstractmethod
    def prepare(self, installed: Installed, dsn: str) -> None:
        """Apply the peer's schema to the empty database at ``dsn``. Raises PeerError."""

    @abc.abstractmethod
    def worker_argv(self, installed: Installed, mode: Mode) -> list[str]:
        """The command line of one worker process in ``mode``."""

    def ready(self, conn: psycopg.Connection[Any], harness: ProcessHarness) -> int:
        """How many of the worker processes are up (default: printed :data:`READY_MARKER`)."""
        return sum(1 for p in harness.processes if READY_MARKER in p.log())

    @abc.abstractmethod
    def enqueue(self, installed: Installed, dsn: str, count: int) -> Batch:
        """Enqueue ``count`` no-op jobs in one transaction. Raises PeerError."""

    @abc.abstractmethod
    def remaining(self, conn: psycopg.Connection[Any], batch: Batch) -> tuple[int, dt.datetime]:
        """(jobs of ``batch`` not finished yet, database ``clock_timestamp()`` of the poll); cheap,
        it runs every :attr:`poll_seconds`."""

    @abc.abstractmethod
    def outcome(self, conn: psycopg.Connection[Any], batch: Batch, drain: Drain) -> Outcome:
        """The measured window and the trust checks, after the processes stopped."""


def contiguous(ids: Sequence[int]) -> bool:
    """True when the ids are distinct and form one range without gaps."""
    return bool(ids) and len(set(ids)) == len(ids) and max(ids) - min(ids) + 1 == len(ids)
