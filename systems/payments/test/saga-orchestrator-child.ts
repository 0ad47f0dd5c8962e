/**
 * An orchestrator PROCESS for the crash and race tests (saga-processes.test.ts): opens its own
 * pool on the test schema, prints "ready", then runs the orchestrator loop until killed or told
 * "stop" on stdin. Finished sagas emit an event into `test_events` (the events sink, in the
 * saga's final transaction), so the parent can count completions.
 * argv: <database url> <schema> <acquirer url> <owner> <headersTimeoutMs>
 */
import { createInterface } from "node:readline";
import { openDatabase } from "@casebook/infra/sql/open-database";
import { systemClock } from "@casebook/kit/clock";
import { seededRandom } from "@casebook/kit/random";
import { AcquirerClient } from "../src/clients/acquirer-client.ts";
import { paymentsIdempotencyStore } from "../src/store/idempotency-keys.ts";
import { SagaOrchestrator } from "../src/workers/saga-orchestrator.ts";

const [url, schema, acquirerUrl, owner, headersText] = process.argv.slice(2);
if (!url || !schema || !acquirerUrl || !owner || !headersText)
  throw new Error("usage: <url> <schema> <acquirer> <owner> <headersMs>");
const headersMs = Number(headersText);

const db = await openDatabase({ system: "payments", url, schema, pool: { maxConnections: 3 } });
const acquirer = new AcquirerClient({
  baseUrl: acquirerUrl,
  clock: systemClock,
  random: seededRandom(owner),
  timeouts: { connectMs: 200, headersMs, bodyMs: 200 },
  callDeadlineMs: headersMs + 500,
  retryBaseMs: 5,
  retryCapMs: 20,
});
const orchestrator = new SagaOrchestrator({
  db,
  acquirer,
  idempotency: paymentsIdempotencyStore(db, { clock: systemClock }),
  clock: systemClock,
  random: seededRandom(`${owner}-saga`),
  owner,
  leaseMs: headersMs + 2_000,
  maxBatch: 4,
  pollIntervalMs: 10,
  backoff: { baseMs: 20, capMs: 100, budgetMs: 60_000, maxAttempts: 500 },
  events: {
    async write(tx, events) {
      for (const event of events)
        await tx.query("INSERT INTO test_events (payment_id, owner, type) VALUES ($1, $2, $3)", [
          event.paymentId,
          owner,
          event.type,
        ]);
    },
    ctes: (events, offset) => ({
      ctes: `test_written AS (
        INSERT INTO test_events (payment_id, owner, type)
        SELECT id, $${offset + 2}::text, type FROM unnest($${offset + 1}::text[], $${offset + 3}::text[]) AS e(id, type)
        RETURNING 1)`,
      events: "test_written",
      params: [events.map((e) => e.paymentId), owner, events.map((e) => e.type)],
    }),
  },
  onError: (error) => process.stderr.write(`${owner}: ${String(error)}\n`),
});
process.stdout.write("ready\n");
// Started on "go", sent once every sibling is ready: the first process up could otherwise drain
// every saga before the others start, and the race would be one process alone.
const lines = createInterface({ input: process.stdin });
for await (const line of lines) {
  if (line === "go") orchestrator.start();
  if (line === "stop") break;
}
lines.close();
await orchestrator.stop();
acquirer.close();
await db.close();
