/**
 * A child process of the PY-02 process race (idempotency-race.test.ts): opens its own
 * pool, prints "ready", waits for "go" on stdin (the start barrier), calls begin() on
 * the shared key once and prints the outcome as one JSON line.
 * argv: <database url> <schema> <merchant id> <key> <now ms>
 */
import { createInterface } from "node:readline";
import { fingerprintRequest } from "@casebook/kit/idempotency";
import { openDatabase } from "../../src/sql/open-database.ts";
import { idempotencyErrors, idempotencyStore } from "./idempotency-backends.ts";

const [url, schema, merchantId, key, nowText] = process.argv.slice(2);
if (!url || !schema || !merchantId || !key || !nowText)
  throw new Error("usage: <url> <schema> <merchant> <key> <nowMs>");

const db = await openDatabase({ system: "idempotency", url, schema, pool: { maxConnections: 1 } });
try {
  await db.query("SELECT 1"); // the connection is open before the barrier, so the race is on the INSERT
  const store = idempotencyStore(db);
  const fingerprint = fingerprintRequest({ method: "POST", path: "/payments", body: { amount: "5000" } });
  const lines = createInterface({ input: process.stdin });
  process.stdout.write("ready\n");
  for await (const line of lines) {
    if (line === "go") break;
  }
  lines.close();
  let outcome: string;
  try {
    outcome = (await store.begin({ scope: merchantId, key, fingerprint, nowMs: Number(nowText) })).kind;
  } catch (err) {
    if (!idempotencyErrors.is(err)) throw err;
    outcome = err.code;
  }
  process.stdout.write(`${JSON.stringify({ pid: process.pid, outcome })}\n`);
} finally {
  await db.close();
}
