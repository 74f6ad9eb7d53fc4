"""The failover rig: a Patroni cluster (ha_cluster.py), TaskForge's processes on a multi-host
DSN, a load, a killed primary, and the checks of ha_checks.py (``make ha``, ``make ha-short``;
tests/ha; the figures are in docs/operations.md, "Failover").

:class:`HaRig` starts a :class:`~ha_cluster.PatroniCluster` (synchronous or asynchronous, with
an optional replication lag), creates the database ``taskforge_ha`` on its primary, migrates it
with ``taskforge db migrate`` on the multi-host DSN (``host=127.0.0.1,127.0.0.1 port=P1,P2
target_session_attrs=read-write``), registers ``ha.work`` (ha_handlers.py) and creates the table
its transactions write. Then, every one on that same multi-host DSN and started once:

* a submitter process (ha_submitter.py): keyed submits, every acknowledgement recorded;
* ``taskforge worker`` (4 slots, lease ``lease_seconds``, JSON log lines at INFO: every accepted
  finalize is logged after the database answered);
* ``taskforge scheduler`` (recovers expired leases, promotes retries);
* ``taskforge console``, whose ``/healthz`` a thread of the rig polls four times a second.

:meth:`HaRig.failover` waits until work is in flight, kills the primary node
(:meth:`~ha_cluster.PatroniNode.kill`: Patroni, postmaster and its children, SIGKILL) and
measures: how long until the other node accepts writes (promotion), and how long until each
process did its work again on it (the submitter's next acknowledgement, the worker's next
accepted finalize, the scheduler's next heartbeat, the console's next ``/healthz`` 200).
:meth:`HaRig.rejoin` starts the killed node again, as a replica of the new primary.
:meth:`HaRig.finish` stops the submitter, waits until every task is terminal, and judges
(:func:`ha_checks.judge`).

Logs and the run log go to ``workdir``; times are wall-clock seconds (``time.time()``) where
they meet the database's or the logs' timestamps (same machine), else monotonic.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any, ClassVar

import psycopg
from rig_base import RigBase

from taskforge.private_server import free_port
from taskforge.processes import ManagedProcess, ProcessHarness, taskforge_command

from ha_checks import Verdict, judge, read_acks, read_finalizes, read_runs, read_snapshot
from ha_cluster import LOOP_WAIT, RETRY_TIMEOUT, TTL, PatroniCluster, PatroniNode
from ha_handlers import EFFECTS_TABLE, RUN_LOG_ENV, TASK_TYPE
from ha_submitter import payload_for

__all__ = ["ROOT", "SHORT", "HaRig"]

HELPERS = Path(__file__).resolve().parent
ROOT = HELPERS.parents[1]
DATABASE = "taskforge_ha"
#: ``TASKFORGE_HA_SHORT=1`` (make ha-short, the form CI runs): less load around each failover.
SHORT = os.environ.get("TASKFORGE_HA_SHORT", "") not in ("", "0")
CONCURRENCY = 4
SUBMIT_INTERVAL = 0.1
SEED = 20261204
#: Longest waits (seconds): a promotion, every process resuming, every task ending.
PROMOTION_TIMEOUT = 60.0
RESUME_TIMEOUT = 60.0
DRAIN_TIMEOUT = 180.0

PENDING = "SELECT count(*) FROM taskforge.tasks WHERE state NOT IN ('SUCCEEDED', 'FAILED', 'CANCELLED')"
RUNNING = "SELECT count(*) FROM taskforge.tasks WHERE state = 'RUNNING'"
SCHEDULER_BEAT_AFTER = """
SELECT count(*) FROM taskforge.schedulers WHERE last_heartbeat_at > to_timestamp(%(after)s)
"""
PROCESS_ROWS = """
SELECT (SELECT count(*) FROM taskforge.workers), (SELECT count(*) FROM taskforge.schedulers),
       (SELECT count(*) FROM taskforge.tf_workers WHERE liveness = 'alive'),
       (SELECT count(*) FROM taskforge.tf_schedulers WHERE liveness = 'alive')
"""


class HealthPoller(threading.Thread):
    """GET ``url`` every 0.25 s; keeps (wall-clock second of the answer, HTTP status or 0 for no
    answer) in :attr:`seen`, and (sent, answered, status, body) of every answer but 200 in
    :attr:`failed`."""

    def __init__(self, url: str) -> None:
        super().__init__(daemon=True, name="healthz-poller")
        self.url = url
        self.seen: list[tuple[float, int]] = []
        self.failed: list[tuple[float, float, int, str]] = []
        self.stop = threading.Event()

    def run(self) -> None:
        while not self.stop.is_set():
            sent, body = time.time(), ""
            try:
                with urllib.request.urlopen(self.url, timeout=10) as answer:
                    status = answer.status
            except urllib.error.HTTPError as exc:
                status, body = exc.code, exc.read().decode(errors="replace")[:200]
            except OSError as exc:
                status, body = 0, repr(exc)[:200]
            self.seen.append((time.time(), status))
            if status != 200:
                self.failed.append((sent, time.time(), status, body))
            self.stop.wait(0.25)

    def failures_since(self, kill_at: float) -> list[list[Any]]:
        """Every answer but 200 after ``kill_at``: [sent, answered (seconds after it), status, body]."""
        return [
            [round(sent - kill_at, 2), round(at - kill_at, 2), status, body]
            for sent, at, status, body in self.failed
            if at > kill_at
        ]

    def first_ok_after(self, after: float) -> float | None:
        return next((at for at, status in self.seen if at > after and status == 200), None)

    def failures_after(self, after: float) -> dict[str, int]:
        counts: dict[str, int] = {}
        for at, status in self.seen:
            if at > after and status != 200:
                counts[str(status)] = counts.get(str(status), 0) + 1
        return counts


class HaRig(RigBase):
    """See the module docstring."""

    WAIT_TIMEOUT: ClassVar[float] = RESUME_TIMEOUT

    def __init__(
        self,
        workdir: Path,
        *,
        synchronous: bool,
        replication_lag: float | None = None,
        lease_seconds: float = 30.0,
    ) -> None:
        self.workdir = workdir
        self.synchronous = synchronous
        self.lease_seconds = lease_seconds
        self.cluster = PatroniCluster(workdir / "cluster", synchronous=synchronous, replication_lag=replication_lag)
        self.dsn = self.cluster.dsn(DATABASE)
        self.run_log = workdir / "runs.jsonl"
        self.acks = workdir / "acks.jsonl"
        self.prefix = f"ha-{'sync' if synchronous else 'async'}"
        self.harness = ProcessHarness(self.dsn, workdir / "logs", env={RUN_LOG_ENV: str(self.run_log)}, cwd=ROOT)
        self.console_port = free_port()
        self.poller = HealthPoller(f"http://127.0.0.1:{self.console_port}/healthz")
        self.failovers: list[dict[str, Any]] = []
        self.started = time.monotonic()
        self.verdict: Verdict | None = None
        self.submitter_figures: dict[str, Any] = {}
        self._admin: psycopg.Connection[Any] | None = None
        self.worker: ManagedProcess | None = None
        self.scheduler: ManagedProcess | None = None
        self.console: ManagedProcess | None = None
        self.submitter: ManagedProcess | None = None

    # --- setup -----------------------------------------------------------------------------------

    def start(self) -> None:
        try:
            self._start()
        except BaseException:
            self.close()
            raise

    def _start(self) -> None:
        self.cluster.start()
        primary = self.cluster.primary()
        with psycopg.connect(self.cluster.node_dsn(primary), autocommit=True) as conn:
            conn.execute(f"CREATE DATABASE {DATABASE}")
        migrate = subprocess.run(
            taskforge_command("db", ["migrate", "--dsn", self.dsn]),
            capture_output=True,
            text=True,
            timeout=300,
            env=self.harness.child_env(),
            cwd=ROOT,
        )
        if migrate.returncode != 0:
            raise RuntimeError(f"taskforge db migrate (multi-host DSN) failed:\n{migrate.stdout}{migrate.stderr}")
        self.sql(
            "SELECT taskforge.tf_register_task_type(task_type => %s, backoff_base_seconds => 0.2, "
            "backoff_cap_seconds => 1, backoff_jitter => 0)",
            (TASK_TYPE,),
        )
        self.sql(
            f"CREATE TABLE {EFFECTS_TABLE} (key text NOT NULL, task_id bigint NOT NULL, "
            "attempt_number int NOT NULL, PRIMARY KEY (task_id, attempt_number))"
        )
        self.worker = self.harness.worker(
            "--concurrency",
            str(CONCURRENCY),
            "--lease-seconds",
            str(self.lease_seconds),
            "--heartbeat-seconds",
            "1",
            "--grace-seconds",
            "10",
            "--log-format",
            "json",
            "--import",
            str(HELPERS / "ha_handlers.py"),
            name="ha-worker",
            log_level="INFO",
        )
        self.scheduler = self.harness.scheduler(
            "--max-interval-seconds", "0.5", "--heartbeat-seconds", "1", name="ha-scheduler", log_level="INFO"
        )
        self.console = self.harness.console("--port", str(self.console_port), "--threads", "4", name="ha-console")
        self.wait(lambda: self.sql_value("SELECT count(*) FROM taskforge.tf_workers WHERE liveness = 'alive'") == 1,
                  "the worker to register")  # fmt: skip
        self.wait(self._console_ok, "the console to answer /healthz")
        self.poller.start()
        self.submitter = self.harness.start(
            [
                sys.executable,
                str(HELPERS / "ha_submitter.py"),
                "--dsn",
                self.dsn,
                "--acks",
                str(self.acks),
                "--prefix",
                self.prefix,
                "--interval",
                str(SUBMIT_INTERVAL),
                "--seed",
                str(SEED),
            ],
            kind="submitter",
            name="ha-submitter",
        )

    def _console_ok(self) -> bool:
        try:
            with urllib.request.urlopen(self.poller.url, timeout=5) as answer:
                return answer.status == 200
        except OSError:
            return False

    # --- SQL -------------------------------------------------------------------------------------

    # --- what the processes did ------------------------------------------------------------------

    def acknowledged(self) -> dict[str, dict[str, Any]]:
        return read_acks(self.acks)

    def first_ack_after(self, after: float) -> float | None:
        return min((a["at"] for a in self.acknowledged().values() if a["at"] > after), default=None)

    def first_finalize_after(self, after: float) -> float | None:
        assert self.worker is not None
        return min((f.at for f in read_finalizes(self.worker.log()) if f.at > after), default=None)

    # --- the fault -------------------------------------------------------------------------------

    def failover(self, load_seconds: float) -> dict[str, Any]:
        """Let the load run ``load_seconds`` (and until a task is running), kill the primary
        node, and measure the promotion and each process's resumption (module docstring)."""
        time.sleep(load_seconds)
        self.wait(lambda: self.sql_value(RUNNING) > 0, "a task to be running at the kill")
        old = self.cluster.primary()
        new = self.cluster.other(old)
        acks_before = len(self.acknowledged())
        killed = old.kill()
        kill_at = old.killed_at or time.time()
        kill_mono = time.monotonic()
        self.cluster.wait(new.writable, f"{new.name} to accept writes", PROMOTION_TIMEOUT)
        promoted = time.time()
        figures: dict[str, Any] = {
            "killed_node": old.name,
            "killed_pids": len(killed),
            "new_primary": new.name,
            "acknowledged_submits_before": acks_before,
            "promotion_seconds": round(promoted - kill_at, 2),
        }
        resumed: dict[str, float | None] = {}

        def resumed_all() -> bool:
            if "submitter" not in resumed and (at := self.first_ack_after(promoted)) is not None:
                resumed["submitter"] = at
            if "worker" not in resumed and (at := self.first_finalize_after(promoted)) is not None:
                resumed["worker"] = at
            if "scheduler" not in resumed and self.sql_value(SCHEDULER_BEAT_AFTER, {"after": promoted}) > 0:
                resumed["scheduler"] = time.time()
            if "console" not in resumed and (at := self.poller.first_ok_after(promoted)) is not None:
                resumed["console"] = at
            return len(resumed) == 4

        self.wait(resumed_all, "every process to work on the new primary", RESUME_TIMEOUT)
        figures["resumed_seconds_after_kill"] = {name: round(at - kill_at, 2) for name, at in sorted(resumed.items())}
        figures["console_failures"] = self.poller.failures_after(kill_at)
        figures["seconds_to_resume_all"] = round(time.monotonic() - kill_mono, 2)
        figures["kill_at"] = kill_at
        figures["promoted_at"] = promoted
        self.failovers.append(figures)
        return figures

    def rejoin(self, node: PatroniNode) -> float:
        """Start the killed ``node`` again; the seconds until it streams from the new primary
        (as its synchronous standby in synchronous mode)."""
        start = time.monotonic()
        node.start()
        self.cluster.wait(self.cluster.replica_ready, f"{node.name} to rejoin as a replica", 120)
        return round(time.monotonic() - start, 2)

    # --- the end ---------------------------------------------------------------------------------

    def finish(self, after_seconds: float) -> Verdict:
        """Let the load run ``after_seconds`` more, stop the submitter (SIGTERM), wait until
        every task is terminal, and judge (also: no process exited or was started again)."""
        time.sleep(after_seconds)
        assert self.submitter is not None
        self.submitter.signal(signal.SIGTERM)
        code = self.submitter.wait(150)
        self.submitter.killed = True  # (it was stopped on purpose)
        lines = [line for line in self.submitter.log().splitlines() if line.startswith("{")]
        self.submitter_figures = json.loads(lines[-1]) if lines else {}
        if code != 0:
            raise AssertionError(f"the submitter exited with {code}:\n{self.submitter.tail(30)}")
        drain = self.wait(lambda: self.sql_value(PENDING) == 0, "every task to end", DRAIN_TIMEOUT)
        self.sql("SELECT 1")
        assert self._admin is not None
        planned = {f"{self.prefix}-{n}": payload_for(self.prefix, n, SEED) for n in range(len(self.acknowledged()) + 1)}
        assert self.worker is not None
        verdict = judge(
            read_snapshot(self._admin),
            self.acknowledged(),
            read_finalizes(self.worker.log()),
            read_runs(self.run_log),
            planned,
        )
        workers, schedulers, workers_alive, schedulers_alive = self.sql(PROCESS_ROWS)[0]
        if (workers, schedulers, workers_alive, schedulers_alive) != (1, 1, 1, 1):
            verdict.problems.append(
                f"process records: {workers} worker(s) ({workers_alive} alive), {schedulers} scheduler(s) "
                f"({schedulers_alive} alive); expected the one of each started at the beginning, alive"
            )
        verdict.problems.extend(self.unexpected_exits())
        restarted = [p.name for p in self.harness.processes if p.kind != "submitter" and not p.alive()]
        if restarted:
            verdict.problems.append(f"not running any more: {restarted}")
        kills = [f["kill_at"] for f in self.failovers] + [float("inf")]
        for failover, next_kill in zip(self.failovers, kills[1:], strict=True):
            failover["console_answers_not_200"] = self.poller.failures_since(failover["kill_at"])
            # Once it answered 200 on the new primary, every answer until the next kill must be 200.
            back = self.poller.first_ok_after(failover["promoted_at"])
            later = [f for f in self.poller.failed if back is not None and back < f[1] < next_kill]
            if back is None or later:
                verdict.problems.append(
                    f"the console's /healthz failed after it had answered 200 on the new primary "
                    f"({failover['new_primary']}, {failover['promotion_seconds']} s after the kill); its answers "
                    f"but 200 since the kill [sent, answered, status, body]: {failover['console_answers_not_200']}"
                )
        self.drain_seconds = round(drain, 2)
        self.verdict = verdict
        return verdict

    def summary(self) -> dict[str, Any]:
        failovers = [{k: v for k, v in f.items() if k not in ("kill_at", "promoted_at")} for f in self.failovers]
        return {
            "mode": "synchronous" if self.synchronous else "asynchronous",
            "replication_lag_seconds": self.cluster.replication_lag,
            "server": self.cluster.version(),
            "setup": {
                "dsn": self.dsn,
                "lease_seconds": self.lease_seconds,
                "worker_concurrency": CONCURRENCY,
                "submit_interval_seconds": SUBMIT_INTERVAL,
                "patroni": {"ttl": TTL, "loop_wait": LOOP_WAIT, "retry_timeout": RETRY_TIMEOUT},
            },
            "failovers": failovers,
            "submitter": self.submitter_figures,
            "drain_seconds": getattr(self, "drain_seconds", None),
            "verdict": self.verdict.as_dict() if self.verdict else None,
            "problems": self.verdict.problems[:50] if self.verdict else None,
            "wall_seconds": round(time.monotonic() - self.started, 1),
        }

    def close(self) -> dict[str, int | None]:
        """Stop every process (SIGTERM), then the cluster; return the exit codes."""
        self.poller.stop.set()
        codes = self.harness.stop_all(timeout=30)
        self.close_admin()
        self.cluster.close()
        return codes
