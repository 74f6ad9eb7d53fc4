"""The peers' arithmetic (taskforge.benchmarks.peers and their summary), on made-up numbers: no
database, no peer installed."""

from __future__ import annotations

import datetime as dt

import pytest

from taskforge.benchmarks import ceiling, stats
from taskforge.benchmarks.peers import NAMES, PEERS, PYTHON_PEERS, base, runtimes
from taskforge.benchmarks.results import CeilingPoint, TrialResult
from taskforge.benchmarks.summary import summarize

T0 = dt.datetime(2026, 1, 1, tzinfo=dt.UTC)


def at(seconds: float) -> dt.datetime:
    return T0 + dt.timedelta(seconds=seconds)


# --- windows -------------------------------------------------------------------------------------


def test_a_polled_end_is_bounded_by_the_last_busy_poll():
    # start at commit (t=0), last poll with work at 0.995 s, first empty poll at 1.001 s
    assert stats.poll_end_bound_seconds(at(0), at(0.995), at(1.001)) == pytest.approx(0.006)
    # the first poll already found nothing: the bound is the whole span
    assert stats.poll_end_bound_seconds(at(0), None, at(0.004)) == pytest.approx(0.004)
    # a busy poll before the start (the warm-up's) does not widen the bound past the start
    assert stats.poll_end_bound_seconds(at(1), at(0.5), at(1.5)) == pytest.approx(0.5)
    with pytest.raises(ValueError):
        stats.poll_end_bound_seconds(at(2), None, at(1))


def test_a_batch_range_must_be_contiguous():
    assert base.Batch(ids=(7, 8, 9, 10)).id_range == (7, 10)
    assert base.Batch(ids=(10, 9, 8)).id_range == (8, 10)
    for ids in ((1, 2, 4), (1, 1, 2), ()):
        with pytest.raises(base.PeerError):
            _ = base.Batch(ids=ids).id_range


def test_batched_ceiling_points_count_rows_not_transactions():
    # 200 pgbench transactions at 100 tps (2 s) that finished 64 rows each, the first cycle none
    assert ceiling.tasks_per_second(199 * 64, 100.0, 200) == pytest.approx(6368.0)
    assert ceiling.tasks_per_second(1000, 500.0, 1000) == pytest.approx(500.0)
    assert ceiling.tasks_per_second(None, 100.0, 200) is None
    assert ceiling.tasks_per_second(10, 100.0, 0) is None
    argv = ceiling.pgbench_argv("pgbench", "finalize_and_claim_batch", 2, 3.0, 32)
    defines = [argv[i + 1] for i, a in enumerate(argv) if a == "-D"]
    assert defines == ["task_ids={}", "attempt_numbers={}", "batch=32"]
    assert argv[argv.index("-c") + 1] == "2" and argv[argv.index("-T") + 1] == "3"


def test_peer_apps_get_a_url_dsn():
    assert runtimes.dsn_url("host=127.0.0.1 port=5432 user=postgres dbname=taskforge_bench_ab12") == (
        "postgresql://postgres@127.0.0.1:5432/taskforge_bench_ab12"
    )
    assert runtimes.dsn_url("host=db user=a@b password='p:w/d' dbname=x sslmode=require") == (
        "postgresql://a%40b:p%3Aw%2Fd@db/x?sslmode=require"
    )
    assert runtimes.dsn_url("host=/run/postgresql user=u dbname=d") == "postgresql://u@/d?host=%2Frun%2Fpostgresql"


def test_every_peer_has_both_modes_and_a_source():
    assert set(NAMES) == {"graphile-worker", "pg-boss", "pgqueuer", "oban", "procrastinate"}
    assert set(PYTHON_PEERS) == {"pgqueuer", "oban", "procrastinate"}
    for peer in PEERS.values():
        single, batched = peer.single_mode(4), peer.batched_mode(64)
        assert (single.kind, single.processes, single.concurrency) == ("single", 4, 1)
        assert (batched.kind, batched.processes) == ("batched", 1) and batched.concurrency > 1
        assert single.source and batched.source and peer.timing
        assert peer.workload(single) == f"peer-{peer.name}" and peer.workload(batched) == f"peer-{peer.name}-batched"
    graphile = PEERS["graphile-worker"].batched_mode(64).settings
    assert graphile["localQueue"] == {"size": 500} and graphile["completeJobBatchDelay"] == 0


# --- summary -------------------------------------------------------------------------------------


def trial(workload: str, workers: int, rate: float, ok: bool = True, **options: object) -> TrialResult:
    concurrency = 64 if "batched" in workload else 1
    return TrialResult(
        workload=workload,
        block=1,
        workers=workers,
        concurrency=concurrency,
        tasks=100,
        ok=ok,
        throughput=rate,
        options=dict(options),
        peak_rss_kib={f"{'peer' if workload.startswith('peer') else 'worker'}-{i + 1}": 51200 for i in range(workers)},
    )


def test_summary_gives_ours_over_each_peer_in_every_mode():
    g = {"peer": "graphile-worker"}
    trials = [
        trial("e1", 1, 1500),
        trial("e1", 4, 2400),
        trial("e1-batched", 1, 30000),
        trial("peer-graphile-worker", 1, 1000, mode="single", **g),
        trial("peer-graphile-worker", 1, 1400, mode="single", **g),
        trial("peer-graphile-worker", 4, 1600, mode="single", **g),
        trial("peer-graphile-worker-batched", 1, 24000, mode="batched", settings={"concurrentJobs": 24}, **g),
        trial("peer-graphile-worker-batched", 1, 99999, ok=False, mode="batched", **g),
    ]
    summary = summarize(trials, [], {"oban": "needs Python >= 3.12"})
    peers = {p["name"]: p for p in summary["peers"]}
    assert set(peers) == {"graphile-worker", "oban"}
    graphile = peers["graphile-worker"]
    assert [r["workers"] for r in graphile["single"]] == [1, 4]
    assert graphile["single"][0]["median"] == 1200 and graphile["single"][0]["ours_over_peer"] == pytest.approx(1.25)
    assert graphile["single"][1]["ours_over_peer"] == pytest.approx(1.5)
    assert graphile["batched"]["median"] == 24000 and graphile["batched"]["ours_over_peer"] == pytest.approx(1.25)
    assert graphile["batched_settings"] == {"concurrentJobs": 24}
    assert graphile["single"][0]["rss_mib"] == 50.0
    assert peers["oban"]["skipped"] == "needs Python >= 3.12" and not peers["oban"]["single"]
    assert summary["e1"][0]["rss_mib"] == 50.0 and summary["e1_batched"][0]["concurrency"] == 64


def test_summary_ceiling_ratios_use_tasks_per_second():
    def point(script: str, clients: int, tasks: float) -> CeilingPoint:
        return CeilingPoint(
            script=script, clients=clients, seconds=3, block=1, ok=True, cycles_per_second=1.0, tasks_per_second=tasks
        )

    points = [
        point("skip_locked", 1, 1600),
        point("skip_locked_one", 1, 2500),
        point("skip_locked_batch", 1, 36000),
        point("taskforge", 1, 800),
        point("finalize_and_claim", 1, 2000),
        point("finalize_and_claim_batch", 1, 18000),
        point("skip_locked_one", 4, 5000),
        point("finalize_and_claim", 4, 4500),
    ]
    summary = summarize([trial("e1", 1, 1500), trial("e1-batched", 1, 27000)], points)
    one, four = summary["ceiling"]
    assert one["finalize_and_claim_over_skip_locked_one"] == pytest.approx(0.8)
    assert one["finalize_and_claim_batch_over_skip_locked_batch"] == pytest.approx(0.5)
    assert one["e1_over_skip_locked_one"] == pytest.approx(0.6)
    assert one["e1_batched_over_skip_locked_batch"] == pytest.approx(0.75)
    assert four["finalize_and_claim_over_skip_locked_one"] == pytest.approx(0.9)
    assert four["e1_batched"] is None and four["skip_locked_batch"] is None


def test_summary_and_report_give_the_ladder_from_the_bare_pattern_to_ours():
    from taskforge.benchmarks.sections import ceiling_section

    def point(script: str, tasks: float) -> CeilingPoint:
        return CeilingPoint(
            script=script, clients=1, seconds=3, block=1, ok=True, cycles_per_second=1.0, tasks_per_second=tasks
        )

    points = [
        point("skip_locked_one", 3000),
        point("skip_locked_history_one", 2400),
        point("taskforge_tables_one", 1500),
        point("finalize_and_claim", 900),
        point("skip_locked_batch", 40000),
        point("skip_locked_history_batch", 30000),
        point("taskforge_tables_batch", 16000),
        point("finalize_and_claim_batch", 12000),
    ]
    summary = summarize([trial("e1", 1, 700)], points)
    (one,) = summary["ceiling"]
    assert one["skip_locked_history_one_over_skip_locked_one"] == pytest.approx(0.8)
    assert one["taskforge_tables_one_over_skip_locked_one"] == pytest.approx(0.5)
    assert one["finalize_and_claim_over_taskforge_tables_one"] == pytest.approx(0.6)
    assert one["taskforge_tables_batch_over_skip_locked_batch"] == pytest.approx(0.4)
    assert one["finalize_and_claim_batch_over_taskforge_tables_batch"] == pytest.approx(0.75)
    text = "\n".join(ceiling_section(summary, 64))
    assert "What each guarantee costs" in text
    assert "| 1 | one task a statement | 3,000 | 2,400 | 1,500 | 900 | 0.80 | 0.50 | 0.30 |" in text
    assert "| 1 | batched, B = 64 | 40,000 | 30,000 | 16,000 | 12,000 | 0.75 | 0.40 | 0.30 |" in text


def test_every_ceiling_script_and_setup_file_exists():
    from taskforge.benchmarks.database import bench_dir

    for name, script in ceiling.SCRIPTS.items():
        for file in (script.setup, script.cycle, script.also):
            assert file is None or (bench_dir() / "pgbench" / file).is_file(), (name, file)


def test_bench_takes_several_workloads_joined_by_commas():
    import click

    from taskforge.cli.bench import _workloads

    assert _workloads(None, None, "e1") == ("e1",)
    assert _workloads(None, None, "Ceiling, peer,ceiling") == ("ceiling", "peer")
    for bad in ("e9", "all,e1", " , "):
        with pytest.raises(click.BadParameter):
            _workloads(None, None, bad)
