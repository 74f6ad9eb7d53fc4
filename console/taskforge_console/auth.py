"""Who may see and who may act.

- The JSON API (``/api/*``, ``/metrics``) takes ``Authorization: Bearer <token>`` when a token is
  configured (:data:`taskforge_console.settings.ENV_TOKEN`); a signed-in browser session is
  accepted too (its unsafe requests then need the CSRF token).
- The pages need a signed-in session when a password or a token is configured: ``/signin``
  takes the password (or the token when no password is set) and sets ``session["signed_in"]``.
- With neither configured the console is open (``taskforge console`` binds to loopback only).
- Read-only mode (:attr:`Settings.read_only`) refuses every action with 403.

Views use the decorators :func:`signed_in` and :func:`may_act`; a blueprint can call
:func:`require_signed_in` from ``before_request`` instead of decorating each view.
"""

from __future__ import annotations

import functools
import hmac
from collections.abc import Callable
from typing import Any, TypeVar, cast
from urllib.parse import urlsplit

from flask import Blueprint, Response, jsonify, redirect, render_template, request, session, url_for
from werkzeug.wrappers import Response as BaseResponse

from .state import console

__all__ = [
    "bearer_ok",
    "bp",
    "can_act",
    "is_api_request",
    "is_signed_in",
    "may_act",
    "require_signed_in",
    "signed_in",
]

F = TypeVar("F", bound=Callable[..., Any])

SESSION_KEY = "signed_in"
#: Paths (below the mount prefix) that are JSON endpoints: refusals there are JSON, not redirects.
API_PATHS = ("/api/", "/metrics")

bp = Blueprint("auth", __name__)


def _same(given: str, expected: str | None) -> bool:
    return expected is not None and hmac.compare_digest(given.encode(), expected.encode())


def bearer_ok() -> bool:
    """The request carries ``Authorization: Bearer <the configured token>``."""
    header = request.headers.get("Authorization", "")
    scheme, _, value = header.partition(" ")
    return scheme.lower() == "bearer" and _same(value.strip(), console().settings.token)


def is_api_request() -> bool:
    """The request is for a JSON endpoint (``/api/...``, ``/metrics``)."""
    path = request.path
    return path == "/api" or any(path.startswith(p) or path == p.rstrip("/") for p in API_PATHS)


def is_signed_in() -> bool:
    """Open console, a signed-in session, or a valid bearer token."""
    if not console().settings.auth_required:
        return True
    return session.get(SESSION_KEY) is True or bearer_ok()


def can_act() -> bool:
    """Actions are allowed (not read-only) and the request is signed in."""
    return not console().settings.read_only and is_signed_in()


def _refuse_unsigned() -> BaseResponse:
    if is_api_request():
        response = jsonify(
            code="unauthorized",
            message="sign in, or send Authorization: Bearer <token> (TASKFORGE_CONSOLE_TOKEN)",
            field=None,
        )
        response.status_code = 401
        response.headers["WWW-Authenticate"] = 'Bearer realm="taskforge-console"'
        return response
    return redirect(url_for("auth.signin", next=request.full_path if request.query_string else request.path))


def require_signed_in() -> BaseResponse | None:
    """For ``before_request``: ``None`` when signed in, else a 401 (API) or a redirect to the
    sign-in page (pages)."""
    return None if is_signed_in() else _refuse_unsigned()


def refuse_read_only() -> BaseResponse:
    """The 403 answer of an action in read-only mode (JSON for the API, a page otherwise)."""
    message = "the console is read-only: actions are disabled"
    if is_api_request():
        response = jsonify(code="read_only", message=message, field=None)
        response.status_code = 403
        return response
    return Response(render_template("error.html", title="Read-only", message=message), status=403)


def signed_in(view: F) -> F:
    """Decorator: the view needs a signed-in request (see :func:`require_signed_in`)."""

    @functools.wraps(view)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        refusal = require_signed_in()
        return refusal if refusal is not None else view(*args, **kwargs)

    return cast(F, wrapper)


def may_act(view: F) -> F:
    """Decorator: the view changes something. Needs a signed-in request and refuses with 403
    in read-only mode. (CSRF is checked for every unsafe request before any view runs.)"""

    @functools.wraps(view)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        refusal = require_signed_in()
        if refusal is not None:
            return refusal
        if console().settings.read_only:
            return refuse_read_only()
        return view(*args, **kwargs)

    return cast(F, wrapper)


def _safe_next(target: str | None) -> str:
    """A redirect target inside this console (a path), never another site."""
    default = url_for("pages.dashboard")
    if not target or not target.startswith("/") or target.startswith("//") or "\\" in target:
        return default
    parts = urlsplit(target)
    if parts.scheme or parts.netloc:
        return default
    return request.script_root + target  # targets are paths below the mount prefix


@bp.route("/signin", methods=["GET", "POST"])
def signin() -> Any:
    """Sign-in page: the password (or, with no password set, the API token)."""
    settings = console().settings
    if not settings.auth_required:
        return redirect(_safe_next(request.args.get("next")))
    error = None
    if request.method == "POST":
        given = request.form.get("password", "")
        expected = settings.password if settings.password is not None else settings.token
        if _same(given, expected):
            session.clear()
            session[SESSION_KEY] = True
            session.permanent = False
            return redirect(_safe_next(request.args.get("next")))
        error = "wrong password"
    status = 401 if error else 200
    return render_template("signin.html", error=error, uses_token=settings.password is None), status


@bp.route("/signout", methods=["POST"])
def signout() -> Any:
    session.clear()
    if not console().settings.auth_required:
        return redirect(url_for("pages.dashboard"))
    return redirect(url_for("auth.signin"))
