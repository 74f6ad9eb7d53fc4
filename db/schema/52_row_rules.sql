-- The rules across the columns of a tasks row and of an attempts row, as one CHECK constraint per
-- table that calls the rules' home (taskforge._tf_task_row_ok, taskforge._tf_attempt_row_ok).
-- Added here, after the functions. A violation names the broken rule (tasks_owner_iff_running,
-- ...) as its constraint; why a function and not the expressions written out: the header of
-- _tf_task_row_ok.
ALTER TABLE taskforge.tasks ADD CONSTRAINT tasks_row_rules CHECK (taskforge._tf_task_row_ok(
    state, attempt_count, max_attempts, owner_worker_id, lease_expires_at, finished_at,
    idempotency_key, fingerprint, cancel_reason, cancel_requested_at));
ALTER TABLE taskforge.attempts ADD CONSTRAINT attempts_row_rules CHECK (taskforge._tf_attempt_row_ok(
    state, outcome, started_at, lease_expires_at, finished_at));
