"""The CLI's table and key/value rendering (taskforge.output, drawn by rich): the plain form is
the one docs/cli.md shows, byte for byte; the terminal form adds styles only."""

from __future__ import annotations

import datetime as dt
import decimal
import re

from taskforge.output import format_value, key_values, table, to_json

ROWS = [
    {"task_id": 5, "task_type": "echo", "priority": 0, "seconds": 1.5, "finished_at": None, "ok": True,
     "payload": {"a": [1, 2]}, "error": "line1\nline2"},
    {"task_id": 123456, "task_type": "noop", "priority": -10, "seconds": None,
     "finished_at": dt.datetime(2026, 11, 29, 23, 36, 29, 123456, tzinfo=dt.UTC), "ok": False, "payload": {},
     "error": "x" * 70},
]  # fmt: skip
COLUMNS = ["task_id", ("task_type", "type"), ("priority", "pri"), "seconds", ("finished_at", "finished"), "ok",
           "payload", "error"]  # fmt: skip

PLAIN = """\
TASK_ID  TYPE  PRI  SECONDS  FINISHED                   OK   PAYLOAD        ERROR
-------  ----  ---  -------  -------------------------  ---  -------------  ------------------------------------------------------------
      5  echo    0    1.500  -                          yes  {"a": [1, 2]}  line1\\nline2
 123456  noop  -10        -  2026-11-29 23:36:29+00:00  no   {}             xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx…"""  # noqa: E501


def test_plain_table_is_aligned_text_with_numbers_right_aligned():
    assert table(ROWS, COLUMNS, terminal=False) == PLAIN


def test_not_a_terminal_is_the_default_under_pytest():
    assert table(ROWS, COLUMNS) == PLAIN


def test_terminal_table_adds_styles_and_nothing_else():
    styled = table(ROWS, COLUMNS, terminal=True)
    assert "\x1b[" in styled
    without_styles = re.sub(r"\x1b\[[0-9;]*m", "", styled)
    assert [line.rstrip() for line in without_styles.splitlines()] == PLAIN.splitlines()


def test_empty_table_is_the_given_text():
    assert table([], COLUMNS, empty="  (none yet)") == "  (none yet)"


def test_wide_characters_are_aligned_by_terminal_cells():
    out = table([{"queue": "日本", "n": 1}, {"queue": "ab", "n": 22}], ["queue", "n"], terminal=False)
    assert out.splitlines() == ["QUEUE   N", "-----  --", "日本    1", "ab     22"]


def test_key_values_aligns_values():
    pairs = [("task_id", 5), ("cancel_reason", None), ("scheduled_at", dt.datetime(2026, 1, 2, 3, 4, 5, tzinfo=dt.UTC))]
    assert key_values(pairs, terminal=False) == (
        "task_id:       5\ncancel_reason: -\nscheduled_at:  2026-01-02 03:04:05+00:00"
    )


def test_markup_and_emoji_codes_in_values_are_printed_as_they_are():
    out = table([{"name": "[bold]x[/bold] :smile:"}], ["name"], terminal=True)
    assert "[bold]x[/bold] :smile:" in out


def test_format_value_and_json():
    assert format_value(decimal.Decimal("2.5")) == "2.5"
    assert format_value("a" * 10, width=5) == "aaaa…"
    assert to_json({"at": dt.datetime(2026, 1, 2, tzinfo=dt.UTC), "n": decimal.Decimal("1.5")}) == (
        '{"at": "2026-01-02T00:00:00+00:00", "n": 1.5}'
    )
