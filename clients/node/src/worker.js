// The worker loop: register, heartbeat, claim (woken by LISTEN taskforge, polling as a fallback),
// run each attempt with its renewals (attempt.js), stop gracefully.
//
//   start      tf_schema_version (refuses a newer API than it knows), tf_register_worker with the
//              handlers' task types (a worker claims only types it has a handler for), and
//              whether the schema has tf_parent_results (for ctx.parentResults).
//   heartbeat  tf_heartbeat every heartbeatSeconds; TF404 (the worker's row is gone: deregistered
//              or pruned) stops the worker with exit code 1.
//   listener   LISTEN taskforge on a connection of its own; a notification naming one of the
//              worker's queues (any, without queues) wakes the loop; after a lost connection it
//              re-subscribes with backoff and wakes the loop (notifications may have been missed).
//   loop       tf_claim for the free slots (max_tasks = concurrency - running) when a claim may
//              find work: at start, after a notification, when the last claim filled every slot
//              it asked for, and every pollSeconds. A refused claim (TF404: deregistered) stops
//              the worker; a transient error is retried after a backoff.
//   stop()     (first SIGTERM/SIGINT) claims nothing new; running handlers get graceSeconds to end
//              while their leases are still renewed; each is finalized; then tf_deregister_worker;
//              run() resolves 0. forceStop() (second signal, or the grace period over) resolves 1 at
//              once without finalizing: those tasks keep their leases until they expire, then
//              tf_recover requeues them.
//
// Connections: a pool of at most 2 * concurrency + 2 (claims, renewals, finalizes, heartbeats),
// lock_timeout min(1 s, lease / 10) and statement_timeout max(lock_timeout, min(lease / 3, 30 s)),
// as the Python worker (docs/worker.md); plus the listener's. Times are this process's monotonic
// clock; every decision about a lease is the database's.

import os from 'node:os';
import { Attempt } from './attempt.js';
import * as calls from './calls.js';
import { isTransient } from './errors.js';
import { createClient, createPool } from './db.js';

/** The SQL API version this client knows (tf_schema_version). */
export const KNOWN_SCHEMA_VERSION = 1;

const LEVELS = { debug: 10, info: 20, warn: 30, error: 40 };

/** A logger writing one line per event to stderr, at `level` (debug, info, warn, error) and above. */
export function lineLogger(level = 'info', name = 'taskforge-node-worker') {
  const min = LEVELS[level] ?? LEVELS.info;
  const out = {};
  for (const [lvl, rank] of Object.entries(LEVELS)) {
    out[lvl] = (message) => {
      if (rank >= min) process.stderr.write(`${new Date().toISOString()} ${lvl.toUpperCase()} ${name}: ${message}\n`);
    };
  }
  return out;
}

const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

export class Worker {
  /**
   * options: handlers ({taskType: async (payload, ctx) => result}), dsn (else $TASKFORGE_DSN,
   * $DATABASE_URL), queues (array; default every queue), taskTypes (a subset of the handlers'),
   * concurrency (1), leaseSeconds (30), heartbeatSeconds (5), pollSeconds (1), graceSeconds (30),
   * name (default hostname-pid), logger ({debug, info, warn, error}; default lineLogger()).
   */
  constructor(options) {
    const o = { concurrency: 1, leaseSeconds: 30, heartbeatSeconds: 5, pollSeconds: 1, graceSeconds: 30, ...options };
    check(Number.isInteger(o.concurrency) && o.concurrency >= 1 && o.concurrency <= 1000, 'concurrency: 1..1000');
    check(o.leaseSeconds > 0 && o.leaseSeconds <= 86400, 'leaseSeconds: 0 < s <= 86400');
    check(o.heartbeatSeconds > 0 && o.heartbeatSeconds <= 3600, 'heartbeatSeconds: 0 < s <= 3600');
    check(o.pollSeconds > 0 && o.pollSeconds <= 3600, 'pollSeconds: 0 < s <= 3600');
    check(o.graceSeconds >= 0, 'graceSeconds: >= 0');
    this.options = o;
    this.handlers = o.handlers ?? {};
    this.queues = o.queues?.length ? [...new Set(o.queues)] : null;
    this.leaseSeconds = o.leaseSeconds;
    this.name = (o.name ?? `${os.hostname()}-${process.pid}`).slice(0, 200);
    this.log = o.logger ?? lineLogger();
    const lockMs = Math.min(1, o.leaseSeconds / 10) * 1000;
    const timeouts = { lockTimeoutMs: lockMs, statementTimeoutMs: Math.max(lockMs, Math.min(o.leaseSeconds / 3, 30) * 1000) };
    this.db = createPool(o.dsn, { ...timeouts, applicationName: 'taskforge-node-worker', max: 2 * o.concurrency + 2 });
    this.listenConfig = [o.dsn, { applicationName: 'taskforge-node-worker/listen' }];
    this.workerId = null;
    this.running = new Map(); // `${task_id}/${attempt_number}` -> Promise of the attempt
    this.stopping = false;
    this.halted = false;
    this.exitCode = 0;
    this.wakeUp = null; // resolves the loop's current wait
    this.notified = false;
    let force;
    this.forcedPromise = new Promise((resolve) => (force = resolve));
    this.force = force;
    this.isForced = false;
    let halt;
    this.haltPromise = new Promise((resolve) => (halt = resolve));
    this.halt = halt;
    this.timers = new Set();
  }

  /** Check the schema and the handlers, register the worker (throws when it cannot start). */
  async start() {
    const version = await calls.schemaVersion(this.db);
    if (version > KNOWN_SCHEMA_VERSION) {
      throw new Error(`the database has SQL API version ${version}; this client knows ${KNOWN_SCHEMA_VERSION}`);
    }
    const known = Object.keys(this.handlers).filter((t) => typeof this.handlers[t] === 'function');
    const wanted = this.options.taskTypes?.length ? this.options.taskTypes : known;
    const unknown = wanted.filter((t) => !known.includes(t));
    if (unknown.length) throw new Error(`task type ${unknown.join(', ')}: no handler on this worker`);
    if (!wanted.length) throw new Error('no handlers: give a module exporting {taskType: async (payload, ctx) => result}');
    this.taskTypes = [...wanted].sort();
    this.workerId = await calls.registerWorker(this.db, {
      name: this.name,
      hostname: os.hostname().slice(0, 255),
      pid: process.pid,
      queues: this.queues,
      taskTypes: this.taskTypes,
      heartbeatSeconds: this.options.heartbeatSeconds,
    });
    this.readParents = await calls.hasParentResults(this.db);
    const o = this.options;
    this.log.info(
      `worker ${this.workerId} started: name=${this.name} queues=${this.queues?.join(',') ?? '(all)'} ` +
        `task_types=${this.taskTypes.join(',')} concurrency=${o.concurrency} lease=${o.leaseSeconds}s ` +
        `renew every ${o.leaseSeconds / 3}s heartbeat=${o.heartbeatSeconds}s poll=${o.pollSeconds}s grace=${o.graceSeconds}s`,
    );
  }

  /** Start, work until stopped; resolves the exit code (0 clean stop, 1 forced or fatal). */
  async run() {
    try {
      await this.start();
    } catch (err) {
      await this.db.end().catch(() => {});
      throw err;
    }
    this.heartbeat();
    const listening = this.listen();
    await this.loop();
    const unfinished = () => [...this.running.keys()];
    if (this.running.size) this.log.info(`stopping: waiting for ${this.running.size} running attempt(s)`);
    const forced = await Promise.race([
      Promise.allSettled([...this.running.values()]).then(() => false),
      this.forcedPromise.then(() => true),
    ]);
    this.halted = true;
    this.halt();
    for (const timer of this.timers) clearTimeout(timer);
    this.stopListening?.();
    await listening;
    if (forced) {
      this.log.warn(
        `exiting with ${unfinished().length} unfinished attempt(s) [${unfinished().join(', ')}] (task/attempt); ` +
          `they are not finalized: their leases expire within ${this.leaseSeconds}s and tf_recover requeues them`,
      );
    }
    await this.deregister(forced ? 2000 : 10_000);
    await Promise.race([this.db.end(), sleep(1000)]).catch(() => {});
    return forced ? 1 : this.exitCode;
  }

  /** Graceful stop: claim nothing new, let running handlers end within graceSeconds. */
  stop() {
    if (this.stopping) return;
    this.stopping = true;
    if (this.running.size) {
      this.log.info(`waiting up to ${this.options.graceSeconds}s for ${this.running.size} running task(s)`);
    }
    const timer = setTimeout(() => {
      if (this.running.size) {
        this.log.warn(`grace period of ${this.options.graceSeconds}s is over`);
        this.forceStop();
      }
    }, this.options.graceSeconds * 1000);
    timer.unref();
    this.wake();
  }

  /** Stop at once without finalizing (what a second signal does). */
  forceStop() {
    this.isForced = true;
    this.stop();
    this.force();
  }

  forced() {
    return this.isForced;
  }

  wake() {
    const resolve = this.wakeUp;
    this.wakeUp = null;
    resolve?.();
  }

  /** Resolves after ms, or at the next wake(). */
  waitForWake(ms) {
    return new Promise((resolve) => {
      const timer = setTimeout(() => {
        this.wakeUp = null;
        resolve();
      }, Math.max(ms, 0));
      this.wakeUp = () => {
        clearTimeout(timer);
        resolve();
      };
    });
  }

  fatal(message) {
    this.log.error(`${message}; stopping`);
    this.exitCode = 1;
    this.stop();
  }

  async loop() {
    const pollMs = this.options.pollSeconds * 1000;
    let claimWanted = true;
    let nextPoll = performance.now() + pollMs;
    let failures = 0;
    while (!this.stopping) {
      const now = performance.now();
      if (this.notified) {
        this.notified = false;
        claimWanted = true;
      }
      if (now >= nextPoll) {
        claimWanted = true;
        nextPoll = now + pollMs;
      }
      const free = this.options.concurrency - this.running.size;
      if (!(free > 0 && claimWanted)) {
        await this.waitForWake(nextPoll - now);
        continue;
      }
      try {
        const claimed = await this.claim(free);
        failures = 0;
        claimWanted = claimed >= free;
        if (!claimWanted) nextPoll = performance.now() + pollMs;
      } catch (err) {
        if (!isTransient(err)) {
          this.fatal(`tf_claim refused: ${err.message}`);
          return;
        }
        failures += 1;
        const delay = Math.min(5000, 250 * 2 ** Math.min(failures - 1, 5));
        this.log.warn(`claim failed: ${err.message}; trying again in ${delay} ms`);
        await this.waitForWake(delay);
      }
    }
  }

  async claim(free) {
    const sentAt = performance.now();
    const rows = await calls.claim(this.db, {
      workerId: this.workerId,
      queues: this.queues,
      leaseSeconds: this.leaseSeconds,
      maxTasks: free,
      taskTypes: this.taskTypes,
    });
    const claimedAt = performance.now();
    for (const row of rows) {
      this.log.info(`claimed task ${row.task_id} attempt ${row.attempt_number} (${row.task_type}, queue ${row.queue})`);
      const key = `${row.task_id}/${row.attempt_number}`;
      const done = this.runAttempt(row, sentAt, claimedAt).finally(() => {
        this.running.delete(key);
        this.wake();
      });
      this.running.set(key, done);
    }
    return rows.length;
  }

  async runAttempt(row, sentAt, claimedAt) {
    const handler = this.handlers[row.task_type];
    const attempt = new Attempt({ row, handler, readParents: this.readParents, worker: this, sentAt, claimedAt });
    try {
      await attempt.run();
    } catch (err) {
      this.log.error(`internal error running ${attempt.label}: ${err.stack ?? err}`);
    }
  }

  /** tf_heartbeat every heartbeatSeconds (after a failure: 0.25 s doubling, at most that). */
  heartbeat() {
    const interval = this.options.heartbeatSeconds * 1000;
    let failures = 0;
    const beat = async () => {
      try {
        await calls.heartbeat(this.db, this.workerId);
        if (failures) this.log.info(`heartbeat restored after ${failures} failure(s)`);
        failures = 0;
        this.later(interval, beat);
      } catch (err) {
        if (this.halted) return;
        if (!isTransient(err)) {
          this.fatal(`tf_heartbeat refused: ${err.message}`);
          return;
        }
        failures += 1;
        const wait = Math.min(interval, 250 * 2 ** (failures - 1));
        this.log.warn(`heartbeat failed (${failures}): ${err.message}; retrying in ${wait} ms`);
        this.later(wait, beat);
      }
    };
    this.later(interval, beat);
  }

  later(ms, fn) {
    if (this.halted) return;
    const timer = setTimeout(() => {
      this.timers.delete(timer);
      fn();
    }, ms);
    this.timers.add(timer);
  }

  async listen() {
    let backoff = 250;
    let lost = false;
    while (!this.halted) {
      const client = createClient(...this.listenConfig);
      const ended = new Promise((resolve) => {
        client.on('error', resolve);
        client.on('end', () => resolve(new Error('connection ended')));
        this.stopListening = () => resolve(null);
      });
      let why = null;
      try {
        await client.connect();
        client.on('notification', (note) => {
          if (note.channel === 'taskforge' && (!this.queues || this.queues.includes(note.payload))) {
            this.notified = true;
            this.wake();
          }
        });
        await client.query('LISTEN taskforge');
        backoff = 250;
        if (lost) {
          this.log.info('listener re-subscribed to channel taskforge on a new connection');
          this.notified = true;
          this.wake();
          lost = false;
        }
        why = await ended;
      } catch (err) {
        why = err;
      } finally {
        await Promise.race([client.end(), sleep(1000)]).catch(() => {});
      }
      if (this.halted || why === null) return;
      lost = true;
      this.log.warn(`listener connection lost: ${why.message}; re-subscribing in ${backoff} ms (polling meanwhile)`);
      await Promise.race([sleep(backoff), this.haltPromise]);
      backoff = Math.min(backoff * 2, 5000);
    }
  }

  async deregister(withinMs) {
    const until = performance.now() + withinMs;
    for (;;) {
      try {
        await calls.deregisterWorker(this.db, this.workerId);
        this.log.info(`worker ${this.workerId} deregistered; exiting`);
        return;
      } catch (err) {
        if (!isTransient(err) || performance.now() >= until) {
          this.log.warn(`could not deregister worker ${this.workerId}: ${err.message} (tf_workers will show it stale)`);
          return;
        }
        await sleep(200);
      }
    }
  }
}

function check(ok, message) {
  if (!ok) throw new RangeError(message);
}
