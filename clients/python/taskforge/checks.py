"""The checks the client makes before sending, and the limits they use.

The database validates every argument itself (``TF400``). The client refuses only what
PostgreSQL could not even *receive* as the declared argument type, so such a value never turns
into an error the SQL API does not document (``42883``, ``22P05``, ``22003``): integers outside
``int``/``bigint``, strings with NUL or unpaired surrogates, payloads with NaN/Infinity, nested
too deeply or too large, delays outside 0..:data:`MAX_DELAY_SECONDS`, a naive ``scheduled_at``.
Each raises :class:`taskforge.errors.InvalidArgument` (``"<argument>: <problem>"``), and
nothing is sent.
"""

from __future__ import annotations

import json
import math
import numbers
import re
from typing import Any

from .errors import InvalidArgument

__all__ = [
    "INT4_RANGE",
    "INT8_RANGE",
    "MAX_DELAY_SECONDS",
    "MAX_LIMIT",
    "MAX_PAYLOAD_BYTES",
    "MAX_PAYLOAD_DEPTH",
    "MAX_SUBMIT_MANY",
    "STATES",
    "check_delay",
    "check_payload",
    "finite_seconds",
    "int_arg",
    "limit_arg",
    "seconds_arg",
    "text_arg",
    "text_problem",
]

#: Task states in lifecycle order (docs/design.md §2).
STATES = ("BLOCKED", "QUEUED", "RUNNING", "RETRYING", "SUCCEEDED", "FAILED", "CANCELLED")

#: Inclusive range of the SQL type ``int`` (int4): priority, max_attempts, extra_attempts. The
#: SQL parameters are ``numeric`` (any number reaches the database's own check, TF400); the
#: client refuses numbers beyond ``int`` before sending, as no column could hold them.
INT4_RANGE = (-(2**31), 2**31 - 1)
#: Inclusive range of the SQL type ``bigint`` (int8): task ids.
INT8_RANGE = (-(2**63), 2**63 - 1)
#: Longest ``delay_seconds`` that a submit accepts: 100 years of 365.25 days, in seconds.
MAX_DELAY_SECONDS = 100 * 365.25 * 86400
#: Deepest nesting of arrays and objects in a payload (the top-level object is level 1): the
#: database's limit (tf_submit refuses deeper payloads, TF400). Python's json module (used here
#: and by workers to decode payloads) recurses once per level and fails near its recursion limit
#: of about 1000, so payloads stay well below it.
MAX_PAYLOAD_DEPTH = 100
#: Largest payload, in bytes of its JSON text as jsonb prints it (UTF-8, ", " and ": "): the
#: database's limit (TF400), checked before sending so a client never makes the server parse a
#: document it will refuse.
MAX_PAYLOAD_BYTES = 1024 * 1024
#: The most requests one ``tf_submit_many`` call takes (the database's limit, TF400 beyond).
MAX_SUBMIT_MANY = 10000
#: The most rows a list read returns (``limit`` of list_tasks and running_tasks).
MAX_LIMIT = 10000

_BAD_TEXT = re.compile("[\x00\ud800-\udfff]")


def text_problem(value: str) -> str | None:
    """Why PostgreSQL ``text``/``jsonb`` cannot hold this string (a NUL character, or a lone
    surrogate code point, which has no UTF-8 encoding), or ``None`` when it can."""
    bad = _BAD_TEXT.search(value)
    if bad is None:
        return None
    char, where = bad.group(), bad.start()
    if char == "\x00":
        return f"contains a NUL character (U+0000) at position {where}, which PostgreSQL cannot store"
    return f"contains an unpaired surrogate (U+{ord(char):04X}) at position {where}, which is not valid Unicode"


def int_arg(argument: str, value: Any, bounds: tuple[int, int], sql_type: str) -> Any:
    """``value`` as an ``int`` within the SQL type's range ``bounds`` (``None`` passes: the
    database reports NULLs with TF400). Raises InvalidArgument for a bool, a non-integer or a
    number outside the range."""
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        raise InvalidArgument(argument, f"must be an integer, got {type(value).__name__}")
    value = int(value)
    if not bounds[0] <= value <= bounds[1]:
        raise InvalidArgument(argument, f"must fit the SQL type {sql_type} ({bounds[0]}..{bounds[1]}), got {value}")
    return value


def limit_arg(value: Any) -> int:
    """A row limit: an integer 1..:data:`MAX_LIMIT`. Raises InvalidArgument (``limit``)."""
    if isinstance(value, bool) or not isinstance(value, numbers.Integral) or not 1 <= int(value) <= MAX_LIMIT:
        raise InvalidArgument("limit", f"must be an integer between 1 and {MAX_LIMIT}, got {value!r}")
    return int(value)


def finite_seconds(argument: str, value: Any, unit: str = "seconds") -> float:
    """``value`` as a finite float number of seconds, or of ``unit`` (a real number too large
    for a float is infinite). Raises InvalidArgument naming ``argument`` for anything else."""
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise InvalidArgument(argument, f"must be a number of {unit}, got {type(value).__name__}")
    try:
        seconds = float(value)
    except OverflowError:
        seconds = -math.inf if value < 0 else math.inf
    if not math.isfinite(seconds):
        raise InvalidArgument(argument, f"must be a finite number of {unit}, got {seconds!r}")
    return seconds


def seconds_arg(argument: str, value: Any, unit: str = "seconds") -> float | None:
    """``value`` as a finite float number of seconds (or of ``unit``); ``None`` passes (the
    range is the database's: TF400)."""
    return None if value is None else finite_seconds(argument, value, unit)


def check_delay(delay_seconds: Any, argument: str = "delay_seconds") -> float:
    """``delay_seconds`` as a float: a finite number of seconds from 0 to
    :data:`MAX_DELAY_SECONDS` (100 years). Raises :class:`InvalidArgument` naming ``argument``."""
    value = finite_seconds(argument, delay_seconds)
    if not 0 <= value <= MAX_DELAY_SECONDS:
        raise InvalidArgument(
            argument, f"must be between 0 and {MAX_DELAY_SECONDS:.0f} seconds (100 years), got {value:g}"
        )
    return value


def text_arg(argument: str, value: Any) -> Any:
    """Reject a ``str`` PostgreSQL cannot receive (other values pass to the database)."""
    if isinstance(value, str):
        problem = text_problem(value)
        if problem:
            raise InvalidArgument(argument, problem)
    return value


def _json_path(path: str, key: Any) -> str:
    if isinstance(key, int):
        return f"{path}[{key}]"
    text = str(key)
    if text.isidentifier() and text.isascii():
        return f"{path}.{text}"
    shown = json.dumps(text[:40] + ("..." if len(text) > 40 else ""))  # ASCII: escapes bad characters
    return f"{path}[{shown}]"


def _short(path: str) -> str:
    return path if len(path) <= 100 else "$..." + path[-96:]


def check_payload(payload: Any, argument: str = "payload") -> None:
    """Check that a payload (any JSON-shaped value) can be stored as ``jsonb``.

    Rejected, with the JSON path of the first problem (``$.a[0]``): floats that are NaN or
    +/-Infinity (JSON has no such numbers; ``float("1e400")`` is Infinity), keys and strings with
    a NUL character or an unpaired surrogate (PostgreSQL cannot store them), nesting deeper
    than :data:`MAX_PAYLOAD_DEPTH`, and more than :data:`MAX_PAYLOAD_BYTES` of JSON text in the
    form jsonb prints (``json.dumps(ensure_ascii=False)``: the same separators and escapes;
    jsonb's numbers are never shorter than Python's, except ``-0.0``, printed ``0.0``, which is
    allowed for). Whether it is an object is checked by the database (TF400). The walk is
    iterative: any depth is safe to check. Raises :class:`InvalidArgument` naming ``argument``.
    """
    stack: list[tuple[Any, str, int]] = [(payload, "$", 1)]
    negative_zeros = 0
    while stack:
        value, path, depth = stack.pop()
        if isinstance(value, float) and value == 0 and math.copysign(1.0, value) < 0:
            negative_zeros += 1
        if isinstance(value, str):
            problem = text_problem(value)
            if problem:
                raise InvalidArgument(argument, f"string at {_short(path)} {problem}")
        elif isinstance(value, float):
            if not math.isfinite(value):
                raise InvalidArgument(
                    argument,
                    f"number at {_short(path)} is {value!r}; JSON numbers "
                    "must be finite (a number beyond +/-1.8e308 overflows "
                    "to Infinity)",
                )
        elif isinstance(value, (dict, list, tuple)):
            if depth > MAX_PAYLOAD_DEPTH:
                raise InvalidArgument(argument, f"nested more than {MAX_PAYLOAD_DEPTH} levels deep")
            children = []
            if isinstance(value, dict):
                for key, item in value.items():
                    if isinstance(key, str):
                        problem = text_problem(key)
                        if problem:
                            raise InvalidArgument(argument, f"key at {_short(_json_path(path, key))} {problem}")
                    children.append((item, _json_path(path, key), depth + 1))
            else:
                children = [(item, _json_path(path, i), depth + 1) for i, item in enumerate(value)]
            stack.extend(reversed(children))  # report problems in document order
    try:
        size = len(json.dumps(payload, ensure_ascii=False).encode("utf-8")) - negative_zeros
    except (TypeError, ValueError):
        return  # not JSON-serialisable: psycopg reports it when sending
    if size > MAX_PAYLOAD_BYTES:
        raise InvalidArgument(argument, f"must be at most {MAX_PAYLOAD_BYTES} bytes as JSON text, got {size}")
