/**
 * The start sequence: each step's failure closes what the steps before it opened, last
 * opened first, and the step's own error reaches the caller; and the field presets
 * give each system its settings unchanged.
 */
import assert from "node:assert/strict";
import { createServer } from "node:net";
import { test } from "node:test";
import { describeConfig, loadConfig } from "@casebook/kit/config";
import type { Service } from "../../src/http/service.ts";
import {
  databaseFields,
  databaseOptionsOf,
  listenFields,
  logLevelField,
} from "../../src/http/service-preset.ts";
import { startService } from "../../src/http/start-service.ts";
import type { Database } from "../../src/sql/sql.ts";

function capture() {
  const lines: Record<string, unknown>[] = [];
  return { lines, destination: { write: (line: string) => void lines.push(JSON.parse(line)) } };
}

/** Close hooks that record their order, registered by `build` as a system's would be. */
function recordingBuild(closed: string[], fail?: Error) {
  return async ({ service }: { service: Service }) => {
    service.onClose(async () => void closed.push("relay"));
    service.onClose(async () => void closed.push("worker"));
    if (fail) throw fail;
    return { worker: "w1" };
  };
}

const memoryDatabase = (migrate: (db: Database) => Promise<unknown>) => ({
  system: "preset-test",
  dataDir: "memory://",
  migrate,
});

test("the sequence: database, migrate, build, listen, one listening line, close in reverse", async () => {
  const log = capture();
  const closed: string[] = [];
  const steps: string[] = [];
  const started = await startService({
    service: { name: "preset-test", version: "0.1.0", log: { level: "info", destination: log.destination } },
    database: memoryDatabase(async (db) => {
      steps.push("migrate");
      await db.query("CREATE TABLE things (id int)");
    }),
    build: async (context) => {
      steps.push("build");
      await context.db.query("INSERT INTO things VALUES (1)");
      return recordingBuild(closed)(context);
    },
    listen: { port: 0 },
    listening: (built, { db }) => ({ engine: db.engine, worker: built.worker }),
    announce: (_, { url }) => void steps.push(`announce ${new URL(url).protocol}`),
  });
  assert.deepEqual(steps, ["migrate", "build", "announce http:"]);
  const line = log.lines.find((entry) => entry.msg === "preset-test listening");
  assert.deepEqual(
    { url: line?.url, engine: line?.engine, worker: line?.worker },
    { url: started.url, engine: "pglite", worker: "w1" },
  );
  const ready = await fetch(`${started.url}/readyz`);
  assert.equal(ready.status, 200);
  const { checks } = (await ready.json()) as { checks: Record<string, unknown> };
  assert.ok(checks.database, "/readyz pings the database");
  await started.close();
  assert.deepEqual(closed, ["worker", "relay"], "last registered, first closed");
  await assert.rejects(started.db.query("SELECT 1"), "the pool is closed, after the hooks");
});

test("a failing migration closes the database and rethrows the migration's error", async () => {
  let opened: Database | undefined;
  let built = false;
  await assert.rejects(
    startService({
      service: { name: "preset-test", version: "0.1.0", log: { level: "silent" } },
      database: memoryDatabase(async (db) => {
        opened = db;
        throw new Error("migration 002 failed");
      }),
      build: async () => {
        built = true;
      },
      listen: { port: 0 },
    }),
    /migration 002 failed/,
  );
  assert.equal(built, false, "no step after the failing one ran");
  await assert.rejects(opened!.query("SELECT 1"), "the pool was closed");
});

test("a failing build closes what it had started, in reverse, and rethrows", async () => {
  const closed: string[] = [];
  await assert.rejects(
    startService({
      service: { name: "preset-test", version: "0.1.0", log: { level: "silent" } },
      build: recordingBuild(closed, new Error("redis refused")),
      listen: { port: 0 },
    }),
    /redis refused/,
  );
  assert.deepEqual(closed, ["worker", "relay"]);
});

test("a port already taken: listen fails, build's hooks and the pool close, the listen error reaches the caller", async (t) => {
  const taken = createServer();
  await new Promise<void>((resolve) => taken.listen(0, "127.0.0.1", resolve));
  t.after(() => taken.close());
  const { port } = taken.address() as { port: number };
  const closed: string[] = [];
  let opened: Database | undefined;
  await assert.rejects(
    startService({
      service: { name: "preset-test", version: "0.1.0", log: { level: "silent" } },
      database: memoryDatabase(async (db) => {
        opened = db;
      }),
      build: recordingBuild(closed),
      listen: { port, host: "127.0.0.1" },
    }),
    (error: NodeJS.ErrnoException) => error.code === "EADDRINUSE" || /EADDRINUSE|in use/.test(String(error)),
  );
  assert.deepEqual(closed, ["worker", "relay"]);
  await assert.rejects(opened!.query("SELECT 1"));
});

test("field presets: each system's env names, defaults and help text, in spread order", () => {
  const schema = {
    ...listenFields({ port: 8104 }),
    ...databaseFields({
      system: "payments",
      envPrefix: "PAYMENTS_DB",
      fields: ["schema", "maxConnections", "statementTimeoutMs", "connectTimeoutMs"],
    }),
    ...logLevelField(),
  };
  assert.deepEqual(
    describeConfig(schema).map((line) => line.split(/\s+/, 1)[0]),
    [
      "PORT",
      "HOST",
      "DATABASE_URL",
      "PAYMENTS_DB_SCHEMA",
      "PAYMENTS_DB_MAX_CONNECTIONS",
      "PAYMENTS_DB_STATEMENT_TIMEOUT_MS",
      "PAYMENTS_DB_CONNECT_TIMEOUT_MS",
      "LOG_LEVEL",
    ],
  );
  assert.match(
    describeConfig(schema)[2]!,
    /PostgreSQL; unset = embedded PGlite in \$CASEBOOK_DATA\/payments/,
  );
  const config = loadConfig(schema, {
    env: { PAYMENTS_DB_SCHEMA: "pay_1", PAYMENTS_DB_MAX_CONNECTIONS: "4" },
  });
  assert.deepEqual(databaseOptionsOf(config), {
    url: undefined,
    schema: "pay_1",
    pool: { maxConnections: 4, statementTimeoutMs: 10_000, connectTimeoutMs: 5_000 },
  });
  const durations = {
    ...databaseFields({
      system: "webhooks",
      envPrefix: "WEBHOOKS_DB",
      fields: ["connectTimeoutMs", "statementTimeoutMs"],
      timeouts: "duration-ms",
      statementTimeoutMsDefault: 5_000,
      descriptions: { connectTimeoutMs: "Bound on connecting" },
    }),
  };
  const loaded = loadConfig(durations, { env: { WEBHOOKS_DB_CONNECT_TIMEOUT_MS: "2s" } });
  assert.deepEqual(databaseOptionsOf(loaded).pool, { connectTimeoutMs: 2_000, statementTimeoutMs: 5_000 });
  assert.match(describeConfig(durations)[1]!, /Bound on connecting \(a duration/);
  assert.throws(() => loadConfig(listenFields({ port: 1 }), { env: { PORT: "70000" } }), /PORT/);
});
