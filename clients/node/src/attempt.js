// One claimed attempt: run its handler, renew its lease meanwhile, finalize it.
//
// The attempt is (task_id, attempt_number) of worker_id: the triple every tf_renew and
// tf_finalize carries, which the database's guard checks (docs/design.md §2 rule 4). The handler
// gets ctx.fencingToken = [taskId, attemptNumber] to hand to the systems it writes to, and
// ctx.parentResults, the results of the task's parents (tf_submit's depends_on), read with
// tf_parent_results and that token before the handler starts (workers read no view); a read that
// fails ends the attempt 'retryable', so a handler never runs without its inputs.
//
// Renewals: tf_renew every lease/3 (sent one interval after the previous one was sent). Its
// answer is the only word on the lease:
//   renewed = true                 next renewal one interval later;
//   cancel_requested = true        ctx.cancelRequested, and ctx.signal aborts with TaskCancelled;
//   renewed = false (any reason)   the lease is lost: renewals stop, ctx.leaseLost, and ctx.signal
//                                  aborts with LeaseLost (AttemptTimedOut for 'timed_out'): the
//                                  handler's work is no longer trusted. Its outcome is still
//                                  offered to tf_finalize, which refuses it (accepted = false).
// An error says nothing about the lease: a renewal that failed is sent again after 0.25 s,
// doubling, at most one interval.
//
// Outcomes (what tf_finalize gets): a returned value -> 'succeeded' with it as the result
// (undefined: no result; a value the database cannot store -> 'failed', ResultError); RetryableError ->
// 'retryable' (backoff and budget: the database); TaskCancelled, or any error after a cancel
// request -> 'cancelled'; AttemptTimedOut -> 'retryable' (the database refuses it 'timed_out' and
// recovery records the attempt timed_out); anything else -> 'failed'. Errors are stored as
// {type, message, traceback}, NUL characters removed and lone surrogates replaced by U+FFFD. A finalize is sent
// until it lands (transient errors: again after a backoff); one the database refuses as a whole
// (a result it cannot store) is sent again as 'failed' with the refusal as error_text, the path
// that cannot fail. Times are this process's monotonic clock (performance.now, setTimeout); the
// database alone decides whether a lease holds or a deadline has passed.

import { AttemptTimedOut, LeaseLost, RetryableError, TaskCancelled, isTransient } from './errors.js';
import { finalize, parentResults, renew } from './calls.js';

const MESSAGE_MAX_CHARS = 4000;
const TRACEBACK_MAX_CHARS = 8000;
// After the deadline of this process's clock, how long a timed-out attempt's finalize waits so
// that the database's own deadline (claim time + timeout_seconds) has surely passed.
const DEADLINE_MARGIN_MS = 10;

/** Text PostgreSQL can store: NUL characters removed, lone surrogates replaced by U+FFFD. */
export function cleanText(value) {
  return String(value ?? '').replaceAll('\u0000', '').toWellFormed();
}

/** {type, message, traceback} of a thrown value, ready for tf_finalize's error. */
export function errorJson(err) {
  const isError = err instanceof Error;
  return {
    type: cleanText(isError ? err.name : typeof err).slice(0, 200),
    message: cleanText(isError ? err.message : err).slice(0, MESSAGE_MAX_CHARS),
    traceback: isError && err.stack ? cleanText(err.stack).slice(-TRACEBACK_MAX_CHARS) : null,
  };
}

/** A handler's result the database could not store; the attempt ends 'failed' with it. */
export class ResultError extends Error {
  name = 'ResultError';
}

const RESULT_MAX_BYTES = 1024 * 1024;

/**
 * Strict JSON text of a handler's result (null for undefined or null), as the Python worker
 * encodes it: NaN and Infinity, strings with NUL characters or lone surrogates (jsonb cannot
 * hold them), values JSON cannot encode (BigInt, cycles) and more than 1 MiB are a ResultError.
 */
export function encodeResult(value) {
  if (value === undefined || value === null) return null;
  let text;
  try {
    text = JSON.stringify(value, (key, v) => {
      if (typeof v === 'number' && !Number.isFinite(v)) throw new ResultError(`handler result is not valid JSON: ${v} is not allowed`);
      if (typeof v === 'string' && (v.includes('\u0000') || !v.isWellFormed())) {
        throw new ResultError('handler result contains NUL characters or lone surrogates, which PostgreSQL jsonb cannot store');
      }
      return v;
    });
  } catch (err) {
    if (err instanceof ResultError) throw err;
    throw new ResultError(`handler result is not JSON-serialisable: ${err.message}`);
  }
  if (text === undefined) throw new ResultError(`handler result is not JSON-serialisable: ${typeof value}`);
  const bytes = Buffer.byteLength(text);
  if (bytes > RESULT_MAX_BYTES) throw new ResultError(`handler result is ${bytes} bytes of JSON; at most ${RESULT_MAX_BYTES} are stored`);
  return text;
}

const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

export class Attempt {
  /**
   * row: a tf_claim row (payload as JSON text); claimedAt: performance.now() when the claim
   * came back; sentAt: when it was sent. readParents: whether to read tf_parent_results for
   * ctx.parentResults (else null). worker: {db, workerId, leaseSeconds, log, forced()}.
   */
  constructor({ row, handler, readParents, worker, sentAt, claimedAt }) {
    this.row = row;
    this.handler = handler;
    this.readParents = readParents;
    this.parents = null;
    this.worker = worker;
    this.claimedAt = claimedAt;
    this.renewMs = (worker.leaseSeconds * 1000) / 3;
    this.controller = new AbortController();
    this.done = false;
    this.failures = 0;
    this.timers = new Set();
    this.token = { taskId: row.task_id, workerId: worker.workerId, attemptNumber: row.attempt_number };
    const state = { cancelRequested: false, leaseLost: false, timedOut: false };
    this.state = state;
    const attempt = this;
    const signal = this.controller.signal;
    this.ctx = Object.freeze({
      taskId: row.task_id,
      attemptNumber: row.attempt_number,
      workerId: worker.workerId,
      taskType: row.task_type,
      queue: row.queue,
      priority: row.priority,
      maxAttempts: row.max_attempts,
      timeoutSeconds: row.timeout_seconds,
      traceparent: row.traceparent,
      fencingToken: Object.freeze([row.task_id, row.attempt_number]),
      signal,
      /** {parentTaskId: result} of the task's parents (depends_on); {} without; null: not in this schema. */
      get parentResults() {
        return attempt.parents;
      },
      get cancelRequested() {
        return state.cancelRequested;
      },
      get leaseLost() {
        return state.leaseLost;
      },
      get timedOut() {
        return state.timedOut;
      },
      /** Wait ms; resolves true when ctx.signal aborted first (cancel, lost lease, deadline). */
      sleep(ms) {
        if (signal.aborted) return Promise.resolve(true);
        return new Promise((resolve) => {
          const onAbort = () => {
            clearTimeout(timer);
            resolve(true);
          };
          const timer = setTimeout(() => {
            signal.removeEventListener('abort', onAbort);
            resolve(false);
          }, ms);
          signal.addEventListener('abort', onAbort, { once: true });
        });
      },
    });
    if (row.timeout_seconds !== null && row.timeout_seconds !== undefined) {
      const ms = row.timeout_seconds * 1000 - (claimedAt - sentAt);
      this.later(Math.max(ms, 0), () => {
        state.timedOut = true;
        this.controller.abort(new AttemptTimedOut(row.timeout_seconds));
      });
    }
    this.later(this.renewMs - (claimedAt - sentAt), () => this.renew());
  }

  get label() {
    return `task ${this.row.task_id} attempt ${this.row.attempt_number}`;
  }

  later(ms, fn) {
    const timer = setTimeout(() => {
      this.timers.delete(timer);
      fn();
    }, Math.max(ms, 0));
    this.timers.add(timer);
  }

  /** Run the handler and finalize; resolves when the attempt has left the worker. */
  async run() {
    const outcome = await this.execute();
    this.done = true;
    for (const timer of this.timers) clearTimeout(timer);
    this.timers.clear();
    if (this.state.timedOut && this.row.timeout_seconds !== null) {
      const wait = this.claimedAt + this.row.timeout_seconds * 1000 + DEADLINE_MARGIN_MS - performance.now();
      if (wait > 0) await sleep(wait);
    }
    await this.finalize(outcome);
  }

  async execute() {
    const { log } = this.worker;
    const started = performance.now();
    let outcome;
    try {
      if (!this.handler) throw new Error(`no handler for task type ${this.row.task_type} on this worker`);
      const payload = JSON.parse(this.row.payload);
      if (this.readParents) {
        try {
          this.parents = await parentResults(this.worker.db, this.token);
        } catch (err) {
          throw new RetryableError(`could not read the parents' results: ${err.message}`, { cause: err });
        }
      }
      const value = await this.handler(payload, this.ctx);
      try {
        outcome = { outcome: 'succeeded', result: encodeResult(value), error: null };
      } catch (err) {
        outcome = { outcome: 'failed', result: null, error: JSON.stringify({ ...errorJson(err), traceback: null }) };
      }
    } catch (err) {
      outcome = { outcome: this.outcomeOf(err), result: null, error: JSON.stringify(errorJson(err)) };
    }
    log.debug(`${this.label}: handler ended ${outcome.outcome} after ${Math.round(performance.now() - started)} ms`);
    return outcome;
  }

  outcomeOf(err) {
    if (err instanceof RetryableError || err instanceof AttemptTimedOut) return 'retryable';
    if (err instanceof TaskCancelled || this.state.cancelRequested) return 'cancelled';
    if (this.state.timedOut) return 'retryable';
    return 'failed';
  }

  async renew() {
    if (this.done) return;
    const { db, leaseSeconds, log } = this.worker;
    const sentAt = performance.now();
    let answer;
    try {
      answer = await renew(db, this.token, leaseSeconds);
    } catch (err) {
      if (this.done) return;
      this.failures += 1;
      const delay = Math.min(this.renewMs, 250 * 2 ** (this.failures - 1)) * (0.75 + Math.random() / 4);
      const kind = isTransient(err) ? 'warn' : 'error';
      log[kind](`renewal of ${this.label} failed (${this.failures}): ${err.message}; retrying in ${Math.round(delay)} ms`);
      this.later(delay, () => this.renew());
      return;
    }
    this.failures = 0;
    if (answer.cancel_requested && !this.state.cancelRequested) {
      this.state.cancelRequested = true;
      log.info(`${this.label}: cancel requested (ctx.cancelRequested, ctx.signal aborted)`);
      this.controller.abort(new TaskCancelled());
    }
    if (answer.renewed) {
      if (!this.done) this.later(this.renewMs - (performance.now() - sentAt), () => this.renew());
      return;
    }
    this.state.leaseLost = true;
    if (this.done) return;
    if (answer.reason === 'timed_out') this.state.timedOut = true;
    log.warn(
      `lease lost for ${this.label} (tf_renew: ${answer.reason}); no more renewals; ctx.signal aborted: ` +
        'the outcome will still be offered to tf_finalize, which decides',
    );
    this.controller.abort(
      answer.reason === 'timed_out' ? new AttemptTimedOut(this.row.timeout_seconds) : new LeaseLost(answer.reason),
    );
  }

  /** tf_finalize with the guard's triple, until it lands. */
  async finalize(outcome) {
    const { db, log } = this.worker;
    let sent = outcome;
    for (let tries = 1; ; tries++) {
      if (this.worker.forced()) return;
      let answer;
      try {
        answer = await finalize(db, this.token, sent);
      } catch (err) {
        if (isTransient(err)) {
          const delay = Math.min(5000, 250 * 2 ** Math.min(tries - 1, 5));
          log.warn(`finalize of ${this.label} failed: ${err.message}; trying again in ${delay} ms`);
          await sleep(delay);
          continue;
        }
        if (sent === outcome) {
          log.warn(`tf_finalize refused the ${outcome.outcome} outcome of ${this.label}: ${err.message}; finalizing it as failed`);
          const errorText = cleanText(`the database refused the ${outcome.outcome} outcome: ${err.message}`);
          sent = { outcome: 'failed', result: null, error: null, errorText };
          continue;
        }
        log.error(`could not finalize ${this.label}: ${err.message}; its lease will expire and tf_recover takes it back`);
        return;
      }
      if (answer.accepted) {
        log.info(`finalized ${this.label}: ${sent.outcome} -> task ${answer.task_state}`);
      } else {
        log.warn(
          `tf_finalize did not accept the ${sent.outcome} outcome of ${this.label}: ${answer.reason} (task is ${answer.task_state})`,
        );
      }
      return;
    }
  }
}
