"""The CLI's table and key/value rendering (taskforge.output, drawn by rich): the plain form is
the one docs/cli.md shows, byte for byte; the terminal form adds styles only."""

from __future__ import annotations

import datetime as dt
import decimal
import json
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


#: Characters a terminal acts on: C0 controls, DEL, C1 controls (U+009B is CSI), the line and
#: paragraph separators, and the bidirectional controls (U+202E reverses what follows).
HOSTILE = (
    "a\x1b[2Jb\x1b]0;title\x07c\x08d\re\tf\x00g\x7fh\x85i\x9b31mj\u2028k\u2029l"
    "\u202am\u202bn\u202co\u202dp\u202eq\u2066r\u2067s\u2068t\u2069u\u200ev\u200fw\u061cx"
)
ESCAPED = (
    "a\\x1b[2Jb\\x1b]0;title\\x07c\\x08d\\re\\tf\\x00g\\x7fh\\x85i\\x9b31mj\\u2028k\\u2029l"
    "\\u202am\\u202bn\\u202co\\u202dp\\u202eq\\u2066r\\u2067s\\u2068t\\u2069u\\u200ev\\u200fw\\u061cx"
)


def _raw_controls(text: str) -> list[str]:
    """Characters of ``text`` that reach a terminal as controls (the styles of the terminal form
    aside)."""
    text = re.sub(r"\x1b\[[0-9;]*m", "", text)
    return [ch for ch in text if ch in HOSTILE and not ch.isalnum() and ch not in "[];"]


def test_cells_and_values_escape_terminal_controls_and_bidi_overrides():
    assert format_value(HOSTILE, width=None) == ESCAPED
    assert format_value("line1\nline2") == "line1\\nline2"
    for terminal in (False, True):
        cells = table([{"reason": HOSTILE, "n": 1}], ["reason", "n"], width=None, terminal=terminal)
        assert _raw_controls(cells) == [] and ESCAPED in cells
        values = key_values([("cancel_reason", HOSTILE)], terminal=terminal)
        assert _raw_controls(values) == [] and ESCAPED in values
    # A cut cell is cut after escaping: the escapes count towards the width.
    assert format_value("\x1b" * 10, width=9) == "\\x1b\\x1b…"
    # Letters of every script, symbols and emoji (with their joiners) are left alone.
    friendly = "héllo 日本 עברית ‍👩‍💻 ✓"
    assert format_value(friendly) == friendly


def test_json_escapes_terminal_controls_and_bidi_overrides_and_keeps_other_text():
    text = to_json({HOSTILE: [HOSTILE], "name": "héllo 日本 👩‍💻"})
    assert _raw_controls(text) == []
    assert json.loads(text) == {HOSTILE: [HOSTILE], "name": "héllo 日本 👩‍💻"}
    assert '"name": "héllo 日本 👩‍💻"' in text  # not \\u escapes: ensure_ascii stays off
    assert "\\u202e" in to_json("\u202e", indent=2) and "\\u009b" in to_json(["\x9b"])
