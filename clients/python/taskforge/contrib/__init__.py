"""Integrations of TaskForge with application frameworks.

Each subpackage imports its framework, and only it; nothing else in :mod:`taskforge` imports a
framework, so the package works without any of them installed.

* :mod:`taskforge.contrib.django`: a Django 6 ``django.tasks`` backend and the
  ``manage.py taskforge_worker`` command (docs/django.md; ``pip install 'taskforge[django]'``).
"""
