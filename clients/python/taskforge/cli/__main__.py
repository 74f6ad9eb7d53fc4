"""``python -m taskforge.cli``: the same commands as the ``taskforge`` script."""

from .app import main

main()
