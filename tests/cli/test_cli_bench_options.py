"""`taskforge bench` refuses options that do not apply, and values out of range or not finite, as
one line naming the option (exit code 2) before it starts a server or a process."""

from __future__ import annotations

import pytest
from click.testing import CliRunner

from taskforge.cli import main


@pytest.mark.parametrize(
    ("args", "line"),
    [
        (["soak", "--minutes", "nan"], "taskforge: --minutes: must be a finite number of minutes, got 'nan'"),
        (["soak", "--minutes", "0.01"], "taskforge: --minutes: must be between 0.1 and 1440 minutes, got '0.01'"),
        (["soak", "--hold-snapshot", "inf"], "taskforge: --hold-snapshot: must be a finite number of seconds"),
        (["soak", "--quick", "--hold-snapshot", "20"], "taskforge: --hold-snapshot: must end before the soak does"),
        (["soak", "--minutes", "10", "--hold-snapshot", "360"], "taskforge: --hold-snapshot: must end before"),
        (["soak", "--minutes", "0.9", "--hold-snapshot", "32.4"], "taskforge: --hold-snapshot: must end before"),
        (["soak", "--trials", "2"], "taskforge: --trials: does not apply to the soak"),
        (["soak", "--hold-seconds", "5"], "taskforge: --hold-seconds: does not apply to the soak"),
        (["soak", "--peers", "pgqueuer"], "taskforge: --peers: does not apply to the soak"),
        (["soak", "--no-peer"], "taskforge: --peer/--no-peer: does not apply to the soak"),
        (["soak", "--workers", "1,2"], "taskforge: --workers: the soak runs one worker count"),
        (["e1", "--minutes", "5"], "taskforge: --minutes: applies to the soak only"),
        (["longtx", "--hold-seconds", "nan"], "taskforge: --hold-seconds: must be a finite number of seconds"),
    ],
)
def test_bench_option_errors_are_one_line_and_start_nothing(args, line, tmp_path):
    out = tmp_path / "bundle"
    result = CliRunner().invoke(main, ["bench", *args, "--out", str(out), "--dsn", "host=127.0.0.1 port=1"])
    assert result.exit_code == 2, result.output
    assert result.output.startswith(line), result.output
    assert not out.exists()
