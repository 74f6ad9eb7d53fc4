"""Every SQL statement the Python side sends, in one place.

Statements call the public ``taskforge.tf_*`` functions with named arguments (``=>``) or read
the ``taskforge.tf_*`` views. Placeholders are psycopg's ``%(name)s``. Keep statements here so
a DBA can audit what the clients send by reading one file.
"""

# --- database / migrations ------------------------------------------------------------------
SCHEMA_VERSION = "SELECT taskforge.tf_schema_version()"
SCHEMA_EXISTS = "SELECT to_regnamespace('taskforge') IS NOT NULL"
CURRENT_DATABASE = "SELECT current_database()"

# --- admission (clients) ----------------------------------------------------------------------
SUBMIT = """
SELECT task_id, state, created
  FROM taskforge.tf_submit(task_type => %(task_type)s, payload => %(payload)s, queue => %(queue)s,
                           priority => %(priority)s, max_attempts => %(max_attempts)s,
                           scheduled_at => %(scheduled_at)s, idempotency_key => %(idempotency_key)s)
"""
CANCEL = "SELECT task_state, cancel_requested FROM taskforge.tf_cancel(task_id => %(task_id)s, reason => %(reason)s)"
RETRY = "SELECT task_state, max_attempts FROM taskforge.tf_retry(task_id => %(task_id)s, extra_attempts => %(extra_attempts)s)"

# --- worker -------------------------------------------------------------------------------------
REGISTER_WORKER = """
SELECT taskforge.tf_register_worker(name => %(name)s, hostname => %(hostname)s, pid => %(pid)s,
                                    queues => %(queues)s, task_types => %(task_types)s,
                                    heartbeat_seconds => %(heartbeat_seconds)s)
"""
HEARTBEAT = "SELECT taskforge.tf_heartbeat(worker_id => %(worker_id)s)"
DEREGISTER_WORKER = "SELECT taskforge.tf_deregister_worker(worker_id => %(worker_id)s)"
CLAIM = """
SELECT task_id, attempt_number, task_type, payload, queue, priority, max_attempts, lease_expires_at
  FROM taskforge.tf_claim(worker_id => %(worker_id)s, queues => %(queues)s,
                          lease_seconds => %(lease_seconds)s, max_tasks => %(max_tasks)s,
                          task_types => %(task_types)s)
"""
RENEW = """
SELECT renewed, lease_expires_at, cancel_requested
  FROM taskforge.tf_renew(task_id => %(task_id)s, worker_id => %(worker_id)s,
                          attempt_number => %(attempt_number)s, lease_seconds => %(lease_seconds)s)
"""
FINALIZE = """
SELECT accepted, task_state, reason
  FROM taskforge.tf_finalize(task_id => %(task_id)s, worker_id => %(worker_id)s,
                             attempt_number => %(attempt_number)s, outcome => %(outcome)s,
                             result => %(result)s, error => %(error)s)
"""
LISTEN = "LISTEN taskforge"

# --- scheduler ----------------------------------------------------------------------------------
RECOVER = "SELECT recovered, failed, next_lease_expiry FROM taskforge.tf_recover(max_tasks => %(max_tasks)s)"
PROMOTE = "SELECT promoted, next_due_at FROM taskforge.tf_promote(max_tasks => %(max_tasks)s)"
PRUNE = "SELECT taskforge.tf_prune(older_than_seconds => %(older_than_seconds)s, max_tasks => %(max_tasks)s)"
DB_NOW = "SELECT clock_timestamp()"

# --- read surface (views) -----------------------------------------------------------------------
INVARIANT_VIOLATIONS = "SELECT rule, task_id, attempt_number, detail FROM taskforge.tf_invariant_violations"
