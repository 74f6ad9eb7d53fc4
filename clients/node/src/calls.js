// The worker's SQL calls, one function each, so that a DBA can audit what the Node worker sends
// by reading one file. `db` is a pg.Pool or pg.Client; every call goes through db.js's query(),
// so a refusal arrives as InvalidArgument / TaskNotFound / WorkerNotFound (errors.js).
//
// The fencing token of an attempt is {taskId, workerId, attemptNumber}: renew() and finalize()
// send all three, and the database's guard accepts them only from the current owner of the
// current attempt with an unexpired lease (a refusal is an answer, accepted/renewed = false with
// a reason, never an error). Durations are seconds.

import { query } from './db.js';

/** tf_schema_version(): the installed SQL API version. */
export async function schemaVersion(db) {
  return (await query(db, 'SELECT taskforge.tf_schema_version() AS version')).rows[0].version;
}

/** tf_register_worker: a fresh worker id (uuid text) for this process start. */
export async function registerWorker(db, { name, hostname, pid, queues = null, taskTypes = null, heartbeatSeconds = 5 }) {
  const { rows } = await query(
    db,
    `SELECT taskforge.tf_register_worker(name => $1, hostname => $2, pid => $3, queues => $4::text[],
                                        task_types => $5::text[], heartbeat_seconds => $6) AS worker_id`,
    [name, hostname, pid, queues, taskTypes, heartbeatSeconds],
  );
  return rows[0].worker_id;
}

/** tf_heartbeat: the database time recorded. Throws WorkerNotFound once the worker's row is gone. */
export async function heartbeat(db, workerId) {
  return (await query(db, 'SELECT taskforge.tf_heartbeat(worker_id => $1) AS at', [workerId])).rows[0].at;
}

/** tf_deregister_worker (idempotent): the worker's owned tasks are left to expire and be recovered. */
export async function deregisterWorker(db, workerId) {
  await query(db, 'SELECT taskforge.tf_deregister_worker(worker_id => $1)', [workerId]);
}

/**
 * tf_claim: up to maxTasks rows {task_id, attempt_number, task_type, payload (JSON text, decoded
 * by the attempt so that a payload JS cannot decode costs that attempt only), queue, priority,
 * max_attempts, timeout_seconds, traceparent}. queues/taskTypes null = any.
 */
export async function claim(db, { workerId, queues = null, leaseSeconds = 30, maxTasks = 1, taskTypes = null }) {
  const { rows } = await query(
    db,
    `SELECT task_id, attempt_number, task_type, payload::text AS payload, queue, priority,
            max_attempts, timeout_seconds, traceparent
       FROM taskforge.tf_claim(worker_id => $1, queues => $2::text[], lease_seconds => $3,
                               max_tasks => $4, task_types => $5::text[])`,
    [workerId, queues, leaseSeconds, maxTasks, taskTypes],
  );
  return rows;
}

/** tf_renew: {renewed, cancel_requested, reason} (reason null when renewed). */
export async function renew(db, { taskId, workerId, attemptNumber }, leaseSeconds = 30) {
  const { rows } = await query(
    db,
    `SELECT renewed, cancel_requested, reason
       FROM taskforge.tf_renew(task_id => $1, worker_id => $2, attempt_number => $3, lease_seconds => $4)`,
    [taskId, workerId, attemptNumber, leaseSeconds],
  );
  return rows[0];
}

/**
 * tf_finalize: {accepted, task_state, reason}. outcome: succeeded | failed | retryable |
 * cancelled; result and error as JSON text (or null); errorText: a message stored as
 * {"message": ...}, the path that cannot fail (give it instead of error).
 */
export async function finalize(db, { taskId, workerId, attemptNumber }, { outcome, result = null, error = null, errorText = null }) {
  const { rows } = await query(
    db,
    `SELECT accepted, task_state, reason
       FROM taskforge.tf_finalize(task_id => $1, worker_id => $2, attempt_number => $3, outcome => $4,
                                  result => $5::jsonb, error => $6::jsonb, error_text => $7)`,
    [taskId, workerId, attemptNumber, outcome, result, error, errorText],
  );
  return rows[0];
}

/** Whether this schema has tf_parent_results (task dependencies, appended in issue 18). */
export async function hasParentResults(db) {
  const { rows } = await query(
    db,
    "SELECT to_regprocedure('taskforge.tf_parent_results(numeric, uuid, numeric)') IS NOT NULL AS ok",
  );
  return rows[0].ok;
}

/**
 * tf_parent_results: the results of the parents (tf_submit's depends_on) of the task whose
 * attempt the token names, as {parentTaskId: result} ({} without parents). Only the worker
 * holding that attempt gets them: TF409 (Conflict, column task_id) otherwise.
 */
export async function parentResults(db, { taskId, workerId, attemptNumber }) {
  const { rows } = await query(
    db,
    `SELECT parent_task_id, result
       FROM taskforge.tf_parent_results(task_id => $1, worker_id => $2, attempt_number => $3)`,
    [taskId, workerId, attemptNumber],
  );
  return Object.fromEntries(rows.map((row) => [row.parent_task_id, row.result]));
}
