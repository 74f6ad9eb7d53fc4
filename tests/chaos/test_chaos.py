"""Chaos with real processes (``make chaos``; docs/chaos.md): each test injects one fault into a
running system (three workers, two schedulers, a private PostgreSQL server) while tasks run and
new ones are submitted, heals it, and ChaosRig.round checks that every task ended terminal, none
was lost, none used more attempts than its budget, executions of one task overlapped only after
a lease expired, tf_invariant_violations is empty, and each worker's listener picks up a new
task in well under its poll interval (NOTIFY, so LISTEN is subscribed again).

The tests share one rig and run in file order; each builds on the state the previous one left.
"""

from __future__ import annotations

import signal
import time

import pytest

from chaos_rig import LEASE_SECONDS, MAX_ATTEMPTS, SCHEDULERS, WORKERS, ChaosRig, FaultReport

pytestmark = pytest.mark.timeout(900)

#: Connections of one worker process: work, renew, heartbeat, listen.
WORKER_CONNECTIONS = 4


def test_every_worker_backend_terminated(rig: ChaosRig):
    def inject(report: FaultReport) -> None:
        ended = rig.terminate("taskforge-worker/%")
        assert len(ended) >= WORKERS * WORKER_CONNECTIONS, ended
        report.injected.append(f"pg_terminate_backend of {len(ended)} worker backends")

    report = rig.round("terminate worker backends", "pg_terminate_backend of every worker connection", inject)
    assert report.resubscribed >= WORKERS
    for proc in rig.slots:
        assert "reconnected to the database" in proc.log()


def test_postgres_restarted_fast(rig: ChaosRig):
    def inject(report: FaultReport) -> None:
        rig.server.restart("fast")
        report.injected.append("pg_ctl restart -m fast")

    report = rig.round("restart (fast)", "pg_ctl restart -m fast: clients disconnected, clean shutdown", inject)
    assert report.resubscribed >= WORKERS


def test_postgres_crashed_and_down_longer_than_a_lease(rig: ChaosRig):
    def inject(report: FaultReport) -> None:
        rig.server.restart("immediate", down_seconds=LEASE_SECONDS * 1.5)
        report.injected.append(f"pg_ctl stop -m immediate, down {LEASE_SECONDS * 1.5:g} s, crash recovery")

    report = rig.round(
        "crash restart (immediate)", "pg_ctl stop -m immediate (a crash), down 1.5 leases, start", inject
    )
    assert report.resubscribed >= WORKERS


def test_database_read_only_for_two_leases(rig: ChaosRig):
    def inject(report: FaultReport) -> None:
        rig.sql("ALTER SYSTEM SET default_transaction_read_only = on")
        rig.sql("SELECT pg_reload_conf()")
        report.injected.append("ALTER SYSTEM SET default_transaction_read_only = on + reload")
        time.sleep(LEASE_SECONDS * 2)
        rig.sql("ALTER SYSTEM RESET default_transaction_read_only")
        rig.sql("SELECT pg_reload_conf()")

    report = rig.round("read-only (server)", "every session read-only for two leases, then writable", inject)
    assert report.submit_errors > 0, "the read-only period refused no submit"
    assert any("ReadOnlySqlTransaction" in p.log() for p in rig.slots)


def test_database_read_only_for_new_sessions(rig: ChaosRig):
    def inject(report: FaultReport) -> None:
        rig.sql("ALTER DATABASE taskforge_chaos SET default_transaction_read_only = on")
        ended = rig.terminate("taskforge-%")
        report.injected.append("ALTER DATABASE SET default_transaction_read_only = on")
        report.injected.append(f"pg_terminate_backend of {len(ended)} TaskForge backends (they reconnect read-only)")
        time.sleep(LEASE_SECONDS * 1.5)
        # The sessions opened meanwhile stay read-only: the processes must leave them by themselves.
        rig.sql("ALTER DATABASE taskforge_chaos RESET default_transaction_read_only")

    rig.round("read-only (database)", "new sessions read-only for 1.5 leases; old ones cut", inject)


def test_worker_sigkilled(rig: ChaosRig):
    def inject(report: FaultReport) -> None:
        slot = rig.busiest_slot()
        rig.kill(rig.slots[slot])
        report.injected.append(f"SIGKILL worker slot {slot}")
        rig.replace_worker(slot)

    report = rig.round("worker SIGKILL", "SIGKILL of the busiest worker, a new one started in its place", inject)
    assert report.added["abandoned"] > 0  # its attempts were recovered and run again


def test_schedulers_sigkilled_with_a_worker(rig: ChaosRig):
    def inject(report: FaultReport) -> None:
        for proc in rig.schedulers:
            rig.kill(proc)
            report.injected.append("SIGKILL scheduler")
        slot = rig.busiest_slot()
        rig.kill(rig.slots[slot])
        report.injected.append(f"SIGKILL worker slot {slot}")
        rig.replace_worker(slot)
        # With no scheduler, nobody recovers the dead worker's expired leases.
        time.sleep(LEASE_SECONDS * 2)
        stranded = rig.sql_value(
            "SELECT count(*) FROM taskforge.tasks WHERE state = 'RUNNING' AND lease_expires_at < clock_timestamp()"
        )
        assert stranded > 0, "the killed worker held no task"
        rig.schedulers = [rig.start_scheduler() for _ in range(SCHEDULERS)]

    rig.round(
        "schedulers + worker SIGKILL", "SIGKILL of every scheduler and a worker; new schedulers after 2 leases", inject
    )


def test_worker_sigstopped_past_its_lease(rig: ChaosRig):
    stopped = {}

    def inject(report: FaultReport) -> None:
        slot = rig.busiest_slot()
        proc = stopped["proc"] = rig.slots[slot]
        proc.signal(signal.SIGSTOP)
        report.injected.append(f"SIGSTOP worker slot {slot} for {LEASE_SECONDS * 2 + 1:g} s")
        time.sleep(LEASE_SECONDS * 2 + 1)
        proc.signal(signal.SIGCONT)

    report = rig.round(
        "worker SIGSTOP past lease", "the busiest worker frozen for two leases and a second, then continued", inject
    )
    proc = stopped["proc"]
    assert proc.alive()
    rig.wait(lambda: "lease lost" in proc.log() or "did not accept" in proc.log(), "the frozen worker to notice")
    assert report.added["abandoned"] > 0


def test_worker_sigstopped_briefly(rig: ChaosRig):
    def inject(report: FaultReport) -> None:
        slot = rig.busiest_slot()
        rig.slots[slot].signal(signal.SIGSTOP)
        report.injected.append(f"SIGSTOP worker slot {slot} for {LEASE_SECONDS / 2:g} s")
        time.sleep(LEASE_SECONDS / 2)
        rig.slots[slot].signal(signal.SIGCONT)

    rig.round("worker SIGSTOP (short)", "the busiest worker frozen for half a lease", inject)


def test_schedulers_sigstopped_while_a_worker_dies(rig: ChaosRig):
    def inject(report: FaultReport) -> None:
        for proc in rig.schedulers:
            proc.signal(signal.SIGSTOP)
            report.injected.append(f"SIGSTOP scheduler for {LEASE_SECONDS * 2:g} s")
        slot = rig.busiest_slot()
        rig.kill(rig.slots[slot])
        report.injected.append(f"SIGKILL worker slot {slot}")
        rig.replace_worker(slot)
        time.sleep(LEASE_SECONDS * 2)
        for proc in rig.schedulers:
            proc.signal(signal.SIGCONT)

    rig.round("schedulers SIGSTOP + worker SIGKILL", "schedulers frozen for two leases while a worker dies", inject)


def test_worker_frozen_across_a_crash_restart(rig: ChaosRig):
    def inject(report: FaultReport) -> None:
        slot = rig.busiest_slot()
        proc = rig.slots[slot]
        proc.signal(signal.SIGSTOP)
        report.injected.append(f"SIGSTOP worker slot {slot}")
        rig.server.restart("immediate", down_seconds=LEASE_SECONDS)
        report.injected.append("pg_ctl stop -m immediate, start")
        time.sleep(LEASE_SECONDS)
        proc.signal(signal.SIGCONT)

    rig.round("SIGSTOP across crash restart", "a worker frozen while the server crashes and comes back", inject)


def test_graceful_stop_after_the_chaos(rig: ChaosRig):
    """Every process still running stops cleanly on SIGTERM, and the totals hold."""
    verdict = rig.verify()
    assert verdict.problems == []
    assert verdict.lost == 0 and verdict.tasks == len(rig.keys)
    assert verdict.max_attempts_used <= MAX_ATTEMPTS
    live = rig.harness.alive()
    assert len([p for p in live if p.kind == "worker"]) == WORKERS
    codes = rig.harness.stop_all(timeout=60)
    assert {p.name: codes[p.name] for p in live} == {p.name: 0 for p in live}
    assert rig.sql_value("SELECT count(*) FROM taskforge.tf_invariant_violations") == 0
