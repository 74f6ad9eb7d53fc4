"""TaskForge: PostgreSQL-backed background tasks.

Every rule (admission, claiming, leases, retries, recovery) lives in PL/pgSQL functions in
schema ``taskforge``; this package holds the thin Python processes around them: the worker,
the scheduler and the ``taskforge`` command line.
"""

__version__ = "0.1.0"

#: The newest tf_schema_version() this client understands.
SCHEMA_VERSION = 1
