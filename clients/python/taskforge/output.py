"""Plain-text tables and JSON for the command line (no third-party formatting library)."""

from __future__ import annotations

import datetime as _dt
import decimal
import json
import uuid
from collections.abc import Iterable, Sequence
from typing import Any

__all__ = ["format_value", "key_values", "table", "to_json"]


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


def table(
    rows: Iterable[dict[str, Any]],
    columns: Sequence[str | tuple[str, str]],
    *,
    width: int | None = 60,
    empty: str = "(no rows)",
) -> str:
    """An aligned text table. ``columns`` are keys or ``(key, header)`` pairs; numbers are
    right-aligned. Returns ``empty`` when there are no rows."""
    cols = [(c, c) if isinstance(c, str) else c for c in columns]
    rows = list(rows)
    if not rows:
        return empty
    cells = [[format_value(r.get(key), width=width) for key, _ in cols] for r in rows]

    def is_number(v: Any) -> bool:
        return isinstance(v, (int, float, decimal.Decimal)) and not isinstance(v, bool)

    numeric = [
        any(is_number(r.get(key)) for r in rows) and all(is_number(r.get(key)) or r.get(key) is None for r in rows)
        for key, _ in cols
    ]
    widths = [max(len(header), *(len(c[i]) for c in cells)) for i, (_, header) in enumerate(cols)]

    def line(values: list[str]) -> str:
        parts = [v.rjust(w) if num else v.ljust(w) for v, w, num in zip(values, widths, numeric, strict=True)]
        return "  ".join(parts).rstrip()

    out = [line([header.upper() for _, header in cols]), line(["-" * w for w in widths])]
    out.extend(line(c) for c in cells)
    return "\n".join(out)


def key_values(pairs: Iterable[tuple[str, Any]], *, width: int | None = None) -> str:
    """``key: value`` lines with the values aligned."""
    pairs = list(pairs)
    pad = max((len(k) for k, _ in pairs), default=0)
    return "\n".join(f"{k + ':':<{pad + 1}} {format_value(v, width=width)}" for k, v in pairs)
