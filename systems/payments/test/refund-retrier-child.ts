/**
 * A refund retry worker PROCESS for the race test (refund-retrier.test.ts): opens its own pool on
 * the test schema, prints "ready", runs the worker loop, prints one line per round outcome
 * ("round succeeded"), and stops when told "stop" on stdin (then prints "stopped").
 * argv: <database url> <schema> <acquirer url> <owner>
 */
import { createInterface } from "node:readline";
import { openDatabase } from "@casebook/infra/sql/open-database";
import { systemClock } from "@casebook/kit/clock";
import { seededRandom } from "@casebook/kit/random";
import { AcquirerClient } from "../src/clients/acquirer-client.ts";
import { RefundRetrier } from "../src/workers/refund-retrier.ts";

const [url, schema, acquirerUrl, owner] = process.argv.slice(2);
if (!url || !schema || !acquirerUrl || !owner) throw new Error("usage: <url> <schema> <acquirer> <owner>");

const db = await openDatabase({ system: "payments", url, schema, pool: { maxConnections: 3 } });
const acquirer = new AcquirerClient({
  baseUrl: acquirerUrl,
  clock: systemClock,
  random: seededRandom(owner),
  timeouts: { connectMs: 200, headersMs: 1_000, bodyMs: 200 },
  callDeadlineMs: 1_500,
  retryBaseMs: 5,
  retryCapMs: 20,
});
const retrier = new RefundRetrier({
  db,
  acquirer,
  clock: systemClock,
  random: seededRandom(`${owner}-retry`),
  owner,
  // Small batches: several processes get a share of the stuck refunds, so they really race.
  maxBatch: 2,
  pollIntervalMs: 10,
  backoff: { baseMs: 10, capMs: 50, maxAttempts: 50, budgetMs: 60_000 },
  observer: { refundRetried: (outcome) => process.stdout.write(`round ${outcome}\n`) },
  onError: (error) => process.stderr.write(`${owner}: ${String(error)}\n`),
});
process.stdout.write("ready\n");
// Started on "go", sent once every sibling is ready: the first process up could otherwise drain
// the whole queue before the others start, and the race would be one process alone.
const lines = createInterface({ input: process.stdin });
for await (const line of lines) {
  if (line === "go") retrier.start();
  if (line === "stop") break;
}
lines.close();
await retrier.stop();
acquirer.close();
await db.close();
process.stdout.write("stopped\n");
