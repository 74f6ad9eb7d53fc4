"""The application factory: :func:`create_app`.

One Flask application (a flask-openapi3 ``OpenAPI``, which is a ``Flask``) holds:

- ``auth`` blueprint: ``/signin``, ``/signout`` (this package, :mod:`.auth`);
- ``pages`` blueprint: the HTML pages (:mod:`.pages`; endpoint ``pages.dashboard`` is ``/``);
- the JSON API under ``/api`` with its OpenAPI document at ``/api/openapi.json``, plus
  ``/healthz`` and ``/metrics`` (:mod:`.api`).

Everything is mounted under :attr:`Settings.prefix` (``/tasks`` -> ``/tasks/api/tasks``), by a
werkzeug ``DispatcherMiddleware`` inside ``app.wsgi_app``; ``url_for`` then includes the prefix.
"""

from __future__ import annotations

import secrets
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from flask import Flask, Response, render_template
from flask.json.provider import DefaultJSONProvider
from flask_openapi3 import Info, OpenAPI, Server
from werkzeug.exceptions import HTTPException, NotFound
from werkzeug.middleware.dispatcher import DispatcherMiddleware
from werkzeug.middleware.proxy_fix import ProxyFix
from werkzeug.utils import redirect
from werkzeug.wrappers import Response as BaseResponse

from . import api, auth, security
from .db import (
    RECOVERY_CONFLICT,
    CutShort,
    Database,
    DatabaseUnavailable,
    cut_short_reads,
    read_fell_back,
    read_sources,
    recovery_conflict_reads,
)
from .settings import Settings
from .state import EXTENSION_KEY, ConsoleState, console
from .throttle import SignInThrottle

__all__ = ["create_app"]

TITLE = "TaskForge console API"
TEMPLATES = Path(__file__).resolve().parent / "templates"


class JSONProvider(DefaultJSONProvider):
    """Flask's JSON, keys in the order given, with ``<``, ``>`` and ``&`` written as ``\\u003c``,
    ``\\u003e``, ``\\u0026`` (the same JSON value), so no JSON answer ever holds markup, even
    if a client mistakes it for HTML."""

    sort_keys = False

    def dumps(self, obj: Any, **kwargs: Any) -> str:
        text = super().dumps(obj, **kwargs)
        return text.replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026")


def _version() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("taskforge")
    except PackageNotFoundError:  # pragma: no cover - running from a source tree without install
        return "0"


def _template_globals() -> dict[str, Any]:
    settings = console().settings
    return {
        "read_only": settings.read_only,
        "auth_required": settings.auth_required,
        "signed_in": auth.is_signed_in(),
        "can_act": auth.can_act(),
        "cut_short": cut_short_reads(),
        "recovery_conflict": recovery_conflict_reads(),
        "read_fell_back": read_fell_back(),
    }


def _unavailable(exc: DatabaseUnavailable) -> BaseResponse:
    message = "the database cannot be reached (or every pooled connection is busy); try again"
    if auth.is_api_request():
        return api.error_response(503, "database_unavailable", message)
    return Response(render_template("error.html", title="Database unavailable", message=message), status=503)


def _cut_short(exc: CutShort) -> BaseResponse:
    if exc.reason == RECOVERY_CONFLICT:
        message = (
            f"{exc.what} was cut short: the read replica cancelled it (conflict with recovery, as it "
            "replayed a change from the primary); try again"
        )
    else:
        message = f"{exc.what} took longer than {exc.timeout_ms} ms and was cut short (statement_timeout)"
    if auth.is_api_request():
        return api.error_response(503, "cut_short", message)
    return Response(render_template("error.html", title="Query cut short", message=message), status=503)


#: Response header naming where a request's reads ran when a read replica is configured:
#: "replica", "primary" (the replica could not be reached), or "replica, primary".
READ_FROM_HEADER = "X-TaskForge-Read-From"


def _read_from_header(response: BaseResponse) -> BaseResponse:
    if console().db.has_replica:
        sources = read_sources()
        if sources:
            response.headers[READ_FROM_HEADER] = ", ".join(sources)
    return response


def _http_error(exc: HTTPException) -> BaseResponse:
    """JSON errors for the API paths; Flask's default HTML otherwise."""
    if auth.is_api_request():
        code = (exc.name or "error").lower().replace(" ", "_")
        return api.error_response(exc.code or 500, code, exc.description or exc.name or "error")
    return exc.get_response()


def _mount(app: Flask, settings: Settings) -> None:
    inner = app.wsgi_app
    if settings.proxy_hops:
        inner = ProxyFix(inner, x_for=settings.proxy_hops, x_proto=settings.proxy_hops, x_host=settings.proxy_hops)
    if settings.prefix:
        prefix = settings.prefix

        def outside(environ: Any, start_response: Any) -> Any:
            # "/" (and the prefix without its slash) lead to the console; anything else is 404.
            path = environ.get("PATH_INFO", "")
            target = redirect(prefix + "/") if path in ("", "/") else NotFound()
            return target(environ, start_response)

        inner = DispatcherMiddleware(outside, {prefix: inner})
    app.wsgi_app = inner  # type: ignore[method-assign]


def create_app(settings: Settings, *, open_pool: bool = True, clock: Callable[[], float] = time.monotonic) -> OpenAPI:
    """Build the console application for ``settings``.

    The connection pool starts in the background (``open_pool``); a database that is down is
    reported per request (503 JSON or an error page), never at start. Close it with
    ``taskforge_console.state.console(app).db.close()``. ``clock`` is the sign-in throttle's
    clock (seconds; :func:`time.monotonic`, which tests replace to move time on).
    """
    app = OpenAPI(
        __name__,
        info=Info(title=TITLE, version=_version()),
        security_schemes=api.SECURITY_SCHEMES,
        doc_prefix="/api",
        doc_url="/openapi.json",
        validation_error_status=400,
        validation_error_model=api.ValidationErrorBody,
        validation_error_callback=api.validation_error,
        servers=[Server(url=settings.prefix or "/")],
    )
    app.json = JSONProvider(app)
    app.config.update(
        SECRET_KEY=settings.secret_key or secrets.token_urlsafe(32),
        MAX_CONTENT_LENGTH=settings.max_content_length,
        # Not APPLICATION_ROOT: the mount (below) sets SCRIPT_NAME, which url_for follows.
        SESSION_COOKIE_PATH=settings.prefix or "/",
        SESSION_COOKIE_NAME="taskforge_console",
        SESSION_COOKIE_HTTPONLY=True,
        SESSION_COOKIE_SAMESITE="Lax",
        SESSION_COOKIE_SECURE=settings.secure_cookies,
        # The API docs UI without inline scripts (the CSP forbids them): templates/api_*.html.
        SWAGGER_HTML_STRING=(TEMPLATES / "api_docs.html").read_text(encoding="utf-8"),
        OPENAPI_HTML_STRING=(TEMPLATES / "api_index.html").read_text(encoding="utf-8"),
    )
    database = Database(settings)
    app.extensions[EXTENSION_KEY] = ConsoleState(settings=settings, db=database, throttle=SignInThrottle(clock=clock))

    security.init_app(app)
    app.register_blueprint(auth.bp)
    api.init_app(app)
    from .pages import bp as pages_bp

    app.register_blueprint(pages_bp)

    app.context_processor(_template_globals)
    app.after_request(_read_from_header)
    app.register_error_handler(DatabaseUnavailable, _unavailable)
    app.register_error_handler(CutShort, _cut_short)
    app.register_error_handler(auth.TooManyAttempts, auth.too_many_attempts)
    app.register_error_handler(HTTPException, _http_error)
    _mount(app, settings)
    if open_pool:
        database.open()
    return app
