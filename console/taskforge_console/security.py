"""Request guards and response headers applied to every request.

- CSRF (Flask-WTF ``CSRFProtect``): every unsafe request (POST, PUT, PATCH, DELETE) must carry
  the CSRF token, as the form field ``csrf_token`` or the header ``X-CSRFToken`` (the base
  layout puts it in ``<meta name="csrf-token">`` and in ``hx-headers`` for htmx). Exempt: a
  request with a valid bearer token (browsers never add one by themselves), and, when no token
  or password is configured, an ``/api/`` request whose body is ``application/json`` (a
  cross-site form cannot send that content type without a CORS preflight, which the console
  never grants).
- Host check: an open console (no token, no password) answers only requests whose ``Host`` is
  a loopback name, so a DNS-rebinding page cannot drive it.
- Headers: Content-Security-Policy (scripts, styles, images and connections from this origin
  only: no inline script, no CDN), X-Frame-Options DENY, X-Content-Type-Options nosniff,
  Referrer-Policy same-origin, Cross-Origin-Opener-Policy same-origin; ``Cache-Control:
  no-store`` on everything but static files.
"""

from __future__ import annotations

from flask import Flask, Response, jsonify, render_template, request
from flask_wtf.csrf import CSRFError, CSRFProtect
from werkzeug.wrappers import Response as BaseResponse

from .auth import bearer_ok, is_api_request, require_signed_in
from .state import console

__all__ = ["CSP", "LOOPBACK_HOSTS", "csrf", "init_app"]

csrf = CSRFProtect()

CSP = (
    "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
    "font-src 'self'; connect-src 'self'; object-src 'none'; base-uri 'none'; "
    "form-action 'self'; frame-ancestors 'none'"
)
SECURITY_HEADERS = {
    "Content-Security-Policy": CSP,
    "X-Frame-Options": "DENY",
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "same-origin",
    "Cross-Origin-Opener-Policy": "same-origin",
}
UNSAFE_METHODS = frozenset({"POST", "PUT", "PATCH", "DELETE"})
LOOPBACK_HOSTS = frozenset({"localhost", "127.0.0.1", "[::1]", "::1"})


def _host_name(host: str) -> str:
    if host.startswith("["):
        return host.split("]", 1)[0] + "]"
    return host.rsplit(":", 1)[0] if host.count(":") == 1 else host


def _guard() -> BaseResponse | None:
    settings = console().settings
    if not settings.auth_required and _host_name(request.host).lower() not in LOOPBACK_HOSTS:
        return _error(421, "misdirected", "an open console (no token or password) answers loopback host names only")
    if request.method not in UNSAFE_METHODS:
        return None
    if settings.token is not None and bearer_ok():
        return None
    if is_api_request():
        refusal = require_signed_in()  # an API caller without credentials learns that first (401)
        if refusal is not None:
            return refusal
    if not settings.auth_required and is_api_request() and request.mimetype == "application/json":
        return None
    csrf.protect()  # raises CSRFError (400) when the token is missing or wrong
    return None


def _error(status: int, code: str, message: str) -> BaseResponse:
    if is_api_request():
        response = jsonify(code=code, message=message, field=None)
        response.status_code = status
        return response
    return Response(render_template("error.html", title="Refused", message=message), status=status)


def _csrf_error(exc: CSRFError) -> BaseResponse:
    return _error(400, "csrf", f"CSRF check failed: {exc.description}")


def _headers(response: BaseResponse) -> BaseResponse:
    for name, value in SECURITY_HEADERS.items():
        response.headers.setdefault(name, value)
    if request.endpoint is None or not request.endpoint.endswith("static"):
        response.headers.setdefault("Cache-Control", "no-store")
    return response


def init_app(app: Flask) -> None:
    """Install the CSRF guard (checked explicitly by :func:`_guard`), the host check and the headers."""
    app.config["WTF_CSRF_CHECK_DEFAULT"] = False  # _guard decides, then calls csrf.protect()
    app.config["WTF_CSRF_TIME_LIMIT"] = None  # valid for the session's lifetime
    app.config["WTF_CSRF_HEADERS"] = ["X-CSRFToken", "X-CSRF-Token"]
    csrf.init_app(app)
    app.before_request(_guard)
    app.after_request(_headers)
    app.register_error_handler(CSRFError, _csrf_error)
