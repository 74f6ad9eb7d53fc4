// What tests/node/test_node_client.py asks the Node client to do, one command per run; each prints
// one JSON document on stdout. DSN: $TASKFORGE_DSN.
//
//   submit-many REQUESTS_JSON      TaskForgeClient.submitMany -> the rows
//   wait TASK_ID                   TaskForgeClient.wait -> {state, result, attempts}
//   bad-input QUEUE                refusals as the client's errors -> [{what, name, sqlstate, column, ...}]
//   stale-finalize QUEUE           a claim, then tf_finalize with a wrong, the right and a late token

import { Conflict, InvalidArgument, Refused, TaskForgeClient, TaskNotFound, calls, createPool } from '../../clients/node/src/index.js';

const [command, arg] = process.argv.slice(2);
const pool = createPool(undefined, { max: 2 });
const client = new TaskForgeClient({ pool });

function describe(what, err) {
  if (!(err instanceof Refused)) throw err;
  return {
    what,
    name: err.name,
    invalid_argument: err instanceof InvalidArgument,
    task_not_found: err instanceof TaskNotFound,
    conflict: err instanceof Conflict,
    sqlstate: err.sqlstate,
    column: err.column,
    argument: err.argument,
    index: err.index,
    message: err.message,
    cause_code: err.cause?.code ?? null,
  };
}

async function refusal(what, promise) {
  try {
    await promise;
  } catch (err) {
    return describe(what, err);
  }
  throw new Error(`${what}: was not refused`);
}

const commands = {
  'submit-many': async () => client.submitMany(JSON.parse(arg)),

  wait: async () => {
    const task = await client.wait(Number(arg), { timeoutSeconds: 30, pollSeconds: 0.2 });
    return { state: task.state, result: task.result, attempts: task.attempts.map((a) => a.state) };
  },

  'bad-input': async () => {
    const queue = arg;
    await client.submit('echo', { n: 1 }, { queue, idempotencyKey: `${queue}-key` });
    return [
      await refusal('priority', client.submit('echo', {}, { queue, priority: 40000 })),
      await refusal('task_type', client.submit('no_such_type', {}, { queue })),
      await refusal(
        'batch',
        client.submitMany([
          { task_type: 'echo', queue },
          { task_type: 'echo', queue, priority: 40000 },
        ]),
      ),
      await refusal('key', client.submit('echo', { n: 2 }, { queue, idempotencyKey: `${queue}-key` })),
      await refusal('missing', client.getTask(2 ** 53 - 1)),
      await refusal('cancel', client.cancel(2 ** 53 - 1)),
    ];
  },

  'stale-finalize': async () => {
    const queue = arg;
    const { task_id: taskId } = await client.submit('echo', { n: 1 }, { queue });
    const workerId = await calls.registerWorker(pool, { name: `${queue}-stale`, queues: [queue] });
    const [row] = await calls.claim(pool, { workerId, queues: [queue], leaseSeconds: 30 });
    const token = { taskId: row.task_id, workerId, attemptNumber: row.attempt_number };
    const wrong = await calls.finalize(pool, { ...token, attemptNumber: token.attemptNumber + 1 }, {
      outcome: 'succeeded',
      result: JSON.stringify({ from: 'wrong attempt' }),
    });
    const right = await calls.finalize(pool, token, { outcome: 'succeeded', result: JSON.stringify({ from: 'owner' }) });
    const late = await calls.finalize(pool, token, { outcome: 'failed', errorText: 'late' });
    const renewed = await calls.renew(pool, token, 30);
    await calls.deregisterWorker(pool, workerId);
    return { task_id: taskId, claimed: row.task_id, attempt_number: row.attempt_number, wrong, right, late, renewed };
  },
};

try {
  process.stdout.write(`${JSON.stringify(await commands[command]())}\n`);
} finally {
  await pool.end();
}
