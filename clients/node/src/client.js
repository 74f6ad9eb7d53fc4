// The application side: submit tasks and task graphs, read them back, wait for their end.
//
// Every write is one call of a public SQL function (tf_submit, tf_submit_many, tf_cancel), every
// read a SELECT of a view (tf_tasks, tf_attempts, tf_task_dependencies); the database validates
// everything and decides every state. Rows come back with the SQL API's own column names
// (task_id, state, created, last_error, ...). Refusals are thrown as the errors of errors.js
// (InvalidArgument with sqlstate 'TF400' and column 'priority', ...).
//
// The login role needs taskforge_client (docs/operations.md, "Roles").

import { TaskNotFound } from './errors.js';
import { createPool, namedCall, query } from './db.js';

/** The states a task never leaves by itself. */
export const TERMINAL_STATES = Object.freeze(['SUCCEEDED', 'FAILED', 'CANCELLED']);

// submit()'s options -> tf_submit's parameters (depends_on: the task graph, appended last).
const SUBMIT_OPTIONS = {
  queue: 'queue',
  priority: 'priority',
  maxAttempts: 'max_attempts',
  scheduledAt: 'scheduled_at',
  idempotencyKey: 'idempotency_key',
  timeoutSeconds: 'timeout_seconds',
  delaySeconds: 'delay_seconds',
  notifyFinished: 'notify_finished',
  traceparent: 'traceparent',
  dependsOn: 'depends_on',
  rateKey: 'rate_key',
  concurrencyKey: 'concurrency_key',
  orderingKey: 'ordering_key',
};

/** wait() gave up: the task had not ended within the time given. */
export class WaitTimeout extends Error {
  constructor(taskId, seconds, task) {
    super(`task ${taskId} had not ended after ${seconds} s (state ${task?.state})`);
    this.name = 'WaitTimeout';
    this.task = task;
  }
}

export class TaskForgeClient {
  /**
   * options: dsn (else $TASKFORGE_DSN, $DATABASE_URL), or pool (a pg.Pool or pg.Client of the
   * application: calls then run on it, in its transactions; close() leaves it open).
   */
  constructor({ dsn, pool } = {}) {
    this.ownsPool = !pool;
    this.db = pool ?? createPool(dsn, { applicationName: 'taskforge-node/client', max: 4 });
  }

  /**
   * Admit one task (tf_submit). payload: a JSON object. options (each optional, the function's
   * default otherwise): queue, priority, maxAttempts, scheduledAt (Date or ISO text with an
   * offset), delaySeconds (added to the database's clock), idempotencyKey, timeoutSeconds,
   * notifyFinished, traceparent, dependsOn (array of parent task ids: the task waits BLOCKED
   * until they all succeed), rateKey, concurrencyKey, orderingKey (flow control). Only the
   * options given are sent, by name. Returns {task_id, state, created}.
   * Throws InvalidArgument (TF400, column names the argument), Conflict (TF409).
   */
  async submit(taskType, payload = {}, options = {}) {
    const args = { task_type: taskType, payload: JSON.stringify(payload) };
    for (const [key, value] of Object.entries(options)) {
      const name = SUBMIT_OPTIONS[key];
      if (!name) throw new TypeError(`submit: unknown option ${key} (known: ${Object.keys(SUBMIT_OPTIONS).join(', ')})`);
      args[name] = value instanceof Date ? value.toISOString() : value;
    }
    const call = namedCall('tf_submit', args, {
      columns: 'task_id, state, created',
      casts: { payload: 'jsonb', depends_on: 'bigint[]' },
    });
    const { rows } = await query(this.db, call.text, call.values);
    return rows[0];
  }

  /**
   * Admit many tasks in one call and one transaction (tf_submit_many): all or nothing.
   * requests: objects with tf_submit's parameter names as keys ({task_type, payload, queue,
   * priority, ..., depends_on: [task ids], depends_on_positions: [0-based positions of earlier
   * requests of this call]}), sent as the JSON given. Returns one {task_id, state, created} per
   * request, in input order. Errors name the element: column 'requests[3].priority'.
   */
  async submitMany(requests) {
    const call = namedCall(
      'tf_submit_many',
      { requests: JSON.stringify(requests) },
      { columns: 'task_id, state, created', casts: { requests: 'jsonb' } },
    );
    const { rows } = await query(this.db, call.text, call.values);
    return rows;
  }

  /** The task's tf_tasks row with `attempts` (its tf_attempts rows, in order). Throws TaskNotFound. */
  async getTask(taskId, db = this.db) {
    const { rows } = await query(db, 'SELECT * FROM taskforge.tf_tasks WHERE task_id = $1', [taskId]);
    if (rows.length === 0) throw new TaskNotFound('TF404', `task_id: no task ${taskId}`, 'task_id');
    const attempts = await query(
      db,
      'SELECT * FROM taskforge.tf_attempts WHERE task_id = $1 ORDER BY attempt_number',
      [taskId],
    );
    return { ...rows[0], attempts: attempts.rows };
  }

  /**
   * The task's parents (tf_task_dependencies): rows {child_task_id, parent_task_id,
   * parent_state, parent_result, ...}, by parent id. Empty for a task without parents.
   */
  async dependencies(taskId, db = this.db) {
    const { rows } = await query(
      db,
      'SELECT * FROM taskforge.tf_task_dependencies WHERE child_task_id = $1 ORDER BY parent_task_id',
      [taskId],
    );
    return rows;
  }

  /** tf_cancel: {task_state, cancel_requested}. Throws TaskNotFound. */
  async cancel(taskId, reason = undefined) {
    const call = namedCall('tf_cancel', { task_id: taskId, reason }, { columns: 'task_state, cancel_requested' });
    const { rows } = await query(this.db, call.text, call.values);
    return rows[0];
  }

  /**
   * Wait until the task has ended (SUCCEEDED, FAILED or CANCELLED) and return it as getTask does.
   * LISTENs on taskforge_finished first, then reads the task, then waits for its notification
   * (sent for tasks submitted with notifyFinished) or pollSeconds, and reads it again: a task
   * without the flag is seen by the polling. One connection of the pool is held meanwhile; the
   * time limit is on this process's monotonic clock. Throws WaitTimeout after timeoutSeconds.
   */
  async wait(taskId, { timeoutSeconds = 30, pollSeconds = 1 } = {}) {
    // A pool lends one of its connections; a single pg.Client is used as it is.
    const pooled = 'totalCount' in this.db;
    const conn = pooled ? await this.db.connect() : this.db;
    const release = pooled ? (err) => conn.release(err) : () => {};
    const deadline = performance.now() + timeoutSeconds * 1000;
    let failure;
    try {
      await query(conn, 'LISTEN taskforge_finished');
      for (;;) {
        const task = await this.getTask(taskId, conn);
        if (TERMINAL_STATES.includes(task.state)) return task;
        const left = deadline - performance.now();
        if (left <= 0) throw new WaitTimeout(taskId, timeoutSeconds, task);
        await notification(conn, String(task.task_id), Math.min(left, pollSeconds * 1000));
      }
    } catch (err) {
      failure = err;
      throw err;
    } finally {
      try {
        await conn.query('UNLISTEN taskforge_finished');
        release();
      } catch (err) {
        release(failure ?? err);
      }
    }
  }

  /** Close the client's own pool (an application's pool is left open). */
  async close() {
    if (this.ownsPool) await this.db.end();
  }
}

/** Resolves when `conn` receives a taskforge_finished notification for `payload`, or after ms. */
function notification(conn, payload, ms) {
  return new Promise((resolve) => {
    const done = () => {
      clearTimeout(timer);
      conn.off('notification', onNote);
      resolve();
    };
    const onNote = (note) => {
      if (note.channel === 'taskforge_finished' && note.payload === payload) done();
    };
    const timer = setTimeout(done, ms);
    conn.on('notification', onNote);
  });
}
