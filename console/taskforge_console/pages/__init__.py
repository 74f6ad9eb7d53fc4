"""The HTML pages (blueprint ``pages``). SKELETON: placeholder views, replaced by the pages work.

Every endpoint the base layout links to exists here: ``pages.dashboard`` (``/``),
``pages.tasks``, ``pages.queues``, ``pages.workers``, ``pages.submit``.
"""

from __future__ import annotations

from flask import Blueprint, render_template

from ..auth import require_signed_in

bp = Blueprint("pages", __name__)
bp.before_request(require_signed_in)


@bp.get("/")
def dashboard() -> str:
    return render_template("error.html", title="Dashboard", message="(pages not written yet)")


@bp.get("/tasks")
def tasks() -> str:
    return render_template("error.html", title="Tasks", message="(pages not written yet)")


@bp.get("/queues")
def queues() -> str:
    return render_template("error.html", title="Queues", message="(pages not written yet)")


@bp.get("/workers")
def workers() -> str:
    return render_template("error.html", title="Workers", message="(pages not written yet)")


@bp.get("/submit")
def submit() -> str:
    return render_template("error.html", title="Submit", message="(pages not written yet)")
