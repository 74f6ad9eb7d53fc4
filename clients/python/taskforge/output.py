"""Tables and JSON for the command line. Tables are drawn by rich: plain aligned text when stdout
is not a terminal, the same layout with a bold header and a dim rule on a terminal. Rows are
never cut to the terminal's width (long cells are cut by :func:`format_value`). JSON never goes
through rich."""

from __future__ import annotations

import datetime as _dt
import decimal
import io
import json
import sys
import uuid
from collections.abc import Iterable, Sequence
from typing import Any

from rich.console import Console, Group
from rich.rule import Rule
from rich.table import Table
from rich.text import Text

__all__ = ["format_value", "key_values", "table", "to_json"]

#: Width given to rich: wide enough that no row is ever cut or wrapped by rich.
RENDER_WIDTH = 1_000_000


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
    """JSON text for rows and dicts: datetimes as ISO 8601 with offset, UUIDs as strings."""
    return json.dumps(value, default=_json_default, indent=indent, ensure_ascii=False)


def format_value(value: Any, *, width: int | None = 60) -> str:
    """One cell: ``-`` for None, times to the second with offset, floats with 3 decimals,
    JSON for dicts/lists, truncated to ``width`` characters (``None`` keeps everything)."""
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
    text = text.replace("\n", "\\n")
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
