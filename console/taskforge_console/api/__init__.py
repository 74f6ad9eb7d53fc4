"""The JSON API (``/api/...``), ``/healthz`` and ``/metrics``, documented by the OpenAPI
document at ``/api/openapi.json`` (flask-openapi3, pydantic models)."""

from __future__ import annotations

from typing import Any

from flask_openapi3 import OpenAPI

from . import health, metrics, queues, tasks
from .errors import ErrorBody, ValidationErrorBody, error_response, validation_error

__all__ = ["SECURITY_SCHEMES", "ErrorBody", "ValidationErrorBody", "error_response", "init_app", "validation_error"]

#: OpenAPI security schemes: the bearer token of TASKFORGE_CONSOLE_TOKEN.
SECURITY_SCHEMES: dict[str, Any] = {"bearer": {"type": "http", "scheme": "bearer"}}


def init_app(app: OpenAPI) -> None:
    """Register the API blueprints on ``app``."""
    app.register_api(health.bp)
    app.register_api(tasks.bp)
    app.register_api(queues.bp)
    app.register_blueprint(metrics.bp)
