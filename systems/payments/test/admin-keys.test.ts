/**
 * The merchant admin API (PAYMENTS_ADMIN_TOKEN) and `casebook payments new-key`:
 * - through main() on PGlite: only the operator's token opens /v1/admin; a merchant made
 *   there works at once; the key listing shows prefixes and times (last use included) and
 *   never a key; rotation keeps the old key through its overlap; revocation is immediate, the
 *   verified keys this process remembers (PAYMENTS_KEY_CACHE_TTL_MS) forgotten with it;
 * - the service as a process on PostgreSQL with no merchant: its start log says in one line
 *   how to make one; the tool, spawned against it, creates the merchant and prints a key
 *   that works, and a second run adds a key; against a closed port it prints one line
 *   saying how to start the service; a wrong token is one line too.
 */
import assert from "node:assert/strict";
import { execFile } from "node:child_process";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { test } from "node:test";
import { openDatabase } from "@casebook/infra/sql/open-database";
import { quoteIdentifier } from "@casebook/infra/sql/sql-schema";
import { freePort } from "@casebook/lab/free-port";
import { spawnChild } from "@casebook/lab/spawn-child";
import { engineFree, requirePostgres, uniqueName } from "@casebook/lab/test-engines";
import { main } from "../src/main.ts";
import { startSim } from "./acquirer-sim-fixture.ts";

const TOKEN = "test-payments-admin-token-0123";
const MAIN = new URL("../src/main.ts", import.meta.url);
const TOOL = new URL("../src/tools/new-key.ts", import.meta.url).pathname;
/** Bound on one run of the tool (Node's start on a loaded machine dominates). */
const TOOL_TIMEOUT_MS = 60_000;

interface Run {
  code: number;
  stdout: string;
  stderr: string;
}

function runTool(args: string[], env: Record<string, string>): Promise<Run> {
  return new Promise((resolve) => {
    execFile(
      process.execPath,
      [TOOL, ...args],
      { env: { PATH: process.env.PATH ?? "", ...env }, timeout: TOOL_TIMEOUT_MS },
      (error, stdout, stderr) => {
        const code = error === null ? 0 : typeof error.code === "number" ? error.code : 1;
        resolve({ code, stdout, stderr });
      },
    );
  });
}

async function call(url: string, method: string, token?: string, body?: unknown) {
  const res = await fetch(url, {
    method,
    headers: {
      ...(token === undefined ? {} : { authorization: `Bearer ${token}` }),
      ...(body === undefined ? {} : { "content-type": "application/json" }),
    },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const text = await res.text();
  return { status: res.status, body: text === "" ? {} : JSON.parse(text) };
}

test("admin API on PGlite: merchants, key listing with last use, rotation with overlap, revocation", async (t) => {
  if (engineFree(t)) return;
  const dir = await mkdtemp(join(tmpdir(), "payments-admin-"));
  t.after(() => rm(dir, { recursive: true, force: true }));
  const running = await main({
    PORT: "0",
    CASEBOOK_DATA: dir,
    LOG_LEVEL: "silent",
    PAYMENTS_ADMIN_TOKEN: TOKEN,
    PAYMENTS_BOOTSTRAP_MERCHANT: "off",
    PAYMENTS_KEY_CACHE_TTL_MS: "60000", // far longer than the test: only a cleared cache can refuse a key
  });
  t.after(() => running.close());
  const { url } = running;
  assert.equal((await call(`${url}/v1/admin/merchants`, "POST", undefined, { name: "Acme" })).status, 401);
  assert.equal((await call(`${url}/v1/admin/merchants`, "POST", `${TOKEN}x`, { name: "Acme" })).status, 401);
  const bad = await call(`${url}/v1/admin/merchants`, "POST", TOKEN, { id: "a:b", name: "Acme" });
  assert.equal(bad.status, 400);
  assert.match(JSON.stringify(bad.body.errors), /\/body\/id/);

  const created = await call(`${url}/v1/admin/merchants`, "POST", TOKEN, { id: "acme", name: "Acme" });
  assert.equal(created.status, 201, JSON.stringify(created.body));
  const old = created.body.apiKey.key as string;
  assert.equal(
    (await call(`${url}/v1/admin/merchants`, "POST", TOKEN, { id: "acme", name: "Again" })).status,
    409,
  );
  const keys = `${url}/v1/admin/merchants/acme/api-keys`;
  const before = await call(keys, "GET", TOKEN);
  assert.deepEqual(
    before.body.keys.map((k: Record<string, unknown>) => [k.prefix, k.lastUsedAt, k.expiresAt, k.revokedAt]),
    [[created.body.apiKey.prefix, null, null, null]],
  );
  assert.equal(JSON.stringify(before.body).includes(old.slice(-20)), false, "never the secret");
  assert.equal((await call(`${url}/v1/accounts`, "GET", old)).status, 200);
  const used = await call(keys, "GET", TOKEN);
  assert.equal(typeof used.body.keys[0].lastUsedAt, "string", "authentication recorded the use");
  assert.equal((await call(keys, "GET", old)).status, 401, "a merchant key is not the admin token");

  const rotated = await call(`${keys}/rotate`, "POST", TOKEN, { expiresInS: 3_600 });
  assert.equal(rotated.status, 201, JSON.stringify(rotated.body));
  const fresh = rotated.body.key as string;
  assert.equal((await call(`${url}/v1/accounts`, "GET", fresh)).status, 200, "the new key works now");
  assert.equal((await call(`${url}/v1/accounts`, "GET", old)).status, 200, "the old one through the overlap");
  const ends = Date.parse(rotated.body.previousKeysExpireAt) - Date.now();
  assert.ok(ends > 3_500_000 && ends <= 3_600_000, `the overlap is the hour asked for (${ends} ms left)`);
  const oldPrefix = created.body.apiKey.prefix as string;
  assert.equal((await call(`${keys}/${oldPrefix}`, "DELETE", TOKEN)).status, 204);
  assert.equal((await call(`${url}/v1/accounts`, "GET", old)).status, 401, "revoked: at once");
  assert.equal((await call(`${keys}/rotate`, "POST", TOKEN, { expiresInS: 0 })).status, 201);
  assert.equal((await call(`${url}/v1/accounts`, "GET", fresh)).status, 401, "expiresInS 0 ends it now");
  const missing = await call(`${url}/v1/admin/merchants/nobody/api-keys`, "POST", TOKEN);
  assert.equal(missing.body.code, "PAYMENTS_MERCHANT_NOT_FOUND");
});

test("on PostgreSQL with no merchant: one line says how; new-key makes the merchant and a working key", async (t) => {
  const databaseUrl = await requirePostgres(t);
  if (databaseUrl === undefined) return;
  const schema = uniqueName("pay_keys");
  t.after(async () => {
    const db = await openDatabase({ system: "payments", url: databaseUrl });
    try {
      await db.exec(`DROP SCHEMA IF EXISTS ${quoteIdentifier(schema)} CASCADE`);
    } finally {
      await db.close();
    }
  });
  const port = String(await freePort());
  // On PostgreSQL every replica must share one acquirer (ACQUIRER_URL is required): a simulator of its own here.
  const acquirer = await startSim(t);
  const serviceEnv = {
    DATABASE_URL: databaseUrl,
    ACQUIRER_URL: acquirer.url,
    PAYMENTS_DB_SCHEMA: schema,
    PORT: port,
    HOST: "127.0.0.1",
  };
  const service = await spawnChild(MAIN, {
    env: { ...process.env, ...serviceEnv, PAYMENTS_ADMIN_TOKEN: TOKEN, LOG_LEVEL: "info" },
    ready: (line) => line.includes("no merchant yet"),
    readyTimeoutMs: 120_000,
    test: t,
  });
  const hint = JSON.parse(service.readyLine);
  assert.match(hint.msg, /npx casebook payments new-key --merchant demo/);
  assert.equal(hint.try, "npx casebook payments new-key --merchant demo");

  const toolEnv = { PORT: port, PAYMENTS_ADMIN_TOKEN: TOKEN };
  const first = await runTool(["--merchant", "demo"], toolEnv);
  assert.equal(first.code, 0, first.stderr);
  const key = first.stdout.trim();
  assert.match(key, /^sk_[0-9a-f]{16}_[A-Za-z0-9_-]{43}$/, "the key alone, plainly, on stdout");
  assert.match(first.stderr, /a new merchant and its first key for merchant demo/);
  const tryLine = /Try it: (.*)/.exec(first.stderr)![1]!;
  assert.equal(tryLine, `curl -s -H 'Authorization: Bearer ${key}' http://127.0.0.1:${port}/v1/accounts`);
  assert.equal((await call(`http://127.0.0.1:${port}/v1/accounts`, "GET", key)).status, 200);

  const second = await runTool([], toolEnv);
  assert.equal(second.code, 0, second.stderr);
  assert.notEqual(second.stdout.trim(), key, "a second key for the existing merchant");
  assert.equal(
    (await call(`http://127.0.0.1:${port}/v1/accounts`, "GET", key)).status,
    200,
    "the first still works",
  );

  const wrong = await runTool([], { PORT: port, PAYMENTS_ADMIN_TOKEN: `${TOKEN}-wrong` });
  assert.equal(wrong.code, 1);
  assert.equal(wrong.stdout, "");
  assert.match(
    wrong.stderr,
    /^payments new-key: PAYMENTS_ADMIN_TOKEN is not the token payments at .* was started with/,
  );
  assert.equal(wrong.stderr.trim().split("\n").length, 1);
});

test("new-key against a closed port: one line that says how to start the service; no token: one line too", async (t) => {
  if (engineFree(t)) return;
  const closed = String(await freePort());
  const down = await runTool([], { PORT: closed, PAYMENTS_ADMIN_TOKEN: TOKEN });
  assert.equal(down.code, 1);
  assert.equal(down.stdout, "");
  assert.equal(down.stderr.trim().split("\n").length, 1, down.stderr);
  assert.match(
    down.stderr,
    new RegExp(
      `payments is not running at http://127\\.0\\.0\\.1:${closed}: start it with \`PAYMENTS_ADMIN_TOKEN=<16\\+ chars> npx casebook run payments\``,
    ),
  );
  const noToken = await runTool([], { PORT: closed });
  assert.equal(noToken.code, 2);
  assert.match(noToken.stderr, /set PAYMENTS_ADMIN_TOKEN/);
  const usage = await runTool(["--merchant", "a:b"], { PAYMENTS_ADMIN_TOKEN: TOKEN });
  assert.equal(usage.code, 2);
  assert.match(usage.stderr, /--merchant a:b/);
});
