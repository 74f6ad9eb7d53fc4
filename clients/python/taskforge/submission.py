"""One request shape for admitting a task: :class:`SubmitRequest`, what ``tf_submit`` takes as
named arguments and ``tf_submit_many`` as the keys of each element, checked once.

Every path that submits builds one: :func:`taskforge.client.submit` and ``submit_many`` (and
their twins in :mod:`taskforge.aio`), ``taskforge submit`` and ``--from-file``, the console and the
demo. The JSON form (:meth:`SubmitRequest.to_json`, :meth:`SubmitRequest.from_json`) is a
``tf_submit_many`` element and a line of a ``--from-file`` file; :func:`read_request_lines`
reads such a file (JSON lines; blank lines and lines starting with ``#`` are skipped).

Rules of time stay in SQL: ``delay_seconds`` is sent as it is and the database adds it to its
own clock; the caller's clock is never read.
"""

from __future__ import annotations

import datetime as _dt
import json
import math
import sys
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field, fields
from typing import Any, TypedDict

from psycopg.types.json import Jsonb

from . import checks
from .errors import InvalidArgument

__all__ = [
    "SUBMIT_KEYS",
    "BadLine",
    "JsonProblem",
    "SubmitOptions",
    "SubmitRequest",
    "json_kind",
    "loads_json",
    "read_request_lines",
]

_TEXT_KEYS = ("task_type", "queue", "idempotency_key", "traceparent", "rate_key", "concurrency_key", "ordering_key")
_ID_LISTS = ("depends_on", "depends_on_positions")


@dataclass(frozen=True)
class SubmitRequest:
    """One task to admit, checked on construction (raises :class:`InvalidArgument` naming the
    field; nothing is sent).

    - ``task_type``: a registered task type (the database checks it, TF400).
    - ``payload``: a JSON object (``None`` means ``{}``) that passes
      :func:`taskforge.checks.check_payload`; that it is an object is the database's check.
    - ``queue``, ``priority``, ``max_attempts``: ``priority`` and ``max_attempts`` ints within
      :data:`taskforge.checks.INT4_RANGE`; their real bounds (-32768..32767, 1..1000) and the
      queue's name format are the database's.
    - ``scheduled_at`` (an aware ``datetime``; a naive one is refused, it would be read in the
      session's TimeZone) or ``delay_seconds`` (float seconds, 0..100 years, added by the
      database to its clock_timestamp()): the earliest start; at most one of them.
    - ``idempotency_key``: the same key and the same request give the stored task again.
    - ``timeout_seconds``: this task's attempt timeout (0 < s <= 604800), in place of its task
      type's; ``None`` keeps the type's.
    - ``notify_finished``: the task's terminal transition NOTIFYs ``taskforge_finished`` with
      its id (what ``wait`` listens for).
    - ``traceparent``: a W3C trace context stored with the task (its format is the database's
      check).
    - ``depends_on``: parent task ids; the task waits BLOCKED until every parent SUCCEEDED and
      ends CANCELLED (``dependency_failed``) when one fails (docs/workflows.md).
      ``depends_on_positions``: 0-based positions of EARLIER requests of the same
      ``submit_many`` call whose tasks are parents too (refused by ``submit``). Both are tuples
      of ints (any sequence of ints is taken; the database checks existence and ranges).
    - ``rate_key``, ``concurrency_key``, ``ordering_key``: flow-control keys
      (docs/flow-control.md): a token-bucket rate limit, a limit of RUNNING tasks with fair
      rotation across keys, one-at-a-time in submission order.
    """

    task_type: str
    payload: dict[str, Any] = field(default_factory=dict)
    queue: str = "default"
    priority: int = 0
    max_attempts: int = 3
    scheduled_at: _dt.datetime | None = None
    delay_seconds: float | None = None
    idempotency_key: str | None = None
    timeout_seconds: float | None = None
    notify_finished: bool = False
    traceparent: str | None = None
    depends_on: Sequence[int] | None = None
    depends_on_positions: Sequence[int] | None = None
    rate_key: str | None = None
    concurrency_key: str | None = None
    ordering_key: str | None = None

    def __post_init__(self) -> None:
        def put(name: str, value: Any) -> None:
            object.__setattr__(self, name, value)

        for name in _TEXT_KEYS:
            value = getattr(self, name)
            if value is not None and not isinstance(value, str):
                raise InvalidArgument(name, f"must be a string, got {type(value).__name__}")
            checks.text_arg(name, value)
        if self.payload is None:
            put("payload", {})
        checks.check_payload(self.payload)
        put("priority", checks.int_arg("priority", self.priority, checks.INT4_RANGE, "int"))
        put("max_attempts", checks.int_arg("max_attempts", self.max_attempts, checks.INT4_RANGE, "int"))
        if self.scheduled_at is not None and self.delay_seconds is not None:
            raise InvalidArgument("delay_seconds", "give at most one of scheduled_at and delay_seconds")
        if self.scheduled_at is not None and (
            not isinstance(self.scheduled_at, _dt.datetime) or self.scheduled_at.utcoffset() is None
        ):
            raise InvalidArgument(
                "scheduled_at",
                f"must be a datetime with a UTC offset (a naive time is ambiguous), got {self.scheduled_at!r}",
            )
        if self.delay_seconds is not None:
            put("delay_seconds", checks.check_delay(self.delay_seconds))
        put("timeout_seconds", checks.seconds_arg("timeout_seconds", self.timeout_seconds))
        if not isinstance(self.notify_finished, bool):
            raise InvalidArgument("notify_finished", f"must be true or false, got {self.notify_finished!r}")
        for name in _ID_LISTS:
            value = getattr(self, name)
            if value is None:
                continue
            if isinstance(value, str | bytes) or not isinstance(value, Iterable):
                raise InvalidArgument(name, f"must be a list of whole numbers, got {type(value).__name__}")
            items = tuple(value)
            for index, item in enumerate(items):
                if isinstance(item, bool) or not isinstance(item, int):
                    raise InvalidArgument(name, f"element {index} must be a whole number, got {item!r}")
                checks.int_arg(name, item, checks.INT8_RANGE, "bigint")
            put(name, items)

    def params(self) -> dict[str, Any]:
        """The named arguments of ``tf_submit`` (psycopg parameters: the payload as ``jsonb``)."""
        if self.depends_on_positions:
            raise InvalidArgument(
                "depends_on_positions",
                "names earlier requests of one submit_many call; submit takes depends_on (task ids)",
            )
        values = {f.name: getattr(self, f.name) for f in fields(self) if f.name != "depends_on_positions"}
        values["payload"] = Jsonb(self.payload)
        values["depends_on"] = list(self.depends_on) if self.depends_on is not None else None
        return values

    def to_json(self) -> dict[str, Any]:
        """This request as a ``tf_submit_many`` element (and a ``--from-file`` line): every key
        whose value is not its default of ``None``/``false`` (``task_type``, ``payload``,
        ``queue``, ``priority`` and ``max_attempts`` always), ``scheduled_at`` as ISO 8601 in
        UTC."""
        element: dict[str, Any] = {}
        for f in fields(self):
            value = getattr(self, f.name)
            if (value is None and f.default is None) or (value is False and f.name == "notify_finished"):
                continue
            element[f.name] = value
        if self.scheduled_at is not None:
            element["scheduled_at"] = self.scheduled_at.astimezone(_dt.UTC).isoformat()
        for name in _ID_LISTS:
            if name in element:
                element[name] = list(element[name])
        return element

    @classmethod
    def from_mapping(cls, request: Mapping[str, Any]) -> SubmitRequest:
        """A request from a mapping with the keys of :data:`SUBMIT_KEYS` (``task_type``
        required; an omitted key, or a ``payload`` of ``None``, takes the default). Raises
        :class:`InvalidArgument`: for an unknown or missing key its field is ``None`` (the
        request as a whole), otherwise the key."""
        if not isinstance(request, Mapping):
            raise InvalidArgument(None, f"must be a mapping, got {type(request).__name__}")
        unknown = sorted(str(k) for k in request if k not in SUBMIT_KEYS)
        if unknown:
            raise InvalidArgument(None, f"unknown key {unknown[0]!r} (known: {', '.join(_KEY_ORDER)})")
        if "task_type" not in request:
            raise InvalidArgument(None, "task_type is required")
        return cls(**request)

    @classmethod
    def from_json(cls, value: Any) -> SubmitRequest:
        """A request from its JSON form (a decoded JSON object, as :meth:`to_json` writes it):
        :meth:`from_mapping`, where ``payload`` must be an object when given (``null`` is
        refused: in a file it is a mistake, not "{}"), ``scheduled_at`` ISO 8601 text with a UTC
        offset and ``notify_finished`` a boolean. Raises :class:`InvalidArgument` as
        :meth:`from_mapping` does."""
        if not isinstance(value, dict):
            raise InvalidArgument(None, f"must be a JSON object, got {json_kind(value)}")
        request = dict(value)
        if "payload" in request and not isinstance(request["payload"], dict):
            raise InvalidArgument("payload", f"must be a JSON object, got {json_kind(request['payload'])}")
        at = request.get("scheduled_at")
        if at is not None:
            when = None
            if isinstance(at, str):
                try:
                    when = _dt.datetime.fromisoformat(at.strip())
                except ValueError:
                    when = None
            if when is None or when.utcoffset() is None:
                raise InvalidArgument(
                    "scheduled_at", f"must be an ISO-8601 time with a UTC offset (such as ...Z), got {at!r}"
                )
            request["scheduled_at"] = when
        return cls.from_mapping(request)


class SubmitOptions(TypedDict, total=False):
    """The keyword arguments of ``submit`` (:func:`taskforge.client.submit` and its twin in
    :mod:`taskforge.aio`): the fields of :class:`SubmitRequest` after ``task_type`` and
    ``payload``, with their meaning and checks there."""

    queue: str
    priority: int
    max_attempts: int
    scheduled_at: _dt.datetime | None
    delay_seconds: float | None
    idempotency_key: str | None
    timeout_seconds: float | None
    notify_finished: bool
    traceparent: str | None
    depends_on: Sequence[int] | None
    rate_key: str | None
    concurrency_key: str | None
    ordering_key: str | None


_KEY_ORDER = tuple(f.name for f in fields(SubmitRequest))
#: The keys of a request: the fields of :class:`SubmitRequest` (tf_submit's parameter names).
SUBMIT_KEYS = frozenset(_KEY_ORDER)


def json_kind(value: Any) -> str:
    """The JSON type of a decoded value, named as PostgreSQL's ``jsonb_typeof`` names it."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int | float):
        return "number"
    if isinstance(value, str):
        return "string"
    return "array" if isinstance(value, list) else "object"


class JsonProblem(ValueError):
    """JSON text that jsonb could not hold as sent; ``problem`` says why (``str()`` too)."""

    def __init__(self, problem: str):
        super().__init__(problem)
        self.problem = problem


def _reject_constant(name: str) -> Any:
    raise JsonProblem(f"not valid JSON: {name} is not valid JSON (PostgreSQL jsonb has no NaN or Infinity)")


def _parse_float(text: str) -> float:
    value = float(text)
    if not math.isfinite(value):  # 1e400 parses to inf: Python floats stop near 1.8e308
        raise JsonProblem(
            f"number {text[:40]} is out of range: numbers must be finite (at most about 1.8e308 in magnitude)"
        )
    return value


def _parse_int(text: str) -> int:
    try:
        return int(text)
    except ValueError:  # more digits than Python converts
        raise JsonProblem(
            f"integer with {len(text.lstrip('-'))} digits is too long (at most {sys.get_int_max_str_digits()} digits)"
        ) from None


def loads_json(text: str) -> Any:
    """Decode JSON text as ``jsonb`` could store it. Raises :class:`JsonProblem` for text that is
    not JSON (``NaN`` and ``Infinity`` are not), numbers beyond a double (``1e400``), integers
    with more digits than Python converts, and nesting too deep for Python's decoder (the
    database's limit, :data:`taskforge.checks.MAX_PAYLOAD_DEPTH`, is checked on the value)."""
    try:
        return json.loads(text, parse_constant=_reject_constant, parse_float=_parse_float, parse_int=_parse_int)
    except RecursionError:
        raise JsonProblem(f"nested more than {checks.MAX_PAYLOAD_DEPTH} levels deep") from None
    except JsonProblem:
        raise
    except ValueError as exc:
        raise JsonProblem(f"not valid JSON: {exc}") from None


class BadLine(ValueError):
    """A line of a requests file that is not a valid request: ``line`` (1-based), ``field`` (the
    key at fault, ``None`` for the line as a whole) and ``problem``. ``str()`` is
    ``"line 7: priority: ..."``; :meth:`at` names it another way (``"tasks.jsonl:7"``)."""

    def __init__(self, line: int, field: str | None, problem: str):
        super().__init__(self._text(f"line {line}", field, problem))
        self.line, self.field, self.problem = line, field, problem

    @staticmethod
    def _text(where: str, field: str | None, problem: str) -> str:
        return f"{where}: {field}: {problem}" if field else f"{where}: {problem}"

    def at(self, where: str) -> str:
        """The message with ``where`` in place of ``line N``."""
        return self._text(where, self.field, self.problem)


def read_request_lines(lines: Iterable[str]) -> Iterator[tuple[int, SubmitRequest]]:
    """``(line number, request)`` for each line of a JSON-lines requests file: one JSON object
    per line in the form of :meth:`SubmitRequest.to_json`; blank lines and lines whose first
    non-blank character is ``#`` are skipped. Raises :class:`BadLine` at the first bad line
    (lines before it were yielded; nothing was sent)."""
    for number, raw in enumerate(lines, start=1):
        text = raw.strip()
        if not text or text.startswith("#"):
            continue
        try:
            yield number, SubmitRequest.from_json(loads_json(text))
        except JsonProblem as exc:
            raise BadLine(number, None, exc.problem) from None
        except InvalidArgument as exc:
            raise BadLine(number, exc.field, exc.problem) from None
