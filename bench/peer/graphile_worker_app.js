// The graphile-worker peer of `taskforge bench peer`: one no-op task.
//
// Runs with the packages of the peer's own npm prefix (NODE_PATH=<prefix>/node_modules); the
// database comes from $TASKFORGE_BENCH_PEER_DSN (a postgresql:// URL). The harness enqueues
// through graphile-worker's SQL API (graphile_worker.add_jobs), so this app has no enqueue.
//
//   node graphile_worker_app.js schema            graphile-worker's migrations (runMigrations)
//   node graphile_worker_app.js worker SETTINGS   run() until SIGTERM, then stop and exit 0;
//                                                 SETTINGS: JSON of preset.worker options
//                                                 (concurrentJobs, localQueue, ...)
"use strict";

const { run, runMigrations } = require("graphile-worker");

const READY = "taskforge-bench-peer: ready";
const connectionString = process.env.TASKFORGE_BENCH_PEER_DSN;

async function worker(settings) {
  const runner = await run({
    noHandleSignals: true, // this app stops the runner itself, so the process exits 0
    crontab: "# no cron items", // not the default ./crontab file
    taskList: { noop: async () => {} },
    preset: { worker: { connectionString, ...settings } },
  });
  process.once("SIGTERM", () => {
    runner.stop().then(
      () => process.exit(0),
      (error) => {
        console.error(error);
        process.exit(1);
      },
    );
  });
  console.log(READY);
  await runner.promise;
}

async function main([command, settings]) {
  if (command === "schema") {
    await runMigrations({ connectionString });
  } else if (command === "worker") {
    await worker(JSON.parse(settings || "{}"));
  } else {
    throw new Error("usage: graphile_worker_app.js schema | worker SETTINGS");
  }
}

main(process.argv.slice(2)).catch((error) => {
  console.error(error);
  process.exit(1);
});
