"""Who may see and who may act.

- The JSON API (``/api/*``, ``/metrics``) takes ``Authorization: Bearer <token>`` when a token is
  configured (:data:`taskforge_console.settings.ENV_TOKEN`); a signed-in browser session is
  accepted too (its unsafe requests then need the CSRF token).
- The pages need a signed-in session when a password or a token is configured: ``/signin``
  takes the password (or the token when no password is set) and sets ``session["signed_in"]``.
- With neither configured the console is open (``taskforge console`` binds to loopback only).
- Read-only mode (:attr:`Settings.read_only`) refuses every action with 403.
- Failed checks of the password or the token are throttled (:mod:`.throttle`): after a failure,
  attempts from that client address, and (more slowly) for that account from any address, are
  refused with 429 and ``Retry-After`` for a growing delay, without checking the secret.
  Secrets are compared as SHA-256 digests with :func:`hmac.compare_digest` (constant time, and
  the length of the secret does not show either).

Views use the decorators :func:`signed_in` and :func:`may_act`; a blueprint can call
:func:`require_signed_in` from ``before_request`` instead of decorating each view.
"""

from __future__ import annotations

import functools
import hashlib
import hmac
import math
from collections.abc import Callable
from typing import Any, TypeVar, cast
from urllib.parse import urlsplit

from flask import Blueprint, Response, g, jsonify, redirect, render_template, request, session, url_for
from werkzeug.wrappers import Response as BaseResponse

from .state import console
from .throttle import client_key, retry_after_header

__all__ = [
    "PASSWORD_ACCOUNT",
    "TOKEN_ACCOUNT",
    "TooManyAttempts",
    "bearer_ok",
    "bp",
    "can_act",
    "client_address",
    "is_api_request",
    "is_signed_in",
    "may_act",
    "require_signed_in",
    "signed_in",
    "too_many_attempts",
]

F = TypeVar("F", bound=Callable[..., Any])

SESSION_KEY = "signed_in"
#: Paths (below the mount prefix) that are JSON endpoints: refusals there are JSON, not redirects.
API_PATHS = ("/api/", "/metrics")

bp = Blueprint("auth", __name__)


#: The accounts of the throttle: the sign-in password, and the token (the API's bearer token,
#: which is also the sign-in secret when no password is set).
PASSWORD_ACCOUNT = "password"
TOKEN_ACCOUNT = "token"
_BEARER_RESULT = "taskforge_bearer_ok"  # flask.g attribute: the request's bearer check, done once


class TooManyAttempts(Exception):
    """A bearer token presented while its client address (or the token account) is throttled:
    answered 429 with ``Retry-After`` by :func:`too_many_attempts`. ``retry_after``: seconds."""

    def __init__(self, retry_after: float) -> None:
        super().__init__(f"too many failed attempts: retry after {retry_after:.0f} s")
        self.retry_after = retry_after


def _digest(text: str) -> bytes:
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).digest()


def _same(given: str, expected: str | None) -> bool:
    """``given`` is the secret ``expected`` (``None``: no such secret, never the same). Compares
    SHA-256 digests with :func:`hmac.compare_digest`: constant time, and equal-length inputs, so
    neither the position of the first difference nor the secret's length shows in the timing."""
    return expected is not None and hmac.compare_digest(_digest(given), _digest(expected))


def client_address() -> str:
    """The request's throttling key: :func:`taskforge_console.throttle.client_key` of
    ``request.remote_addr`` (the client as the trusted proxies report it with
    :attr:`Settings.proxy_hops`, else the peer of the TCP connection)."""
    return client_key(request.remote_addr)


def bearer_ok() -> bool:
    """The request carries ``Authorization: Bearer <the configured token>``.

    Checked once per request (the answer is kept in ``flask.g``) and throttled: a wrong token
    counts as a failure of the client address and of :data:`TOKEN_ACCOUNT`. Raises
    :class:`TooManyAttempts` (the first time it is asked in the request) when the request is
    throttled: the token is then not compared. No ``Authorization: Bearer`` header, or no token
    configured, is simply False and no attempt."""
    cached: bool | None = g.get(_BEARER_RESULT)
    if cached is not None:
        return cached
    token = console().settings.token
    header = request.headers.get("Authorization", "")
    scheme, _, value = header.partition(" ")
    if token is None or scheme.lower() != "bearer":
        setattr(g, _BEARER_RESULT, False)
        return False
    given = value.strip()
    attempt = console().throttle.attempt(
        client_address(), TOKEN_ACCOUNT, lambda: _same(given, token), reset_account=False
    )
    setattr(g, _BEARER_RESULT, attempt.ok)
    if attempt.throttled:
        raise TooManyAttempts(attempt.retry_after)
    return attempt.ok


def _wait_text(seconds: float) -> str:
    whole = max(1, math.ceil(seconds))
    return f"{whole} s" if whole < 120 else f"{math.ceil(whole / 60)} min"


def too_many_attempts(exc: TooManyAttempts) -> BaseResponse:
    """The 429 answer of a throttled bearer token: JSON ``too_many_attempts`` on the API, a page
    otherwise; ``Retry-After`` in whole seconds."""
    message = f"too many failed attempts from this address: try again in {_wait_text(exc.retry_after)}"
    if is_api_request():
        response = jsonify(code="too_many_attempts", message=message, field=None)
        response.status_code = 429
    else:
        response = Response(render_template("error.html", title="Too many attempts", message=message), status=429)
    response.headers["Retry-After"] = retry_after_header(exc.retry_after)
    return response


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
    """Sign-in page: the password (or, with no password set, the API token).

    A failure is 401; while the client address or the account is throttled the secret is not
    checked and the answer is 429 with ``Retry-After`` (:mod:`.throttle`). A success resets the
    address's and the account's failures."""
    settings = console().settings
    if not settings.auth_required:
        return redirect(_safe_next(request.args.get("next")))
    error = None
    status = 200
    headers: dict[str, str] = {}
    if request.method == "POST":
        given = request.form.get("password", "")
        expected = settings.password if settings.password is not None else settings.token
        account = PASSWORD_ACCOUNT if settings.password is not None else TOKEN_ACCOUNT
        attempt = console().throttle.attempt(client_address(), account, lambda: _same(given, expected))
        if attempt.ok:
            session.clear()
            session[SESSION_KEY] = True
            session.permanent = False
            return redirect(_safe_next(request.args.get("next")))
        if attempt.throttled:
            error = f"Too many failed sign-ins: try again in {_wait_text(attempt.retry_after)}."
            status = 429
        else:
            error = "wrong password"
            if attempt.retry_after > 0:
                error += f" (the next attempt is taken in {_wait_text(attempt.retry_after)})"
            status = 401
        if attempt.retry_after > 0:
            headers["Retry-After"] = retry_after_header(attempt.retry_after)
    page = render_template("signin.html", error=error, uses_token=settings.password is None)
    return page, status, headers


@bp.route("/signout", methods=["POST"])
def signout() -> Any:
    session.clear()
    if not console().settings.auth_required:
        return redirect(url_for("pages.dashboard"))
    return redirect(url_for("auth.signin"))
