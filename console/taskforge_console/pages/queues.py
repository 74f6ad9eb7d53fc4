"""The queues page (``/queues``): live counts, tasks finished in the last hour, the oldest due
task, and pause and resume (``POST /queues/pause``, ``POST /queues/resume`` with a ``queue``
field; ``tf_pause_queue`` / ``tf_resume_queue``). A paused queue keeps accepting submits; no
worker claims from it until it is resumed.
"""

from __future__ import annotations

from typing import Any

from flask import abort, request, url_for
from werkzeug.wrappers import Response as BaseResponse

from taskforge import client

from ..auth import may_act
from .blueprint import bp
from .common import act, action_answer, attempt, read_or, render_page
from .dashboard import FINISHED_WINDOW_SECONDS, overview

__all__ = ["queue_action", "queues"]

ACTIONS = ("pause", "resume")


def _context(message: str | None = None, category: str = "ok") -> dict[str, Any]:
    empty: dict[str, Any] = {"queues": [], "totals": {}, "workers": {}}
    data = read_or("queue counts", overview, empty)
    return {
        "queues": data["queues"],
        "finished_window_seconds": FINISHED_WINDOW_SECONDS,
        "message": message,
        "category": category,
    }


@bp.get("/queues")
def queues() -> str:
    """Every queue with tasks or a control row, with its counts and pause state."""
    return render_page("pages/queues.html", "pages/_queues_region.html", **_context())


@bp.post("/queues/<action>")
@may_act
def queue_action(action: str) -> BaseResponse | str:
    """Pause or resume the queue named by the ``queue`` form field."""
    if action not in ACTIONS:
        abort(404)
    queue = (request.form.get("queue") or "").strip()
    verb = "paused" if action == "pause" else "resumed"

    def run() -> bool:
        if not queue:
            raise client.InvalidArgument("queue", "a queue name is required")
        return act(lambda conn: (client.pause_queue if action == "pause" else client.resume_queue)(conn, queue))

    def describe(changed: bool) -> str:
        return f"Queue {queue} {verb}." if changed else f"Queue {queue} was already {verb}."

    outcome = attempt(run, describe)
    return action_answer(outcome, "pages/_queues_region.html", _context, url_for("pages.queues"))
