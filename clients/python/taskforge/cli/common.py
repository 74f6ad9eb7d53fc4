"""What every command module shares: exit codes, :func:`fail`, the one line of a refusal
(:func:`refusal_line`, :func:`fail_refused`), the ``--dsn`` and ``--json`` options, and the
parameter types.

Option values are converted by the parameter types below (:class:`SqlInt`, :class:`Seconds`,
:class:`Text`, :class:`Choice`), which report a bad value as one line
``taskforge: --option: problem`` and exit code 2 before anything is sent.
"""

from __future__ import annotations

import math
import re
import sys
from collections.abc import Callable
from typing import IO, Any, NoReturn

import click

from .. import client, pooling
from ..errors import InvalidArgument, Refused

#: Exit codes: 1 = usage/other error, 2 = click usage or a bad option value, 3 = database refused
#: the request (TF400/TF404/TF409), 4 = cannot reach or use the database; `db status` exits 1
#: (EXIT_PENDING) while migrations are pending; `submit --wait` exits 1 when the task FAILED or was
#: CANCELLED and 5 (EXIT_WAIT_TIMEOUT) when it had not ended in time.
EXIT_PENDING = 1
#: undefined_table, undefined_function, invalid_schema_name: what a command meets on a database
#: that `taskforge db migrate` has not (fully) set up.
UNMIGRATED_SQLSTATES = frozenset({"42P01", "42883", "3F000"})
EXIT_USAGE = 2
EXIT_REFUSED = 3
EXIT_DATABASE = 4
EXIT_WAIT_TIMEOUT = 5


class OptionError(click.ClickException):
    """A bad option or argument value: one line ``taskforge: <option>: <problem>`` on stderr and
    exit code 2 (no usage block: the line names the option)."""

    exit_code = EXIT_USAGE

    def __init__(self, option: str, problem: str):
        super().__init__(f"{option}: {problem}")

    def show(self, file: IO[Any] | None = None) -> None:
        click.echo(f"taskforge: {one_line(self.format_message())}", err=True)


def param_label(param: click.Parameter | None) -> str:
    """How an error names a parameter: its long option (``--priority``) or argument (``TASK_ID``)."""
    if isinstance(param, click.Option):
        longs = [o for o in param.opts if o.startswith("--")]
        return (longs or param.opts)[0]
    if param is not None:
        return param.human_readable_name
    return "value"


def _shown(value: object) -> str:
    text = str(value)
    return repr(text if len(text) <= 40 else text[:40] + "...")


def _number(value: float) -> str:
    return str(int(value)) if float(value).is_integer() else repr(float(value))


class SqlInt(click.ParamType[int]):
    """An integer within ``min``..``max``, by default the whole range of the SQL parameter type
    it is passed to (``"int"`` or ``"bigint"``).

    The range check keeps values PostgreSQL cannot receive as that type from reaching the
    database (they would be sent as bigint/numeric and match no function, SQLSTATE 42883);
    narrower business bounds stay the database's and come back as TF400.
    """

    name = "integer"

    def __init__(self, sql_type: str = "int", min: int | None = None, max: int | None = None):
        lo, hi = {"int": client.INT4_RANGE, "bigint": client.INT8_RANGE}[sql_type]
        self.sql_type = sql_type
        self.bounds = click.IntRange(lo if min is None else min, hi if max is None else max)
        self.whole_type = min is None and max is None

    def _out_of_range(self, param: click.Parameter | None, got: str) -> OptionError:
        lo, hi = self.bounds.min, self.bounds.max
        where = f" (the range of SQL {self.sql_type})" if self.whole_type else ""
        return OptionError(param_label(param), f"must be between {lo} and {hi}{where}, got {got}")

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> int:
        if isinstance(value, int) and not isinstance(value, bool):
            number = value
        else:
            text = str(value).strip()
            try:
                number = int(text, 10)
            except ValueError:
                if re.fullmatch(r"[+-]?[0-9]+", text):  # too many digits to convert
                    raise self._out_of_range(param, f"a {len(text.lstrip('+-'))}-digit number") from None
                raise OptionError(param_label(param), f"{_shown(value)} is not an integer") from None
        try:
            return self.bounds.convert(number, param, ctx)
        except click.BadParameter:
            raise self._out_of_range(param, str(number)) from None


class Seconds(click.ParamType[float]):
    """A finite number of ``unit`` (seconds unless told) within ``min``..``max``; NaN and
    Infinity are rejected, which click's FloatRange lets through."""

    name = "seconds"

    def __init__(self, min: float, max: float, max_note: str = "", unit: str = "seconds"):
        self.min, self.max, self.max_note, self.unit = min, max, max_note, unit
        self.name = unit

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> float:
        try:
            number = float(value)
        except (TypeError, ValueError, OverflowError):
            raise OptionError(param_label(param), f"{_shown(value)} is not a number") from None
        if not math.isfinite(number):
            raise OptionError(param_label(param), f"must be a finite number of {self.unit}, got {_shown(value)}")
        if not self.min <= number <= self.max:
            raise OptionError(
                param_label(param),
                f"must be between {_number(self.min)} and "
                f"{_number(self.max)} {self.unit}{self.max_note}, got {_shown(value)}",
            )
        return number


class Text(click.ParamType[Any]):  # str from the command line; other values pass through
    """A string PostgreSQL can receive: no NUL character and valid UTF-8 (bytes that are not
    UTF-8 reach Python as lone surrogates, which no database text can hold)."""

    name = "text"

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> Any:
        if not isinstance(value, str):
            return value
        problem = client.text_problem(value)
        if problem is not None:
            bad = next(i for i, ch in enumerate(value) if ch == "\x00" or "\ud800" <= ch <= "\udfff")
            if "\udc80" <= value[bad] <= "\udcff":  # an undecodable byte of the command line
                problem = f"not valid UTF-8 (byte 0x{ord(value[bad]) - 0xDC00:02x} at position {bad})"
            label = param_label(param)
            if (
                ctx is not None
                and param is not None
                and param.name
                and ctx.get_parameter_source(param.name) is click.core.ParameterSource.ENVIRONMENT
            ):
                label += " (from the environment)"
            raise OptionError(label, problem)
        return value


class Choice(click.Choice[str]):
    """``click.Choice`` whose bad value is one line naming the option."""

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> str:
        try:
            return super().convert(value, param, ctx)
        except click.BadParameter:
            any_case = "" if self.case_sensitive else " (any case)"
            raise OptionError(
                param_label(param), f"must be one of {', '.join(map(str, self.choices))}{any_case}, got {_shown(value)}"
            ) from None


dsn_option = click.option(
    "--dsn",
    envvar=["TASKFORGE_DSN", "DATABASE_URL"],
    default=None,
    show_envvar=True,
    type=Text(),
    help="PostgreSQL connection string (libpq key=value or URI). Default: $TASKFORGE_DSN, else $DATABASE_URL.",
)
json_option = click.option("--json", "as_json", is_flag=True, help="Print JSON instead of a table.")
pooler_option = click.option(
    "--pooler",
    type=Choice(list(pooling.POOLERS), case_sensitive=False),
    envvar=pooling.POOLER_ENV,
    show_envvar=True,
    default=pooling.NONE,
    show_default=True,
    help="What --dsn reaches: none (the server, or a pooler in session mode) or transaction (PgBouncer in "
    "transaction mode: no prepared statements, timeouts set per transaction, no LISTEN on --dsn).",
)


def one_line(text: str) -> str:
    """``text`` as one line: every character that is not printable (line breaks, tabs, other
    control characters, the Unicode line and paragraph separators) is written as its Python
    escape (``\\n``, ``\\x1b``, ``\\u2028``). A refusal quotes what the caller gave (``unknown
    task type 'a<newline>b'``); that text must neither break the one-line promise nor reach the
    terminal as control sequences."""
    if text.isprintable():
        return text
    return "".join(ch if ch.isprintable() else repr(ch)[1:-1] for ch in text)


def fail(message: str, code: int = 1) -> NoReturn:
    """Print one line to stderr (see :func:`one_line`) and exit with code."""
    click.echo(f"taskforge: {one_line(message)}", err=True)
    sys.exit(code)


def refusal_line(exc: Refused, element: Callable[[int], str] | None = None) -> str:
    """The one line of a refusal: ``"<SQLSTATE> <message>"`` for the database's
    (``TF400 priority: must be between -32768 and 32767, got 40000``), the message alone for a
    value the client refused before sending (:class:`taskforge.errors.InvalidArgument`). With
    ``element``, a batch element is named by ``element(index)`` instead of ``requests[index]``
    (``TF400 line 2100: priority: ...``)."""
    text = exc.message
    if element is not None and exc.index is not None:
        where = element(exc.index)
        text = f"{where}: {exc.element_key}: {exc.problem}" if exc.element_key else f"{where}: {exc.problem}"
    return text if isinstance(exc, InvalidArgument) else f"{exc.sqlstate} {text}"


def fail_refused(exc: Refused, element: Callable[[int], str] | None = None) -> NoReturn:
    """:func:`fail` with :func:`refusal_line`: exit code 2 (:data:`EXIT_USAGE`) for a value the
    client refused before sending, 3 (:data:`EXIT_REFUSED`) for the database's refusals."""
    fail(refusal_line(exc, element), EXIT_USAGE if isinstance(exc, InvalidArgument) else EXIT_REFUSED)


def optional_limit(argument: str, text: str) -> int | None:
    """A MAX_RUNNING argument: a whole number 1..1000000, or ``none`` (no limit) as ``None``;
    anything else is a usage error naming ``argument`` (exit code EXIT_USAGE)."""
    if text.strip().lower() == "none":
        return None
    try:
        limit = int(text)
    except ValueError:
        fail(f"{argument}: must be a whole number 1..1000000 or 'none', got {text!r}", EXIT_USAGE)
    if not 1 <= limit <= 1_000_000:
        fail(f"{argument}: must be between 1 and 1000000 (or 'none'), got {limit}", EXIT_USAGE)
    return limit


def optional_number(argument: str, text: str) -> float | None:
    """A rate argument: a number (its range is the database's check), or ``none`` as ``None``;
    anything else is a usage error naming ``argument`` (exit code EXIT_USAGE)."""
    if text.strip().lower() == "none":
        return None
    try:
        return float(text)
    except ValueError:
        fail(f"{argument}: must be a number over 0 or 'none', got {text!r}", EXIT_USAGE)
