"""The ``pages`` blueprint object, shared by the page modules of this package.

Every page needs a signed-in session when a token or password is configured
(:func:`taskforge_console.auth.require_signed_in`); pages that change something are decorated
with :func:`taskforge_console.auth.may_act` as well.
"""

from __future__ import annotations

from flask import Blueprint

from ..auth import require_signed_in

__all__ = ["bp"]

bp = Blueprint("pages", __name__)
bp.before_request(require_signed_in)
