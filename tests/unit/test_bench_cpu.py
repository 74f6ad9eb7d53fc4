"""CPU per task of a trial (taskforge.benchmarks.cpu): /proc stat parsing, process groups, and
the per-task division, on made-up /proc trees."""

from __future__ import annotations

import os
from pathlib import Path
from types import SimpleNamespace

import pytest

from taskforge.benchmarks import cpu

TICK = os.sysconf("SC_CLK_TCK")


def _stat(proc: Path, pid: int, pgrp: int, utime: int, stime: int, comm: str = "py thon) x") -> None:
    # pid (comm) state ppid pgrp session tty tpgid flags minflt cminflt majflt cmajflt utime stime ...
    (proc / str(pid)).mkdir(exist_ok=True)
    (proc / str(pid) / "stat").write_text(f"{pid} ({comm}) S 1 {pgrp} {pgrp} 0 -1 0 0 0 0 0 {utime} {stime} 0 0 20\n")


class _Conn:
    def __init__(self, pids: list[int]) -> None:
        self.pids = pids

    def execute(self, query: str) -> SimpleNamespace:
        assert query == cpu.BACKENDS
        return SimpleNamespace(fetchall=lambda: [(pid,) for pid in self.pids])


def _harness(*pids: int, dead: tuple[int, ...] = ()) -> SimpleNamespace:
    return SimpleNamespace(processes=[SimpleNamespace(pid=pid, alive=lambda pid=pid: pid not in dead) for pid in pids])


def test_workers_are_whole_process_groups_and_backends_come_from_the_database(tmp_path):
    (tmp_path / "self").mkdir()
    (tmp_path / "self" / "stat").write_text("")
    _stat(tmp_path, 100, 100, 3 * TICK, TICK)  # a worker, leader of its group
    _stat(tmp_path, 101, 100, TICK, 0)  # its child, same group (a wrapper's real process)
    _stat(tmp_path, 200, 200, 50 * TICK, 0)  # a process of another group: not counted
    _stat(tmp_path, 300, 300, 7 * TICK, TICK)  # a backend
    (tmp_path / "bogus").mkdir()
    snap = cpu.snapshot(_Conn([300, 301]), _harness(100), tmp_path)  # 301 has gone: left out
    assert snap == cpu.CpuSnapshot({100: 4.0, 101: 1.0}, {300: 8.0})


def test_a_dead_worker_is_not_a_group_to_count(tmp_path):
    (tmp_path / "self").mkdir()
    (tmp_path / "self" / "stat").write_text("")
    _stat(tmp_path, 100, 100, TICK, 0)
    assert cpu.snapshot(_Conn([]), _harness(100, dead=(100,)), tmp_path) == cpu.CpuSnapshot({}, {})


def test_no_proc_no_figure(tmp_path):
    assert cpu.snapshot(_Conn([]), _harness(), tmp_path) is None
    assert cpu.per_task(None, cpu.CpuSnapshot({}, {}), 10) is None
    assert cpu.per_task(cpu.CpuSnapshot({}, {}), cpu.CpuSnapshot({}, {}), 0) is None


def test_per_task_divides_the_growth_and_counts_newcomers_whole_and_leavers_not_at_all():
    before = cpu.CpuSnapshot({1: 1.0, 2: 2.0, 4: 3.0}, {10: 5.0, 12: 1.0})
    after = cpu.CpuSnapshot({1: 1.5, 2: 2.5, 3: 0.5}, {10: 6.0, 11: 0.25})
    assert cpu.per_task(before, after, 1000) == pytest.approx(
        {"worker_us": 1500.0, "backend_us": 1250.0, "total_us": 2750.0}
    )


@pytest.mark.skipif(not os.path.exists("/proc/self/stat"), reason="needs Linux /proc")
def test_this_process_group_burns_measurable_cpu():
    me = SimpleNamespace(processes=[SimpleNamespace(pid=os.getpgrp(), alive=lambda: True)])
    before = cpu.snapshot(_Conn([]), me)
    deadline = os.times().elapsed + 0.2
    while os.times().elapsed < deadline:
        pass
    after = cpu.snapshot(_Conn([]), me)
    assert cpu.per_task(before, after, 1)["worker_us"] > 50_000


def test_the_report_table_has_e1_the_trials_beside_a_peer_and_the_peer():
    from taskforge.benchmarks.results import TrialResult
    from taskforge.benchmarks.sections import cpu_section
    from taskforge.benchmarks.summary import summarize

    def trial(workload: str, workers: int, rate: float, total: float, peer: str | None = None) -> TrialResult:
        return TrialResult(
            workload=workload,
            block=1,
            workers=workers,
            concurrency=1,
            tasks=100,
            ok=True,
            throughput=rate,
            options={"peer": peer, "mode": "single"} if peer else {},
            metrics={"cpu_per_task": {"worker_us": total / 4, "backend_us": 3 * total / 4, "total_us": total}},
        )

    summary = summarize(
        [
            trial("e1", 4, 1800, 900),
            trial("e1-beside-graphile-worker", 4, 1700, 1000),
            trial("peer-graphile-worker", 4, 1100, 1300, "graphile-worker"),
        ],
        [],
    )
    lines = cpu_section(summary, 2)
    assert lines[0] == "## CPU per task"
    assert "| TaskForge E1 | 4 | 1,800 | 225 | 675 | 900 | 2,222 |" in lines
    assert "| TaskForge E1 beside graphile-worker | 4 | 1,700 | 250 | 750 | 1,000 | 2,000 |" in lines
    assert "| graphile-worker | 4 | 1,100 | 325 | 975 | 1,300 | 1,538 |" in lines
    assert cpu_section(summarize([], []), 2) == []  # no figure, no table
