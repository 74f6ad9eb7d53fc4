"""The ``taskforge`` command line (click): ``main`` is the console script's entry point.

Layout: :mod:`.common` (exit codes, ``fail``, shared options, parameter types), one module per
family of commands (:mod:`.migrate`, :mod:`.health`, :mod:`.tasks`, :mod:`.queues`,
:mod:`.periodic`, :mod:`.run`, :mod:`.demo`, :mod:`.bench`), each listing its commands in
``COMMANDS``, and :mod:`.app`, which builds the group from them.
"""

from .app import main
from .common import EXIT_DATABASE, EXIT_PENDING, EXIT_REFUSED, EXIT_USAGE

__all__ = ["EXIT_DATABASE", "EXIT_PENDING", "EXIT_REFUSED", "EXIT_USAGE", "main"]
