// Handlers of tests/node/test_node_client.py's Node workers: the synthetic task types (the same
// module a user would give), and two test types the test registers with tf_register_task_type.

import synthetic from '../../clients/node/examples/synthetic.js';

export default {
  ...synthetic,

  // The graph test: its own `add` plus the `sum` of every parent's result (ctx.parentResults,
  // read by the worker from taskforge.tf_task_dependencies), and which parents it saw.
  'nodetest.sum': async (payload, ctx) => {
    const parents = ctx.parentResults ?? {};
    const fromParents = Object.values(parents).reduce((total, result) => total + (result?.sum ?? 0), 0);
    return { sum: (payload.add ?? 0) + fromParents, parents: Object.keys(parents).map(Number).sort((a, b) => a - b) };
  },

  // Waits payload.first_ms on attempt 1 and payload.ms on later ones, unless ctx.signal aborts
  // first, and reports what the attempt saw.
  'nodetest.lease_probe': async (payload, ctx) => {
    const aborted = await ctx.sleep(ctx.attemptNumber === 1 ? payload.first_ms : payload.ms);
    return {
      aborted,
      reason: ctx.signal.reason?.name ?? null,
      lease_lost: ctx.leaseLost,
      fencing_token: ctx.fencingToken,
    };
  },
};
