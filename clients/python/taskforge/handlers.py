"""Task handlers: the allowlisted registry, the context every handler receives, and outcomes.

A worker runs only task types that have a handler registered here (the registry is the
allowlist: it claims nothing else). Users register handlers with the :func:`handler`
decorator in a module the worker loads with ``taskforge worker --import MODULE``::

    from taskforge import RetryableError, TaskCancelled, handler

    @handler("resize_image")
    def resize_image(payload: dict, ctx):
        task_id, attempt = ctx.fencing_token      # pass it to the destination
        if ctx.cancel_requested:                   # tf_cancel was called
            raise TaskCancelled("stopped early")
        ...
        return {"width": 640}                      # JSON-serialisable result (or None)

A handler may be an ``async def`` function: the worker then runs it on its event loop
(docs/worker.md, "Async handlers") and cancels the coroutine on a cancel request or at the
attempt's deadline.

How a call ends decides the outcome sent to ``tf_finalize`` (the same rules for sync and async
handlers: :func:`outcome_of_value`, :func:`outcome_of_error`):

* the handler returns a JSON-serialisable value (NaN and Infinity are refused) -> ``succeeded``;
* it raises :class:`RetryableError` -> ``retryable`` (the database applies backoff and budget);
* it raises :class:`TaskCancelled` -> ``cancelled``;
* the worker cancelled its coroutine (``asyncio.CancelledError``): ``cancelled`` after a cancel
  request, ``retryable`` after the deadline (the database refuses it and records ``timed_out``);
* it raises anything else, or returns a value that cannot be stored -> ``failed``.

Errors are stored as JSON ``{"type", "message", "traceback"}`` with NUL characters and
unpaired surrogates removed and the whole object capped at :data:`ERROR_MAX_BYTES`.

A handler may run more than once for the same task (at-least-once execution: a worker can
lose its lease, crash after the work but before finalize, and so on). Make external effects
idempotent, or fence them with :attr:`TaskContext.fencing_token`.
"""

from __future__ import annotations

import asyncio
import inspect
import json
import re
import threading
import traceback as _traceback
from collections.abc import Callable
from dataclasses import dataclass
from types import ModuleType
from typing import Any

from .context import TaskContext
from .names import TASK_TYPE_PATTERN

__all__ = [
    "ERROR_MAX_BYTES",
    "RESULT_MAX_BYTES",
    "HandlerRegistry",
    "Outcome",
    "ResultError",
    "RetryableError",
    "TaskCancelled",
    "TaskContext",
    "encode_result",
    "error_json",
    "handler",
    "is_async_handler",
    "outcome_of_error",
    "outcome_of_value",
    "registry",
    "run_handler",
    "sanitize_text",
]

#: Cap of a stored error, in bytes of UTF-8 JSON text (the database caps at 16 KiB as well).
ERROR_MAX_BYTES = 16 * 1024
#: Longest error message kept, in characters; the traceback keeps its last frames.
ERROR_MESSAGE_MAX_CHARS = 4000
#: Traceback lines longer than this are cut (the frames matter more than a repeated message).
TRACEBACK_LINE_MAX_CHARS = 500
#: Largest result tf_finalize accepts (bytes of JSON text).
RESULT_MAX_BYTES = 1024 * 1024

#: ``fn(payload, ctx)``: a plain function, or an ``async def`` one (its call returns a coroutine).
Handler = Callable[[dict[str, Any], TaskContext], Any]


class RetryableError(Exception):
    """Raise from a handler to report a temporary failure: outcome ``retryable``.

    The task goes to RETRYING with the backoff of its task type while attempts remain, else
    FAILED. Any other exception is an ordinary, terminal failure (outcome ``failed``).
    """


class TaskCancelled(Exception):
    """Raise from a handler that stops because ``ctx.cancel_requested`` is set: outcome ``cancelled``."""


class ResultError(ValueError):
    """A handler's result cannot be stored (not JSON-serialisable, NaN/Infinity, too large, ...)."""


class HandlerRegistry:
    """Task type -> handler function. Only registered types are claimed by a worker."""

    def __init__(self) -> None:
        self._handlers: dict[str, Handler] = {}
        self._async: set[str] = set()
        self._lock = threading.Lock()

    def register(self, task_type: str, fn: Handler, *, replace: bool = False) -> Handler:
        """Register ``fn(payload: dict, ctx: TaskContext)`` for ``task_type``.

        ``fn`` may be a coroutine function (``async def``, see :func:`is_async_handler`): the
        worker then runs it on its event loop. Raises ValueError for a name the database would
        refuse (``^[a-z][a-z0-9_.-]{0,62}$``), TypeError when fn is not callable, and ValueError
        when another function is already registered for the type (unless ``replace=True``).
        Registering the same function twice is harmless. Returns fn.
        """
        if not isinstance(task_type, str) or not TASK_TYPE_PATTERN.fullmatch(task_type):
            raise ValueError(f"task type {task_type!r} must match {TASK_TYPE_PATTERN.pattern}")
        if not callable(fn):
            raise TypeError(f"handler for {task_type!r} must be callable, got {type(fn).__name__}")
        with self._lock:
            existing = self._handlers.get(task_type)
            if existing is not None and existing is not fn and not replace:
                raise ValueError(
                    f"task type {task_type!r} already has a handler "
                    f"({_qualname(existing)}); pass replace=True to override it"
                )
            self._handlers[task_type] = fn
            if is_async_handler(fn):
                self._async.add(task_type)
            else:
                self._async.discard(task_type)
        return fn

    def handler(self, task_type: str, *, replace: bool = False) -> Callable[[Handler], Handler]:
        """Decorator form of :meth:`register`."""

        def decorate(fn: Handler) -> Handler:
            return self.register(task_type, fn, replace=replace)

        return decorate

    def unregister(self, task_type: str) -> None:
        """Remove a handler (KeyError when none is registered)."""
        with self._lock:
            del self._handlers[task_type]
            self._async.discard(task_type)

    def get(self, task_type: str) -> Handler | None:
        """The handler for task_type, or None (the type is not allowed on this worker)."""
        return self._handlers.get(task_type)

    def is_async(self, task_type: str) -> bool:
        """True when the handler of ``task_type`` is a coroutine function (runs on the event loop)."""
        return task_type in self._async

    def __contains__(self, task_type: object) -> bool:
        return task_type in self._handlers

    def task_types(self) -> list[str]:
        """Sorted list of registered task types (what the worker may claim)."""
        return sorted(self._handlers)


def is_async_handler(fn: Any) -> bool:
    """True for a coroutine function (``async def``, also behind ``functools.partial``) and for
    an object whose ``__call__`` is one: the worker awaits what such a handler returns."""
    return inspect.iscoroutinefunction(fn) or (callable(fn) and inspect.iscoroutinefunction(type(fn).__call__))


def _qualname(fn: Any) -> str:
    return f"{getattr(fn, '__module__', '?')}.{getattr(fn, '__qualname__', repr(fn))}"


#: The process-wide registry the worker uses by default.
registry = HandlerRegistry()


def handler(task_type: str, *, replace: bool = False) -> Callable[[Handler], Handler]:
    """Decorator: register the function as the handler of ``task_type`` in :data:`registry`.

    The type must also be allowed in the database (``taskforge.tf_register_task_type``, run by
    the owner or a DBA) before anyone can submit it.
    """
    return registry.handler(task_type, replace=replace)


# --- outcomes ---------------------------------------------------------------------------------


@dataclass(frozen=True)
class Outcome:
    """What to send to tf_finalize.

    ``outcome`` is succeeded | failed | retryable | cancelled; ``result`` the result as strict
    JSON text (or None); ``error`` a dict from :func:`error_json` (or None).
    """

    outcome: str
    result: str | None = None
    error: dict[str, Any] | None = None


_LONE_NUL_ESCAPE = re.compile(r"(?<!\\)(?:\\\\)*\\u0000")


def sanitize_text(text: Any) -> str:
    """``str(text)`` without NUL characters and unpaired UTF-16 surrogates.

    A valid surrogate pair (as produced by some decoders) becomes the character it encodes.
    PostgreSQL cannot store either in text or jsonb; removing them keeps the write from failing.
    """
    s = text if isinstance(text, str) else str(text)
    if "\x00" in s:
        s = s.replace("\x00", "")
    try:
        s.encode("utf-8")
    except UnicodeEncodeError:
        s = s.encode("utf-16-le", "surrogatepass").decode("utf-16-le", "ignore")
    return s


def _cut_bytes(text: str, max_bytes: int, keep: str = "head") -> str:
    raw = text.encode("utf-8")
    if len(raw) <= max_bytes:
        return text
    if keep == "tail":
        return raw[len(raw) - max_bytes :].decode("utf-8", "ignore")
    return raw[:max_bytes].decode("utf-8", "ignore")


def _json_size(obj: Any) -> int:
    return len(json.dumps(obj, ensure_ascii=False).encode("utf-8"))


def error_json(
    exc: BaseException | None = None,
    *,
    type_name: str | None = None,
    message: str | None = None,
    tb: str | None = None,
    max_bytes: int = ERROR_MAX_BYTES,
) -> dict[str, Any]:
    """Describe a failure as ``{"type", "message", "traceback"}`` ready for tf_finalize.

    Give an exception (its class, text and traceback are used) and/or explicit parts. An
    exception whose ``__str__`` raises keeps its own type; its message becomes the placeholder
    ``<unprintable TYPE object: str() raised ERROR_TYPE>``. Never raises for a broken exception.
    Strings are cleaned with :func:`sanitize_text`; the message keeps its first
    :data:`ERROR_MESSAGE_MAX_CHARS` characters and the traceback its last lines, so that the
    UTF-8 JSON text is at most ``max_bytes`` bytes; ``"truncated": true`` marks a cut.
    """
    if exc is not None:
        cls = type(exc)
        module = getattr(cls, "__module__", "")
        default_type = cls.__qualname__ if module in ("builtins", "", None) else f"{module}.{cls.__qualname__}"
        type_name = type_name or default_type
        if message is None:
            try:
                message = str(exc)
            except Exception as str_error:  # noqa: BLE001 - a broken __str__ must not hide the real error
                message = f"<unprintable {default_type} object: str() raised {type(str_error).__qualname__}>"
        if tb is None:
            try:
                tb = "".join(_traceback.format_exception(cls, exc, exc.__traceback__))
            except Exception:  # noqa: BLE001 - e.g. a broken __notes__; the type and message remain
                tb = None
    out: dict[str, Any] = {
        "type": sanitize_text(type_name or "error")[:200],
        "message": sanitize_text(message if message is not None else ""),
        "traceback": sanitize_text(tb) if tb else None,
    }
    truncated = False
    if out["traceback"] and len(out["traceback"]) > TRACEBACK_LINE_MAX_CHARS:
        # Long lines (usually the exception message, repeated at the end) would crowd out the frames.
        lines = out["traceback"].splitlines(keepends=True)
        if any(len(line) > TRACEBACK_LINE_MAX_CHARS for line in lines):
            out["traceback"] = "".join(
                line if len(line) <= TRACEBACK_LINE_MAX_CHARS else line[:TRACEBACK_LINE_MAX_CHARS] + " [...]\n"
                for line in lines
            )
            truncated = True
    if len(out["message"]) > ERROR_MESSAGE_MAX_CHARS:
        out["message"] = out["message"][:ERROR_MESSAGE_MAX_CHARS]
        truncated = True
    budget = max_bytes - 64  # room for the "truncated" member and JSON punctuation
    if _json_size(out) > budget and out["traceback"]:
        # Keep the end of the traceback (the innermost frames and the exception line).
        room = budget - _json_size({**out, "traceback": ""})
        out["traceback"] = _cut_bytes(out["traceback"], max(0, room // 2), keep="tail")
        truncated = True
        while _json_size(out) > budget and out["traceback"]:
            out["traceback"] = out["traceback"][len(out["traceback"]) // 4 + 1 :]
    while _json_size(out) > budget and out["message"]:
        # Escaped characters (control characters, quotes) can still exceed the budget.
        out["message"] = out["message"][: len(out["message"]) * 3 // 4]
        truncated = True
    if truncated:
        out["truncated"] = True
    return out


def encode_result(value: Any) -> str | None:
    """Strict JSON text for a handler result, or None for None.

    Raises :class:`ResultError` when the value is not JSON-serialisable, contains NaN or
    Infinity (``json.dumps(allow_nan=False)``), contains strings PostgreSQL cannot store (NUL
    characters, unpaired surrogates), or is larger than :data:`RESULT_MAX_BYTES`.
    """
    if value is None:
        return None
    try:
        text = json.dumps(value, allow_nan=False, ensure_ascii=False)
    except ValueError as exc:
        raise ResultError(f"handler result is not valid JSON: NaN and Infinity are not allowed ({exc})") from None
    except TypeError as exc:
        raise ResultError(f"handler result is not JSON-serialisable: {exc}") from None
    except RecursionError:
        raise ResultError("handler result is not JSON-serialisable: it is nested too deeply or circular") from None
    try:
        raw = text.encode("utf-8")
    except UnicodeEncodeError:
        raise ResultError(
            "handler result contains unpaired surrogate characters, which PostgreSQL cannot store"
        ) from None
    if _LONE_NUL_ESCAPE.search(text):
        raise ResultError("handler result contains NUL characters (\\u0000), which PostgreSQL jsonb cannot store")
    if len(raw) > RESULT_MAX_BYTES:
        raise ResultError(f"handler result is {len(raw)} bytes of JSON; at most {RESULT_MAX_BYTES} are stored")
    return text


#: The outcome of a handler that returned None (most do): no result to encode.
_SUCCEEDED_WITHOUT_RESULT = Outcome("succeeded")


def outcome_of_value(value: Any) -> Outcome:
    """The outcome of a handler that returned ``value``: ``succeeded`` with its JSON text, or
    ``failed`` with a ``taskforge.ResultError`` when the database cannot store it (see
    :func:`encode_result`), or when a sync handler returned a coroutine (it should have been
    registered as ``async def``; the coroutine is closed unrun)."""
    if value is None:
        return _SUCCEEDED_WITHOUT_RESULT
    if asyncio.iscoroutine(value):
        value.close()
        return Outcome(
            "failed",
            error=error_json(
                type_name="taskforge.ResultError",
                message="the handler returned a coroutine: make the handler itself `async def` so the "
                "worker runs it on its event loop",
            ),
        )
    try:
        text = encode_result(value)
    except ResultError as exc:
        return Outcome("failed", error=error_json(exc, type_name="taskforge.ResultError", tb=""))
    return Outcome("succeeded", result=text)


def outcome_of_error(exc: BaseException, ctx: TaskContext) -> Outcome:
    """The outcome of a handler that raised ``exc`` (any exception, sync or async handler).

    :class:`RetryableError` -> ``retryable``; :class:`TaskCancelled` -> ``cancelled``;
    ``asyncio.CancelledError`` -> ``retryable`` when the attempt's deadline has passed (the
    worker cancelled the coroutine at its deadline; the database refuses a late outcome and
    records the attempt ``timed_out``), ``cancelled`` after a cancel request, else ``failed``;
    anything else -> ``failed``. The error is stored as :func:`error_json` describes.
    """
    if isinstance(exc, RetryableError):
        return Outcome("retryable", error=error_json(exc))
    if isinstance(exc, TaskCancelled):
        return Outcome("cancelled", error=error_json(exc))
    if isinstance(exc, asyncio.CancelledError):
        if ctx.timed_out:
            why = f"the attempt's deadline (timeout_seconds {ctx.timeout_seconds}) passed"
            return Outcome("retryable", error=error_json(exc, type_name="taskforge.AttemptTimedOut", message=why))
        if ctx.cancel_requested:
            return Outcome("cancelled", error=error_json(exc, message="cancel requested (tf_cancel)"))
    return Outcome("failed", error=error_json(exc))


def run_handler(fn: Handler, payload: dict[str, Any], ctx: TaskContext) -> Outcome:
    """Call the sync handler ``fn(payload, ctx)`` and turn what happens into an :class:`Outcome`
    (never raises for handler errors; exceptions that are not ``Exception`` subclasses, such as
    KeyboardInterrupt and SystemExit, propagate)."""
    try:
        value = fn(payload, ctx)
    except Exception as exc:  # noqa: BLE001 - mapped to an outcome; any other error is an ordinary failure
        return outcome_of_error(exc, ctx)
    return outcome_of_value(value)


def import_handler_module(spec: str) -> ModuleType:
    """Load a module that registers handlers (``taskforge worker --import SPEC``).

    ``spec`` is a dotted module name importable from the current directory or sys.path
    (``myapp.tasks``), or a path to a ``.py`` file (``examples/handlers_example.py``; its
    directory is put on sys.path so it can import its neighbours). Returns the module; import
    errors propagate.
    """
    import importlib
    import importlib.util
    import os
    import sys
    from pathlib import Path

    if spec.endswith(".py") or os.sep in spec or (os.altsep and os.altsep in spec):
        path = Path(spec).resolve()
        if not path.is_file():
            raise ImportError(f"no such file: {spec}")
        directory = str(path.parent)
        if directory not in sys.path:
            sys.path.insert(0, directory)
        name = path.stem
        if name in sys.modules and getattr(sys.modules[name], "__file__", None) == str(path):
            return sys.modules[name]
        module_spec = importlib.util.spec_from_file_location(name, path)
        if module_spec is None or module_spec.loader is None:
            raise ImportError(f"cannot load {spec} as a Python module")
        module = importlib.util.module_from_spec(module_spec)
        sys.modules[name] = module
        try:
            module_spec.loader.exec_module(module)
        except BaseException:
            sys.modules.pop(name, None)
            raise
        return module
    cwd = os.getcwd()
    if cwd not in sys.path and "" not in sys.path:
        sys.path.insert(0, cwd)
    return importlib.import_module(spec)
