// The pg-boss peer of `taskforge bench peer`: one no-op handler on the queue "bench".
//
// Runs with the packages of the peer's own npm prefix (NODE_PATH=<prefix>/node_modules); the
// database comes from $TASKFORGE_BENCH_PEER_DSN (a postgresql:// URL).
//
//   node pg_boss_app.js schema            start() (creates pg-boss's schema), createQueue, stop
//   node pg_boss_app.js enqueue COUNT     insert() COUNT jobs in one statement; prints {"ids": [...]}
//   node pg_boss_app.js worker SETTINGS   loop fetch({batchSize}) -> handler -> complete(ids) until
//                                         SIGTERM, then stop() and exit 0; SETTINGS: {"batchSize": N}
//
// Why a fetch/complete loop and not work(): pg-boss 10's work() poller waits out its polling
// interval (pollingIntervalSeconds, at least 0.5 s) after every fetch, also one that found jobs
// (src/worker.js), which caps one work() at two fetches a second. The loop below is pg-boss's
// documented fetch() + complete() pair ("complete ... would likely only be used with fetch()",
// docs/api/jobs.md) with no wait while there is work; when a fetch finds nothing it sleeps
// IDLE_MS (outside every measured window: the window starts at the first job's started_on).
"use strict";

const crypto = require("node:crypto");
const PgBoss = require("pg-boss");

const QUEUE = "bench";
const READY = "taskforge-bench-peer: ready";
const IDLE_MS = 20;
const connectionString = process.env.TASKFORGE_BENCH_PEER_DSN;

const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

async function noop(jobs) {} // the handler: does nothing with its jobs

async function open(options) {
  const boss = new PgBoss({ connectionString, ...options });
  boss.on("error", (error) => console.error(error));
  await boss.start();
  return boss;
}

async function schema() {
  const boss = await open({ supervise: false, schedule: false });
  await boss.createQueue(QUEUE);
  await boss.stop({ graceful: false });
}

async function enqueue(count) {
  const boss = await open({ supervise: false, schedule: false, migrate: false });
  const jobs = Array.from({ length: count }, () => ({ id: crypto.randomUUID(), name: QUEUE, data: {} }));
  await boss.insert(jobs);
  await boss.stop({ graceful: false });
  console.log(JSON.stringify({ ids: jobs.map((job) => job.id) }));
}

async function worker(settings) {
  const batchSize = settings.batchSize || 1;
  const boss = await open({});
  let stopping = false;
  process.once("SIGTERM", () => {
    stopping = true;
  });
  console.log(READY);
  while (!stopping) {
    const jobs = await boss.fetch(QUEUE, { batchSize });
    if (!jobs || jobs.length === 0) {
      await sleep(IDLE_MS);
      continue;
    }
    await noop(jobs);
    await boss.complete(
      QUEUE,
      jobs.map((job) => job.id),
    );
  }
  await boss.stop({ graceful: true });
  process.exit(0);
}

async function main([command, argument]) {
  if (command === "schema") {
    await schema();
  } else if (command === "enqueue") {
    await enqueue(Number.parseInt(argument, 10));
  } else if (command === "worker") {
    await worker(JSON.parse(argument || "{}"));
  } else {
    throw new Error("usage: pg_boss_app.js schema | enqueue COUNT | worker SETTINGS");
  }
}

main(process.argv.slice(2)).catch((error) => {
  console.error(error);
  process.exit(1);
});
