#!/usr/bin/env node
// taskforge-node-worker: run a TaskForge worker whose handlers come from a module.
//
//   taskforge-node-worker --handlers ./handlers.js [--dsn DSN] [--queue Q ...] [--task-type T ...]
//                         [--concurrency N] [--lease-seconds S] [--heartbeat-seconds S]
//                         [--poll-seconds S] [--grace-seconds S] [--name NAME] [--log-level LEVEL]
//
// The handlers module's default export (or its named exports) is an object
// {taskType: async (payload, ctx) => result}. The DSN defaults to $TASKFORGE_DSN, then
// $DATABASE_URL. First SIGTERM/SIGINT: graceful stop (exit 0); a second one: exit 1 at once.
// Exit 2: bad options or the worker could not start.

import { resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import { parseArgs } from 'node:util';
import { Worker, lineLogger } from '../src/index.js';

const USAGE =
  'usage: taskforge-node-worker --handlers MODULE [--dsn DSN] [--queue Q ...] [--task-type T ...] ' +
  '[--concurrency N] [--lease-seconds S] [--heartbeat-seconds S] [--poll-seconds S] [--grace-seconds S] ' +
  '[--name NAME] [--log-level debug|info|warn|error]';

function options() {
  const { values } = parseArgs({
    options: {
      handlers: { type: 'string' },
      dsn: { type: 'string' },
      queue: { type: 'string', multiple: true },
      'task-type': { type: 'string', multiple: true },
      concurrency: { type: 'string', default: '1' },
      'lease-seconds': { type: 'string', default: '30' },
      'heartbeat-seconds': { type: 'string', default: '5' },
      'poll-seconds': { type: 'string', default: '1' },
      'grace-seconds': { type: 'string', default: '30' },
      name: { type: 'string' },
      'log-level': { type: 'string', default: 'info' },
      help: { type: 'boolean', short: 'h' },
    },
  });
  if (values.help) {
    console.log(USAGE);
    process.exit(0);
  }
  if (!values.handlers) throw new Error('--handlers MODULE is required');
  const number = (flag) => {
    const n = Number(values[flag]);
    if (!Number.isFinite(n)) throw new Error(`--${flag}: not a number: ${values[flag]}`);
    return n;
  };
  return {
    handlersPath: values.handlers,
    logLevel: values['log-level'],
    worker: {
      dsn: values.dsn,
      queues: values.queue,
      taskTypes: values['task-type'],
      concurrency: number('concurrency'),
      leaseSeconds: number('lease-seconds'),
      heartbeatSeconds: number('heartbeat-seconds'),
      pollSeconds: number('poll-seconds'),
      graceSeconds: number('grace-seconds'),
      name: values.name,
    },
  };
}

async function loadHandlers(path) {
  const module = await import(pathToFileURL(resolve(path)).href);
  const exported = module.default && typeof module.default === 'object' ? module.default : module;
  return Object.fromEntries(Object.entries(exported).filter(([, fn]) => typeof fn === 'function'));
}

async function main() {
  let worker;
  try {
    const opts = options();
    const logger = lineLogger(opts.logLevel);
    worker = new Worker({ ...opts.worker, handlers: await loadHandlers(opts.handlersPath), logger });
  } catch (err) {
    console.error(`taskforge-node-worker: ${err.message}\n${USAGE}`);
    return 2;
  }
  let signals = 0;
  const onSignal = (name) => {
    signals += 1;
    if (signals === 1) {
      worker.log.info(`${name} received: claiming nothing new (send it again to exit at once)`);
      worker.stop();
    } else {
      worker.log.warn(`${name} received again: exiting now`);
      worker.forceStop();
    }
  };
  process.on('SIGTERM', () => onSignal('SIGTERM'));
  process.on('SIGINT', () => onSignal('SIGINT'));
  try {
    return await worker.run();
  } catch (err) {
    worker.log.error(`could not start: ${err.message}`);
    return 2;
  }
}

process.exit(await main());
