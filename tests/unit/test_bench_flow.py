"""The flow workload's pure parts (taskforge.benchmarks.flow): the tf_submit_many requests of each
variant, the order check of chains and ordering keys, and the ratios to e1-plain in the summary
and the report. No database."""

from __future__ import annotations

import datetime as dt

import pytest

from taskforge import sql
from taskforge.benchmarks import flow
from taskforge.benchmarks.results import TrialResult
from taskforge.benchmarks.sections import flow_section
from taskforge.benchmarks.summary import summarize
from taskforge.benchmarks.trust import AttemptRow

T0 = dt.datetime(2026, 1, 1, tzinfo=dt.UTC)


def at(seconds: float) -> dt.datetime:
    return T0 + dt.timedelta(seconds=seconds)


def _flat(calls: list[list[dict]]) -> list[dict]:
    return [r for call in calls for r in call]


# --- the requests ---------------------------------------------------------------------------------


def test_plain_requests_carry_no_flow_field():
    calls = flow.calls(flow.FlowShape("plain"), "noop", {"n": 1}, 5, "bench")
    assert calls == [[{"task_type": "noop", "payload": {"n": 1}, "queue": "bench"}] * 5]


def test_chains_depend_on_the_previous_task_and_never_straddle_a_call():
    # 3 chains of 4 (the last one of 2), at most 9 requests a call: chains 1 and 2 in the first.
    calls = flow.calls(flow.FlowShape("chain", group=4), "noop", {}, 10, "bench", max_per_call=9)
    assert [len(c) for c in calls] == [8, 2]
    positions = [[r.get("depends_on_positions") for r in call] for call in calls]
    assert positions == [[None, [0], [1], [2], None, [4], [5], [6]], [None, [0]]]
    # every position names an EARLIER element of the same call (tf_submit_many's rule)
    for call in calls:
        for i, r in enumerate(call):
            assert all(0 <= p < i for p in r.get("depends_on_positions", []))
    with pytest.raises(ValueError, match="does not fit"):
        flow.calls(flow.FlowShape("chain", group=10), "noop", {}, 10, "bench", max_per_call=9)


def test_full_size_chains_are_fifty_chains_of_a_hundred_in_one_call():
    requests = _flat(flow.calls(flow.FlowShape("chain", group=100), "noop", {}, 5000, "bench"))
    heads = [i for i, r in enumerate(requests) if "depends_on_positions" not in r]
    assert len(requests) == 5000 and heads == list(range(0, 5000, 100))
    # 20,000 (batched) needs two calls of at most tf_submit_many's 10,000
    assert [len(c) for c in flow.calls(flow.FlowShape("chain"), "noop", {}, 20000, "bench")] == [10000, 10000]


def test_keys_of_rate_ckeys_and_ordering():
    rate = _flat(flow.calls(flow.FlowShape("rate"), "noop", {}, 3, "bench"))
    assert {r["rate_key"] for r in rate} == {"bench-rate"}
    ckeys = _flat(flow.calls(flow.FlowShape("ckeys", keys=3), "noop", {}, 7, "bench"))
    assert [r["concurrency_key"][-1] for r in ckeys] == list("0120120")
    ordering = _flat(flow.calls(flow.FlowShape("ordering", group=3), "noop", {}, 7, "bench"))
    assert [r["ordering_key"] for r in ordering] == ["bench-ord-0"] * 3 + ["bench-ord-1"] * 3 + ["bench-ord-2"]
    assert all(
        set(r) <= {"task_type", "payload", "queue", "rate_key", "concurrency_key", "ordering_key"}
        for r in rate + ckeys + ordering
    )
    with pytest.raises(ValueError, match="unknown flow variant"):
        flow.FlowShape("fast")


def test_only_rate_sets_a_limit_before_the_submit_and_it_never_binds():
    assert flow.setup(flow.FlowShape("plain")) == flow.setup(flow.FlowShape("ckeys")) == []
    [(statement, params)] = flow.setup(flow.FlowShape("rate"))
    assert statement == sql.SET_RATE_LIMIT
    assert params == {"rate_key": "bench-rate", "per_second": 1e6, "burst": 1_000_000}


def test_workload_names():
    assert flow.workload("chain") == "e1-chain" and flow.workload("plain", batched=True) == "e1-plain-batched"


# --- the order check ------------------------------------------------------------------------------


def _ran(task_id: int, start: float, finish: float, state: str = "SUCCEEDED", n: int = 1) -> AttemptRow:
    return AttemptRow(task_id, n, state, at(start), None, at(finish))


def test_sequences_are_groups_of_consecutive_ids_for_chain_and_ordering_only():
    assert flow.sequences(flow.FlowShape("chain", group=2), [5, 6, 7]) == [[5, 6], [7]]
    assert flow.sequences(flow.FlowShape("ordering", group=3), [5, 6, 7]) == [[5, 6, 7]]
    assert flow.sequences(flow.FlowShape("ckeys"), [5, 6, 7]) == []
    assert flow.checks(flow.FlowShape("rate"), [5, 6, 7], []) == []


def test_sequence_order_holds_when_each_task_starts_at_or_after_its_predecessor_finished():
    # task 2 starts at the instant task 1 finishes (one finalize-and-claim call stamps both)
    attempts = [_ran(1, 0, 1), _ran(2, 1, 2), _ran(3, 2.5, 3)]
    [check] = flow.checks(flow.FlowShape("chain", group=3), [1, 2, 3], attempts)
    assert check.name == "sequence_order" and check.ok, check.detail


def test_sequence_order_fails_on_overlap_and_on_a_missing_attempt():
    overlap = [_ran(1, 0, 1), _ran(2, 0.5, 2)]
    check = flow.check_sequence_order([[1, 2]], overlap)
    assert not check.ok and "task 2" in check.detail
    assert not flow.check_sequence_order([[1, 2]], [_ran(1, 0, 1)]).ok
    # the first attempt's start counts, the SUCCEEDED attempt's finish
    retried = [_ran(1, 0, 1, "FAILED"), _ran(1, 1.5, 2, n=2), _ran(2, 1.8, 3)]
    assert not flow.check_sequence_order([[1, 2]], retried).ok


# --- the ratios -----------------------------------------------------------------------------------


def _trial(variant: str, rate: float, batched: bool = False, ok: bool = True) -> TrialResult:
    shape = {"variant": variant, "group": 100, "keys": 10}
    return TrialResult(
        workload=flow.workload(variant, batched),
        block=1,
        workers=1,
        concurrency=64 if batched else 1,
        tasks=20000 if batched else 5000,
        ok=ok,
        throughput=rate,
        options={"flow": shape},
    )


def test_summary_divides_each_variants_median_by_plain_of_the_same_mode():
    trials = [
        _trial("plain", 800),
        _trial("plain", 1000),
        _trial("plain", 900),
        _trial("chain", 600),
        _trial("chain", 720),
        _trial("chain", 9999, ok=False),  # failed trials are never counted
        _trial("rate", 450),
        _trial("plain", 10000, batched=True),
        _trial("ckeys", 5000, batched=True),
    ]
    rows = {(r["variant"], r["mode"]): r for r in summarize(trials, [])["flow"]}
    assert set(rows) == {
        ("plain", "one slot"),
        ("chain", "one slot"),
        ("rate", "one slot"),
        ("plain", "batched"),
        ("ckeys", "batched"),
    }
    assert rows[("plain", "one slot")]["variant_over_plain"] == pytest.approx(1.0)
    chain = rows[("chain", "one slot")]
    assert chain["median"] == 660 and chain["e1_plain"] == 900 and chain["trials"] == 2
    assert chain["variant_over_plain"] == pytest.approx(660 / 900)
    assert rows[("rate", "one slot")]["variant_over_plain"] == pytest.approx(0.5)
    assert rows[("ckeys", "batched")]["variant_over_plain"] == pytest.approx(0.5)
    assert rows[("ckeys", "batched")]["concurrency"] == 64


def test_a_variant_without_a_plain_figure_has_no_ratio_and_the_report_shows_both():
    summary = summarize([_trial("chain", 600), _trial("plain", 900), _trial("ordering", 300, batched=True)], [])
    rows = {(r["variant"], r["mode"]): r for r in summary["flow"]}
    assert rows[("ordering", "batched")]["variant_over_plain"] is None
    text = "\n".join(flow_section(summary))
    assert "## Flow control and dependencies" in text
    assert (
        "| e1-chain | dependency chains (each task depends on the previous one of its chain) | 600.0 | 0.67 |" in text
    )
    assert "| e1-ordering |" in text and "| e1-rate |" not in text
    assert flow_section(summarize([], [])) == []
