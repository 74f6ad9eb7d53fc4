// The synthetic task types of the schema (db/schema/80_task_types.sql) as Node handlers, with
// the payloads, results and errors of the Python worker's taskforge.synthetic, so the same tasks
// end the same way whichever worker runs them. Opt-in, as in Python: a worker runs them only when
// given this module (taskforge-node-worker --handlers clients/node/examples/synthetic.js).
//
//   noop            {}            does nothing, no result
//   sleep           {"ms": int}   waits ms (0..86,400,000) and returns {"slept_ms": ms}; ends
//                                 cancelled early on a cancel request, retryable at its deadline
//   fail_once       {}            retryable failure on attempt 1, {"attempt_number": n} afterwards
//   fail            {}            an ordinary (terminal) error
//   retryable_fail  {}            a retryable error on every attempt (spends the budget)
//   echo            any object    returns its payload as the result

import { RetryableError, TaskCancelled } from '../src/index.js';

class SyntheticFailure extends Error {
  name = 'SyntheticFailure';
}

function sleepMs(payload) {
  const ms = payload?.ms ?? 0;
  if (typeof ms !== 'number' || Number.isNaN(ms) || ms < 0 || ms > 86_400_000) {
    throw new RangeError(`sleep: payload must be {"ms": milliseconds} with 0 <= ms <= 86400000, got ${JSON.stringify(payload)}`);
  }
  return ms;
}

export default {
  noop: async () => undefined,

  sleep: async (payload, ctx) => {
    const ms = sleepMs(payload);
    if (await ctx.sleep(ms)) {
      if (ctx.timedOut) {
        throw new RetryableError(`sleep: the attempt's deadline (${ctx.timeoutSeconds} s) passed before ${ms} ms elapsed`);
      }
      if (ctx.cancelRequested) throw new TaskCancelled(`sleep: cancel requested before ${ms} ms elapsed`);
      throw ctx.signal.reason; // the lease was lost: nothing this attempt reports is trusted
    }
    return { slept_ms: ms };
  },

  fail_once: async (payload, ctx) => {
    if (ctx.attemptNumber === 1) throw new RetryableError('fail_once: planned retryable failure on attempt 1');
    return { attempt_number: ctx.attemptNumber };
  },

  fail: async () => {
    throw new SyntheticFailure('fail: planned ordinary failure');
  },

  retryable_fail: async (payload, ctx) => {
    throw new RetryableError(`retryable_fail: planned retryable failure on attempt ${ctx.attemptNumber}`);
  },

  echo: async (payload) => payload,
};
