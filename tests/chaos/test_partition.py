"""A silent network partition between one worker and the database (``make chaos``; docs/chaos.md,
"Network partition").

The private server runs in a network namespace of the test's own, one worker in another, joined
by a veth pair (tests/helpers/netns.py, partition_rig.py); two more workers and two schedulers
reach the server on its Unix socket and are never cut off. While the worker holds tasks, every
packet in and out of its namespace is dropped (iptables DROP: no RST, no FIN, its connections
just hang) for PARTITION_SECONDS, over three leases; then the rules are deleted. ChaosRig.round
checks every task of the run as after any other fault (terminal as planned, none lost, no
attempt beyond the budget, overlaps only after lease expiry, tf_invariant_violations empty, each
worker's listener picks up a probe in well under its poll interval, no process exited); this
test checks besides that the tasks the partition caught were recovered (ABANDONED,
lease_expired) and run again, that the cut-off worker's late finalizes were refused, and that
it resumed by itself: it claims and finishes tasks after the heal, without a restart.
"""

from __future__ import annotations

import time

import pytest
from psycopg.types.json import Jsonb

from chaos_handlers import TASK_TYPE
from chaos_rig import LEASE_SECONDS, MAX_ATTEMPTS, SUBMIT, ChaosRig, FaultReport
from partition_rig import PARTITIONED_SLOT, PartitionRig

pytestmark = pytest.mark.timeout(600)

#: How long the worker is cut off: over three leases.
PARTITION_SECONDS = 10.0
#: The cut-off worker must claim again this soon after the heal: at worst a connect attempt that
#: began just before it (connect_timeout 5 s) and the reconnect backoff (capped at 5 s). Measured:
#: under a second (docs/chaos.md).
RESUME_LIMIT_SECONDS = 10.0

ATTEMPTS_OF = """
SELECT a.task_id, a.attempt_number, a.state, a.outcome, t.state
  FROM taskforge.attempts a JOIN taskforge.tasks t USING (task_id)
 WHERE a.task_id = ANY(%(ids)s) ORDER BY a.task_id, a.attempt_number
"""


def submit_probe(rig: ChaosRig, key: str, slot: int) -> int:
    rig.keys[key] = "ok"
    return int(
        rig.sql(
            SUBMIT,
            {
                "task_type": TASK_TYPE,
                "payload": Jsonb({"ms": 0, "kind": "ok"}),
                "queue": f"probe_{slot}",
                "max_attempts": MAX_ATTEMPTS,
                "key": key,
            },
        )[0][0]
    )


def test_worker_partitioned_silently_past_its_lease_resumes_by_itself(partition_rig: PartitionRig):
    rig = partition_rig
    proc = rig.partitioned
    caught: list[tuple[int, int]] = []
    instants: dict[str, float] = {}

    def inject(report: FaultReport) -> None:
        rig.wait(lambda: rig.running_attempts(proc), "the worker to be cut off to hold tasks", timeout=60)
        rig.net.partition()
        instants["cut"] = time.time()
        caught.extend(rig.running_attempts(proc))  # read from the root namespace: not cut off
        report.injected.append(
            f"iptables DROP in {rig.net.worker_ns} (worker slot {PARTITIONED_SLOT}) for {PARTITION_SECONDS:g} s, "
            f"holding {len(caught)} attempts"
        )
        # A task only the cut-off worker can claim, waiting for it when the partition heals.
        instants["resume_task"] = submit_probe(rig, "partition-resume", PARTITIONED_SLOT)
        time.sleep(max(0.0, instants["cut"] + PARTITION_SECONDS - time.time()))
        # While it is cut off, its expired leases were recovered by the schedulers, which are not.
        recovered = rig.sql(ATTEMPTS_OF, {"ids": [task_id for task_id, _ in caught]})
        instants["recovered_during_partition"] = sum(
            1 for task_id, number, state, _, _ in recovered if (task_id, number) in caught and state == "ABANDONED"
        )
        instants["log_at_heal"] = proc.log()
        rig.net.heal()
        instants["healed"] = time.time()
        assert "DROP" not in rig.net.rules()

    report = rig.round(
        "network partition (worker)",
        f"every packet between one worker and the database dropped for {PARTITION_SECONDS:g} s "
        f"(lease {LEASE_SECONDS:g} s), then healed",
        inject,
    )

    assert proc.alive(), f"the cut-off worker exited:\n{proc.tail(40)}"
    assert rig.harness.count("worker") == 3, "a worker was restarted"
    assert caught, "the partition caught no attempt"
    # Its leases expired and were recovered while it was cut off.
    assert instants["recovered_during_partition"] == len(caught), instants
    rows = rig.sql(ATTEMPTS_OF, {"ids": sorted({task_id for task_id, _ in caught})})
    histories: dict[int, list[tuple[int, str, str | None]]] = {}
    for task_id, number, state, outcome, _ in rows:
        histories.setdefault(task_id, []).append((number, state, outcome))
    for task_id, number in caught:
        history = histories[task_id]
        assert [n for n, _, _ in history] == list(range(1, len(history) + 1)), history
        by_number = {n: (state, outcome) for n, state, outcome in history}
        assert by_number[number] == ("ABANDONED", "lease_expired"), (task_id, history)
        assert len(history) > number, f"task {task_id} was not run again after the partition: {history}"
    assert report.added["abandoned"] >= len(caught)
    # It noticed while cut off: its hung statements (the heartbeat's too) were closed by the
    # watchdog during the partition, not only once TCP got through again after the heal.
    at_heal = instants["log_at_heal"]
    assert "taskforge-worker/heartbeat: a statement has been running" in at_heal, at_heal[-3000:]

    # It resumed by itself: claims and finalizes of its own after the heal.
    claimed, finalized = rig.resumed(proc, instants["healed"])
    assert claimed is not None and finalized is not None, proc.tail(60)
    log = proc.log()
    refused = log.count("did not accept") + log.count("lease lost")
    assert refused > 0, "no late finalize or renewal of the cut-off worker was refused"
    assert claimed - instants["healed"] < RESUME_LIMIT_SECONDS

    rig.partition_figures.update(
        {
            "partition_seconds": PARTITION_SECONDS,
            "lease_seconds": LEASE_SECONDS,
            "attempts_caught": len(caught),
            "recovered_during_partition": instants["recovered_during_partition"],
            "tasks_re_run": len({task_id for task_id, _ in caught}),
            "re_executions_this_round": report.added["re_executions"],
            "heal_to_first_claim_s": round(claimed - instants["healed"], 2),
            "heal_to_first_finalize_s": round(finalized - instants["healed"], 2),
            "late_outcomes_refused_logged": refused,
            "reconnects_logged": log.count("reconnected to the database"),
            "listener_resubscribed_logged": log.count("listener re-subscribed"),
            "statements_closed_as_hung_during_partition": at_heal.count("closing its connection"),
        }
    )
