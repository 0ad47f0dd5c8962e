import assert from "node:assert/strict";
import { existsSync } from "node:fs";
import { after, before, describe, test } from "node:test";
import { fileURLToPath } from "node:url";
import pg from "pg";
import { type SpawnedPostgres, spawnPostgres } from "../src/spawn-postgres.ts";
import { connectErrorCode, eventually, isAlive, runThenDie } from "./process-helpers.ts";

const spawnPostgresPath = fileURLToPath(new URL("../src/spawn-postgres.ts", import.meta.url));

/** A client with every timeout explicit, so a paused server fails the query instead of hanging the test. */
async function client(url: string): Promise<pg.Client> {
  const c = new pg.Client({ connectionString: url, query_timeout: 500, connectionTimeoutMillis: 2_000 });
  await c.connect();
  return c;
}

async function scalar(url: string, sql: string): Promise<unknown> {
  const c = await client(url);
  try {
    const result = await c.query(sql);
    return Object.values(result.rows[0] as Record<string, unknown>)[0];
  } finally {
    await c.end();
  }
}

describe("spawnPostgres", () => {
  let server: SpawnedPostgres;
  before(async () => {
    server = await spawnPostgres({ settings: { max_connections: "20" } });
  });
  after(async () => {
    await server.stop();
  });

  test("answers a query on its own port with the settings asked for", async () => {
    assert.match(server.url, /^postgres:\/\/postgres@127\.0\.0\.1:\d+\/postgres$/);
    assert.notEqual(server.port, 5432);
    assert.equal(await scalar(server.url, "select 1 + 1 as two"), 2);
    assert.equal(await scalar(server.url, "show fsync"), "off");
    assert.equal(await scalar(server.url, "show max_connections"), "20");
    assert.equal(await scalar(server.url, "show listen_addresses"), "127.0.0.1");
  });

  test("pause stops the backends too: a query on an open connection times out; resume serves again", async () => {
    const open = await client(server.url);
    open.on("error", () => {}); // the timed-out connection may report late errors; the test ends it
    try {
      server.pause();
      await assert.rejects(open.query("select 1"), /timeout/i);
      server.resume();
      assert.equal(await scalar(server.url, "select 42 as answer"), 42);
    } finally {
      await open.end().catch(() => {});
    }
  });

  test("kill refuses connections; restart recovers committed rows on the same port", async () => {
    const c = await client(server.url);
    await c.query("create table crash_check (id int primary key)");
    await c.query("insert into crash_check values (1), (2), (3)");
    await c.end();
    await server.kill();
    assert.equal(server.state, "exited");
    assert.equal(await connectErrorCode(server.port), "ECONNREFUSED");
    await server.restart();
    assert.equal(await scalar(server.url, "select count(*)::int from crash_check"), 3);
  });
});

test("stop is final: the cluster's temp dir is removed and the port refused", async () => {
  const server = await spawnPostgres();
  const dataDir = String(await scalar(server.url, "show data_directory"));
  assert.equal(existsSync(dataDir), true);
  await server.stop();
  assert.equal(existsSync(dataDir), false);
  assert.equal(await connectErrorCode(server.port), "ECONNREFUSED");
});

test("a paused cluster and its backends die with a SIGKILLed test process, and its dir goes", async () => {
  const body = `
    import pg from "pg";
    import { spawnPostgres } from ${JSON.stringify(spawnPostgresPath)};
    const server = await spawnPostgres();
    const client = new pg.Client({ connectionString: server.url });
    await client.connect();
    const { rows } = await client.query("select pg_backend_pid() as pid, current_setting('data_directory') as dir");
    server.pause();
    console.log(JSON.stringify({ port: server.port, pid: server.pid, backend: rows[0].pid, dir: rows[0].dir }));
  `;
  const orphan = await runThenDie<{ port: number; pid: number; backend: number; dir: string }>(
    body,
    "SIGKILL",
  );
  await eventually(() => !isAlive(orphan.backend) && !isAlive(orphan.pid));
  assert.equal(await connectErrorCode(orphan.port), "ECONNREFUSED");
  await eventually(() => !existsSync(orphan.dir));
});
