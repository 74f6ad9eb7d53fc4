"""Tables and JSON for the command line. Tables are drawn by rich: plain aligned text when stdout
is not a terminal, the same layout with a bold header and a dim rule on a terminal. Rows are
never cut to the terminal's width (long cells are cut by :func:`format_value`). JSON never goes
through rich.

Every value comes from the database, where any caller may have written any text (a cancel
reason, a worker's hostname, an error message). None of it reaches the terminal as a control:
:func:`terminal_text` (used by every cell and value) and :func:`to_json` escape the characters a
terminal acts on or that reorder what is shown."""

from __future__ import annotations

import datetime as _dt
import decimal
import io
import json
import re
import sys
import uuid
from collections.abc import Iterable, Sequence
from typing import Any

from rich.console import Console, Group
from rich.rule import Rule
from rich.table import Table
from rich.text import Text

__all__ = ["format_value", "key_values", "table", "terminal_text", "to_json"]

#: Width given to rich: wide enough that no row is ever cut or wrapped by rich.
RENDER_WIDTH = 1_000_000

#: What a terminal must not receive raw: the C0 controls, DEL and the C1 controls (ESC starts
#: the sequences that move the cursor, clear the screen or set the window title; U+009B is
#: CSI), the line and paragraph separators, and the bidirectional controls of Unicode
#: (Bidi_Control: U+061C, U+200E, U+200F, U+202A..U+202E, U+2066..U+2069), which reorder the
#: text after them (U+202E shows "exe.txt" for "txt.exe").
_TERMINAL_CONTROLS = "\x00-\x1f\x7f-\x9f\u061c\u200e\u200f\u2028\u2029\u202a-\u202e\u2066-\u2069"
#: The same characters, as :func:`to_json` can meet them in its output: json.dumps escapes the
#: C0 controls itself.
_JSON_UNESCAPED_CONTROLS = re.compile("[\x7f-\x9f\u061c\u200e\u200f\u2028\u2029\u202a-\u202e\u2066-\u2069]")
_CONTROLS = re.compile(f"[{_TERMINAL_CONTROLS}]")


def terminal_text(text: str) -> str:
    """``text`` with every terminal control written as its Python escape (``\\n``, ``\\x1b``,
    ``\\u202e``; see :data:`_TERMINAL_CONTROLS`); letters, symbols, emoji and their joiners
    are kept. A backslash already in the text is kept as it is."""
    return _CONTROLS.sub(lambda m: repr(m.group())[1:-1], text)


def _json_default(value: Any) -> Any:
    if isinstance(value, (_dt.datetime, _dt.date, _dt.time)):
        return value.isoformat()
    if isinstance(value, _dt.timedelta):
        return value.total_seconds()
    if isinstance(value, uuid.UUID):
        return str(value)
    if isinstance(value, decimal.Decimal):
        return float(value)
    if isinstance(value, (set, frozenset, tuple)):
        return list(value)
    raise TypeError(f"cannot encode {type(value).__name__} as JSON")


def to_json(value: Any, *, indent: int | None = None) -> str:
    """JSON text for rows and dicts: datetimes as ISO 8601 with offset, UUIDs as strings. Text is
    kept as it is (no ``\\u`` escapes for letters) except the terminal controls, which are
    ``\\u`` escapes (json.dumps escapes only the C0 controls itself)."""
    text = json.dumps(value, default=_json_default, indent=indent, ensure_ascii=False)
    # Outside strings json.dumps writes ASCII only, so these characters are in strings, where
    # a \\u escape is the same JSON value.
    return _JSON_UNESCAPED_CONTROLS.sub(lambda m: f"\\u{ord(m.group()):04x}", text)


def format_value(value: Any, *, width: int | None = 60) -> str:
    """One cell: ``-`` for None, times to the second with offset, floats with 3 decimals,
    JSON for dicts/lists, terminal controls escaped (:func:`terminal_text`), then truncated to
    ``width`` characters (``None`` keeps everything)."""
    if value is None:
        text = "-"
    elif isinstance(value, bool):
        text = "yes" if value else "no"
    elif isinstance(value, _dt.datetime):
        text = value.isoformat(sep=" ", timespec="seconds")
    elif isinstance(value, float):
        text = f"{value:.3f}"
    elif isinstance(value, (dict, list)):
        text = to_json(value)
    elif isinstance(value, uuid.UUID):
        text = str(value)
    else:
        text = str(value)
    text = terminal_text(text)
    if width is not None and len(text) > width:
        text = text[: max(1, width - 1)] + "…"
    return text


def _is_number(value: Any) -> bool:
    return isinstance(value, (int, float, decimal.Decimal)) and not isinstance(value, bool)


def _render(grid: Table, terminal: bool | None) -> str:
    """``grid`` as text: styled when ``terminal`` (default: whether stdout is a terminal), else
    plain; trailing spaces of each line removed."""
    if terminal is None:
        terminal = sys.stdout.isatty()
    buffer = io.StringIO()
    console = Console(
        file=buffer,
        force_terminal=terminal,
        color_system="standard" if terminal else None,
        width=RENDER_WIDTH,
        highlight=False,
        emoji=False,
        markup=False,
    )
    console.print(grid, crop=False)
    return "\n".join(line.rstrip() for line in buffer.getvalue().rstrip("\n").split("\n"))


def table(
    rows: Iterable[dict[str, Any]],
    columns: Sequence[str | tuple[str, str]],
    *,
    width: int | None = 60,
    empty: str = "(no rows)",
    terminal: bool | None = None,
) -> str:
    """An aligned table: upper-case headers over a rule of ``-``, columns two spaces apart,
    numbers right-aligned, cells as :func:`format_value` writes them (cut at ``width``).
    ``columns`` are keys or ``(key, header)`` pairs. Returns ``empty`` when there are no rows.
    ``terminal`` chooses the styled form (default: whether stdout is a terminal)."""
    cols = [(c, c) if isinstance(c, str) else c for c in columns]
    rows = list(rows)
    if not rows:
        return empty
    grid = Table(box=None, padding=(0, 2, 0, 0), pad_edge=False, show_header=True, header_style="bold")
    for key, header in cols:
        values = [r.get(key) for r in rows]
        numeric = any(_is_number(v) for v in values) and all(_is_number(v) or v is None for v in values)
        grid.add_column(
            Group(Text(header.upper()), Rule(characters="-", style="dim")),
            justify="right" if numeric else "left",
            no_wrap=True,
        )
    for r in rows:
        grid.add_row(*(Text(format_value(r.get(key), width=width)) for key, _ in cols))
    return _render(grid, terminal)


def key_values(pairs: Iterable[tuple[str, Any]], *, width: int | None = None, terminal: bool | None = None) -> str:
    """``key: value`` lines with the values aligned (``terminal``: as for :func:`table`)."""
    grid = Table.grid(padding=(0, 1, 0, 0))
    grid.add_column(style="bold", no_wrap=True)
    grid.add_column()
    for key, value in pairs:
        grid.add_row(Text(key + ":"), Text(format_value(value, width=width)))
    return _render(grid, terminal)
