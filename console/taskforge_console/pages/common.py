"""What every page module uses: rendering a page or only its live region, reading and acting
through the console's database, turning refusals into messages, and the template filters.

Live refresh: a page's refreshable part is its own template (a "region", ``pages/_*.html``)
included by the full page. htmx asks for it again with the header ``HX-Request: true`` (see
``static/pages.js``); :func:`render_page` then renders the region alone.

Time: every timestamp shown comes from the database and is printed in UTC; ages and "seconds
ago" figures are computed by the database (the views), never with this process's clock.
"""

from __future__ import annotations

import datetime as dt
import json
import math
from collections.abc import Callable
from typing import Any, TypeVar

import psycopg
from flask import flash, redirect, render_template, request
from werkzeug.wrappers import Response as BaseResponse

from taskforge.errors import Refused, refused_from

from .. import queries
from ..state import console
from .blueprint import bp

__all__ = [
    "REFRESH_CHOICES",
    "act",
    "action_answer",
    "attempt",
    "format_seconds",
    "format_timestamp",
    "is_region_request",
    "pretty_json",
    "problem_of",
    "read",
    "read_or",
    "render_page",
]

T = TypeVar("T")

#: The live-refresh periods offered (seconds; 0 = off), the selector of every list page.
REFRESH_CHOICES = (0, 1, 2, 5, 10, 30, 60)


def is_region_request() -> bool:
    """True for an htmx refresh of a page's live region (not a boosted navigation)."""
    return request.headers.get("HX-Request") == "true" and request.headers.get("HX-Boosted") != "true"


def render_page(template: str, region: str, **context: Any) -> str:
    """The full page ``template``, or only its live ``region`` template for an htmx refresh."""
    return render_template(region if is_region_request() else template, **context)


def read(what: str, fn: Callable[[psycopg.Connection[Any]], T]) -> T:
    """``fn(conn)`` under the console's read limit; ``what`` names it in the cut-short banner."""
    return console().db.read(what, fn)


def read_or(what: str, fn: Callable[[psycopg.Connection[Any]], T], fallback: T) -> T:
    """Like :func:`read`, but a read cut short gives ``fallback`` (and the banner)."""
    return console().db.read_or(what, fn, fallback)


def act(fn: Callable[[psycopg.Connection[Any]], T]) -> T:
    """``fn(conn)`` in one transaction under the console's action limit."""
    return console().db.act(fn)


def problem_of(exc: Exception) -> str | None:
    """The message of a refusal the user can act on, or ``None`` for anything else.

    A :class:`taskforge.errors.Refused` (``TF400``/``TF404``/``TF409`` from the database, whose
    message starts with the argument's name: ``"payload: must be a JSON object"``, or a value
    refused before sending), also when it is still the psycopg error of a statement the console
    sent itself."""
    if isinstance(exc, psycopg.Error):
        refused = refused_from(exc)
        return None if refused is None else refused.message
    return exc.message if isinstance(exc, Refused) else None


def attempt(run: Callable[[], T], describe: Callable[[T], str]) -> tuple[str, str]:
    """Run an action of a form and say how it went: ``(describe(result), "ok")``, or
    ``(message, "error")`` for a refusal the user can act on (:func:`problem_of`: the message
    names the field, ``"max_running: must be ..."``). Any other exception propagates."""
    try:
        result = run()
    except Exception as exc:
        problem = problem_of(exc)
        if problem is None:
            raise
        return problem, "error"
    return describe(result), "ok"


def action_answer(
    outcome: tuple[str, str], region: str, context: Callable[[str, str], dict[str, Any]], back: str
) -> BaseResponse | str:
    """The answer to a form post, given its ``outcome`` ``(message, category)`` (:func:`attempt`):
    for htmx, the page's live ``region`` template rendered with ``context(message, category)``
    (status 200 also for a refusal: htmx swaps only 2xx answers, and the region shows it); for
    a plain post, the message flashed and a redirect to ``back``."""
    message, category = outcome
    if is_region_request():
        return render_template(region, **context(message, category))
    flash(message, category)
    return redirect(back)


@bp.app_template_filter("timestamp")
def format_timestamp(value: dt.datetime | None) -> str:
    """``2026-12-01 10:07:03.123Z`` (UTC, milliseconds); an empty string for ``None``."""
    if value is None:
        return ""
    utc = value.astimezone(dt.UTC)
    return utc.strftime("%Y-%m-%d %H:%M:%S.") + f"{utc.microsecond // 1000:03d}Z"


@bp.app_template_filter("seconds")
def format_seconds(value: float | None) -> str:
    """A duration in seconds for people: ``0.25 s``, ``42 s``, ``3 min 05 s``, ``2 h 07 min``,
    ``3 d 04 h``; an empty string for ``None``; negative values keep their sign."""
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return ""
    sign = "-" if value < 0 else ""
    v = abs(float(value))
    if v < 10:
        return f"{sign}{v:.2f} s"
    if v < 60:
        return f"{sign}{v:.0f} s"
    if v < 3600:
        return f"{sign}{int(v // 60)} min {int(v % 60):02d} s"
    if v < 86400:
        return f"{sign}{int(v // 3600)} h {int(v % 3600 // 60):02d} min"
    return f"{sign}{int(v // 86400)} d {int(v % 86400 // 3600):02d} h"


@bp.app_template_filter("pretty_json")
def pretty_json(value: Any) -> str:
    """JSON indented for a ``<pre>`` block, characters kept as they are (``<`` stays ``<``).

    The result is a plain string, so Jinja's autoescape escapes it: a payload holding
    ``<script>`` is shown as text, never run."""
    return json.dumps(value, indent=2, ensure_ascii=False, sort_keys=False, default=str)


@bp.app_context_processor
def _page_globals() -> dict[str, Any]:
    return {
        "refresh_choices": REFRESH_CHOICES,
        "task_states": queries.TASK_STATES,
        "cancellable_states": queries.CANCELLABLE_STATES,
        "retryable_states": queries.RETRYABLE_STATES,
    }
