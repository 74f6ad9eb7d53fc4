// taskforge-client: a small Node.js client of TaskForge's SQL API (schema taskforge).
export { TaskForgeClient, TERMINAL_STATES, WaitTimeout } from './client.js';
export { Worker, KNOWN_SCHEMA_VERSION, lineLogger } from './worker.js';
export {
  AttemptTimedOut,
  Conflict,
  InvalidArgument,
  LeaseLost,
  Refused,
  RetryableError,
  TaskCancelled,
  TaskNotFound,
  WorkerNotFound,
  isTransient,
  toClientError,
} from './errors.js';
export { createPool, query } from './db.js';
export * as calls from './calls.js';
export { ResultError, encodeResult } from './attempt.js';
