"""The scheduler sleeps until the earliest of its deadlines, the next periodic tick included
(the seconds come from the database; here they are given)."""

from __future__ import annotations

import pytest

from taskforge.scheduler import WAKE_AFTER_DEADLINE, Scheduler, SchedulerConfig, TickResult


def test_scheduler_sleeps_until_the_next_periodic_tick():
    s = Scheduler("dbname=unused", SchedulerConfig(max_interval_seconds=300))
    assert s._sleep_seconds(TickResult(0, 0, 0, None, None, seconds_to_next_tick=12.5), 0) == pytest.approx(
        12.5 + WAKE_AFTER_DEADLINE
    )
    assert s._sleep_seconds(TickResult(0, 0, 0, 30.0, 20.0, seconds_to_next_tick=12.5), 0) == pytest.approx(
        12.5 + WAKE_AFTER_DEADLINE
    ), "the earliest of lease deadline, backoff end and next tick"
    assert s._sleep_seconds(TickResult(0, 0, 0, 3.0, None, seconds_to_next_tick=12.5), 0) == pytest.approx(
        3.0 + WAKE_AFTER_DEADLINE
    )
    assert s._sleep_seconds(TickResult(0, 0, 0, None, None, seconds_to_next_tick=None), 0) == 300
    # A tick already due that this pass could not take (another scheduler holds it) backs off.
    assert s._sleep_seconds(TickResult(0, 0, 0, None, None, seconds_to_next_tick=-0.1), 2) == pytest.approx(
        WAKE_AFTER_DEADLINE * 4
    )
