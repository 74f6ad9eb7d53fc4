"""TaskForge console: one Flask application serving the pages and a JSON API over the
``taskforge.tf_*`` views and functions (docs/console.md).

``create_app(Settings(...))`` builds the WSGI application; ``taskforge console`` serves it with
waitress. The console reads only ``tf_*`` views and changes things only through ``tf_*``
functions, connected as a login role that holds ``taskforge_console``.
"""

from __future__ import annotations

from .app import create_app
from .settings import Settings, SettingsError

__all__ = ["Settings", "SettingsError", "create_app"]
