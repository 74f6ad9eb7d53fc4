"""Failover of the primary under load (issue 17 item 2): etcd and two Patroni nodes, a
submitter, a worker, a scheduler and the console, all on one multi-host DSN with
``target_session_attrs=read-write`` (tests/helpers/ha_rig.py; docs/operations.md, "Failover").
"""

from __future__ import annotations

from ha_rig import SHORT

LOAD_SECONDS = 6.0 if SHORT else 15.0
AFTER_SECONDS = 4.0 if SHORT else 15.0


def test_synchronous_failover_loses_nothing_and_every_process_resumes(make_rig):
    """Synchronous mode: SIGKILL of the primary's Patroni and PostgreSQL loses no acknowledged
    submit or finalize, every task id keeps meaning one task, every task ends, the invariants
    hold, and the submitter, worker, scheduler and console work on the new primary without a
    restart. The full run (make ha) then lets the killed node rejoin and fails over back."""
    rig = make_rig(synchronous=True)
    first = rig.failover(LOAD_SECONDS)
    assert first["promotion_seconds"] < 30, first
    if not SHORT:
        killed = next(n for n in rig.cluster.nodes if n.name == first["killed_node"])
        first["rejoin_seconds"] = rig.rejoin(killed)
        rig.failover(LOAD_SECONDS)
    verdict = rig.finish(AFTER_SECONDS)
    assert not verdict.problems, "\n".join(verdict.problems[:40])
    assert verdict.submits_acknowledged > 0 and verdict.finalizes_acknowledged > 0
    assert verdict.abandoned == 0, "a lease (30 s) longer than the outage re-ran work"
