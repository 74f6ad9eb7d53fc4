"""Worker settings: :class:`WorkerConfig` and the constants the worker's modules share.

Defaults are listed once for people in docs/configuration.md. Every time is in seconds.
"""

from __future__ import annotations

from dataclasses import dataclass

from .. import pooling
from ..names import QUEUE_PATTERN

__all__ = [
    "APPLICATION_NAME",
    "BUSY_RETRY_SECONDS",
    "DEREGISTER_SECONDS",
    "HOUSEKEEPING_SECONDS",
    "MAX_BATCH",
    "MAX_CONCURRENCY",
    "STATEMENT_TIMEOUT_CAP_SECONDS",
    "STOP_JOIN_SECONDS",
    "TRANSACTION_CONNECTIONS_CAP",
    "TURN_BATCH",
    "WorkerConfig",
]

APPLICATION_NAME = "taskforge-worker"
#: Cap (seconds) of the statement_timeout of the worker's connections.
STATEMENT_TIMEOUT_CAP_SECONDS = 30.0
#: How often (seconds) the watchdog thread looks for statements hung past their statement_timeout.
HOUSEKEEPING_SECONDS = 0.25
#: How long (seconds, monotonic) a clean stop may spend joining its threads, and deregistering.
STOP_JOIN_SECONDS = 5.0
DEREGISTER_SECONDS = 10.0
#: First delay (seconds) before a finalize or renewal that came back ``busy`` (the task's row
#: was locked by another transaction: nothing happened, nothing waited) is sent again; it
#: doubles per busy answer in a row, capped at a tenth of the lease. Short because the usual
#: holder is a concurrent claim: a claim that meets a row another claim has just taken keeps a
#: lock on it until its own transaction ends (PostgreSQL locks the latest version before it
#: rechecks the WHERE clause), about a millisecond later. With 50 ms, four one-slot workers
#: lost about a tenth of their throughput waiting on such locks (docs/benchmarks.md, "Busy
#: finalizes").
BUSY_RETRY_SECONDS = 0.002
#: Most elements one call carries: tasks claimed and attempts finalized per
#: tf_finalize_and_claim, leases per tf_renew_many (the SQL API's limit). More go in more calls.
MAX_BATCH = 1000
#: Most attempts one turn of the dispatcher finalizes, and most tasks it claims: a smaller share
#: of MAX_BATCH, since a call's cost per element grows with its size (on the reference machine a
#: turn of 1000 cost about 3 times more per task than turns of 100: docs/benchmarks.md, "The
#: worker's Python cost"); more go in the next turn, at once.
TURN_BATCH = 100
#: Most attempts one worker process holds at once (``--concurrency``).
MAX_CONCURRENCY = 10_000
#: Most attempts a worker process claims ahead of its free slots (``--prefetch``).
MAX_PREFETCH = 1000
#: Default most connections of each pool of ``ctx.transaction()`` (with fewer slots: one per slot).
TRANSACTION_CONNECTIONS_CAP = 10


@dataclass(frozen=True)
class WorkerConfig:
    """Worker settings (defaults as in docs/configuration.md). Times are seconds.

    queues:            queue names to claim from; None = every queue.
    task_types:        subset of the registered handlers to claim; None = all registered.
    concurrency:       handlers this process runs at once, its handler slots (1..10000).
    prefetch:          attempts claimed ahead of a free slot (0..1000; default 0): the process
                       holds up to concurrency + prefetch attempts, the extra ones claimed (their
                       attempt rows written, their leases renewed, their deadlines running) and
                       waiting in the process until a slot frees, which then starts one at once
                       instead of after a round trip to the database. docs/worker.md, "Prefetch".
    lease_seconds:     lease granted by each claim and renewal (0 < s <= 86400); renewals are
                       sent every lease_seconds / 3.
    heartbeat_seconds: tf_heartbeat interval (0 < s <= 3600).
    poll_seconds:      claim attempt interval when no notification arrives (> 0).
    grace_seconds:     after the first SIGTERM/SIGINT, how long running handlers may finish (>= 0).
    name:              worker name shown in tf_workers (default hostname-pid).
    reconnect_max_seconds: cap of the reconnect backoff (> 0).
    transaction_connections: most connections of each pool (sync handlers, async handlers) of
                       ``ctx.transaction()`` (1..10000); None = min(concurrency, 10). A handler
                       waits for a free one (at most 30 s).
    pooler:            ``none`` (a direct connection, or a pooler in session mode) or
                       ``transaction`` (PgBouncer in transaction mode: nothing prepared, the
                       timeouts set per transaction, no LISTEN on the DSN): :mod:`taskforge.pooling`;
                       empty = ``$TASKFORGE_POOLER``, else ``none``.
    listen_dsn:        a direct DSN (not through the pooler) to LISTEN on in transaction mode;
                       None = no listener there: the worker claims every poll_seconds.

    Derived (properties): held_limit = concurrency + prefetch; renew_seconds = lease_seconds / 3; lock_timeout_seconds =
    min(1, lease_seconds / 10), the lock_timeout of the work and renew connections;
    statement_timeout_seconds = max(lock_timeout_seconds, min(lease_seconds / 3, 30)), their
    statement_timeout; heartbeat_lock_timeout_seconds = min(1, heartbeat_seconds / 2) and
    heartbeat_statement_timeout_seconds = max(that, min(heartbeat_seconds, 30)), those of the
    heartbeat connection.
    """

    queues: tuple[str, ...] | None = None
    task_types: tuple[str, ...] | None = None
    concurrency: int = 1
    prefetch: int = 0
    lease_seconds: float = 30.0
    heartbeat_seconds: float = 5.0
    poll_seconds: float = 1.0
    grace_seconds: float = 30.0
    name: str | None = None
    reconnect_max_seconds: float = 5.0
    transaction_connections: int | None = None
    pooler: str = ""
    listen_dsn: str | None = None

    def __post_init__(self) -> None:
        if self.queues is not None:
            object.__setattr__(self, "queues", tuple(dict.fromkeys(self.queues)) or None)
            for q in self.queues or ():
                if not QUEUE_PATTERN.fullmatch(q):
                    raise ValueError(f"queue: {q!r} must match {QUEUE_PATTERN.pattern}")
        if self.task_types is not None:
            object.__setattr__(self, "task_types", tuple(dict.fromkeys(self.task_types)) or None)
        if not 1 <= self.concurrency <= MAX_CONCURRENCY:
            raise ValueError(f"concurrency: must be between 1 and {MAX_CONCURRENCY}, got {self.concurrency}")
        if not 0 <= self.prefetch <= MAX_PREFETCH:
            raise ValueError(f"prefetch: must be between 0 and {MAX_PREFETCH}, got {self.prefetch}")
        if not 0 < self.lease_seconds <= 86400:
            raise ValueError(f"lease_seconds: must be > 0 and <= 86400, got {self.lease_seconds}")
        if not 0 < self.heartbeat_seconds <= 3600:
            raise ValueError(f"heartbeat_seconds: must be > 0 and <= 3600, got {self.heartbeat_seconds}")
        if not 0 < self.poll_seconds <= 3600:
            raise ValueError(f"poll_seconds: must be > 0 and <= 3600, got {self.poll_seconds}")
        if not 0 <= self.grace_seconds <= 86400:
            raise ValueError(f"grace_seconds: must be >= 0 and <= 86400, got {self.grace_seconds}")
        if not 0 < self.reconnect_max_seconds <= 3600:
            raise ValueError(f"reconnect_max_seconds: must be > 0, got {self.reconnect_max_seconds}")
        if self.transaction_connections is not None and not 1 <= self.transaction_connections <= MAX_CONCURRENCY:
            raise ValueError(
                f"transaction_connections: must be between 1 and {MAX_CONCURRENCY}, got {self.transaction_connections}"
            )
        object.__setattr__(self, "pooler", pooling.resolve_pooler(self.pooler))
        if self.listen_dsn is not None and not self.listen_dsn.strip():
            raise ValueError("listen_dsn: must be a connection string, got an empty one")
        if self.name is not None and not 1 <= len(self.name) <= 200:
            raise ValueError("name: must be 1 to 200 characters")

    @property
    def held_limit(self) -> int:
        """Most attempts the process holds at once: its slots and the attempts claimed ahead."""
        return self.concurrency + self.prefetch

    @property
    def listens(self) -> bool:
        """Whether the worker runs its LISTEN thread (on ``listen_dsn`` in transaction mode)."""
        return pooling.listens(self.pooler, self.listen_dsn)

    @property
    def renew_seconds(self) -> float:
        """Interval between renewals of one lease: lease_seconds / 3."""
        return self.lease_seconds / 3.0

    @property
    def lock_timeout_seconds(self) -> float:
        """``lock_timeout`` of the work (claim, finalize) and renew connections, in seconds:
        min(1, lease_seconds / 10) (sent in whole milliseconds, at least 1 ms). The batch
        functions skip task rows locked elsewhere instead of waiting, but a claim still takes a
        key-share lock on the worker's own row (foreign keys); a statement that gives up on such
        a lock changed nothing and is sent again well within the lease."""
        return min(1.0, self.lease_seconds / 10.0)

    @property
    def statement_timeout_seconds(self) -> float:
        """``statement_timeout`` of the work and renew connections, in seconds:
        max(lock_timeout_seconds, min(lease_seconds / 3, 30)) (whole milliseconds). A renewal
        sent one renew interval after the last one and hung on its connection fails after at
        most lease / 3 more, leaving a third of the lease to send it again on another connection."""
        return max(self.lock_timeout_seconds, min(self.lease_seconds / 3.0, STATEMENT_TIMEOUT_CAP_SECONDS))

    @property
    def heartbeat_lock_timeout_seconds(self) -> float:
        """``lock_timeout`` of the heartbeat connection: min(1, heartbeat_seconds / 2) seconds."""
        return min(1.0, self.heartbeat_seconds / 2.0)

    @property
    def heartbeat_statement_timeout_seconds(self) -> float:
        """``statement_timeout`` of the heartbeat connection, in seconds:
        max(heartbeat_lock_timeout_seconds, min(heartbeat_seconds, 30))."""
        return max(self.heartbeat_lock_timeout_seconds, min(self.heartbeat_seconds, STATEMENT_TIMEOUT_CAP_SECONDS))

    @property
    def busy_retry_cap_seconds(self) -> float:
        """Longest wait (seconds) before a busy finalize or renewal is sent again: lease / 10."""
        return self.lease_seconds / 10.0

    @property
    def transaction_pool_size(self) -> int:
        """Most connections of each ``ctx.transaction()`` pool: transaction_connections, else
        min(concurrency, 10)."""
        return self.transaction_connections or min(self.concurrency, TRANSACTION_CONNECTIONS_CAP)
