"""The periodic schedules page (``/periodic``): every schedule of ``tf_periodic`` with its cron,
time zone, request, next and last tick (database time) and the last tick's task and its state.
Read-only: schedules are declared with ``taskforge periodic add`` or ``tf_schedule_periodic``.
"""

from __future__ import annotations

from taskforge import client
from taskforge.rows import PeriodicSchedule

from .blueprint import bp
from .common import read_or, render_page

__all__ = ["periodic"]


@bp.get("/periodic")
def periodic() -> str:
    """Periodic schedules, by name."""
    schedules: list[PeriodicSchedule] = read_or("periodic schedules", client.list_periodic, [])
    return render_page("pages/periodic.html", "pages/_periodic_region.html", schedules=schedules)
