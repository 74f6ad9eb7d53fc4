"""What a trial wrote, per measured task: WAL bytes and table row writes (ours and the peers').

The cost of keeping every attempt is writes: TaskForge updates a task row twice and writes an
attempt row at the claim and again at the finish; graphile-worker updates a job once and deletes
it. These figures put that difference in numbers, measured the same way for every system.

A snapshot (:func:`snapshot`) reads, from the trial's database:

* ``pg_current_wal_lsn()``: WAL is the cluster's, so the machine should run nothing else (the
  benchmark's rule anyway);
* the sums of ``n_tup_ins``, ``n_tup_upd``, ``n_tup_hot_upd`` and ``n_tup_del`` over
  ``pg_stat_user_tables`` (rows inserted, updated, of which HOT, deleted), which backends report
  when their transactions end (at most once a second while busy, and when they exit).

The trial takes one after its warm-up has drained and one after its processes have stopped (so
every backend has reported); :func:`per_task` divides the difference by the measured tasks. The
warm-up's last report can fall into the window: at most the warm-up's own writes (2 % of E1's).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any

import psycopg

__all__ = ["WriteSnapshot", "per_task", "snapshot"]

SNAPSHOT_SQL = """
SELECT pg_catalog.pg_current_wal_lsn()::text,
       coalesce(sum(n_tup_ins), 0)::bigint, coalesce(sum(n_tup_upd), 0)::bigint,
       coalesce(sum(n_tup_hot_upd), 0)::bigint, coalesce(sum(n_tup_del), 0)::bigint
  FROM pg_catalog.pg_stat_user_tables
"""
WAL_DIFF_SQL = "SELECT pg_catalog.pg_wal_lsn_diff(%s::pg_lsn, %s::pg_lsn)::bigint"


@dataclass(frozen=True)
class WriteSnapshot:
    """Counters at one moment: the WAL position and the database's row-write totals."""

    lsn: str
    inserted: int
    updated: int
    hot_updated: int
    deleted: int


def snapshot(conn: psycopg.Connection[Any]) -> WriteSnapshot:
    """The counters now (see the module docstring); ``conn`` on the trial's database."""
    row = conn.execute(SNAPSHOT_SQL).fetchone()
    assert row is not None
    return WriteSnapshot(str(row[0]), int(row[1]), int(row[2]), int(row[3]), int(row[4]))


def per_task(
    conn: psycopg.Connection[Any], before: WriteSnapshot, after: WriteSnapshot, tasks: int
) -> dict[str, float]:
    """Writes between two snapshots divided by ``tasks``: ``wal_bytes``, ``rows_inserted``,
    ``rows_updated``, ``rows_hot_updated``, ``rows_deleted`` and ``row_writes`` (the three
    kinds together), each per task; empty when ``tasks`` is 0."""
    if tasks <= 0:
        return {}
    row = conn.execute(WAL_DIFF_SQL, (after.lsn, before.lsn)).fetchone()
    wal = int(row[0]) if row else 0
    a, b = asdict(after), asdict(before)
    diff = {k: a[k] - b[k] for k in ("inserted", "updated", "hot_updated", "deleted")}
    return {
        "wal_bytes": wal / tasks,
        "rows_inserted": diff["inserted"] / tasks,
        "rows_updated": diff["updated"] / tasks,
        "rows_hot_updated": diff["hot_updated"] / tasks,
        "rows_deleted": diff["deleted"] / tasks,
        "row_writes": (diff["inserted"] + diff["updated"] + diff["deleted"]) / tasks,
    }
