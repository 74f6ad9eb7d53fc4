"""TaskForge as a backend of Django 6's ``django.tasks`` (docs/django.md).

Settings::

    INSTALLED_APPS = [..., "taskforge.contrib.django"]   # the taskforge_worker command
    TASKS = {"default": {"BACKEND": "taskforge.contrib.django.TaskForgeBackend"}}

Modules: :mod:`.backend` (:class:`TaskForgeBackend`: enqueue, results, checks), :mod:`.mapping`
(how Django's task fields map to TaskForge's), :mod:`.database` (the psycopg connection behind
Django's), :mod:`.runner` (the worker's handlers that run Django tasks) and the management
command ``taskforge_worker``. Needs Django >= 6.0 (Python >= 3.12): ``pip install
'taskforge[django]'``; importing this package without it raises ``ImportError`` saying so.
"""

from __future__ import annotations

try:
    import django
except ImportError as exc:  # pragma: no cover - exercised by the tests in a venv without Django
    raise ImportError(
        "taskforge.contrib.django needs Django >= 6.0 (Python >= 3.12): pip install 'taskforge[django]'"
    ) from exc

if django.VERSION < (6, 0):
    raise ImportError(
        f"taskforge.contrib.django needs Django >= 6.0 (django.tasks), found {django.get_version()}: "
        "pip install 'taskforge[django]'"
    )

from .backend import TaskForgeBackend

__all__ = ["TaskForgeBackend"]
