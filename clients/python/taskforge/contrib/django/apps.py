"""The Django application ``taskforge.contrib.django`` (label ``taskforge``): it has no models; it
is in ``INSTALLED_APPS`` for its management command, ``taskforge_worker``."""

from __future__ import annotations

from django.apps import AppConfig


class TaskForgeConfig(AppConfig):
    """The app of the ``taskforge_worker`` command."""

    name = "taskforge.contrib.django"
    label = "taskforge"
    verbose_name = "TaskForge"
