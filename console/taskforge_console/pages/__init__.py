"""The HTML pages (blueprint ``pages``): Jinja templates under ``templates/pages/``, htmx for live
refresh and actions, uPlot for the dashboard's charts (``static/``), no inline script.

=========================  ==========================================  ===========================
endpoint                   path                                        module
=========================  ==========================================  ===========================
``pages.dashboard``        ``/``                                       :mod:`.dashboard`
``pages.dashboard_series`` ``/dashboard/series.json``                  :mod:`.dashboard`
``pages.tasks``            ``/tasks``                                  :mod:`.tasks`
``pages.bulk``             ``/tasks/bulk`` (POST: confirm, then act)   :mod:`.tasks`
``pages.task``             ``/tasks/<id>``                             :mod:`.task`
``pages.task_action``      ``/tasks/<id>/cancel``, ``.../retry`` POST  :mod:`.task`
``pages.queues``           ``/queues``                                 :mod:`.queues`
``pages.queue_action``     ``/queues/pause``, ``/queues/resume`` POST  :mod:`.queues`
``pages.flow_control``     ``/flow``                                   :mod:`.flow`
``pages.flow_action``      ``/flow/rate/set``, ``/flow/rate/remove``,  :mod:`.flow`
                           ``/flow/concurrency/set``, ``.../remove``
                           POST
``pages.workers``          ``/workers``                                :mod:`.workers`
``pages.periodic``         ``/periodic``                               :mod:`.periodic`
``pages.submit``           ``/submit`` (GET form, POST submit)         :mod:`.submit`
=========================  ==========================================  ===========================

Reads go through :meth:`taskforge_console.db.Database.read` (short ``statement_timeout``, a
banner when cut short) and actions through :meth:`~taskforge_console.db.Database.act`; the
queries themselves are :mod:`taskforge_console.queries` and :mod:`taskforge.client`, shared
with the JSON API.
"""

from __future__ import annotations

from . import dashboard, flow, periodic, queues, submit, task, tasks, workers
from .blueprint import bp

__all__ = ["bp", "dashboard", "flow", "periodic", "queues", "submit", "task", "tasks", "workers"]
