// Errors of the TaskForge Node.js client, and the one place where a database error becomes one.
//
// The SQL API refuses a request with an SQLSTATE of its own (docs/sql-api.md, "Errors"):
//   TF400  an invalid argument                                  -> InvalidArgument
//   TF404  no such task (COLUMN task_id) or worker (worker_id)   -> TaskNotFound / WorkerNotFound
//   TF409  an idempotency key reused with a different request,
//          a tf_retry the task's state does not allow            -> Conflict
// Nothing is written when one is raised. The error's COLUMN field (node-postgres: err.column)
// names the argument at fault: 'priority', or for an element of a batch 'requests[3].priority'
// (0-based, as in the JSON array). toClientError() reads the SQLSTATE and that field; no message
// text is ever parsed. Every other error (a lost connection, 42501 permission denied, 22P02 ...)
// passes through unchanged.
//
// Handlers throw RetryableError (the database applies backoff and budget) or TaskCancelled
// (the attempt ends cancelled); anything else thrown by a handler is an ordinary failure.

// "requests[3].priority" -> array "requests", index 3, key "priority"; "requests[3]" -> no key.
const ELEMENT = /^([A-Za-z_][A-Za-z0-9_]*)\[([0-9]+)\](?:\.(.+))?$/;

/** A request the SQL API refused; nothing was written. */
export class Refused extends Error {
  /**
   * @param {string} sqlstate  'TF400' | 'TF404' | 'TF409'
   * @param {string} message   the whole message, '<column>: <problem>'
   * @param {string|null} column  the argument as the error's COLUMN field names it
   */
  constructor(sqlstate, message, column = null, options = undefined) {
    super(message, options);
    this.name = new.target.name;
    this.sqlstate = sqlstate;
    this.column = column;
    // The SQL argument ('priority'); for a batch element the key inside it, or the array's
    // name when the element as a whole is at fault. index: the 0-based element, else null.
    this.argument = column;
    this.index = null;
    this.elementKey = null;
    const element = column ? ELEMENT.exec(column) : null;
    if (element) {
      this.elementKey = element[3] ?? null;
      this.argument = this.elementKey ?? element[1];
      this.index = Number(element[2]);
    }
  }

  /** The message without the '<column>: ' it starts with. */
  get problem() {
    const prefix = this.column ? `${this.column}: ` : null;
    return prefix && this.message.startsWith(prefix) ? this.message.slice(prefix.length) : this.message;
  }
}

/** TF400: an argument is invalid (column names it). */
export class InvalidArgument extends Refused {}

/** TF404 naming task_id: no task with that id. */
export class TaskNotFound extends Refused {}

/** TF404 naming worker_id: an unknown or deregistered worker (the worker must stop). */
export class WorkerNotFound extends Refused {}

/** TF409: a conflict (idempotency key reused with another request, a retry not allowed). */
export class Conflict extends Refused {}

/**
 * The client error a node-postgres error stands for: a Refused subclass for SQLSTATE TF400,
 * TF404 and TF409 (the original error is its `cause`), the error itself for anything else.
 */
export function toClientError(err) {
  const sqlstate = err && typeof err.code === 'string' ? err.code : '';
  if (!sqlstate.startsWith('TF')) return err;
  const column = err.column ?? null;
  const options = { cause: err };
  const message = String(err.message ?? '').trim();
  if (sqlstate === 'TF400') return new InvalidArgument(sqlstate, message, column, options);
  if (sqlstate === 'TF404' && column === 'worker_id') return new WorkerNotFound(sqlstate, message, column, options);
  if (sqlstate === 'TF404') return new TaskNotFound(sqlstate, message, column, options);
  if (sqlstate === 'TF409') return new Conflict(sqlstate, message, column, options);
  return new Refused(sqlstate, message, column, options);
}

/** Thrown by a handler: the attempt failed but may be retried (backoff and budget: the database). */
export class RetryableError extends Error {
  constructor(message, options = undefined) {
    super(message, options);
    this.name = 'RetryableError';
  }
}

/** Thrown by a handler (or the abort reason of ctx.signal after tf_cancel): the attempt ends cancelled. */
export class TaskCancelled extends Error {
  constructor(message = 'cancel requested (tf_cancel)', options = undefined) {
    super(message, options);
    this.name = 'TaskCancelled';
  }
}

/** The abort reason of ctx.signal once tf_renew says renewed = false: the attempt is no longer trusted. */
export class LeaseLost extends Error {
  constructor(reason) {
    super(`lease lost (tf_renew: ${reason})`);
    this.name = 'LeaseLost';
    this.reason = reason;
  }
}

/** The abort reason of ctx.signal at the attempt's deadline (timeout_seconds of the claim). */
export class AttemptTimedOut extends Error {
  constructor(seconds) {
    super(`the attempt's deadline (timeout_seconds ${seconds}) passed`);
    this.name = 'AttemptTimedOut';
  }
}

// SQLSTATEs worth sending again on a new connection: connection exceptions (08), admin shutdown
// and crash recovery (57P01..57P03), a statement or lock timeout (57014, 55P03), serialization
// failures and deadlocks (40001, 40P01), a read-only window during a failover (25006), too many
// connections or out of resources (53xxx).
const TRANSIENT = /^(08|57P0|57014|55P03|40001|40P01|25006|53)/;

/** True when the call may simply be sent again (nothing was written, or a connection broke). */
export function isTransient(err) {
  if (!err || err instanceof Refused) return false;
  const code = typeof err.code === 'string' ? err.code : '';
  if (TRANSIENT.test(code)) return true;
  // Socket errors (ECONNREFUSED, ECONNRESET, ETIMEDOUT, ...) and node-postgres's own.
  if (/^E[A-Z]+$/.test(code)) return true;
  return /Connection terminated|connection timeout|Client has encountered a connection error/i.test(
    String(err.message ?? ''),
  );
}
