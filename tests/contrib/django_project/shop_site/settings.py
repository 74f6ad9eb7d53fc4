"""Settings of the example shop (docs/django.md), which tests/contrib runs against a fresh
database: the connection comes from the ``SHOP_DB_*`` variables."""

import os

SECRET_KEY = "an-example-project-has-no-secret"
DEBUG = False
ALLOWED_HOSTS = ["127.0.0.1", "localhost"]
ROOT_URLCONF = "shop_site.urls"
MIDDLEWARE: list[str] = []  # a JSON API for the example; a real site keeps its middleware
USE_TZ = True
TIME_ZONE = "UTC"
DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"

INSTALLED_APPS = [
    "taskforge.contrib.django",  # manage.py taskforge_worker
    "shop",
]

DATABASES = {
    "default": {
        "ENGINE": "django.db.backends.postgresql",
        "NAME": os.environ.get("SHOP_DB_NAME", "shop"),
        "USER": os.environ.get("SHOP_DB_USER", "postgres"),
        "PASSWORD": os.environ.get("SHOP_DB_PASSWORD", ""),
        "HOST": os.environ.get("SHOP_DB_HOST", "127.0.0.1"),
        "PORT": os.environ.get("SHOP_DB_PORT", "5432"),
        "CONN_MAX_AGE": int(os.environ.get("SHOP_CONN_MAX_AGE", "0")),
    }
}

TASKS = {
    "default": {
        "BACKEND": "taskforge.contrib.django.TaskForgeBackend",
        "QUEUES": ["default", "reports", "urgent"],
        "OPTIONS": {"DATABASE": "default", "MAX_ATTEMPTS": 3},
    }
}

# Django's task signals log each task's start and end (logger django.tasks).
LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "handlers": {"console": {"class": "logging.StreamHandler"}},
    "loggers": {"django.tasks": {"handlers": ["console"], "level": "INFO"}},
}
