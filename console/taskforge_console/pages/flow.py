"""The flow-control page (``/flow``): every rate limit (``tf_rate_limits``: tokens per second,
burst, the tokens available now, QUEUED tasks of the key) and every concurrency key
(``tf_concurrency_keys``: its limit, RUNNING and QUEUED tasks, last claim), and the forms that
set or remove them:

=======================================  ===========================================================
``POST /flow/rate/set``                  ``rate_key``, ``per_second``, ``burst`` (empty: the database's
                                         default) -> ``tf_set_rate_limit``
``POST /flow/rate/remove``               ``rate_key`` -> ``tf_set_rate_limit(per_second => NULL)``
``POST /flow/concurrency/set``           ``concurrency_key``, ``max_running`` -> ``tf_set_concurrency_limit``
``POST /flow/concurrency/remove``        ``concurrency_key`` -> ``tf_set_concurrency_limit(max_running => NULL)``
=======================================  ===========================================================

They answer as the queue forms do (:func:`.common.attempt`, :func:`.common.action_answer`):
htmx gets the page's region back with a message, a plain post a redirect with it. The
database checks every value; a refusal shows its TF400 message, which names the field
(``per_second: must be greater than 0 ...``). The form only turns text into numbers, naming
the field when the text is not one.
"""

from __future__ import annotations

import decimal
from collections.abc import Callable
from typing import Any

import psycopg
from flask import abort, request, url_for
from werkzeug.wrappers import Response as BaseResponse

from taskforge import client

from .. import queries
from ..auth import may_act
from .blueprint import bp
from .common import act, action_answer, attempt, read_or, render_page

__all__ = ["flow_action", "flow_control"]

#: kind -> the form field naming the key.
KINDS = {"rate": "rate_key", "concurrency": "concurrency_key"}
ACTIONS = ("set", "remove")


def _load(conn: psycopg.Connection[Any]) -> dict[str, Any]:
    rates, more_rates = queries.rate_limits(conn)
    keys, more_keys = queries.concurrency_keys(conn)
    return {"rate_limits": rates, "more_rate_limits": more_rates, "concurrency_keys": keys, "more_keys": more_keys}


def _context(message: str | None = None, category: str = "ok") -> dict[str, Any]:
    empty: dict[str, Any] = {"rate_limits": [], "more_rate_limits": False, "concurrency_keys": [], "more_keys": False}
    return {
        **read_or("flow control", _load, empty),
        "list_limit": queries.FLOW_LIST_LIMIT,
        "message": message,
        "category": category,
    }


@bp.get("/flow")
def flow_control() -> str:
    """Rate limits and concurrency keys, by key, with their live counts."""
    return render_page("pages/flow.html", "pages/_flow_region.html", **_context())


def _number(name: str, *, required: bool, whole: bool) -> Any:
    """The form field ``name`` as a number for the database to check (an ``int`` for a whole
    number; ``float`` otherwise, NaN and infinities too, which the database refuses), ``None``
    when empty and not ``required``. Raises InvalidArgument naming the field for text that is no
    number, or no whole number where one is asked for (the range is the database's check)."""
    text = (request.form.get(name) or "").strip()
    if not text:
        if required:
            raise client.InvalidArgument(name, "a value is required")
        return None
    try:
        if not whole:
            return float(text)
        number = decimal.Decimal(text)
    except (ValueError, decimal.InvalidOperation):
        raise client.InvalidArgument(name, f"must be a number, got {text!r}") from None
    if not number.is_finite() or number != number.to_integral_value():
        raise client.InvalidArgument(name, f"must be a whole number, got {text!r}")
    return int(number)


def _change(kind: str, action: str, key: str) -> tuple[Callable[[], Any], Callable[[Any], str]]:
    """What the form does (``run``, for :func:`attempt`: reads the fields, then acts) and how its
    result reads. ``run`` returns ``(what was asked, the limit before)``."""
    if kind == "rate":

        def run_rate() -> tuple[str, Any]:
            if action == "remove":
                return "limit removed", act(lambda conn: queries.set_rate_limit(conn, key, None, None))
            per_second = _number("per_second", required=True, whole=False)
            burst = _number("burst", required=False, whole=True)
            asked = f"{per_second:g} per second, " + ("default burst" if burst is None else f"burst {burst}")
            return asked, act(lambda conn: queries.set_rate_limit(conn, key, per_second, burst))

        def said_rate(done: tuple[str, tuple[float | None, int | None]]) -> str:
            asked, (per_second, burst) = done
            before = "no limit" if per_second is None else f"{per_second:g} per second, burst {burst}"
            return f"Rate key {key}: {asked} (was: {before})."

        return run_rate, said_rate

    def run_concurrency() -> tuple[str, Any]:
        if action == "remove":
            return "limit removed", act(lambda conn: queries.set_concurrency_limit(conn, key, None))
        max_running = _number("max_running", required=True, whole=True)
        return f"at most {max_running} running", act(lambda conn: queries.set_concurrency_limit(conn, key, max_running))

    def said_concurrency(done: tuple[str, int | None]) -> str:
        asked, previous = done
        before = "no limit" if previous is None else f"at most {previous} running"
        return f"Concurrency key {key}: {asked} (was: {before})."

    return run_concurrency, said_concurrency


@bp.post("/flow/<kind>/<action>")
@may_act
def flow_action(kind: str, action: str) -> BaseResponse | str:
    """Set or remove a rate limit (``kind`` ``rate``) or a concurrency limit (``concurrency``)."""
    if kind not in KINDS or action not in ACTIONS:
        abort(404)
    key = request.form.get(KINDS[kind], "")  # as typed: a key is any text of 1..200 characters
    run, describe = _change(kind, action, key)
    return action_answer(attempt(run, describe), "pages/_flow_region.html", _context, url_for("pages.flow_control"))
