"""Peak RSS of benchmark processes (taskforge.benchmarks.memory): VmHWM parsing and pooling, on
made-up /proc texts."""

from __future__ import annotations

import os

import pytest

from taskforge.benchmarks import memory

STATUS = """Name:\tpython3
State:\tS (sleeping)
VmPeak:\t  412340 kB
VmSize:\t  401220 kB
VmHWM:\t   52344 kB
VmRSS:\t   50112 kB
"""


def test_vmhwm_is_read_in_kib():
    assert memory.parse_vmhwm_kib(STATUS) == 52344
    assert memory.parse_vmhwm_kib("Name:\tx\nVmRSS:\t 10 kB\n") is None
    assert memory.parse_vmhwm_kib("VmHWM:\t 10 MB\n") is None  # not the unit the kernel writes


def test_peak_rss_of_a_live_and_a_missing_process(tmp_path):
    (tmp_path / "123").mkdir()
    (tmp_path / "123" / "status").write_text(STATUS)
    assert memory.process_peak_rss_kib(123, tmp_path) == 52344
    assert memory.process_peak_rss_kib(456, tmp_path) is None


@pytest.mark.skipif(not os.path.exists("/proc/self/status"), reason="needs Linux /proc")
def test_peak_rss_of_this_process_is_positive():
    assert (memory.process_peak_rss_kib(os.getpid()) or 0) > 1000


def test_per_process_values_are_pooled_over_trials_by_name_prefix():
    trials = [{"worker-1": 40960, "worker-2": 51200, "scheduler-1": 99999}, {"worker-1": None, "worker-3": 30720}]
    assert memory.per_process_mib(trials, "worker-") == [40.0, 50.0, 30.0]
    assert memory.per_process_mib(trials, "peer-") == []
